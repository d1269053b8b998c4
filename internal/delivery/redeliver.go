package delivery

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
)

// Redeliver re-enqueues every failed delivery of one endpoint (after its
// owner fixed the receiver), each with a fresh attempt budget and the same
// delivery id and event id. It returns how many it re-enqueued.
func (s *Service) Redeliver(ctx context.Context, ep *endpoint.Endpoint, p profile.Profile) (int, error) {
	return s.requeue(ctx, p, func(q *store.Q) ([]*endpoint.Delivery, error) {
		return q.FailedDeliveries(ctx, ep.ID, requeueBatch)
	}, (*store.Q).ResetDelivery, nil)
}

// Recover re-enqueues the deliveries of one endpoint in a window (its
// receiver lost them: down for a day, a database restored), as Redeliver
// does, in batches of requeueBatch, each its own transaction; done, when
// set, hears the running total after each batch. It returns how many it
// re-enqueued.
func (s *Service) Recover(ctx context.Context, w store.RecoverWindow, p profile.Profile, done func(n int)) (int, error) {
	return s.requeue(ctx, p, func(q *store.Q) ([]*endpoint.Delivery, error) {
		ds, err := q.RecoverableDeliveries(ctx, w, requeueBatch)
		if len(ds) > 0 {
			w.After = ds[len(ds)-1].ID
		}
		return ds, err
	}, (*store.Q).ResetDeliveryFrom, done)
}

// requeueBatch is how many deliveries one transaction of a redelivery or
// a recovery re-enqueues.
const requeueBatch = 500

// requeue re-enqueues, a transaction a batch, the deliveries next reads
// (a short batch is the last), each under a new job with a fresh attempt
// budget, and counts them.
func (s *Service) requeue(ctx context.Context, p profile.Profile, next func(q *store.Q) ([]*endpoint.Delivery, error),
	reset func(q *store.Q, ctx context.Context, id string, jobID, now int64) error, done func(n int)) (int, error) {
	meta, _ := json.Marshal(jobMeta{Profile: p.Name()})
	total := 0
	for {
		n := 0
		err := s.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
			ds, err := next(q)
			if err != nil || len(ds) == 0 {
				return err
			}
			now := s.now().UTC()
			params := make([]river.InsertManyParams, len(ds))
			for i, d := range ds {
				params[i] = deliverParams(d, QueueDeliver, p, meta, now, now) // a slow endpoint's job moves itself
			}
			s.shares.place(ds[0].OwnerID, params) // one endpoint's, so one owner's
			res, err := q.InsertJobs(ctx, params)
			if err != nil {
				return fmt.Errorf("re-enqueue: %w", err)
			}
			for i, d := range ds {
				if err := reset(q, ctx, d.ID, res[i].Job.ID, now.UnixMicro()); err != nil {
					return err
				}
			}
			n = len(ds)
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if done != nil {
			done(total)
		}
		if n < requeueBatch {
			return total, nil
		}
	}
}

// SendTest publishes the profile's test event to one endpoint only.
func (s *Service) SendTest(ctx context.Context, ep *endpoint.Endpoint, p profile.Profile) (Published, error) {
	ev := &event.Event{
		OwnerID:    ep.OwnerID,
		Type:       p.TestEventType(),
		Subject:    "hookd://endpoints/" + ep.ID,
		Data:       json.RawMessage(fmt.Sprintf(`{"endpoint_id":%q,"message":"This is a test event from hookd."}`, ep.ID)),
		EndpointID: ep.ID,
	}
	var out []Published
	err := s.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		var err error
		out, err = s.Publish(ctx, Request{Events: []*event.Event{ev}, Tx: q})
		return err
	})
	if err != nil {
		return Published{}, err
	}
	return out[0], nil
}
