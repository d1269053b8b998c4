package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

// TestExport: ExportDeliveries (REST's stream) checks its caller and
// filter before the first line: a refusal starts nothing; a good filter
// writes one NDJSON line per delivery with its envelope.
// webhooks.export_page answers the same lines a bounded page at a time.
func TestExport(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			w := newWorld(t, backend)
			run := func(p ops.Principal, in ops.ExportIn) (started bool, lines []string, err error) {
				var buf bytes.Buffer
				err = w.svc.ExportDeliveries(context.Background(), p, &in, func() error { started = true; return nil },
					func(line []byte) error { buf.Write(line); return nil })
				if buf.Len() > 0 {
					lines = strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
				}
				return started, lines, err
			}
			for _, c := range []struct {
				name string
				p    ops.Principal
				in   ops.ExportIn
				code apperr.Code
				says string
			}{
				{"a publisher", w.publisher, ops.ExportIn{ID: w.ep}, apperr.Forbidden, "needs a admin key; this key is publisher"},
				{"an operator naming no owner", w.operator, ops.ExportIn{ID: w.ep}, apperr.Invalid, "must name the owner"},
				{"a bad state", w.admin, ops.ExportIn{ID: w.ep, State: "lost"}, apperr.Invalid, `state "lost" is not valid: use failed (default), delivered, pending or all`},
				{"a bad since", w.admin, ops.ExportIn{ID: w.ep, Since: "monday"}, apperr.Invalid, `since "monday" is not an RFC 3339 time`},
				{"since after until", w.admin, ops.ExportIn{ID: w.ep, Since: "2026-02-01T00:00:00Z", Until: "2026-01-01T00:00:00Z"}, apperr.Invalid, "must be before until"},
				{"a missing endpoint", w.admin, ops.ExportIn{ID: "ep_nope"}, apperr.NotFound, ""},
				{"bob's endpoint", w.admin, ops.ExportIn{ID: w.bobEndpoint}, apperr.NotFound, ""},
			} {
				started, lines, err := run(c.p, c.in)
				wantErr(t, c.name, err, c.code, c.says)
				if started || len(lines) > 0 {
					t.Errorf("%s: started %v, %d lines: a refusal writes nothing", c.name, started, len(lines))
				}
			}
			started, lines, err := run(w.admin, ops.ExportIn{ID: w.ep})
			if err != nil || !started || len(lines) != 0 {
				t.Errorf("failed ones (the default): %v %v %q, want started and none", err, started, lines)
			}
			asOperator := w.operator
			asOperator.OwnerID = "alice"
			for _, p := range []ops.Principal{w.admin, asOperator, {Role: owner.Admin, OwnerID: "alice"}} {
				_, lines, err = run(p, ops.ExportIn{ID: w.ep, State: "delivered"})
				if err != nil || len(lines) != 2 {
					t.Fatalf("delivered ones: %v, %d lines, want 2", err, len(lines))
				}
				for _, l := range lines {
					var line struct {
						ID, EventID, State string
						Envelope           json.RawMessage
					}
					if err := json.Unmarshal([]byte(l), &line); err != nil || line.State != "delivered" || !bytes.Contains(line.Envelope, []byte(`"type":"invoice.paid"`)) {
						t.Errorf("line %s: %v", l, err)
					}
				}
			}
			if _, all, _ := run(w.admin, ops.ExportIn{ID: w.ep, State: "all", Until: "2000-01-01T00:00:00Z"}); len(all) != 0 {
				t.Errorf("all until 2000: %d lines", len(all))
			}

			// webhooks.export_page (MCP's export): the stream's lines a page
			// at a time, a cursor between pages, and the stream's URL.
			_, stream, err := run(w.admin, ops.ExportIn{ID: w.ep, State: "all"})
			if err != nil || len(stream) < 2 {
				t.Fatalf("the whole export: %v, %d lines, want at least 2", err, len(stream))
			}
			var paged []string
			cursor := ""
			for range len(stream) + 1 {
				args := `{"id":"` + w.ep + `","state":"all","limit":1,"cursor":"` + cursor + `"}`
				page := w.call(w.admin, "webhooks.export_page", args).(*ops.ExportPageOut)
				if page.ExportURL != "/api/admin/webhooks/"+w.ep+"/deliveries/export?state=all" {
					t.Errorf("export_url %q, want the stream's path with the same filter", page.ExportURL)
				}
				for _, l := range page.Data {
					b, err := json.Marshal(l)
					if err != nil {
						t.Fatal(err)
					}
					paged = append(paged, string(b))
				}
				if cursor = page.NextCursor; cursor == "" {
					break
				}
				if len(page.Data) != 1 {
					t.Fatalf("a page of limit 1 with a next_cursor has %d lines", len(page.Data))
				}
			}
			if strings.Join(paged, "\n") != strings.Join(stream, "\n") {
				t.Errorf("the pages' lines differ from the stream's:\n%s\nwant\n%s", strings.Join(paged, "\n"), strings.Join(stream, "\n"))
			}
			whole := w.call(w.admin, "webhooks.export_page", `{"id":"`+w.ep+`","state":"all"}`).(*ops.ExportPageOut)
			if len(whole.Data) != len(stream) || whole.NextCursor != "" {
				t.Errorf("one page of the default limit: %d lines, next %q; want %d and no cursor", len(whole.Data), whole.NextCursor, len(stream))
			}
			asOperator.OwnerID = "alice"
			if u := w.call(asOperator, "webhooks.export_page", `{"id":"`+w.ep+`","since":"2026-01-01T00:00:00Z"}`).(*ops.ExportPageOut).ExportURL; u != "/api/admin/webhooks/"+w.ep+"/deliveries/export?owner=alice&since=2026-01-01T00%3A00%3A00Z" {
				t.Errorf("an operator's export_url %q: want the owner it acts on in it", u)
			}
		})
	}
}
