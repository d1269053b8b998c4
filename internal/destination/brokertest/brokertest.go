// Package brokertest gives tests the machine's real brokers (RabbitMQ,
// NATS JetStream, Redis), each with a queue, stream or key of the test's
// own, and a loopback proxy that makes a broker unreachable and back
// without stopping the shared server.
package brokertest

import (
	"context"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/hookd/hookd/internal/event"
)

// The machine's brokers (.ci/run starts them when they are down).
const (
	RabbitAddr = "127.0.0.1:5672"
	NATSAddr   = "127.0.0.1:4222"
	RedisAddr  = "127.0.0.1:6379"
)

// Need skips the test when no broker answers at addr; under CI=true it
// fails instead.
func Need(t testing.TB, name, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		_ = c.Close()
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not answering at %s (%v); CI must run it (.ci/run starts it)", name, addr, err)
	}
	t.Skipf("%s is not answering at %s: %v", name, addr, err)
}

// uniqueName is a lower-case name no other test uses.
func uniqueName(prefix string) string {
	return prefix + strings.ToLower(event.NewID("", time.Now()))
}

// RabbitQueue declares a durable queue of the test's own on the machine's
// RabbitMQ, deleted after the test, and returns it with a channel to read it.
func RabbitQueue(t testing.TB) (string, *amqp.Channel) {
	t.Helper()
	Need(t, "RabbitMQ", RabbitAddr)
	c, err := amqp.Dial("amqp://guest:guest@" + RabbitAddr + "/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueName("hookd-test-")
	if _, err := ch.QueueDeclare(name, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(name, false, false, false) })
	return name, ch
}

// Get reads one message from queue, waiting at most d for it.
func Get(t testing.TB, ch *amqp.Channel, queue string, d time.Duration) amqp.Delivery {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		m, ok, err := ch.Get(queue, true)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return m
		}
		time.Sleep(20 * time.Millisecond) // polling the broker: no signal to wait on
	}
	t.Fatalf("no message in %s within %s", queue, d)
	return amqp.Delivery{}
}

// Count is how many messages queue holds.
func Count(t testing.TB, ch *amqp.Channel, queue string) int {
	t.Helper()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return q.Messages
}

// NATSStream makes a stream of the test's own on the JetStream server at
// addr (deleted after the test) and returns its subject and the stream.
func NATSStream(t testing.TB, addr string) (string, jetstream.Stream) {
	t.Helper()
	nc, err := nats.Connect("nats://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.ToUpper(uniqueName("HOOKD_TEST_"))
	subject := "hookd.test." + strings.ToLower(name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Duplicates: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), name) })
	return subject, s
}

// RedisStream names a stream key of the test's own on the machine's
// Redis (it and name+"-str" deleted after the test) and returns a client.
func RedisStream(t testing.TB) (string, *redis.Client) {
	t.Helper()
	Need(t, "Redis", RedisAddr)
	c := redis.NewClient(&redis.Options{Addr: RedisAddr})
	name := uniqueName("hookd-test-")
	t.Cleanup(func() { _ = c.Del(context.Background(), name, name+"-str").Err(); _ = c.Close() })
	return name, c
}

// Proxy forwards loopback TCP to a real broker. Stop makes the broker
// unreachable (its connections cut, the port refusing) without stopping
// the machine's shared server; Start makes it reachable again on the same
// port.
type Proxy struct {
	t      testing.TB
	target string
	Addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
	wg     sync.WaitGroup
}

// NewProxy listens on a loopback port of its own for target.
func NewProxy(t testing.TB, target string) *Proxy {
	p := &Proxy{t: t, target: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() { p.Stop(); p.wg.Wait() })
	return p
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, b)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(b, c); _ = b.Close() }()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, b); _ = c.Close() }()
		}
	}()
}

// Stop closes the listener and cuts every connection.
func (p *Proxy) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// Start listens again on the same address.
func (p *Proxy) Start() {
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		p.t.Fatalf("proxy restart on %s: %v", p.Addr, err)
	}
	p.serve(ln)
}
