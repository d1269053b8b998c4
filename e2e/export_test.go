package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
)

// bulkDeliveries writes n failed deliveries of n events to an endpoint of
// acme's straight into the tables (one statement each, both engines): the
// export reads what hookd wrote, and sending 100,000 deliveries for real
// would take minutes.
func bulkDeliveries(t *testing.T, b *bundle, epID string, n int) {
	t.Helper()
	ctx := context.Background()
	now := b.clock.Now().UnixMicro()
	series := fmt.Sprintf(`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) `, n)
	pad := `substr('0000000' || CAST(i AS TEXT), length('0000000' || CAST(i AS TEXT)) - 6, 7)`
	data := `CAST('{"n":1}' AS BLOB)`
	if b.h.DB.Pool() != nil {
		data = `convert_to('{"n":1}', 'UTF8')`
	}
	stmts := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO hookd_events (id, owner_id, type, subject, occurred_at, data, created_at) ` + series +
			`SELECT 'evt_bulk' || ` + pad + `, 'acme', 'order.created', 'shop://orders/' || CAST(i AS TEXT), $1, ` + data + `, $1 FROM s`, []any{now}},
		{`INSERT INTO hookd_deliveries (id, owner_id, endpoint_id, event_id, event_type, state, attempts, last_status, last_error, created_at, updated_at, finished_at) ` + series +
			`SELECT 'dlv_bulk' || ` + pad + `, 'acme', $2, 'evt_bulk' || ` + pad + `, 'order.created', 'failed', 1, 410, 'HTTP 410 Gone', $1, $1, $1 FROM s`, []any{now, epID}},
	}
	for _, st := range stmts {
		var err error
		if pool := b.h.DB.Pool(); pool != nil {
			_, err = pool.Exec(ctx, st.sql, st.args...)
		} else {
			_, err = b.h.DB.SQLDB().ExecContext(ctx, st.sql, st.args...)
		}
		if err != nil {
			t.Fatalf("bulk insert: %v", err)
		}
	}
}

// TestExportStreamsFlat: 100,000 failed deliveries export as NDJSON, one
// delivery and its envelope a line, in order, while the heap stays flat
// (a page at a time, never the whole export in memory). Under the race
// detector (CI) 20,000, twenty pages: the race detector slows SQLite's
// bulk insert alone to minutes.
func TestExportStreamsFlat(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		b.registerType("order.created")
		ep := b.endpoint("http://127.0.0.1:9/never", "order.*")
		n := 100_000
		if raceEnabled {
			n = 20_000
		}
		began := time.Now()
		bulkDeliveries(t, b, ep.ID, n)
		t.Logf("bulk insert of %d: %s", n, time.Since(began))
		began = time.Now()
		// The live heap (after a collection) a quarter of the way in and
		// at the last line: a stream holds a page whatever its length; an
		// export held in memory grows with every line.
		live := func() int64 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return int64(m.HeapAlloc)
		}
		var early, late int64

		req, _ := http.NewRequest("GET", b.api.URL+"/api/admin/webhooks/"+ep.ID+"/deliveries/export?state=failed", nil)
		req.Header.Set("Authorization", "Bearer "+b.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
			t.Fatalf("export answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		lines, bytes := 0, 0
		prev := ""
		for sc.Scan() {
			var line struct {
				ID       string          `json:"id"`
				State    string          `json:"state"`
				EventID  string          `json:"event_id"`
				Envelope json.RawMessage `json:"envelope"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("line %d: %v", lines+1, err)
			}
			if line.State != "failed" || line.ID <= prev || !strings.Contains(string(line.Envelope), line.EventID) {
				t.Fatalf("line %d: %+v (after %s)", lines+1, line, prev)
			}
			prev = line.ID
			lines++
			bytes += len(sc.Bytes()) + 1
			switch lines {
			case n / 4:
				early = live()
			case n - 1:
				late = live()
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		grew := late - early
		t.Logf("exported %d deliveries, %.1f MB in %s; the live heap from a quarter of the way to the end: %+.1f MB", lines, float64(bytes)/(1<<20), time.Since(began), float64(grew)/(1<<20))
		if lines != n {
			t.Fatalf("exported %d deliveries, want %d", lines, n)
		}
		if grew > 2<<20 {
			t.Fatalf("the live heap grew %.1f MB over the last three quarters of a %.1f MB export: it is held in memory", float64(grew)/(1<<20), float64(bytes)/(1<<20))
		}

		// A bad filter answers 422 before any line; another owner, 404.
		if code := b.do("GET", "/api/admin/webhooks/"+ep.ID+"/deliveries/export?state=lost", nil, nil); code != 422 {
			t.Fatalf("export with state=lost answered %d, want 422", code)
		}
		if code := b.do("GET", "/api/admin/webhooks/"+ep.ID+"/deliveries/export?since=2026-12-05T00:00:00Z&until=2026-12-04T00:00:00Z", nil, nil); code != 422 {
			t.Fatalf("export with until before since answered %d, want 422", code)
		}
		if code := ownerBundle(b, "bob").do("GET", "/api/admin/webhooks/"+ep.ID+"/deliveries/export", nil, nil); code != 404 {
			t.Fatalf("another owner's export of acme's endpoint answered %d, want 404", code)
		}
	})
}

// TestExportPageBounded: webhooks.export_page (the export for MCP) ends a
// page once it passes 1 MiB, whatever the limit asked, and its cursor
// reads on to the rest: six deliveries of 240 KiB events come as five
// and one.
func TestExportPageBounded(t *testing.T) {
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		b.registerType("order.created")
		rc := newReceiver(t)
		rc.setRespond(func(*http.Request, int) (int, http.Header) { return http.StatusGone, nil })
		ep := b.endpoint(rc.URL, "order.*")
		big := strings.Repeat("x", 240<<10)
		var ids []string
		for i := range 6 {
			id := b.publish("order.created", fmt.Sprintf(`{"n":%d,"pad":%q}`, i, big))
			settleNudged(b, ep.ID, id, "failed")
			ids = append(ids, id)
		}
		type page struct {
			Data []struct {
				EventID  string          `json:"event_id"`
				Envelope json.RawMessage `json:"envelope"`
			} `json:"data"`
			NextCursor string `json:"next_cursor"`
			ExportURL  string `json:"export_url"`
		}
		var first, second page
		b.must(200, "GET", "/api/admin/webhooks/"+ep.ID+"/deliveries/export_page?limit=200", nil, &first)
		if len(first.Data) != 5 || first.NextCursor == "" {
			t.Fatalf("a page of six 240 KiB deliveries: %d lines, next %q; want 5 (past 1 MiB) and a cursor", len(first.Data), first.NextCursor)
		}
		if !strings.HasSuffix(first.ExportURL, "/api/admin/webhooks/"+ep.ID+"/deliveries/export") || !strings.HasPrefix(first.ExportURL, "http://") {
			t.Errorf("export_url %q, want the stream's absolute URL", first.ExportURL)
		}
		b.must(200, "GET", "/api/admin/webhooks/"+ep.ID+"/deliveries/export_page?limit=200&cursor="+first.NextCursor, nil, &second)
		if len(second.Data) != 1 || second.NextCursor != "" {
			t.Fatalf("the next page: %d lines, next %q; want the last one and no cursor", len(second.Data), second.NextCursor)
		}
		got := map[string]bool{}
		for _, l := range append(first.Data, second.Data...) {
			if len(l.Envelope) < 240<<10 {
				t.Errorf("delivery of %s without its whole envelope (%d bytes)", l.EventID, len(l.Envelope))
			}
			got[l.EventID] = true
		}
		for _, id := range ids {
			if !got[id] {
				t.Errorf("event %s is on no page", id)
			}
		}
		if code := b.do("GET", "/api/admin/webhooks/"+ep.ID+"/deliveries/export_page?cursor=xc_nope", nil, nil); code != 422 {
			t.Errorf("a garbage cursor answered %d, want 422", code)
		}
	})
}
