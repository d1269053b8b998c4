package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/store"
)

// fanoutWriteArgs is the job args TestWriteFanout has River work.
type fanoutWriteArgs struct {
	EndpointID string `json:"endpoint_id"`
	EventID    string `json:"event_id"`
}

func (fanoutWriteArgs) Kind() string { return "store_test.fanout_write" }

// TestWriteFanout: in a relaxed transaction on PostgreSQL, after its
// reads, a fanout's deliveries, their River jobs, the events marked
// fanned out and the fanout jobs of those taken along are written and
// committed in one statement; on SQLite, in any transaction, through plain
// statements that write the jobs' rows themselves. Either way each
// delivery carries its own job's id (its args name the delivery's pair),
// the jobs are River's insert's rows (metadata kept, a later one
// scheduled), River's producer is notified (its poll is an hour apart) and
// works the available ones at once, a pair another fanout won gets no
// job, and a running job is not deleted. Elsewhere on PostgreSQL nothing
// is sent.
func TestWriteFanout(t *testing.T) {
	setup(t, testWriteFanout)
}

func testWriteFanout(t *testing.T, s *bundle) {
	pg := s.db.Pool() != nil
	s.owner("acme")
	won, one, two := s.endpoint("acme", 1), s.endpoint("acme", 1), s.endpoint("acme", 1)
	ev := s.awaiting("acme", 0)
	along := s.awaiting("acme", 0)
	// The fanout jobs: one of the taken-along event's (deleted), one running
	// (spared), both in a queue nothing works.
	gone, running := s.jobs(2)[0], int64(0)
	must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error {
		res, err := q.InsertJobs(s.ctx, []river.InsertManyParams{{Args: outboxArgs{EventID: "running"}}})
		if err == nil {
			running = res[0].Job.ID
		}
		return err
	}))
	now := `now()`
	if !pg {
		now = `datetime('now', 'subsec')`
	}
	s.exec(`UPDATE river_job SET state = 'running', attempted_at = `+now+`, attempt = 1 WHERE id = $1`, running)
	queue, worked := workingRiver(s, "fanout_write", fanoutWriteArgs{EndpointID: "warm-up"}, func(a fanoutWriteArgs) string { return a.EndpointID + " " + a.EventID })

	// Another fanout wrote ev's delivery to won already.
	s.deliveries(newDelivery("acme", won.ID, ev.ID, t0))
	later := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond) // SQLite's River keeps milliseconds
	job := func(d *endpoint.Delivery, meta string, at time.Time) *store.Job {
		b, err := json.Marshal(fanoutWriteArgs{EndpointID: d.EndpointID, EventID: d.EventID})
		must(t, err)
		return &store.Job{Kind: fanoutWriteArgs{}.Kind(), Queue: "fanout_write", MaxAttempts: 7, Args: b, Metadata: []byte(meta), ScheduledAt: at}
	}
	ds := []*endpoint.Delivery{
		newDelivery("acme", won.ID, ev.ID, t0), newDelivery("acme", one.ID, ev.ID, t0),
		newDelivery("acme", two.ID, ev.ID, t0), newDelivery("acme", one.ID, along.ID, t0),
	}
	jobs := []*store.Job{job(ds[0], `{"profile":"standard"}`, time.Time{}), job(ds[1], `{"profile":"standard"}`, time.Time{}), job(ds[2], "", later), job(ds[3], `{"profile":"standard"}`, time.Time{})}
	w := store.FanoutWrite{Deliveries: ds, Jobs: jobs, FannedOut: []string{ev.ID, along.ID}, Gone: []int64{gone, running}}

	if pg {
		// Not in a relaxed transaction: nothing is sent.
		must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error {
			if done, err := q.WriteFanoutAndCommit(s.ctx, w); done || err != nil {
				t.Errorf("in a plain transaction: done %v, err %v; want false, nil", done, err)
			}
			return nil
		}))
	}
	must(t, s.db.InTx(s.ctx, store.TxOptions{Relaxed: true}, func(q *store.Q) error {
		take, err := q.TakeForFanout(s.ctx, ev.ID, "acme", []string{won.ID, one.ID, two.ID}, 10, 0)
		if err != nil || !take.Locked {
			t.Fatalf("take: %+v, %v", take, err)
		}
		done, err := q.WriteFanoutAndCommit(s.ctx, w)
		if err == nil && !done {
			t.Fatal("a relaxed transaction with hookd's own River client did not write the fanout itself")
		}
		return err
	}))

	if ds[0].JobID != 0 {
		t.Errorf("the pair another fanout won has job %d, want none", ds[0].JobID)
	}
	if n := s.count(`SELECT count(*) FROM river_job WHERE kind = $1`, fanoutWriteArgs{}.Kind()); n != 4 {
		t.Errorf("%d jobs of the kind, want 4 (the warm-up's and three): the won pair gets none", n)
	}
	for i, d := range ds[1:] {
		if d.JobID == 0 {
			t.Fatalf("delivery %d has no job", i+1)
		}
		if n := s.count(`SELECT count(*) FROM hookd_deliveries WHERE id = $1 AND job_id = $2 AND state = 'pending'`, d.ID, d.JobID); n != 1 {
			t.Errorf("delivery %s is not stored pending with its job %d", d.ID, d.JobID)
		}
		row, err := queue.JobGet(s.ctx, d.JobID)
		must(t, err)
		var args fanoutWriteArgs
		must(t, json.Unmarshal(row.EncodedArgs, &args))
		wantMeta := `{"profile": "standard"}` // as PostgreSQL's jsonb prints it
		if !pg {
			wantMeta = `{"profile":"standard"}`
		}
		if d == ds[2] {
			wantMeta = "{}"
		}
		if row.Kind != (fanoutWriteArgs{}).Kind() || row.Queue != "fanout_write" || row.MaxAttempts != 7 || row.Priority != 1 || len(row.Tags) != 0 ||
			string(row.Metadata) != wantMeta || args.EndpointID != d.EndpointID || args.EventID != d.EventID {
			t.Errorf("job %d is %s in %s, %d attempts, priority %d, tags %v, metadata %s, args %+v; want River's insert's row for %s", row.ID, row.Kind, row.Queue, row.MaxAttempts, row.Priority, row.Tags, row.Metadata, args, d.ID)
		}
		if d == ds[2] && (row.State != "scheduled" || !row.ScheduledAt.Equal(later)) {
			t.Errorf("the later job is %s at %v, want scheduled at %v", row.State, row.ScheduledAt, later)
		}
	}
	if n := s.count(`SELECT count(*) FROM hookd_events WHERE id IN ($1, $2) AND fanout_job = 0`, ev.ID, along.ID); n != 2 {
		t.Errorf("%d of the two events marked fanned out", n)
	}
	if n := s.count(`SELECT count(*) FROM river_job WHERE id = $1`, gone); n != 0 {
		t.Error("the taken-along event's fanout job was not deleted")
	}
	if n := s.count(`SELECT count(*) FROM river_job WHERE id = $1`, running); n != 1 {
		t.Error("a running fanout job was deleted")
	}
	got := awaitWorked(s, worked, 2)
	if !got[one.ID+" "+ev.ID] || !got[one.ID+" "+along.ID] {
		t.Errorf("worked %v, want the available jobs (to %s), not the scheduled one", got, one.ID)
	}
}
