package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
)

// TestPollMessages: a polling endpoint's messages are numbered without a
// gap or a repeat under concurrent fanouts, read back in order after a
// cursor, written once per event, found by event and by time, pruned by
// age, and its token found by hash only.
func TestPollMessages(t *testing.T) {
	t.Parallel()
	setup(t, func(t *testing.T, s *bundle) {
		s.owner("acme")
		ep := newEndpoint("acme", 1)
		ep.Kind, ep.URL = endpoint.KindPoll, ""
		must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error {
			if err := q.CreateEndpoint(s.ctx, ep); err != nil {
				return err
			}
			return q.CreatePollEndpoint(s.ctx, ep.ID, []byte("hash-1"))
		}))
		if got, err := s.q.GetEndpoint(s.ctx, "acme", ep.ID); err != nil || !got.Polled() {
			t.Fatalf("GetEndpoint = %+v, %v: want a polling endpoint", got, err)
		}
		var evs []*event.Event
		for i := range 20 {
			e := newEvent("acme", "", t0.Add(time.Duration(i)*time.Second))
			_, _, err := s.q.InsertEvent(s.ctx, e)
			must(t, err)
			evs = append(evs, e)
		}
		// Four fanouts at once, five events each.
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var msgs []store.PollMessage
				for _, e := range evs[g*5 : g*5+5] {
					msgs = append(msgs, store.PollMessage{EndpointID: ep.ID, ID: event.NewID("dlv_", t0), EventID: e.ID, CreatedAt: e.CreatedAt.UnixMicro()})
				}
				errs <- s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error { return q.AppendPollMessages(s.ctx, msgs) })
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			must(t, err)
		}
		// A fanout run again writes nothing (one message per event).
		must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error {
			return q.AppendPollMessages(s.ctx, []store.PollMessage{{EndpointID: ep.ID, ID: "dlv_again", EventID: evs[0].ID, CreatedAt: t0.UnixMicro()}})
		}))
		all, err := s.q.ReadPollMessages(s.ctx, ep.ID, 0, 100)
		must(t, err)
		if len(all) != 20 {
			t.Fatalf("read %d messages, want 20", len(all))
		}
		seen := map[string]bool{}
		for i, m := range all {
			if m.Seq != int64(i+1) || m.Event == nil || seen[m.Event.ID] || m.Owner.ID != "acme" {
				t.Fatalf("message %d: seq %d, event %v (seen %v): want seq %d, each event once", i, m.Seq, m.Event, seen[m.Event.ID], i+1)
			}
			seen[m.Event.ID] = true
		}
		page, err := s.q.ReadPollMessages(s.ctx, ep.ID, 18, 100)
		must(t, err)
		if len(page) != 2 || page[0].Seq != 19 {
			t.Fatalf("after 18: %d messages from %d", len(page), page[0].Seq)
		}
		seq, err := s.q.PollSeqOfEvent(s.ctx, ep.ID, all[4].Event.ID)
		must(t, err)
		if seq != 4 {
			t.Fatalf("seek to the 5th message's event: cursor %d, want 4", seq)
		}
		_, err = s.q.PollSeqOfEvent(s.ctx, ep.ID, "evt_none")
		wantCode(t, err, apperr.Invalid)
		last, acked, err := s.q.PollState(s.ctx, ep.ID)
		must(t, err)
		if last < 20 || acked != 0 {
			t.Fatalf("state: last %d acked %d", last, acked)
		}
		must(t, s.q.SetPollCursor(s.ctx, ep.ID, 10, true))
		must(t, s.q.SetPollCursor(s.ctx, ep.ID, 5, true)) // an ack never moves back
		if _, acked, _ := s.q.PollState(s.ctx, ep.ID); acked != 10 {
			t.Fatalf("acked %d after acks of 10 then 5, want 10", acked)
		}
		must(t, s.q.SetPollCursor(s.ctx, ep.ID, 5, false)) // a seek does
		if _, acked, _ := s.q.PollState(s.ctx, ep.ID); acked != 5 {
			t.Fatalf("acked %d after a seek to 5", acked)
		}
		if id, owner, err := s.q.PollEndpointOfToken(s.ctx, []byte("hash-1")); err != nil || id != ep.ID || owner != "acme" {
			t.Fatalf("token lookup: %s %s %v", id, owner, err)
		}
		must(t, s.q.SetPollToken(s.ctx, ep.ID, []byte("hash-2")))
		_, _, err = s.q.PollEndpointOfToken(s.ctx, []byte("hash-1"))
		wantCode(t, err, apperr.NotFound)

		n, err := s.q.PrunePollMessages(s.ctx, t0.Add(10*time.Second).UnixMicro(), 1000)
		must(t, err)
		if n != 10 {
			t.Fatalf("pruned %d messages older than 10 s, want 10", n)
		}
	})
}
