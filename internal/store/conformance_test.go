package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
)

// The store's conformance suite, as River's driver suite is for its
// drivers: every exported method of *Q and *DB is called by a test of this
// package, and every such test runs on both engines (setup: dbtest.Backends).
// TestConformanceCoversEveryMethod keeps it so; the tests below are the
// methods no other test of the package called.

// untestedHere lists the methods the store's own tests do not call yet: they
// run on both engines only through the tests of their callers (ops,
// delivery, console, the end-to-end tests). The list may only shrink:
// TestConformanceCoversEveryMethod fails when a listed method gets a test
// here (take it off) or a new method has none.
var untestedHere = []string{
	"ExportPage", "InFlightByOwner", "Jobs",
	"MoveEndpointJobs", "MoveJob", "OrderedAttempts",
	"OrderedHead", "ResetDeliveryFrom", "RestampRate", "RetryNow", "WakeJob",
}

// TestConformanceCoversEveryMethod: every exported method of *store.Q and
// *store.DB is called (".Name(") by a test file of this package, or is
// listed in untestedHere, and nothing listed there has a test.
func TestConformanceCoversEveryMethod(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	must(t, err)
	var methods []string
	var tests bytes.Buffer
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			b, err := os.ReadFile(f)
			must(t, err)
			tests.Write(b)
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		must(t, err)
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() {
				continue
			}
			star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			if id, ok := star.X.(*ast.Ident); ok && (id.Name == "Q" || id.Name == "DB") {
				methods = append(methods, fd.Name.Name)
			}
		}
	}
	if len(methods) < 100 {
		t.Fatalf("found %d methods of *Q and *DB: the parse missed the store's files", len(methods))
	}
	src := tests.String()
	for _, m := range methods {
		called := regexp.MustCompile(`\.` + m + `\(`).MatchString(src)
		listed := slices.Contains(untestedHere, m)
		switch {
		case !called && !listed:
			t.Errorf("%s has no test in internal/store: add one that runs on both engines (setup)", m)
		case called && listed:
			t.Errorf("%s is tested now: take it off untestedHere", m)
		}
	}
	for _, m := range untestedHere {
		if !slices.Contains(methods, m) {
			t.Errorf("untestedHere names %s, which is no method of *Q or *DB", m)
		}
	}
}

// TestEndpointCredentialsAndDisable: an endpoint's sealed credentials are
// kept, replaced and dropped; DisableEndpoint disables an enabled endpoint
// once, with its reason.
func TestEndpointCredentialsAndDisable(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		e := s.endpoint("acme", 1)
		if got, err := s.q.EndpointCredentials(s.ctx, e.ID); err != nil || got != nil {
			t.Fatalf("none yet: %v, %v", got, err)
		}
		must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error { return q.SetEndpointCredentials(s.ctx, e.ID, []byte("sealed-1")) }))
		must(t, s.q.SetEndpointCredentials(s.ctx, e.ID, []byte("sealed-2")))
		if got, err := s.q.EndpointCredentials(s.ctx, e.ID); err != nil || string(got) != "sealed-2" {
			t.Fatalf("after replace: %q, %v", got, err)
		}
		must(t, s.q.SetEndpointCredentials(s.ctx, e.ID, nil))
		if got, err := s.q.EndpointCredentials(s.ctx, e.ID); err != nil || got != nil {
			t.Fatalf("after drop: %q, %v", got, err)
		}

		ok, err := s.q.DisableEndpoint(s.ctx, e.ID, "receiver asked", ts(t0.Add(time.Minute)))
		must(t, err)
		if !ok {
			t.Fatal("DisableEndpoint of an enabled endpoint said it did not disable it")
		}
		if ok, err = s.q.DisableEndpoint(s.ctx, e.ID, "again", ts(t0.Add(2*time.Minute))); err != nil || ok {
			t.Fatalf("a second DisableEndpoint: %v, %v (want false)", ok, err)
		}
		got, err := s.q.GetEndpoint(s.ctx, "acme", e.ID)
		must(t, err)
		if got.Enabled || got.DisabledReason != "receiver asked" {
			t.Fatalf("disabled endpoint reads enabled=%v reason %q", got.Enabled, got.DisabledReason)
		}
		if ok, err = s.q.DisableEndpoint(s.ctx, "ep_none", "x", ts(t0)); err != nil || ok {
			t.Fatalf("DisableEndpoint of none: %v, %v", ok, err)
		}
	})
}

// TestDeliveryReads: GetDelivery is an owner's delivery of its endpoint,
// and EventDeliveries an event's deliveries, no other owner's.
func TestDeliveryReads(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		s.owner("beta")
		e1, e2 := s.endpoint("acme", 1), s.endpoint("acme", 1)
		ev := s.event("acme")
		d1 := newDelivery("acme", e1.ID, ev.ID, t0)
		d2 := newDelivery("acme", e2.ID, ev.ID, t0.Add(time.Millisecond))
		s.deliveries(d1, d2)
		got, err := s.q.GetDelivery(s.ctx, "acme", e1.ID, d1.ID)
		must(t, err)
		if got.ID != d1.ID || got.EventID != ev.ID || got.State != endpoint.Pending {
			t.Fatalf("GetDelivery = %+v", got)
		}
		if _, err := s.q.GetDelivery(s.ctx, "beta", e1.ID, d1.ID); !store.NotFound(err) && apperr.CodeOf(err) != apperr.NotFound {
			t.Fatalf("another owner's GetDelivery: %v, want not found", err)
		}
		if _, err := s.q.GetDelivery(s.ctx, "acme", e2.ID, d1.ID); !store.NotFound(err) && apperr.CodeOf(err) != apperr.NotFound {
			t.Fatalf("GetDelivery through another endpoint: %v, want not found", err)
		}
		list, err := s.q.EventDeliveries(s.ctx, "acme", ev.ID)
		must(t, err)
		ids := pluck(list, func(d *endpoint.Delivery) string { return d.ID })
		slices.Sort(ids)
		want := []string{d1.ID, d2.ID}
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Fatalf("EventDeliveries = %v, want %v", ids, want)
		}
		if other, err := s.q.EventDeliveries(s.ctx, "beta", ev.ID); err != nil || len(other) != 0 {
			t.Fatalf("another owner's EventDeliveries: %d, %v", len(other), err)
		}
	})
}

// TestSeamEntryPoints: Ping answers; DB.Relaxed writes and reads like Q;
// WithTx writes inside the caller's own transaction (rolled back: gone;
// committed: there) and refuses the other engine's transaction type; InTx
// with each option commits.
func TestSeamEntryPoints(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		must(t, s.db.Ping(s.ctx))
		s.owner("acme")
		s.exec(`CREATE TABLE seam_rows (id text PRIMARY KEY)`)
		insert := func(q *store.Q, id string) error {
			_, err := q.Exec(s.ctx, `INSERT INTO seam_rows (id) VALUES ($1)`, id)
			return err
		}
		must(t, insert(s.db.Relaxed(), "relaxed"))
		for i, opts := range []store.TxOptions{{}, {Relaxed: true}, {Foreground: true}, {Relaxed: true, Foreground: true}} {
			id := string(rune('a' + i))
			must(t, s.db.InTx(s.ctx, opts, func(q *store.Q) error { return insert(q, id) }))
			boom := errors.New("boom")
			if err := s.db.InTx(s.ctx, opts, func(q *store.Q) error {
				if err := insert(q, id+"-rolled-back"); err != nil {
					return err
				}
				return boom
			}); !errors.Is(err, boom) {
				t.Fatalf("InTx(%+v) returned %v, want fn's error", opts, err)
			}
		}
		if n := s.count(`SELECT count(*) FROM seam_rows`); n != 5 {
			t.Fatalf("%d rows, want 5 (relaxed, a-d; none rolled back)", n)
		}

		if p := s.db.Pool(); p != nil {
			if _, err := s.db.WithTx((*sql.Tx)(nil)); err == nil || !strings.Contains(err.Error(), "pass a pgx.Tx") {
				t.Fatalf("WithTx of a *sql.Tx on PostgreSQL: %v, want a refusal that names pgx.Tx", err)
			}
			for _, commit := range []bool{false, true} {
				tx, err := p.Begin(s.ctx)
				must(t, err)
				q, err := s.db.WithTx(tx)
				must(t, err)
				must(t, insert(q, "outbox-"+map[bool]string{false: "rb", true: "c"}[commit]))
				if commit {
					must(t, tx.Commit(s.ctx))
				} else {
					must(t, tx.Rollback(s.ctx))
				}
			}
		} else {
			if _, err := s.db.WithTx((*pgxpool.Tx)(nil)); err == nil || !strings.Contains(err.Error(), "pass a *sql.Tx") {
				t.Fatalf("WithTx of a pgx.Tx on SQLite: %v, want a refusal that names *sql.Tx", err)
			}
			for _, commit := range []bool{false, true} {
				tx, err := s.db.SQLDB().BeginTx(s.ctx, nil)
				must(t, err)
				q, err := s.db.WithTx(tx)
				must(t, err)
				must(t, insert(q, "outbox-"+map[bool]string{false: "rb", true: "c"}[commit]))
				if commit {
					must(t, tx.Commit())
				} else {
					must(t, tx.Rollback())
				}
			}
		}
		if _, err := s.db.WithTx(&struct{}{}); err == nil {
			t.Fatal("WithTx accepted a value of no transaction type")
		}
		if n := s.count(`SELECT count(*) FROM seam_rows WHERE id LIKE 'outbox-%'`); n != 1 {
			t.Fatalf("%d outbox rows, want 1 (the committed one)", n)
		}
	})
}

// TestJobMetadata: River's job metadata reads back as JSON text on both
// engines (SQLite stores it as JSONB: the dialect reads it through
// json()); an id with no job is left out.
func TestJobMetadata(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		ids := s.jobs(2)
		got, err := s.q.JobMetadata(s.ctx, append(slices.Clone(ids), 999999))
		must(t, err)
		if len(got) != 2 {
			t.Fatalf("JobMetadata = %d jobs, want 2 (the missing id left out)", len(got))
		}
		for _, id := range ids {
			var m map[string]any
			if err := json.Unmarshal(got[id], &m); err != nil {
				t.Fatalf("job %d's metadata %q is not JSON text: %v", id, got[id], err)
			}
		}
		if none, err := s.q.JobMetadata(s.ctx, nil); err != nil || len(none) != 0 {
			t.Fatalf("JobMetadata(none) = %v, %v", none, err)
		}
	})
}

// TestAttemptReads: LoadAttempt reads a delivery with its endpoint, owner
// (the attributes its event's fanout captured, as OwnerAsOfEvent gives
// them) and event, and the endpoint's slow lane as SetEndpointSlow left it;
// ClaimDelivery claims once, for the attempts read, until its claim
// expires; OldestAwaitingFanout is the owner's oldest event not yet fanned
// out.
func TestAttemptReads(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		o := s.owner("acme")
		e := s.endpoint("acme", 1)
		ev := s.awaiting("acme", 7)
		later := newEvent("acme", "k2", t0.Add(time.Second))
		later.FanoutJob = 8
		if _, _, err := s.q.InsertEvent(s.ctx, later); err != nil {
			t.Fatal(err)
		}
		if id, err := s.q.OldestAwaitingFanout(s.ctx, "acme"); err != nil || id != ev.ID {
			t.Fatalf("OldestAwaitingFanout = %q, %v; want %s", id, err, ev.ID)
		}
		must(t, s.q.MarkFannedOut(s.ctx, []string{ev.ID}, `{"app":"as-of-fanout"}`))
		if id, err := s.q.OldestAwaitingFanout(s.ctx, "acme"); err != nil || id != later.ID {
			t.Fatalf("OldestAwaitingFanout after the first fanned out = %q, %v; want %s", id, err, later.ID)
		}
		if id, err := s.q.OldestAwaitingFanout(s.ctx, "beta"); err != nil || id != "" {
			t.Fatalf("OldestAwaitingFanout of an owner with none = %q, %v", id, err)
		}
		asOf, err := s.q.OwnerAsOfEvent(s.ctx, o, ev.ID)
		must(t, err)
		if asOf.Attributes["app"] != "as-of-fanout" || asOf.ID != "acme" {
			t.Fatalf("OwnerAsOfEvent = %+v, want the attributes the fanout captured", asOf)
		}
		if same, err := s.q.OwnerAsOfEvent(s.ctx, o, later.ID); err != nil || same.Attributes["app"] != "acme" {
			t.Fatalf("OwnerAsOfEvent of an event with none captured = %+v, %v; want the owner's own", same, err)
		}

		slow := ts(t0.Add(time.Minute))
		must(t, s.q.SetEndpointSlow(s.ctx, e.ID, &slow))
		d := newDelivery("acme", e.ID, ev.ID, t0)
		s.deliveries(d)
		a, err := s.q.LoadAttempt(s.ctx, e.ID, ev.ID)
		must(t, err)
		if a.Delivery.ID != d.ID || a.Endpoint.ID != e.ID || a.Event == nil || a.Event.ID != ev.ID || a.Owner.Attributes["app"] != "as-of-fanout" {
			t.Fatalf("LoadAttempt = delivery %s endpoint %s event %v owner %+v", a.Delivery.ID, a.Endpoint.ID, a.Event, a.Owner)
		}
		if a.Endpoint.SlowSince == nil || ts(*a.Endpoint.SlowSince) != slow {
			t.Fatalf("slow_since = %v, want %d", a.Endpoint.SlowSince, slow)
		}
		must(t, s.q.SetEndpointSlow(s.ctx, e.ID, nil))
		if a, err = s.q.LoadAttempt(s.ctx, e.ID, ev.ID); err != nil || a.Endpoint.SlowSince != nil {
			t.Fatalf("after SetEndpointSlow(nil): %v, %v", a.Endpoint.SlowSince, err)
		}
		_, err = s.q.LoadAttempt(s.ctx, e.ID, later.ID)
		wantCode(t, err, apperr.NotFound)

		now, until := ts(t0.Add(time.Minute)), ts(t0.Add(2*time.Minute))
		if ok, err := s.q.ClaimDelivery(s.ctx, d.ID, d.EventID, 1, now, until); err != nil || ok {
			t.Fatalf("a claim for attempts it no longer has: %v, %v", ok, err)
		}
		if ok, err := s.q.ClaimDelivery(s.ctx, d.ID, later.ID, 0, now, until); err != nil || ok {
			t.Fatalf("a claim naming another event: %v, %v; want nothing claimed", ok, err)
		}
		if ok, err := s.q.ClaimDelivery(s.ctx, d.ID, d.EventID, 0, now, until); err != nil || !ok {
			t.Fatalf("the first claim: %v, %v", ok, err)
		}
		if ok, err := s.q.ClaimDelivery(s.ctx, d.ID, "", 0, now+1, until); err != nil || ok {
			t.Fatalf("a second claim while the first holds: %v, %v", ok, err)
		}
		if ok, err := s.q.ClaimDelivery(s.ctx, d.ID, d.EventID, 0, until, until+60_000_000); err != nil || !ok {
			t.Fatalf("a claim once the first expired: %v, %v", ok, err)
		}
	})
}

// TestMigrationsPending: a migrated database has none pending.
func TestMigrationsPending(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		n, err := s.db.MigrationsPending(s.ctx)
		must(t, err)
		if n != 0 {
			t.Fatalf("MigrationsPending = %d on a migrated database, want 0", n)
		}
		s.exec(`DELETE FROM hookd_migrations WHERE version = (SELECT max(version) FROM hookd_migrations)`)
		if n, err = s.db.MigrationsPending(s.ctx); err != nil || n != 1 {
			t.Fatalf("MigrationsPending with the last one unrecorded = %d, %v; want 1", n, err)
		}
	})
}

// TestListenPoll: on PostgreSQL a commit that appends a polling endpoint's
// messages wakes every process's ListenPoll with that endpoint (the
// dialect's pg_notify and LISTEN); on SQLite ListenPoll returns at once
// (one process: its fanout wakes its own polls). PollSeqBefore finds the
// cursor a seek by time sets.
func TestListenPoll(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep := newEndpoint("acme", 1)
		ep.Kind, ep.URL = endpoint.KindPoll, ""
		must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error {
			if err := q.CreateEndpoint(s.ctx, ep); err != nil {
				return err
			}
			return q.CreatePollEndpoint(s.ctx, ep.ID, []byte("hash-listen"))
		}))
		ctx, cancel := context.WithCancel(s.ctx)
		defer cancel()
		woken := make(chan []string, 16)
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			s.db.ListenPoll(ctx, func(ids []string) {
				select {
				case woken <- ids:
				default: // the test has what it waits for
				}
			}, func() {})
		}()
		appendOne := func(i int) {
			e := newEvent("acme", "", t0.Add(time.Duration(i)*time.Second))
			_, _, err := s.q.InsertEvent(s.ctx, e)
			must(t, err)
			must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error {
				return q.AppendPollMessages(s.ctx, []store.PollMessage{{EndpointID: ep.ID, ID: event.NewID("dlv_", e.CreatedAt), EventID: e.ID, CreatedAt: ts(e.CreatedAt)}})
			}))
		}
		if s.db.Pool() == nil {
			select {
			case <-returned:
			case <-time.After(10 * time.Second):
				t.Fatal("ListenPoll on SQLite did not return at once")
			}
			appendOne(0)
		} else {
			// The listener's LISTEN runs on its own connection: until it
			// does, a notification finds nobody. Append until one wakes it.
			var got []string
			for i := 0; got == nil; i++ {
				if i == 50 {
					t.Fatal("no append woke ListenPoll")
				}
				appendOne(i)
				select {
				case got = <-woken:
				case <-time.After(200 * time.Millisecond):
				}
			}
			if !slices.Equal(got, []string{ep.ID}) {
				t.Fatalf("ListenPoll woke with %v, want [%s]", got, ep.ID)
			}
			cancel()
			<-returned
		}
		first, err := s.q.PollSeqBefore(s.ctx, ep.ID, ts(t0))
		must(t, err)
		if last, _, err := s.q.PollState(s.ctx, ep.ID); err != nil || first != 0 || last < 1 {
			t.Fatalf("PollSeqBefore(t0) = %d, last %d, %v; want 0 before the first message", first, last, err)
		}
		past, err := s.q.PollSeqBefore(s.ctx, ep.ID, ts(t0.Add(time.Hour)))
		must(t, err)
		if last, _, _ := s.q.PollState(s.ctx, ep.ID); past != last {
			t.Fatalf("PollSeqBefore past the last = %d, want the last, %d", past, last)
		}
	})
}

// TestRecoverableWindow: a recovery window counts and reads an endpoint's
// deliveries created in [Since, Until) in the states named, after a
// cursor, in id order, up to a limit.
func TestRecoverableWindow(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		e, other := s.endpoint("acme", 1), s.endpoint("acme", 1)
		var ds []*endpoint.Delivery
		for i := range 4 {
			ev := newEvent("acme", fmt.Sprint("k", i), t0.Add(time.Duration(i)*time.Minute))
			_, _, err := s.q.InsertEvent(s.ctx, ev)
			must(t, err)
			d := newDelivery("acme", e.ID, ev.ID, ev.CreatedAt)
			ds = append(ds, d)
			s.deliveries(d)
			if i == 0 {
				s.deliveries(newDelivery("acme", other.ID, ev.ID, ev.CreatedAt))
			}
		}
		s.exec(`UPDATE hookd_deliveries SET state = 'failed' WHERE id = $1 OR id = $2`, ds[1].ID, ds[2].ID)
		w := store.RecoverWindow{EndpointID: e.ID, Since: ts(t0), Until: ts(t0.Add(3 * time.Minute)), States: []string{"failed", "pending"}}
		if n, err := s.q.CountRecoverable(s.ctx, w); err != nil || n != 3 {
			t.Fatalf("CountRecoverable = %d, %v; want 3 (the fourth is past Until, the other endpoint's is not its)", n, err)
		}
		got, err := s.q.RecoverableDeliveries(s.ctx, w, 2)
		must(t, err)
		if ids := pluck(got, func(d *endpoint.Delivery) string { return d.ID }); !slices.Equal(ids, []string{ds[0].ID, ds[1].ID}) {
			t.Fatalf("RecoverableDeliveries(limit 2) = %v, want the first two in id order", ids)
		}
		w.After, w.States = ds[0].ID, []string{"failed"}
		if n, err := s.q.CountRecoverable(s.ctx, w); err != nil || n != 2 {
			t.Fatalf("CountRecoverable of failed after the first = %d, %v; want 2", n, err)
		}
		got, err = s.q.RecoverableDeliveries(s.ctx, w, 10)
		must(t, err)
		if ids := pluck(got, func(d *endpoint.Delivery) string { return d.ID }); !slices.Equal(ids, []string{ds[1].ID, ds[2].ID}) {
			t.Fatalf("RecoverableDeliveries of failed after the first = %v", ids)
		}
	})
}

// TestReadStats: the pending deliveries and the earliest due among them,
// the endpoints by health, and River's jobs by queue and state.
func TestReadStats(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		e, off := s.endpoint("acme", 1), s.endpoint("acme", 1)
		_, err := s.q.DisableEndpoint(s.ctx, off.ID, "test", ts(t0))
		must(t, err)
		ev := s.event("acme")
		d1 := newDelivery("acme", e.ID, ev.ID, t0)
		d2 := newDelivery("acme", off.ID, ev.ID, t0.Add(time.Hour)) // due later
		s.deliveries(d1, d2)
		s.jobs(3)
		st, err := s.db.ReadStats(s.ctx, ts(t0.Add(time.Minute)))
		must(t, err)
		if st.Pending != 2 || st.OldestDueAt != ts(t0) {
			t.Fatalf("pending %d oldest due %d; want 2 and %d", st.Pending, st.OldestDueAt, ts(t0))
		}
		if st.EndpointState["healthy"] != 1 || st.EndpointState["disabled"] != 1 || st.EndpointState["failing"] != 0 {
			t.Fatalf("endpoint states %v; want one healthy, one disabled", st.EndpointState)
		}
		var jobs int64
		for k, n := range st.RiverJobs {
			if k[1] == "available" {
				jobs += n
			}
		}
		if jobs != 3 {
			t.Fatalf("River jobs %v; want 3 available", st.RiverJobs)
		}
	})
}
