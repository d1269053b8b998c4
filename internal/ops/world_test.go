package ops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/hookdtest"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

// waitLimit only bounds a broken test; every wait ends on a signal.
const waitLimit = 15 * time.Second

// world is a hookd (its workers on for the setup, a loopback receiver)
// whose ops the tests call directly, with owners alice (standard), bob (standard), kw
// (kwork) and doomed (to be deleted), and alice's things: an event type,
// an http endpoint with two delivered events, a polling endpoint, grants
// and keys to spend.
type world struct {
	t        *testing.T
	h        hookdtest.Hookd
	svc      *ops.Service
	receiver *httptest.Server
	received chan struct{}
	logs     *hookdtest.Logs

	// Principals: an operator key naming no owner, and alice's keys.
	operator, admin, publisher ops.Principal

	ep, epDelete, poll           string // alice's endpoints
	grant, grantRevoke, grantDel string // alice's grants
	keyRevoke                    string // an admin key of alice's to revoke
	event                        string // published to ep, delivered
	delivery                     string // ep's delivery of event
	job                          int64  // its River job
	task                         int64  // a background recovery (TestCallAuthorizes)
	bobEndpoint                  string
}

func newWorld(t *testing.T, backend dbtest.Backend) *world {
	t.Helper()
	logs := hookdtest.NewLogs()
	cfg := hookdtest.Config(backend.Config(t))
	cfg.Log = logs.Logger(slog.LevelInfo)
	h := hookdtest.Open(t, cfg)
	w := &world{t: t, h: h, svc: h.Ops, logs: logs, received: make(chan struct{}, 100)}
	w.receiver = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.received <- struct{}{}
		rw.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(w.receiver.Close)

	w.operator = w.key("", owner.Operator)
	w.admin = w.key("alice", owner.Admin)
	w.publisher = w.key("alice", owner.Publisher)
	w.keyRevoke = w.key("alice", owner.Admin).KeyID
	w.key("bob", owner.Admin)
	w.call(w.operator, "owners.create", `{"id":"kw","profile":"kwork","attributes":{"app":"app_1","environment":"test"}}`)
	w.call(w.operator, "owners.create", `{"id":"doomed"}`)

	w.call(w.admin, "event_types.put", `{"name":"invoice.paid","exposure":"webhook"}`)
	w.ep = w.call(w.admin, "webhooks.create", `{"url":"`+w.receiver.URL+`/alice","event_types":["invoice.paid"]}`).(*ops.EndpointView).ID
	w.epDelete = w.call(w.admin, "webhooks.create", `{"url":"`+w.receiver.URL+`/doomed","event_types":["invoice.paid"],"enabled":false}`).(*ops.EndpointView).ID
	w.poll = w.call(w.admin, "webhooks.create", `{"kind":"poll","event_types":["invoice.paid"]}`).(*ops.EndpointView).ID
	w.grant = w.call(w.admin, "grants.create", `{"allow":["wiki://alice/*"]}`).(*ops.GrantView).ID
	w.grantRevoke = w.call(w.admin, "grants.create", `{"allow":["*"]}`).(*ops.GrantView).ID
	w.grantDel = w.call(w.admin, "grants.create", `{"allow":["*"]}`).(*ops.GrantView).ID
	bob := ops.Principal{Role: owner.Admin, OwnerID: "bob"}
	w.bobEndpoint = w.call(bob, "webhooks.create", `{"url":"`+w.receiver.URL+`/bob","event_types":["webhook.test"]}`).(*ops.EndpointView).ID

	// Two events, both delivered to ep (a recovery of both runs in the
	// background when the inline bound is 1).
	for range 2 {
		w.event = w.call(w.publisher, "events.publish", `{"type":"invoice.paid","subject":"invoice://inv_1","data":{"n":1}}`).(*delivery.Published).ID
	}
	w.waitDelivered(w.ep, 2)
	ds, err := h.DB.Q().ListDeliveries(t.Context(), "alice", w.ep, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.EventID == w.event {
			w.delivery, w.job = d.ID, d.JobID
		}
	}
	if w.job == 0 {
		t.Fatalf("no job for %s in %+v", w.event, ds)
	}
	// The workers stop here: the tests read what the ops answer and wrote,
	// and jobs they enqueue stay as enqueued (on SQLite, workers polling
	// the one connection would also slow every call under -race).
	stop, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.Stop(stop); err != nil {
		t.Fatalf("stop the workers: %v", err)
	}
	return w
}

// key makes an API key (its owner made too) and returns it as a principal.
func (w *world) key(ownerID string, role owner.Role) ops.Principal {
	w.t.Helper()
	k, err := w.svc.CreateKey(context.Background(), ownerID, role)
	if err != nil {
		w.t.Fatal(err)
	}
	return ops.Principal{KeyID: k.ID, Role: role, OwnerID: k.OwnerID}
}

// input decodes args (JSON, as the projections bind it) into op's input.
func input(t *testing.T, op *ops.Op, args string) any {
	t.Helper()
	in := op.NewInput()
	if args != "" {
		if err := json.Unmarshal([]byte(args), in); err != nil {
			t.Fatalf("%s input %s: %v", op.Name, args, err)
		}
	}
	return in
}

// try calls op name as p with args.
func (w *world) try(p ops.Principal, name, args string) (any, error) {
	w.t.Helper()
	op := w.svc.Op(name)
	if op == nil {
		w.t.Fatalf("no op %s", name)
	}
	return op.Call(context.Background(), p, input(w.t, op, args))
}

// call is try that must succeed.
func (w *world) call(p ops.Principal, name, args string) any {
	w.t.Helper()
	out, err := w.try(p, name, args)
	if err != nil {
		w.t.Fatalf("%s %s: %v", name, args, err)
	}
	return out
}

// waitDelivered waits until endpoint id of alice's has n deliveries, all
// delivered.
func (w *world) waitDelivered(id string, n int) {
	w.t.Helper()
	var ds []*endpoint.Delivery
	if !hookdtest.WaitFor(waitLimit, w.logs.Wrote(), func() bool {
		var err error
		if ds, err = w.h.DB.Q().ListDeliveries(context.Background(), "alice", id, 10, ""); err != nil {
			w.t.Fatal(err)
		}
		delivered := 0
		for _, d := range ds {
			if d.State == endpoint.Delivered {
				delivered++
			}
		}
		return delivered == n
	}) {
		w.t.Fatalf("deliveries %+v: want %d delivered", ds, n)
	}
}

// snapshot is everything the ops can change, read from the store: a
// refused call must leave it as it was.
func (w *world) snapshot() string {
	w.t.Helper()
	ctx := context.Background()
	q := w.h.DB.Q()
	var parts []any
	os, err := q.ListOwners(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	parts = append(parts, os)
	for _, o := range os {
		eps, err1 := q.ListEndpoints(ctx, o.ID, false)
		ks, err2 := q.ListAPIKeys(ctx, o.ID)
		gs, err3 := q.ListGrants(ctx, o.ID)
		ts, err4 := q.ListEventTypes(ctx, o.ID)
		for _, err := range []error{err1, err2, err3, err4} {
			if err != nil {
				w.t.Fatal(err)
			}
		}
		for _, e := range eps {
			parts = append(parts, e, e.SecretSealed, e.Enabled)
		}
		parts = append(parts, ks, gs, ts)
	}
	for _, table := range []string{"hookd_events", "hookd_deliveries", "hookd_audit", "hookd_portal_links", "hookd_portal_sessions", "hookd_poll_endpoints"} {
		parts = append(parts, table, dbtest.Count(w.t, w.h.DB, "SELECT count(*) FROM "+table))
	}
	b, err := json.Marshal(parts)
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

// wantErr checks err has code and a message holding each of says.
func wantErr(t *testing.T, what string, err error, code apperr.Code, says ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want %s", what, code)
		return
	}
	if got := apperr.CodeOf(err); got != code {
		t.Errorf("%s: %v, want %s (%d)", what, err, code, apperr.Status(code))
		return
	}
	msg := apperr.MessageOf(err)
	for _, s := range says {
		if !strings.Contains(msg, s) {
			t.Errorf("%s: message %q does not say %q", what, msg, s)
		}
	}
}

// changed shows where two snapshots part.
func changed(before, after string) string {
	i := 0
	for i < len(before) && i < len(after) && before[i] == after[i] {
		i++
	}
	from := max(0, i-200)
	return fmt.Sprintf("\nbefore …%.400s\nafter  …%.400s", before[from:], after[from:])
}

// jobNow is the River job of ep's delivery now (a resend or recovery gives
// it another).
func (w *world) jobNow() int64 {
	w.t.Helper()
	d, err := w.h.DB.Q().GetDelivery(context.Background(), "alice", w.ep, w.delivery)
	if err != nil {
		w.t.Fatal(err)
	}
	return d.JobID
}
