package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/owner"
)

// TestSecretsShownOnce: an endpoint's secret is in the create and rotate
// answers only, and an API key's in its create answer only — never in a
// list, a get, the deliveries, the MCP tool listing, or the logs (captured
// at debug level, over a full create → test → deliver → rotate cycle).
func TestSecretsShownOnce(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			b := setup(t, backend)
			adminKey := b.key("acme", owner.Admin)
			secrets := []string{adminKey}
			var seen []string // every answer other than the create/rotate ones
			record := func(v any) {
				raw, _ := json.Marshal(v)
				seen = append(seen, string(raw))
			}
			for _, tr := range transports {
				cs := tr.connect(t, b, adminKey)
				var ep struct{ ID, Secret string }
				mustCall(t, cs, "webhooks.create", map[string]any{"url": b.receiver.URL, "event_types": []string{"webhook.test"}}, &ep)
				var rotated struct{ Secret string }
				mustCall(t, cs, "webhooks.rotate_secret", map[string]any{"id": ep.ID}, &rotated)
				var key struct{ ID, Secret string }
				mustCall(t, cs, "api_keys.create", map[string]any{"role": "publisher"}, &key)
				if ep.Secret == "" || rotated.Secret == "" || rotated.Secret == ep.Secret || key.Secret == "" {
					t.Fatalf("create %q, rotate %q, key %q: want two different endpoint secrets and a key secret", ep.Secret, rotated.Secret, key.Secret)
				}
				secrets = append(secrets, ep.Secret, rotated.Secret, key.Secret)
				// A polling endpoint's token: shown by create and
				// rotate_poll_token only, never by a read, a poll or a log.
				var polled struct {
					ID, Secret string
					PollToken  string `json:"poll_token"`
				}
				mustCall(t, cs, "webhooks.create", map[string]any{"kind": "poll", "event_types": []string{"webhook.test"}}, &polled)
				var newToken struct {
					PollToken string `json:"poll_token"`
				}
				mustCall(t, cs, "webhooks.rotate_poll_token", map[string]any{"id": polled.ID}, &newToken)
				if polled.PollToken == "" || newToken.PollToken == "" || newToken.PollToken == polled.PollToken {
					t.Fatalf("poll tokens %q then %q: want two different ones", polled.PollToken, newToken.PollToken)
				}
				secrets = append(secrets, polled.Secret, polled.PollToken, newToken.PollToken)
				seen = append(seen, b.rest(newToken.PollToken, "/api/v1/poll/"+polled.ID+"?wait=0.1s"))
				for _, tool := range []string{"webhooks.get", "webhooks.poll"} {
					var out any
					mustCall(t, cs, tool, map[string]any{"id": polled.ID}, &out)
					record(out)
				}

				var sent struct {
					EventID string `json:"event_id"`
				}
				mustCall(t, cs, "webhooks.send_test", map[string]any{"id": ep.ID}, &sent)
				select {
				case <-b.received:
				case <-time.After(waitLimit):
					t.Fatal("no delivery")
				}
				for _, c := range []struct {
					tool string
					args map[string]any
				}{
					{"webhooks.list", nil},
					{"webhooks.get", map[string]any{"id": ep.ID}},
					{"webhooks.update", map[string]any{"id": ep.ID, "description": "still secret"}},
					{"webhooks.deliveries", map[string]any{"id": ep.ID}},
					{"events.get", map[string]any{"id": sent.EventID}},
					{"api_keys.list", nil},
				} {
					var out any
					mustCall(t, cs, c.tool, c.args, &out)
					record(out)
				}
				tools, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				record(tools)
				for _, path := range []string{"/api/admin/webhooks", "/api/admin/webhooks/" + ep.ID, "/api/admin/webhooks/" + ep.ID + "/deliveries", "/api/admin/api_keys"} {
					seen = append(seen, b.rest(adminKey, path))
				}
			}
			if !strings.Contains(b.logs.String(), "mcp tool call") || !strings.Contains(b.logs.String(), "delivery attempt") {
				t.Fatal("tool calls and deliveries were not logged: the test would prove nothing")
			}
			for _, s := range secrets {
				if strings.Contains(b.logs.String(), s) {
					t.Errorf("a secret (%.10s…) is in the logs", s)
				}
				for _, answer := range seen {
					if strings.Contains(answer, s) {
						t.Errorf("a secret (%.10s…) is in an answer: %.200s", s, answer)
					}
				}
			}
		})
	}
}

// rest GETs path with key and returns the body (failing unless 200).
func (b *bundle) rest(key, path string) string {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.api.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		b.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return string(body)
}
