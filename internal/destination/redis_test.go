package destination_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/destination"
	"github.com/hookd/hookd/internal/destination/brokertest"
)

const redisAddr = brokertest.RedisAddr

func TestRedis(t *testing.T) {
	stream, c := brokertest.RedisStream(t)
	p := newPool(t, destination.Config{})
	ctx := ctxFor(t)
	url := "redis://" + redisAddr + "/0?stream=" + stream + "&maxlen=100"
	if err := p.Send(ctx, url, signed(t, "evt_r1")); err != nil {
		t.Fatalf("Send: %v", err)
	}
	msgs, err := c.XRange(ctx, stream, "-", "+").Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("XRANGE = %v, %v; want 1 entry", msgs, err)
	}
	body, _ := msgs[0].Values["body"].(string)
	verify(t, msgs[0].Values, []byte(body), "evt_r1")

	// MAXLEN keeps the stream near its bound (approximate: whole nodes).
	for range 300 {
		if err := p.Send(ctx, url, signed(t, "evt_many")); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.XLen(ctx, stream).Val(); n > 200 {
		t.Fatalf("stream holds %d entries with maxlen=100", n)
	}

	// A key of another type: permanent (as 409). An unknown user: 403.
	if err := c.Set(ctx, stream+"-str", "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, p.Send(ctx, "redis://"+redisAddr+"?stream="+stream+"-str", signed(t, "evt_r2")), 409)
	err = p.Send(ctx, "redis://nobody:hunter2pw@"+redisAddr+"?stream="+stream, signed(t, "evt_r3"))
	wantRefused(t, err, 403)
	if strings.Contains(err.Error(), "hunter2pw") {
		t.Fatalf("the error shows the password: %v", err)
	}
}

func TestRedisBrokerRestart(t *testing.T) {
	stream, c := brokertest.RedisStream(t)
	px := brokertest.NewProxy(t, redisAddr)
	p := newPool(t, destination.Config{})
	ctx := ctxFor(t)
	url := "redis://" + px.Addr + "?stream=" + stream
	if err := p.Send(ctx, url, signed(t, "evt_1")); err != nil {
		t.Fatal(err)
	}
	px.Stop()
	wantTransient(t, p.Send(ctx, url, signed(t, "evt_2")))
	px.Start()
	if err := p.Send(ctx, url, signed(t, "evt_2")); err != nil {
		t.Fatalf("Send once Redis is back: %v", err)
	}
	if n := c.XLen(ctx, stream).Val(); n != 2 {
		t.Fatalf("%d entries, want 2", n)
	}
}
