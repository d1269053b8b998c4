package destination_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/hookd/hookd/internal/destination"
	"github.com/hookd/hookd/internal/destination/brokertest"
	"github.com/hookd/hookd/internal/egress"
)

// BenchmarkSend is one signed message sent and acknowledged, in parallel
// as hookd's workers send, to each destination and, for comparison, to an
// HTTP receiver on loopback through the egress client. It measures the
// send alone, not hookd's delivery around it (hookd bench does). 50
// senders per CPU stand for hookd's 100 workers on 2 cores.
func BenchmarkSend(b *testing.B) {
	m := destination.Message{Body: make([]byte, 400), Headers: http.Header{"Webhook-Id": {"evt_b"}, "Webhook-Signature": {"v1,x"}}, EventID: "evt_b", Subject: "s"}
	b.Run("http", func(b *testing.B) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
		defer srv.Close()
		c := egress.New(egress.Config{Allow: loopback})
		b.SetParallelism(50)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Post(b.Context(), srv.URL, m.Headers, m.Body); err != nil {
					b.Error(err)
				}
			}
		})
	})
	sends := map[string]func(b *testing.B) string{
		"amqp": func(b *testing.B) string {
			q, _ := brokertest.RabbitQueue(b)
			return "amqp://guest:guest@" + brokertest.RabbitAddr + "/?routing_key=" + q
		},
		"nats": func(b *testing.B) string {
			brokertest.Need(b, "NATS", brokertest.NATSAddr)
			subject, _ := brokertest.NATSStream(b, brokertest.NATSAddr)
			return "nats://" + brokertest.NATSAddr + "/" + subject
		},
		"redis": func(b *testing.B) string {
			s, _ := brokertest.RedisStream(b)
			return "redis://" + brokertest.RedisAddr + "?stream=" + s + "&maxlen=1000"
		},
	}
	for _, name := range []string{"amqp", "nats", "redis"} {
		b.Run(name, func(b *testing.B) {
			url := sends[name](b)
			p := destination.New(destination.Config{Allow: loopback})
			defer p.Close()
			var n atomic.Int64
			b.SetParallelism(50)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m := m
					m.EventID = "evt_b" + strconv.FormatInt(n.Add(1), 10) // NATS would drop a repeated id
					if err := p.Send(b.Context(), url, m); err != nil {
						b.Error(err)
					}
				}
			})
		})
	}
}
