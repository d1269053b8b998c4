package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/hookd/hookd"
	"github.com/hookd/hookd/internal/dbtest"
)

// TestProducerCannotPublishHookdTypes: hookd.endpoint.* are hookd's own
// failure notifications. A producer publishing one, through the API, a
// batch or the library, gets a 422 (an invalid error) naming the type, and
// nothing is written: a batch with one of them publishes none of its
// events.
func TestProducerCannotPublishHookdTypes(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		b.registerType("good.type")
		b.endpoint(rc.URL, "*")
		before := counts(t, b)
		refused := func(what, typ string, status int, msg string) {
			t.Helper()
			if status != http.StatusUnprocessableEntity {
				t.Errorf("%s: status %d, want 422 (%s)", what, status, msg)
			}
			if !strings.Contains(msg, `"`+typ+`"`) || !strings.Contains(msg, "hookd's own") {
				t.Errorf("%s: error %q does not name %s as one of hookd's own types", what, msg, typ)
			}
		}
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		for _, typ := range []string{"hookd.endpoint.failing", "hookd.endpoint.disabled", "hookd.endpoint.recovered", "hookd.endpoint.other"} {
			st := b.do("POST", "/api/v1/events", map[string]any{"type": typ, "subject": "hookd://endpoints/ep_x", "data": map[string]any{}}, &e)
			refused("publish "+typ, typ, st, e.Error.Message)
		}
		st := b.do("POST", "/api/v1/events/batch", map[string]any{"events": []map[string]any{
			{"type": "good.type", "data": map[string]any{}},
			{"type": "hookd.endpoint.disabled", "data": map[string]any{}},
		}}, &e)
		refused("batch", "hookd.endpoint.disabled", st, e.Error.Message)
		if !strings.Contains(e.Error.Message, "events[1]") {
			t.Errorf("batch error %q does not say which event (events[1])", e.Error.Message)
		}

		// Nor may an owner redefine one: a schema or an internal exposure
		// would silence hookd's notifications.
		for _, in := range []map[string]any{
			{"exposure": "webhook", "schema": map[string]any{"type": "object", "required": []string{"nope"}}},
			{"exposure": "internal"},
		} {
			st := b.do("PUT", "/api/admin/event_types/hookd.endpoint.failing", in, &e)
			refused("redefine hookd.endpoint.failing", "hookd.endpoint.failing", st, e.Error.Message)
		}

		ctx := context.Background()
		good := hookd.Event{Owner: "acme", Type: "good.type", Data: []byte(`{}`)}
		own := hookd.Event{Owner: "acme", Type: "hookd.endpoint.recovered", Data: []byte(`{}`)}
		if _, err := b.h.Publish(ctx, good, own); err == nil || !strings.Contains(err.Error(), "hookd's own") {
			t.Errorf("library Publish: %v, want hookd's own types refused", err)
		}
		if err := inAppTx(t, b, func(tx any) error {
			_, err := b.h.PublishTx(ctx, tx, own)
			return err
		}); err == nil || !strings.Contains(err.Error(), `"hookd.endpoint.recovered"`) {
			t.Errorf("library PublishTx: %v, want the type named", err)
		}
		if after := counts(t, b); after != before {
			t.Fatalf("refused publishes wrote something: before %+v, after %+v", before, after)
		}
		// The producer's own types still go.
		b.publish("good.type", `{}`)
		rc.waitFor(t, 1, wait)
	})
}
