package destination_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/hookd/hookd/internal/destination"
	"github.com/hookd/hookd/internal/destination/brokertest"
)

const rabbitAddr = brokertest.RabbitAddr

// get reads one message from queue.
func get(t *testing.T, ch *amqp.Channel, queue string) amqp.Delivery {
	t.Helper()
	return brokertest.Get(t, ch, queue, 5*time.Second)
}

func TestAMQP(t *testing.T) {
	queue, ch := brokertest.RabbitQueue(t)
	p := newPool(t, destination.Config{})
	ctx := ctxFor(t)
	m := signed(t, "evt_amqp1")
	if err := p.Send(ctx, "amqp://guest:guest@"+rabbitAddr+"/?routing_key="+queue, m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	d := get(t, ch, queue)
	verify(t, map[string]any(d.Headers), d.Body, "evt_amqp1")
	if d.DeliveryMode != amqp.Persistent || d.MessageId != "evt_amqp1" {
		t.Fatalf("delivery mode %d, message id %q: want persistent, the event id", d.DeliveryMode, d.MessageId)
	}

	// Permanent refusals: no queue bound (returned), no such exchange,
	// wrong password.
	wantRefused(t, p.Send(ctx, "amqp://guest:guest@"+rabbitAddr+"/?routing_key=no-such-queue-"+queue, m), 404)
	wantRefused(t, p.Send(ctx, "amqp://guest:guest@"+rabbitAddr+"/?exchange=no-such-exchange&routing_key=x", m), 404)
	err := p.Send(ctx, "amqp://guest:wrongpassword@"+rabbitAddr+"/?routing_key="+queue, m)
	wantRefused(t, err, 403)
	if strings.Contains(err.Error(), "wrongpassword") {
		t.Fatalf("the error shows the password: %v", err)
	}
	// The channel closed by the missing exchange is not reused: the
	// next send goes through.
	if err := p.Send(ctx, "amqp://guest:guest@"+rabbitAddr+"/?routing_key="+queue, signed(t, "evt_amqp2")); err != nil {
		t.Fatalf("Send after a refusal: %v", err)
	}
	verify(t, map[string]any(get(t, ch, queue).Headers), signed(t, "evt_amqp2").Body, "evt_amqp2")
}

// Many endpoints on one RabbitMQ share one connection; an idle one is
// closed after IdleAfter.
func TestAMQPPooled(t *testing.T) {
	queue, ch := brokertest.RabbitQueue(t)
	now := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	p := newPool(t, destination.Config{Now: clock, IdleAfter: 5 * time.Minute})
	ctx := ctxFor(t)
	for i := range 50 {
		// 50 endpoints: the same broker, different routing (the default
		// exchange with and without an explicit name).
		url := "amqp://guest:guest@" + rabbitAddr + "/?routing_key=" + queue
		if i%2 == 1 {
			url += "&exchange="
		}
		if err := p.Send(ctx, url, signed(t, "evt_pool")); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.Open(); n != 1 {
		t.Fatalf("%d connections for one broker, want 1", n)
	}
	for range 50 {
		get(t, ch, queue)
	}
	now = now.Add(4 * time.Minute)
	if n := p.CloseIdle(); n != 0 {
		t.Fatalf("closed %d connections idle 4 min, want 0", n)
	}
	now = now.Add(time.Minute)
	if n := p.CloseIdle(); n != 1 || p.Open() != 0 {
		t.Fatalf("closed %d, %d open after 5 idle minutes; want 1, 0", n, p.Open())
	}
	// And it is dialed again when needed.
	if err := p.Send(ctx, "amqp://guest:guest@"+rabbitAddr+"/?routing_key="+queue, signed(t, "evt_again")); err != nil {
		t.Fatal(err)
	}
	get(t, ch, queue)
}

// A broker that goes away is a failure that is retried; once it is back,
// the pool dials again and the send goes through.
func TestAMQPBrokerRestart(t *testing.T) {
	queue, ch := brokertest.RabbitQueue(t)
	px := brokertest.NewProxy(t, rabbitAddr)
	p := newPool(t, destination.Config{})
	ctx := ctxFor(t)
	url := "amqp://guest:guest@" + px.Addr + "/?routing_key=" + queue
	if err := p.Send(ctx, url, signed(t, "evt_r1")); err != nil {
		t.Fatal(err)
	}
	get(t, ch, queue)
	px.Stop()
	wantTransient(t, p.Send(ctx, url, signed(t, "evt_r2")))
	wantTransient(t, p.Send(ctx, url, signed(t, "evt_r2")))
	px.Start()
	if err := p.Send(ctx, url, signed(t, "evt_r2")); err != nil {
		t.Fatalf("Send once the broker is back: %v", err)
	}
	verify(t, map[string]any(get(t, ch, queue).Headers), signed(t, "evt_r2").Body, "evt_r2")
}

// Without loopback in the allow list the guard refuses the broker.
func TestAMQPEgressBlocked(t *testing.T) {
	p := destination.New(destination.Config{})
	t.Cleanup(p.Close)
	err := p.Send(ctxFor(t), "amqp://guest:guest@"+rabbitAddr+"/?routing_key=q", signed(t, "evt_b"))
	if err == nil || !strings.Contains(err.Error(), "egress blocked") {
		t.Fatalf("Send to loopback, not allowed = %v; want egress blocked", err)
	}
}

// Many sends at once share the connection's channels, each matched to
// its own confirm or return: those to an unbound routing key are
// refused as 404, the others acked and in the queue, exactly once each;
// a missing exchange closing a shared channel refuses only its own send.
func TestAMQPPipelined(t *testing.T) {
	queue, ch := brokertest.RabbitQueue(t)
	p := newPool(t, destination.Config{})
	ctx := ctxFor(t)
	good := "amqp://guest:guest@" + rabbitAddr + "/?routing_key=" + queue
	unbound := "amqp://guest:guest@" + rabbitAddr + "/?routing_key=no-such-queue-" + queue
	noExchange := "amqp://guest:guest@" + rabbitAddr + "/?exchange=no-such-exchange-" + queue + "&routing_key=x"
	const n = 200
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			url := good
			switch {
			case i%2 == 1:
				url = unbound
			case i == 100:
				url = noExchange
			}
			errs[i] = p.Send(ctx, url, signed(t, "evt_p"+strconv.Itoa(i)))
		})
	}
	wg.Wait()
	acked, retried := 0, 0
	for i, err := range errs {
		if i == 100 {
			wantRefused(t, err, 404) // the missing exchange's own send
			continue
		}
		if _, ok := destination.AsRefused(err); ok && i%2 == 1 {
			wantRefused(t, err, 404)
			continue
		}
		switch {
		case err == nil && i%2 == 0:
			acked++
		case err != nil:
			// On the channel the missing exchange closed: retried, never refused.
			wantTransient(t, err)
			retried++
		default:
			t.Fatalf("send %d to an unbound routing key was acked", i)
		}
	}
	if retried > amqpInFlightShare || acked == 0 {
		t.Fatalf("%d acked, %d retried", acked, retried)
	}
	// A send retried may have reached the queue before its channel closed
	// (at least once); none acked is missing.
	if got := brokertest.Count(t, ch, queue); got < acked || got > acked+retried {
		t.Fatalf("the queue holds %d messages; %d were acked, %d retried", got, acked, retried)
	}
}

// amqpInFlightShare bounds the sends that may fail with the channel the
// missing exchange closes: those on it at that moment.
const amqpInFlightShare = 100
