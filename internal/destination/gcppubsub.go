package destination

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// pubsubConn is one Pub/Sub client for one project, endpoint and service
// account, and a publisher per topic it sent to. gRPC reconnects by itself
// after the service comes back.
type pubsubConn struct {
	c    *pubsub.Client
	mu   sync.Mutex
	pubs map[string]*pubsub.Publisher // by topic and ordering
}

// maxPublishers bounds the topics one connection keeps a publisher for.
const maxPublishers = 256

func dialPubSub(ctx context.Context, d *Dest, dial *net.Dialer) (conn, error) {
	opts := []option.ClientOption{
		option.WithEndpoint(d.URL.Host),
		option.WithGRPCDialOption(grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dial.DialContext(ctx, "tcp", addr)
		})),
		// Back within seconds of the service's return, not gRPC's
		// default two minutes: a publish waits on the connection.
		option.WithGRPCDialOption(grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second},
			MinConnectTimeout: dial.Timeout,
		})),
	}
	switch {
	case d.ServiceAccount != nil:
		opts = append(opts, option.WithAuthCredentialsJSON(option.ServiceAccount, d.ServiceAccount))
	default:
		// The endpoint's service account, or none: never hookd's own
		// (its metadata server or GOOGLE_APPLICATION_CREDENTIALS), which
		// would let an endpoint's owner publish as hookd.
		opts = append(opts, option.WithoutAuthentication())
	}
	if d.Plaintext {
		opts = append(opts, option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	}
	c, err := pubsub.NewClient(ctx, d.Project, opts...)
	if err != nil {
		return nil, pubsubError(d, "connect", err)
	}
	return &pubsubConn{c: c, pubs: map[string]*pubsub.Publisher{}}, nil
}

// publisher is the topic's publisher, made on first use.
func (p *pubsubConn) publisher(d *Dest) *pubsub.Publisher {
	key := fmt.Sprintf("%s\x00%t", d.Topic, d.Ordered)
	p.mu.Lock()
	defer p.mu.Unlock()
	if pub := p.pubs[key]; pub != nil {
		return pub
	}
	if len(p.pubs) >= maxPublishers {
		for k, old := range p.pubs { // any one: a publisher is cheap to make again
			old.Stop()
			delete(p.pubs, k)
			break
		}
	}
	pub := p.c.Publisher(d.Topic)
	pub.EnableMessageOrdering = d.Ordered
	pub.PublishSettings.DelayThreshold = time.Millisecond // sends that overlap share a request, none waits long
	pub.PublishSettings.CountThreshold = 100
	pub.PublishSettings.Timeout = 10 * time.Second // a stalled publish fails and frees its ordering key; River retries
	p.pubs[key] = pub
	return pub
}

// send publishes m with the headers as attributes and waits for the
// service's message id; on an ordered topic the subject is the ordering
// key, so one subject's messages are delivered in order.
func (p *pubsubConn) send(ctx context.Context, d *Dest, m Message) error {
	pub := p.publisher(d)
	msg := &pubsub.Message{Data: m.Body, Attributes: map[string]string{}}
	eachHeader(m.Headers, func(name, value string) { msg.Attributes[name] = value })
	if d.Ordered && m.Subject != "" {
		msg.OrderingKey = m.Subject
	}
	_, err := pub.Publish(ctx, msg).Get(ctx)
	if err == nil {
		return nil
	}
	if msg.OrderingKey != "" {
		// A failed publish pauses its key; the retry is River's, so let
		// the next attempt through.
		pub.ResumePublish(msg.OrderingKey)
	}
	return pubsubError(d, "publish", err)
}

// pubsubError sorts a Pub/Sub error: a missing topic, refused
// credentials or permission and a message the service never takes are
// permanent (Refused); anything else (unavailable, deadline,
// throttled) is retried.
func pubsubError(d *Dest, doing string, err error) error {
	if errors.Is(err, pubsub.ErrOversizedMessage) {
		return refused(400, "Pub/Sub %s to %s: %v", doing, d.Topic, err)
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("pub/sub %s to %s: %w", doing, d.Topic, err)
	}
	switch st.Code() {
	case codes.NotFound:
		return refused(404, "Pub/Sub: no topic %s (%s)", d.Topic, st.Message())
	case codes.PermissionDenied, codes.Unauthenticated:
		return refused(403, "Pub/Sub %s to %s: %s: %s", doing, d.Topic, st.Code(), st.Message())
	case codes.InvalidArgument, codes.FailedPrecondition:
		return refused(400, "Pub/Sub %s to %s: %s: %s", doing, d.Topic, st.Code(), st.Message())
	}
	return fmt.Errorf("pub/sub %s to %s: %s: %s", doing, d.Topic, st.Code(), st.Message())
}

func (p *pubsubConn) broken() bool { return false } // gRPC reconnects by itself

func (p *pubsubConn) close() error {
	p.mu.Lock()
	for k, pub := range p.pubs {
		pub.Stop()
		delete(p.pubs, k)
	}
	p.mu.Unlock()
	return p.c.Close()
}

// parsePubSub reads gcppubsub://[sa:KEY@]host[:port]/project/topic[?ordered=true][&tls=false],
// KEY being the service account's JSON key, base64url-encoded (padding
// optional). The path may also be projects/P/topics/T, as Google writes it.
func parsePubSub(d *Dest, q url.Values) error {
	path := strings.Trim(d.URL.Path, "/")
	parts := strings.Split(path, "/")
	if len(parts) == 4 && parts[0] == "projects" && parts[2] == "topics" {
		parts = []string{parts[1], parts[3]}
	}
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return bad("topic", "give the project and the topic as the path: gcppubsub://pubsub.googleapis.com/my-project/orders")
	}
	d.Project, d.Topic = parts[0], parts[1]
	if d.URL.Port() == "" {
		d.URL.Host = net.JoinHostPort(d.URL.Hostname(), "443")
	}
	var err error
	if d.Ordered, err = boolParam(q, "ordered", false); err != nil {
		return err
	}
	tls, err := boolParam(q, "tls", true)
	if err != nil {
		return err
	}
	d.Plaintext = !tls
	if u := d.URL.User; u != nil {
		key, _ := u.Password()
		sa, err := serviceAccount(key)
		if err != nil {
			return err
		}
		if d.Plaintext {
			return bad("tls", "a service account's token is never sent in clear: drop tls=false, or the key")
		}
		d.ServiceAccount = sa
	}
	return onlyParams(q, "ordered", "tls")
}

// serviceAccount decodes a service account's JSON key from its base64url
// form, checking it is one.
func serviceAccount(key string) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(key, "="))
	if err != nil {
		return nil, bad("credentials", "the password is the service account's JSON key, base64url-encoded: %v", err)
	}
	var sa struct {
		Type        string `json:"type"`
		ClientEmail string `json:"client_email"`
		PrivateKey  string `json:"private_key"`
	}
	if err := json.Unmarshal(raw, &sa); err != nil {
		return nil, bad("credentials", "the decoded password is not a JSON key: %v", err)
	}
	if sa.Type != "service_account" || sa.ClientEmail == "" || sa.PrivateKey == "" {
		return nil, bad("credentials", "want a service account's JSON key (type service_account, with client_email and private_key)")
	}
	return raw, nil
}

// PubSubKey is a service account's JSON key as a gcppubsub:// URL's
// password (base64url, unpadded): what the console writes for its owner.
func PubSubKey(saJSON []byte) string { return base64.RawURLEncoding.EncodeToString(saJSON) }
