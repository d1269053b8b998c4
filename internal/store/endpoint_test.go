package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/store"
)

func TestEndpoints(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		s.owner("beta")

		e1 := newEndpoint("acme", 1)
		e1.GrantID = "code_1"
		e1.EventTypes = []string{"invoice.*", "user.created"}
		must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(tx *store.Q) error { return tx.CreateEndpoint(s.ctx, e1) }))
		e2 := newEndpoint("acme", 1)
		e2.Enabled, e2.DisabledReason = false, "disabled by owner"
		e2.CreatedAt = t0.Add(time.Second)
		must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(tx *store.Q) error { return tx.CreateEndpoint(s.ctx, e2) }))
		eb := s.endpoint("beta", 1)

		got, err := s.q.GetEndpoint(s.ctx, "acme", e1.ID)
		must(t, err)
		jsonEq(t, "GetEndpoint", got, e1)
		if got.OwnerID != "acme" || string(got.SecretSealed) != string(e1.SecretSealed) || got.GrantID != "code_1" || !got.CreatedAt.Equal(t0) {
			t.Fatalf("GetEndpoint hidden fields: %+v", got)
		}
		if n := s.count(`SELECT count(*) FROM hookd_endpoint_leases WHERE endpoint_id = $1`, e1.ID); n != 1 {
			t.Fatalf("a new endpoint has %d lease slots, want 1", n)
		}

		// Owner isolation: another owner's id is not found, for every verb.
		_, err = s.q.GetEndpoint(s.ctx, "beta", e1.ID)
		wantCode(t, err, apperr.NotFound)
		if _, err := s.q.GetEndpoint(s.ctx, "", e1.ID); err != nil { // "" is the engine's any-owner read
			t.Fatalf("GetEndpoint any owner: %v", err)
		}
		stolen := *e1
		stolen.OwnerID, stolen.URL = "beta", "https://evil.example/"
		wantCode(t, s.q.UpdateEndpoint(s.ctx, &stolen), apperr.NotFound)
		wantCode(t, s.q.DeleteEndpoint(s.ctx, "beta", e1.ID), apperr.NotFound)
		if got, err := s.q.GetEndpoint(s.ctx, "acme", e1.ID); err != nil || got.URL != e1.URL {
			t.Fatal("another owner changed the endpoint")
		}
		_, err = s.q.GetEndpoint(s.ctx, "acme", "ep_missing")
		wantCode(t, err, apperr.NotFound)

		all, err := s.q.ListEndpoints(s.ctx, "acme", false)
		must(t, err)
		if ids := endpointIDs(all); !slices.Equal(ids, []string{e1.ID, e2.ID}) {
			t.Fatalf("ListEndpoints(acme) = %v, want [e1 e2] oldest first", ids)
		}
		enabled, err := s.q.ListEndpoints(s.ctx, "acme", true)
		must(t, err)
		if ids := endpointIDs(enabled); !slices.Equal(ids, []string{e1.ID}) {
			t.Fatalf("ListEndpoints(acme, enabledOnly) = %v, want [e1]", ids)
		}
		bs, err := s.q.ListEndpoints(s.ctx, "beta", false)
		must(t, err)
		if ids := endpointIDs(bs); !slices.Equal(ids, []string{eb.ID}) {
			t.Fatalf("ListEndpoints(beta) = %v", ids)
		}

		// Update writes every mutable field and resizes the lease slots.
		failing := t0.Add(time.Hour)
		e1.URL, e1.Description, e1.EventTypes = "https://example.com/v2", "new", []string{"*"}
		e1.SecretSealed, e1.GrantID, e1.Enabled = []byte{9, 9}, "", false
		e1.DisabledReason, e1.FailingSince, e1.MaxInFlight, e1.UpdatedAt = "why", &failing, 4, t0.Add(2*time.Hour)
		must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(tx *store.Q) error { return tx.UpdateEndpoint(s.ctx, e1) }))
		got, err = s.q.GetEndpoint(s.ctx, "acme", e1.ID)
		must(t, err)
		jsonEq(t, "after UpdateEndpoint", got, e1)
		if string(got.SecretSealed) != "\x09\x09" || got.FailingSince == nil || !got.FailingSince.Equal(failing) {
			t.Fatalf("after UpdateEndpoint: %+v", got)
		}
		if n := s.count(`SELECT count(*) FROM hookd_endpoint_leases WHERE endpoint_id = $1`, e1.ID); n != 4 {
			t.Fatalf("max_in_flight 4: %d lease slots", n)
		}
		e1.MaxInFlight = 2
		must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(tx *store.Q) error { return tx.UpdateEndpoint(s.ctx, e1) }))
		if n := s.count(`SELECT count(*) FROM hookd_endpoint_leases WHERE endpoint_id = $1 AND slot < 2`, e1.ID); n != 2 {
			t.Fatalf("max_in_flight 2: slots 0 and 1 should remain, found %d", n)
		}
		if n := s.count(`SELECT count(*) FROM hookd_endpoint_leases WHERE endpoint_id = $1`, e1.ID); n != 2 {
			t.Fatalf("max_in_flight 2: %d lease slots", n)
		}

		must(t, s.q.DeleteEndpoint(s.ctx, "acme", e2.ID))
		_, err = s.q.GetEndpoint(s.ctx, "acme", e2.ID)
		wantCode(t, err, apperr.NotFound)
		wantCode(t, s.q.DeleteEndpoint(s.ctx, "acme", e2.ID), apperr.NotFound)
	})
}

func endpointIDs(es []*endpoint.Endpoint) []string {
	return pluck(es, func(e *endpoint.Endpoint) string { return e.ID })
}

// TestDeleteEndpointCascades: an endpoint's deliveries and lease slots go
// with it; another endpoint's stay.
func TestDeleteEndpointCascades(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		gone := s.endpoint("acme", 3)
		kept := s.endpoint("acme", 1)
		ev := s.event("acme")
		s.deliveries(newDelivery("acme", gone.ID, ev.ID, t0), newDelivery("acme", kept.ID, ev.ID, t0))
		if _, ok, err := s.q.TakeLease(s.ctx, gone.ID, 7, ts(t0), ts(t0.Add(time.Minute))); err != nil || !ok {
			t.Fatalf("TakeLease: %v %v", ok, err)
		}

		must(t, s.q.DeleteEndpoint(s.ctx, "acme", gone.ID))

		for table, want := range map[string][2]int{
			"hookd_deliveries":      {0, 1},
			"hookd_endpoint_leases": {0, 1},
		} {
			if n := s.count(`SELECT count(*) FROM `+table+` WHERE endpoint_id = $1`, gone.ID); n != want[0] {
				t.Errorf("%s: %d rows of the deleted endpoint", table, n)
			}
			if n := s.count(`SELECT count(*) FROM `+table+` WHERE endpoint_id = $1`, kept.ID); n != want[1] {
				t.Errorf("%s: %d rows of the other endpoint, want %d", table, n, want[1])
			}
		}
		if _, err := s.q.GetEvent(s.ctx, "acme", ev.ID); err != nil {
			t.Fatalf("the event went with the endpoint: %v", err)
		}
		_, err := s.q.FindDelivery(s.ctx, gone.ID, ev.ID)
		wantCode(t, err, apperr.NotFound)
	})
}

// TestEndpointHealth: failing_since is set once and kept; 5 days of
// continuous failure (the default rules) disables with the reason (once);
// healthy clears it.
func TestEndpointHealth(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep := s.endpoint("acme", 1)
		other := s.endpoint("acme", 1)
		rules := endpoint.DefaultRules // the rule and the number hookd runs with
		const reason = "disabled after 5 days of continuous failure; last: HTTP 500"

		step := func(at time.Time, wantDisabled bool) {
			t.Helper()
			since, disabled, err := s.q.MarkEndpointFailing(s.ctx, ep.ID, at, rules, reason)
			must(t, err)
			if since != ts(t0) || disabled != wantDisabled {
				t.Fatalf("MarkEndpointFailing at %v = since %v, disabled %v; want since %v, disabled %v",
					at, time.UnixMicro(since).UTC(), disabled, t0, wantDisabled)
			}
		}
		step(t0, false)
		step(t0.Add(4*day), false)
		got, err := s.q.GetEndpoint(s.ctx, "acme", ep.ID)
		must(t, err)
		if got.State() != endpoint.Failing || !got.FailingSince.Equal(t0) {
			t.Fatalf("after failures: state %s since %v", got.State(), got.FailingSince)
		}
		step(t0.Add(5*day-time.Second), false)      // one second short
		step(t0.Add(5*day-time.Microsecond), false) // one microsecond short
		step(t0.Add(5*day), true)                   // the threshold: disabled now
		step(t0.Add(6*day), false)                  // already disabled: not again
		got, err = s.q.GetEndpoint(s.ctx, "acme", ep.ID)
		must(t, err)
		if got.Enabled || got.DisabledReason != reason || got.State() != endpoint.Disabled || !got.UpdatedAt.Equal(t0.Add(5*day)) {
			t.Fatalf("after the threshold: enabled %v reason %q updated %v", got.Enabled, got.DisabledReason, got.UpdatedAt)
		}

		// Healthy clears failing_since (re-enabling is the owner's act).
		if cleared, err := s.q.MarkEndpointHealthy(s.ctx, other.ID); err != nil || cleared { // not failing: no-op
			t.Fatalf("MarkEndpointHealthy(not failing) = %v, %v; want false, nil", cleared, err)
		}
		if cleared, err := s.q.MarkEndpointHealthy(s.ctx, ep.ID); err != nil || !cleared {
			t.Fatalf("MarkEndpointHealthy(failing) = %v, %v; want true, nil", cleared, err)
		}
		got, err = s.q.GetEndpoint(s.ctx, "acme", ep.ID)
		must(t, err)
		if got.FailingSince != nil {
			t.Fatalf("failing_since %v after healthy", got.FailingSince)
		}
		// A new failure streak starts at its own first failure.
		since, disabled, err := s.q.MarkEndpointFailing(s.ctx, ep.ID, t0.Add(10*day), rules, reason)
		must(t, err)
		if since != ts(t0.Add(10*day)) || disabled {
			t.Fatalf("new streak: since %v disabled %v", time.UnixMicro(since).UTC(), disabled)
		}
		if got, err := s.q.GetEndpoint(s.ctx, "acme", other.ID); err != nil || got.FailingSince != nil || !got.Enabled {
			t.Fatal("another endpoint was touched")
		}

		_, _, err = s.q.MarkEndpointFailing(s.ctx, "ep_missing", t0, rules, reason)
		wantCode(t, err, apperr.NotFound)
	})
}
