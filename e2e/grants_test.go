package e2e_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/delivery/hookstest"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
)

type grantOut struct {
	ID            string   `json:"id"`
	Allow         []string `json:"allow"`
	Deny          []string `json:"deny"`
	PublishedOnly bool     `json:"published_only"`
	Status        string   `json:"status"`
}

func (b *bundle) grant(body map[string]any) grantOut {
	b.t.Helper()
	var g grantOut
	b.must(201, "POST", "/api/admin/grants", body, &g)
	return g
}

// noteDelivered publishes one corpus.note.changed, runs its fanout, and
// reports whether it reached epID (fanout is final once run, so a miss is
// known without waiting for something not to happen).
func (b *bundle) noteDelivered(epID, subject, data string) bool {
	b.t.Helper()
	var out struct{ ID string }
	b.must(202, "POST", "/api/v1/events", map[string]any{"type": "corpus.note.changed", "subject": subject, "data": json.RawMessage(data)}, &out)
	b.fanoutNow(out.ID)
	return b.deliveryOf(epID, out.ID) != nil
}

const (
	notePublished   = `{"op":"updated","note_id":"n1","published":true,"was_published":true}`
	noteUnpublished = `{"op":"created","note_id":"n2","published":false,"was_published":false}`
	noteWas         = `{"op":"unpublished","note_id":"n3","published":false,"was_published":true}`
)

// TestGrants: the grants store end to end. Every rule is judged at fanout,
// afresh for each event: allow, deny, published_only, expiry, a revoke and
// an edit between two events, and a deleted grant, which leaves its
// endpoint admitting nothing scoped (and the endpoint says so).
func TestGrants(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend, setupOpts{mutate: withStandmeet})
		rc := newReceiver(t)
		docs := b.grant(map[string]any{"description": "embed on the docs site", "allow": []string{"wiki://software/*"}, "deny": []string{"wiki://software/secret/*"}})
		if docs.Status != "active" || !strings.HasPrefix(docs.ID, "grt_") {
			t.Fatalf("created grant %+v", docs)
		}
		var ep endpointOut
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"*"}, "grant_id": docs.ID}, &ep)

		// allow minus deny; not published-only, so unpublished notes go too.
		for _, c := range []struct {
			subject, data string
			want          bool
		}{
			{"wiki://software/project/standmeet/architecture", noteUnpublished, true},
			{"wiki://personal/diary", notePublished, false},
			{"wiki://software/secret/keys", notePublished, false},
			{"raw://software/x", notePublished, false},
		} {
			if got := b.noteDelivered(ep.ID, c.subject, c.data); got != c.want {
				t.Errorf("grant docs, %s: delivered %v, want %v", c.subject, got, c.want)
			}
		}

		// An edit applies to the next event: published_only.
		b.must(200, "PATCH", "/api/admin/grants/"+docs.ID, map[string]any{"published_only": true}, nil)
		for _, c := range []struct {
			data string
			want bool
		}{{notePublished, true}, {noteUnpublished, false}, {noteWas, true}} {
			if got := b.noteDelivered(ep.ID, "wiki://software/a", c.data); got != c.want {
				t.Errorf("published_only, %s: delivered %v, want %v", c.data, got, c.want)
			}
		}

		// A revoke between two events: the first goes, the second does not.
		if !b.noteDelivered(ep.ID, "wiki://software/a", notePublished) {
			t.Fatal("active grant refused a published note")
		}
		var g grantOut
		b.must(200, "POST", "/api/admin/grants/"+docs.ID+"/revoke", nil, &g)
		if g.Status != "revoked" {
			t.Fatalf("after revoke: %+v", g)
		}
		if b.noteDelivered(ep.ID, "wiki://software/a", notePublished) {
			t.Error("revoked grant admitted the next event")
		}
		if e := b.getEndpointGrant(ep.ID); e != "revoked" {
			t.Errorf("endpoint grant_status %q, want revoked", e)
		}
		// Unscoped types skip the grant: they still go.
		if id := b.publish("booking.created", `{"booking_id":"bk_1"}`); !b.fannedTo(ep.ID, id) {
			t.Error("an unscoped type did not reach the endpoint of a revoked grant")
		}

		// Expiry, by the engine's clock.
		soon := b.grant(map[string]any{"allow": []string{"*"}, "expires_at": b.clock.Now().Add(time.Hour)})
		b.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"grant_id": soon.ID}, nil)
		if !b.noteDelivered(ep.ID, "wiki://any", noteUnpublished) {
			t.Error("grant before its expiry refused a note")
		}
		b.clock.Advance(2 * time.Hour)
		if b.noteDelivered(ep.ID, "wiki://any", notePublished) {
			t.Error("expired grant admitted a note")
		}

		// Deleted: the endpoint keeps the id, admits nothing scoped, shows it.
		open := b.grant(map[string]any{"allow": []string{"*"}})
		b.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"grant_id": open.ID}, nil)
		if !b.noteDelivered(ep.ID, "wiki://any", notePublished) {
			t.Fatal("open grant refused a note")
		}
		b.must(204, "DELETE", "/api/admin/grants/"+open.ID, nil, nil)
		if b.noteDelivered(ep.ID, "wiki://any", notePublished) {
			t.Error("deleted grant admitted a note")
		}
		if e := b.getEndpointGrant(ep.ID); e != "deleted" {
			t.Errorf("endpoint grant_status %q, want deleted", e)
		}
		var list struct {
			Data []struct {
				ID          string `json:"id"`
				GrantID     string `json:"grant_id"`
				GrantStatus string `json:"grant_status"`
			}
		}
		b.must(200, "GET", "/api/admin/webhooks", nil, &list)
		if len(list.Data) != 1 || list.Data[0].GrantID != open.ID || list.Data[0].GrantStatus != "deleted" {
			t.Errorf("endpoint list %+v: want the deleted grant shown", list.Data)
		}
		// Given none: the published slice again.
		b.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"grant_id": ""}, nil)
		if !b.noteDelivered(ep.ID, "wiki://any", notePublished) || b.noteDelivered(ep.ID, "wiki://any", noteUnpublished) {
			t.Error("an endpoint without a grant does not see exactly the published slice")
		}
	})
}

func (b *bundle) getEndpointGrant(id string) string {
	b.t.Helper()
	var e struct {
		GrantStatus string `json:"grant_status"`
	}
	b.must(200, "GET", "/api/admin/webhooks/"+id, nil, &e)
	return e.GrantStatus
}

func (b *bundle) fannedTo(epID, eventID string) bool {
	b.t.Helper()
	b.fanoutNow(eventID)
	return b.deliveryOf(epID, eventID) != nil
}

// TestGrantsAPI: the grants ops' answers to bad input and to other owners.
func TestGrantsAPI(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend, setupOpts{mutate: withStandmeet})
		mine := b.grant(map[string]any{"allow": []string{"wiki://*"}})
		var list struct{ Data []grantOut }
		b.must(200, "GET", "/api/admin/grants", nil, &list)
		if len(list.Data) != 1 || list.Data[0].ID != mine.ID || list.Data[0].Allow[0] != "wiki://*" || list.Data[0].Deny == nil {
			t.Fatalf("grants list %+v", list.Data)
		}
		b.must(200, "GET", "/api/admin/grants/"+mine.ID, nil, nil)
		errMsg := func(want int, method, path string, body any) string {
			t.Helper()
			var e struct{ Error struct{ Message string } }
			if got := b.do(method, path, body, &e); got != want {
				t.Fatalf("%s %s: %d %s, want %d", method, path, got, e.Error.Message, want)
			}
			return e.Error.Message
		}
		errMsg(422, "POST", "/api/admin/grants", map[string]any{"allow": []string{}})
		errMsg(422, "POST", "/api/admin/grants", map[string]any{"allow": []string{"wiki://a b"}})
		errMsg(422, "POST", "/api/admin/grants", map[string]any{"allow": []string{"*"}, "expires_at": b.clock.Now().Add(-time.Minute)})
		errMsg(422, "POST", "/api/admin/grants", `{"allow": "*"}`)
		errMsg(400, "POST", "/api/admin/grants", `{"allow": [`)
		errMsg(404, "GET", "/api/admin/grants/grt_nope", nil)

		// Another owner's grant: invisible to acme, and a 422 as a grant_id.
		ctx := t.Context()
		if _, err := b.h.Ops.CreateOwner(ctx, "bob", "standard", nil); err != nil {
			t.Fatal(err)
		}
		k, err := b.h.Ops.CreateKey(ctx, "bob", owner.Admin)
		if err != nil {
			t.Fatal(err)
		}
		bob := *b
		bob.key = k.Secret
		theirs := bob.grant(map[string]any{"allow": []string{"*"}})
		errMsg(404, "GET", "/api/admin/grants/"+theirs.ID, nil)
		errMsg(404, "POST", "/api/admin/grants/"+theirs.ID+"/revoke", nil)
		errMsg(404, "DELETE", "/api/admin/grants/"+theirs.ID, nil)
		for _, id := range []string{theirs.ID, "grt_unknown"} {
			msg := errMsg(422, "POST", "/api/admin/webhooks", map[string]any{"url": "http://127.0.0.1:9/x", "event_types": []string{"*"}, "grant_id": id})
			if !strings.Contains(msg, "not one of your grants") {
				t.Errorf("grant_id %s: %q", id, msg)
			}
		}
		ep := b.endpoint("http://127.0.0.1:9/x", "*")
		errMsg(422, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"grant_id": theirs.ID})
		if got := b.getEndpointGrant(ep.ID); got != "" {
			t.Errorf("refused update changed the endpoint: grant_status %q", got)
		}
		// Revoking twice keeps the first time; deleting twice is a 404.
		var r1, r2 struct {
			RevokedAt time.Time `json:"revoked_at"`
		}
		b.must(200, "POST", "/api/admin/grants/"+mine.ID+"/revoke", nil, &r1)
		b.clock.Advance(time.Minute)
		b.must(200, "POST", "/api/admin/grants/"+mine.ID+"/revoke", nil, &r2)
		if !r1.RevokedAt.Equal(r2.RevokedAt) || r1.RevokedAt.IsZero() {
			t.Errorf("revoked_at %s then %s", r1.RevokedAt, r2.RevokedAt)
		}
		b.must(204, "DELETE", "/api/admin/grants/"+mine.ID, nil, nil)
		errMsg(404, "DELETE", "/api/admin/grants/"+mine.ID, nil)
	})
}

// TestLibraryScopeSource: a program that keeps access codes of its own
// passes Config.Scope; endpoints name its codes as grant_id, and it
// is asked for every scoped event instead of the grants store.
func TestLibraryScopeSource(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		var asked atomic.Int32
		b := setup(t, backend, setupOpts{mutate: func(c *app.Config) {
			withStandmeet(c)
			c.Scope = func(_ context.Context, code string, ev *event.Event) (bool, error) {
				asked.Add(1)
				return code == "code_ok" && strings.HasPrefix(ev.Subject, "wiki://"), nil
			}
		}})
		var ok, no endpointOut
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": "http://127.0.0.1:9/ok", "event_types": []string{"*"}, "grant_id": "code_ok"}, &ok)
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": "http://127.0.0.1:9/no", "event_types": []string{"*"}, "grant_id": "code_revoked"}, &no)
		var out struct{ ID string }
		b.must(202, "POST", "/api/v1/events", map[string]any{"type": "corpus.note.changed", "subject": "wiki://a", "data": json.RawMessage(noteUnpublished)}, &out)
		b.fanoutNow(out.ID)
		if b.deliveryOf(ok.ID, out.ID) == nil || b.deliveryOf(no.ID, out.ID) != nil {
			t.Fatal("the program's source was not what decided")
		}
		if asked.Load() < 2 {
			t.Fatalf("source asked %d times, want once per endpoint per fanout", asked.Load())
		}
	})
}

// TestGrantRevokedBeforeTakenAlong: a fanout that read the grants, then
// took along an event published after a revoke, judges that event by the
// revoke. (It read the scope view before its transaction, and the events
// it takes along inside it.)
func TestGrantRevokedBeforeTakenAlong(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend, setupOpts{noWork: true, mutate: withStandmeet})
		rc := newReceiver(t)
		g := b.grant(map[string]any{"allow": []string{"wiki://software/*"}})
		var ep endpointOut
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"*"}, "grant_id": g.ID}, &ep)
		publish := func() string {
			var out struct{ ID string }
			b.must(202, "POST", "/api/v1/events", map[string]any{"type": "corpus.note.changed", "subject": "wiki://software/a", "data": json.RawMessage(notePublished)}, &out)
			return out.ID
		}
		first := publish()
		var later string
		hookstest.Set(t, b.h.Delivery, &delivery.Hooks{BeforeFanoutTx: func(eventID string) {
			if eventID != first || later != "" {
				return
			}
			// Between the fanout's read of the grants and its transaction.
			b.must(200, "POST", "/api/admin/grants/"+g.ID+"/revoke", nil, nil)
			later = publish()
		}})
		b.fanoutNow(first)
		hookstest.Set(t, b.h.Delivery, nil)
		if later == "" {
			t.Fatal("the hook never ran")
		}
		// first may go or not (its fanout ran after the revoke, and may
		// have judged it by either view); later must not.
		b.fanoutNow(later) // a no-op if the first fanout took it along
		if b.deliveryOf(ep.ID, later) != nil {
			t.Error("an event published after the revoke reached the endpoint: judged by the grants read before it")
		}
	})
}

// TestGrantSwitchedBeforeTakenAlong: a fanout that read the endpoints,
// then took along an event published after an endpoint was moved to
// another grant, judges that event by the endpoint's new grant. (It read
// the endpoints before its transaction; an event taken along inside it
// must not be judged by the endpoint as it was before that event's
// publish: nothing else fans it out again.)
func TestGrantSwitchedBeforeTakenAlong(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend, setupOpts{noWork: true, mutate: withStandmeet})
		rc := newReceiver(t)
		closed := b.grant(map[string]any{"allow": []string{"wiki://software/*"}})
		b.must(200, "POST", "/api/admin/grants/"+closed.ID+"/revoke", nil, nil)
		open := b.grant(map[string]any{"allow": []string{"*"}})
		var ep endpointOut
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"*"}, "grant_id": closed.ID}, &ep)
		publish := func() string {
			var out struct{ ID string }
			b.must(202, "POST", "/api/v1/events", map[string]any{"type": "corpus.note.changed", "subject": "wiki://software/a", "data": json.RawMessage(notePublished)}, &out)
			return out.ID
		}
		first := publish()
		var later string
		hookstest.Set(t, b.h.Delivery, &delivery.Hooks{BeforeFanoutTx: func(eventID string) {
			if eventID != first || later != "" {
				return
			}
			// Between the fanout's read of the endpoints and its transaction.
			b.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"grant_id": open.ID}, nil)
			later = publish()
		}})
		b.fanoutNow(first)
		hookstest.Set(t, b.h.Delivery, nil)
		if later == "" {
			t.Fatal("the hook never ran")
		}
		n, err := b.h.DB.Count(context.Background(), `SELECT count(*) FROM hookd_events WHERE id = $1 AND fanout_job = 0`, later)
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatal("the first fanout did not take the later event along: nothing here was tested")
		}
		// No fanoutNow(later): its fanout job is gone, nothing fans it
		// out again.
		if b.deliveryOf(ep.ID, later) == nil {
			t.Error("an event published after the endpoint moved to an open grant did not reach it: judged by the endpoint read before it")
		}
	})
}
