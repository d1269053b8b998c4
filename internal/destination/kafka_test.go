package destination_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hookd/hookd/internal/destination"
)

// startKafka runs franz-go's in-process Kafka (kfake: the real wire
// protocol) on port (0: any).
func startKafka(t *testing.T, port int, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(3, "orders")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// consume reads n records of topic from the cluster at addr.
func consume(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records: %v", len(out), n, ctx.Err())
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func kafkaHeaders(r *kgo.Record) map[string][]byte {
	h := map[string][]byte{}
	for _, x := range r.Headers {
		h[x.Key] = x.Value
	}
	return h
}

func TestKafka(t *testing.T) {
	c := startKafka(t, 0)
	addr := c.ListenAddrs()[0]
	p := newPool(t, destination.Config{})
	ctx := ctxFor(t)
	m := signed(t, "evt_k1")
	if err := p.Send(ctx, "kafka://"+addr+"/orders", m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	rs := consume(t, addr, "orders", 1)
	verify(t, kafkaHeaders(rs[0]), rs[0].Value, "evt_k1")
	if string(rs[0].Key) != m.Subject {
		t.Fatalf("key %q, want the subject %q", rs[0].Key, m.Subject)
	}
	// One subject, one partition: in order.
	for i := range 5 {
		if err := p.Send(ctx, "kafka://"+addr+"/orders", signed(t, "evt_k"+strconv.Itoa(i+2))); err != nil {
			t.Fatal(err)
		}
	}
	rs = consume(t, addr, "orders", 6)
	for i, r := range rs {
		if r.Partition != rs[0].Partition || !strings.Contains(string(r.Value), `"evt_k`+strconv.Itoa(i+1)+`"`) {
			t.Fatalf("record %d: partition %d (first %d), %s: want one partition, in order", i, r.Partition, rs[0].Partition, r.Value)
		}
	}
	wantRefused(t, p.Send(ctx, "kafka://"+addr+"/no-such-topic", m), 404)
}

// A user the topic's ACLs do not let produce: refused as 403. (kfake
// answers a wrong password by closing the connection, which is retried;
// a real broker answers SASL_AUTHENTICATION_FAILED, classified as 403.)
func TestKafkaNotAllowed(t *testing.T) {
	c := startKafka(t, 0, kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("PLAIN", "admin", "admin-pw"), kfake.User("PLAIN", "hookd", "hookd-pw-55"))
	addr := c.ListenAddrs()[0]
	p := newPool(t, destination.Config{})
	ctx := ctxFor(t)
	if err := p.Send(ctx, "kafka://admin:admin-pw@"+addr+"/orders", signed(t, "evt_a1")); err != nil {
		t.Fatalf("Send as a user allowed: %v", err)
	}
	err := p.Send(ctx, "kafka://hookd:hookd-pw-55@"+addr+"/orders", signed(t, "evt_a2"))
	wantRefused(t, err, 403)
	if strings.Contains(err.Error(), "hookd-pw-55") {
		t.Fatalf("the error shows the password: %v", err)
	}
}

func TestKafkaBrokerRestart(t *testing.T) {
	dir := t.TempDir() // kept across the restart, as a broker's disk
	c := startKafka(t, 0, kfake.DataDir(dir))
	addr := c.ListenAddrs()[0]
	_, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	p := newPool(t, destination.Config{})
	ctx := ctxFor(t)
	url := "kafka://" + addr + "/orders"
	if err := p.Send(ctx, url, signed(t, "evt_1")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	wantTransient(t, p.Send(short, url, signed(t, "evt_2")))
	cancel()
	startKafka(t, port, kfake.DataDir(dir))
	if err := p.Send(ctx, url, signed(t, "evt_2")); err != nil {
		t.Fatalf("Send once Kafka is back: %v", err)
	}
	rs := consume(t, addr, "orders", 2)
	verify(t, kafkaHeaders(rs[1]), rs[1].Value, "evt_2")
}
