package destination_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookd/hookd/internal/destination"
	"github.com/hookd/hookd/internal/destination/brokertest"
	"github.com/hookd/hookd/internal/event"
)

const natsAddr = brokertest.NATSAddr

// next reads the stream's message seq.
func next(t *testing.T, s jetstream.Stream, seq uint64) *jetstream.RawStreamMsg {
	t.Helper()
	m, err := s.GetMsg(ctxFor(t), seq)
	if err != nil {
		t.Fatalf("stream message %d: %v", seq, err)
	}
	return m
}

func TestNATS(t *testing.T) {
	brokertest.Need(t, "NATS", natsAddr)
	subject, s := brokertest.NATSStream(t, natsAddr)
	p := newPool(t, destination.Config{})
	ctx := ctxFor(t)
	url := "nats://" + natsAddr + "/" + subject
	m := signed(t, "evt_nats1")
	if err := p.Send(ctx, url, m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := next(t, s, 1)
	verify(t, map[string][]string(got.Header), got.Data, "evt_nats1")
	if got.Header.Get("Nats-Msg-Id") != "evt_nats1" {
		t.Fatalf("Nats-Msg-Id = %q, want the event id", got.Header.Get("Nats-Msg-Id"))
	}
	// The same event again (a retry whose ack was lost): the stream's
	// duplicate window keeps one.
	if err := p.Send(ctx, url, m); err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("%d messages after the same event twice, want 1", info.State.Msgs)
	}
	// No stream takes the subject: a missing queue.
	wantRefused(t, p.Send(ctx, "nats://"+natsAddr+"/hookd.nostream."+strings.ToLower(event.NewID("", time.Now())), m), 404)
}

// startNATS runs a JetStream server in the test's process, on port (0:
// any) with its store in dir: stopping it is a broker restart.
func startNATS(t *testing.T, port int, dir string) *natsserver.Server {
	t.Helper()
	s, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("in-process NATS did not start")
	}
	return s
}

func TestNATSBrokerRestart(t *testing.T) {
	dir := t.TempDir()
	srv := startNATS(t, -1, dir)
	addr := srv.Addr().(*net.TCPAddr)
	hostPort := fmt.Sprintf("127.0.0.1:%d", addr.Port)
	subject, _ := brokertest.NATSStream(t, hostPort)
	p := newPool(t, destination.Config{})
	url := "nats://" + hostPort + "/" + subject
	ctx := ctxFor(t)
	if err := p.Send(ctx, url, signed(t, "evt_n1")); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	short, cancel := context.WithTimeout(ctx, time.Second)
	wantTransient(t, p.Send(short, url, signed(t, "evt_n2")))
	cancel()
	srv = startNATS(t, addr.Port, dir)
	t.Cleanup(srv.Shutdown)
	// nats.go reconnects by itself; the send waits for the stream's ack.
	var err error
	for range 50 { // bounded: the client reconnects within its ReconnectWait (2 s)
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		err = p.Send(short, url, signed(t, "evt_n2"))
		cancel()
		if err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("Send once the broker is back: %v", err)
	}
	nc, err := nats.Connect("nats://" + hostPort)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	names, seen := js.StreamNames(ctx), 0
	for name := range names.Name() {
		seen++
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		got := next(t, s, 2)
		verify(t, map[string][]string(got.Header), got.Data, "evt_n2")
	}
	if seen != 1 {
		t.Fatalf("%d streams on the restarted server, want the test's 1", seen)
	}
}
