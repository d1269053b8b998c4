package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/owner"
)

// TestDestinationKinds: once the operator allows only sqs (hookd serve
// --destinations sqs), a new http endpoint, or an existing one pointed at
// a new http url, is refused over REST and MCP alike, naming url and the
// kinds this hookd accepts, and nothing changes; the endpoint saved
// before keeps its url, can still be edited otherwise, and still gets its
// events.
func TestDestinationKinds(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			b := setup(t, backend)
			key := b.key("acme", owner.Admin)
			cs := transports[0].connect(t, b, key)
			var ep struct {
				ID, URL, Description string
			}
			hook := b.receiver.URL + "/hook"
			mustCall(t, cs, "webhooks.create", map[string]any{"url": hook, "event_types": []string{"webhook.test"}}, &ep)

			// The operator restarts hookd with --destinations sqs: the
			// list is read on every call (SetDestinations), as a new process would.
			b.h.Ops.SetDestinations([]string{"sqs"})
			refused := func(how, msg string) {
				t.Helper()
				if !strings.HasPrefix(msg, "url: ") || !strings.Contains(msg, "no http destination") || !strings.Contains(msg, "it accepts sqs") {
					t.Errorf("%s: %q; want it to name url and say this hookd accepts sqs", how, msg)
				}
			}
			other := b.receiver.URL + "/other"
			for _, tr := range transports {
				cs := tr.connect(t, b, key)
				e := call(t, cs, "webhooks.create", map[string]any{"url": other, "event_types": []string{"webhook.test"}}, nil)
				if e == nil || e.Error.Code != "invalid" {
					t.Fatalf("%s: an http endpoint created with only sqs allowed: %+v", tr.name, e)
				}
				refused(tr.name+" create", e.Error.Message)
				e = call(t, cs, "webhooks.update", map[string]any{"id": ep.ID, "url": other, "description": "moved"}, nil)
				if e == nil || e.Error.Code != "invalid" {
					t.Fatalf("%s: an endpoint moved to a new http url with only sqs allowed: %+v", tr.name, e)
				}
				refused(tr.name+" update", e.Error.Message)
			}
			st, body := b.send(key, "POST", "/api/admin/webhooks", map[string]any{"url": other, "event_types": []string{"webhook.test"}})
			if st != http.StatusUnprocessableEntity {
				t.Fatalf("REST create: %d %s, want 422", st, body)
			}
			refused("REST create", body.Error.Message)
			st, body = b.send(key, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"url": other, "description": "moved"})
			if st != http.StatusUnprocessableEntity {
				t.Fatalf("REST update: %d %s, want 422", st, body)
			}
			refused("REST update", body.Error.Message)

			// Nothing changed: one endpoint, its url and description.
			var list struct {
				Data []struct{ ID, URL, Description string } `json:"data"`
			}
			mustCall(t, cs, "webhooks.list", nil, &list)
			if len(list.Data) != 1 || list.Data[0].URL != hook || list.Data[0].Description != "" {
				t.Fatalf("after the refusals: %+v", list.Data)
			}
			// The endpoint's own url given back (a form saving every field)
			// is no new destination: the rest of the change is saved.
			mustCall(t, cs, "webhooks.update", map[string]any{"id": ep.ID, "url": hook, "description": "kept"}, &ep)
			if ep.Description != "kept" || ep.URL != hook {
				t.Fatalf("an edit keeping the url: %+v", ep)
			}
			// And it still delivers.
			var sent struct {
				EventID string `json:"event_id"`
			}
			mustCall(t, cs, "webhooks.send_test", map[string]any{"id": ep.ID}, &sent)
			select {
			case got := <-b.received:
				if !bytes.Contains(got, []byte(sent.EventID)) {
					t.Errorf("the receiver got %s, want event %s", got, sent.EventID)
				}
			case <-time.After(waitLimit):
				t.Fatal("the existing http endpoint got no event once http was disallowed")
			}
			// An sqs endpoint is taken.
			mustCall(t, cs, "webhooks.create", map[string]any{"url": "sqs://AKID:s3cret@127.0.0.1:4566/000000000000/orders?region=us-east-1&tls=false", "event_types": []string{"webhook.test"}}, nil)
		})
	}
}

type restError struct {
	Error struct {
		Code, Message string
	} `json:"error"`
}

// send calls the REST API with a JSON body; it answers the status and the
// error body, if any.
func (b *bundle) send(key, method, path string, body any) (int, restError) {
	b.t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, b.api.URL+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var e restError
	_ = json.Unmarshal(out, &e)
	return resp.StatusCode, e
}
