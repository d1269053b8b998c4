package e2e_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
)

// TestSinglePublishesFanOutInOneRoundTrip: once a type's rule was read,
// concurrent single publishes to an owner with an endpoint commit in one
// round trip each group, writing their fanout jobs' River rows themselves
// (internal/store/expected.go), and River works those jobs: every event
// reaches the endpoint once. (That River's producers hear the statement's
// notification, with no poll, is TestInsertExpectedJobs's.)
func TestSinglePublishesFanOutInOneRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.Backend{Name: "postgres", Config: dbtest.Postgres})
	rc := newReceiver(t)
	b.registerType("order.paid")
	b.endpoint(rc.URL, "order.*")
	first := b.publish("order.paid", `{"n":0}`) // reads the rule: the usual way
	rc.waitFor(t, 1, wait)

	const clients, each = 8, 8
	ids := make(chan string, clients*each)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				var out struct {
					ID string `json:"id"`
				}
				body := map[string]any{"type": "order.paid", "subject": "test://x", "data": map[string]int{"n": c*each + i + 1}}
				if code := b.do("POST", "/api/v1/events", body, &out); code != http.StatusAccepted || out.ID == "" {
					t.Errorf("publish: %d, id %q", code, out.ID)
					return
				}
				ids <- out.ID
			}
		})
	}
	wg.Wait()
	close(ids)
	want := map[string]bool{first: true}
	for id := range ids {
		want[id] = true
	}
	if len(want) != clients*each+1 {
		t.Fatalf("%d distinct events published, want %d", len(want), clients*each+1)
	}
	got := rc.waitFor(t, len(want), wait)
	seen := map[string]int{}
	for _, r := range got {
		seen[r.Header.Get("webhook-id")]++
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("event %s reached the endpoint %d times, want once", id, seen[id])
		}
	}
	fams := b.scrape()
	held := counter(fams, "hookd_publish_groups_total", map[string]string{"path": "one_round_trip"})
	usual := counter(fams, "hookd_publish_groups_total", map[string]string{"path": "usual"})
	if held < 1 {
		t.Errorf("%v groups committed in one round trip (%v the usual way): the publishes after the first did not take it", held, usual)
	}
	t.Logf("groups: %v in one round trip, %v the usual way", held, usual)
}
