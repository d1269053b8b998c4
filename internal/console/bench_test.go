package console_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/hookdtest"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// benchSite is hookd without workers, a signed-in admin cookie, and data
// written straight to the store (the pages are what is measured).
type benchSite struct {
	h      hookdtest.Hookd
	srv    *httptest.Server
	cookie *http.Cookie
}

func newBenchSite(b *testing.B, backend dbtest.Backend) *benchSite {
	b.Helper()
	cfg := hookdtest.Config(backend.Config(b))
	cfg.Work = false
	cfg.EventTypes = catalog
	h := hookdtest.Open(b, cfg)
	srv := httptest.NewServer(h.Handler())
	b.Cleanup(srv.Close)
	k, err := h.Ops.CreateKey(context.Background(), "acme", owner.Admin)
	if err != nil {
		b.Fatal(err)
	}
	// Sign in once, as a browser would.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/admin/signin", bytes.NewBufferString("key="+k.Secret))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if len(resp.Cookies()) != 1 {
		b.Fatalf("sign-in: %d, no cookie", resp.StatusCode)
	}
	return &benchSite{h: h, srv: srv, cookie: resp.Cookies()[0]}
}

// seed makes n endpoints and per deliveries for each, spread over the last
// 24 h in every state.
func (s *benchSite) seed(b *testing.B, n, per int) []string {
	b.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	var ids []string
	err := s.h.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		for i := range n {
			e := &endpoint.Endpoint{ID: event.NewID("ep_", now), OwnerID: "acme", URL: fmt.Sprintf("https://example.com/hook/%d", i),
				Description: "endpoint " + fmt.Sprint(i), EventTypes: []string{"invoice.paid", "order.*"}, SecretSealed: []byte("x"),
				Enabled: true, MaxInFlight: 1, CreatedAt: now, UpdatedAt: now}
			if err := q.CreateEndpoint(ctx, e); err != nil {
				return err
			}
			ids = append(ids, e.ID)
			ds := make([]*endpoint.Delivery, 0, per)
			for j := range per {
				at := now.Add(-time.Duration(j) * 24 * time.Hour / time.Duration(per))
				d := &endpoint.Delivery{ID: event.NewID("dlv_", at), OwnerID: "acme", EndpointID: e.ID, EventID: event.NewID("evt_", at),
					EventType: []string{"invoice.paid", "order.shipped", "order.cancelled"}[j%3], JobID: int64(j + 1),
					State:    []endpoint.DeliveryState{endpoint.Delivered, endpoint.Delivered, endpoint.Failed, endpoint.Pending}[j%4],
					Attempts: 1 + j%3, CreatedAt: at, UpdatedAt: at}
				ds = append(ds, d)
			}
			if _, err := q.InsertDeliveries(ctx, ds); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return ids
}

func (s *benchSite) get(b *testing.B, path string) {
	req, _ := http.NewRequest(http.MethodGet, s.srv.URL+path, nil)
	req.AddCookie(s.cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
}

// BenchmarkEndpointList is the Webhooks page of an owner with 1,000
// endpoints and 100,000 deliveries in the last 24 h (their counts and
// latest results are on the page).
func BenchmarkEndpointList(b *testing.B) {
	for _, backend := range dbtest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			s := newBenchSite(b, backend)
			s.seed(b, 1000, 100)
			b.ResetTimer()
			for b.Loop() {
				s.get(b, "/admin/webhooks")
			}
		})
	}
}

// BenchmarkDeliveryLog is one endpoint's log over 100,000 deliveries: the
// first page, a page filtered by state and type, and a page deep in.
func BenchmarkDeliveryLog(b *testing.B) {
	for _, backend := range dbtest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			s := newBenchSite(b, backend)
			ep := s.seed(b, 1, 100_000)[0]
			half, err := s.h.DB.Q().ListDeliveries(context.Background(), "acme", ep, 50_000, "")
			if err != nil {
				b.Fatal(err)
			}
			deep := half[len(half)-1].ID
			for name, path := range map[string]string{
				"first":    "/admin/webhooks/" + ep + "/deliveries",
				"filtered": "/admin/webhooks/" + ep + "/deliveries?state=failed&event_type=order.shipped",
				"deep":     "/admin/webhooks/" + ep + "/deliveries?before=" + deep,
				"endpoint": "/admin/webhooks/" + ep,
			} {
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						s.get(b, path)
					}
				})
			}
		})
	}
}
