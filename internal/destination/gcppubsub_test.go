package destination_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/hookd/hookd/internal/destination"
	"github.com/hookd/hookd/internal/destination/brokertest"
)

// startPubSub runs Pub/Sub's official in-process server (pstest: the real
// gRPC API) and returns it with a consumer's client for project "p" and
// a topic "orders" with a subscription "orders-sub" (ordered).
func startPubSub(t *testing.T) (*pstest.Server, *pubsub.Client) {
	t.Helper()
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	conn, err := grpc.NewClient(srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	c, err := pubsub.NewClient(context.Background(), "p", option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := ctxFor(t)
	if _, err := c.TopicAdminClient.CreateTopic(ctx, &pb.Topic{Name: "projects/p/topics/orders"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SubscriptionAdminClient.CreateSubscription(ctx, &pb.Subscription{
		Name: "projects/p/subscriptions/orders-sub", Topic: "projects/p/topics/orders", EnableMessageOrdering: true,
	}); err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// pull receives n messages of orders-sub, acking each.
func pull(t *testing.T, c *pubsub.Client, n int) []*pubsub.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var mu sync.Mutex
	var out []*pubsub.Message
	err := c.Subscriber("orders-sub").Receive(ctx, func(_ context.Context, m *pubsub.Message) {
		m.Ack()
		mu.Lock()
		defer mu.Unlock()
		out = append(out, m)
		if len(out) == n {
			cancel()
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if len(out) < n {
		t.Fatalf("received %d of %d messages (%v)", len(out), n, err)
	}
	return out
}

func TestPubSub(t *testing.T) {
	srv, c := startPubSub(t)
	p := newPool(t, destination.Config{})
	ctx := ctxFor(t)
	raw := "gcppubsub://" + srv.Addr + "/p/orders?tls=false&ordered=true"
	for _, id := range []string{"evt_g1", "evt_g2", "evt_g3"} {
		if err := p.Send(ctx, raw, signed(t, id)); err != nil {
			t.Fatalf("Send %s: %v", id, err)
		}
	}
	ms := pull(t, c, 3)
	for i, want := range []string{"evt_g1", "evt_g2", "evt_g3"} {
		verify(t, ms[i].Attributes, ms[i].Data, want)
		if ms[i].OrderingKey != "orders/1" {
			t.Fatalf("message %d: ordering key %q, want the subject", i, ms[i].OrderingKey)
		}
	}
	// Not ordered: no key.
	if err := p.Send(ctx, "gcppubsub://"+srv.Addr+"/projects/p/topics/orders?tls=false", signed(t, "evt_g4")); err != nil {
		t.Fatal(err)
	}
	if m := pull(t, c, 1)[0]; m.OrderingKey != "" {
		t.Fatalf("ordering key %q on a topic not ordered", m.OrderingKey)
	}

	// A topic that is not there: as a 404.
	wantRefused(t, p.Send(ctx, "gcppubsub://"+srv.Addr+"/p/no-such-topic?tls=false", signed(t, "evt_g5")), 404)
	// The service refusing the caller: as a 403 (pstest answers the next
	// publish with the error given).
	srv.SetAutoPublishResponse(false)
	srv.AddPublishResponse(nil, status.Error(codes.PermissionDenied, "User not authorized to perform this action."))
	wantRefused(t, p.Send(ctx, raw, signed(t, "evt_g6")), 403)
}

// Pub/Sub unreachable: retried; back: delivered, and the ordering key is
// not left paused by the failure.
func TestPubSubUnreachable(t *testing.T) {
	srv, c := startPubSub(t)
	px := brokertest.NewProxy(t, srv.Addr)
	p := newPool(t, destination.Config{})
	raw := "gcppubsub://" + px.Addr + "/p/orders?tls=false&ordered=true"
	if err := p.Send(ctxFor(t), raw, signed(t, "evt_1")); err != nil {
		t.Fatal(err)
	}
	px.Stop()
	short, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	wantTransient(t, p.Send(short, raw, signed(t, "evt_2")))
	cancel()
	px.Start()
	// As River would: attempts until one is acked (the first may still
	// wait behind the failed one on its ordering key).
	var err error
	for range 3 {
		if err = p.Send(ctxFor(t), raw, signed(t, "evt_2")); err == nil {
			break
		}
		wantTransient(t, err)
	}
	if err != nil {
		t.Fatalf("Send once Pub/Sub is back: %v", err)
	}
	ms := pull(t, c, 2)
	if ms[0].Attributes["webhook-id"] != "evt_1" || ms[len(ms)-1].Attributes["webhook-id"] != "evt_2" {
		t.Fatalf("received %v then %v, want evt_1 then evt_2", ms[0].Attributes["webhook-id"], ms[len(ms)-1].Attributes["webhook-id"])
	}
}

// A service account's key travels base64url-encoded as the password;
// anything else is refused naming the credentials, and a key is never
// sent without TLS.
func TestPubSubServiceAccount(t *testing.T) {
	sa, _ := json.Marshal(map[string]string{"type": "service_account", "client_email": "hookd@p.iam.gserviceaccount.com", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"})
	key := destination.PubSubKey(sa)
	d, err := destination.Parse("gcppubsub://sa:"+key+"@pubsub.googleapis.com/p/orders", nil)
	if err != nil {
		t.Fatalf("Parse with a key: %v", err)
	}
	if string(d.ServiceAccount) != string(sa) || d.URL.Host != "pubsub.googleapis.com:443" {
		t.Fatalf("Parse = key %s, host %s", d.ServiceAccount, d.URL.Host)
	}
	if shown := destination.Redact(d.URL.String()); strings.Contains(shown, key[:20]) {
		t.Fatalf("Redact shows the key: %s", shown)
	}
	notSA, _ := json.Marshal(map[string]string{"type": "authorized_user"})
	for raw, field := range map[string]string{
		"gcppubsub://sa:" + destination.PubSubKey(notSA) + "@pubsub.googleapis.com/p/orders": "credentials",
		"gcppubsub://sa:not*base64@pubsub.googleapis.com/p/orders":                           "credentials",
		"gcppubsub://sa:" + key + "@127.0.0.1:8085/p/orders?tls=false":                       "tls",
		"gcppubsub://pubsub.googleapis.com/p":                                                "topic",
		"gcppubsub://pubsub.googleapis.com/p/t?ordered=yes":                                  "ordered",
	} {
		_, err := destination.Parse(raw, loopback)
		var fe *destination.FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Fatalf("Parse(%.60s…) = %v, want a fault of %q", raw, err, field)
		}
	}
}
