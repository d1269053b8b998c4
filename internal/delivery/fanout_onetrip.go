package delivery

// One round trip for a fanout's write. The plain path (fanout.go's
// writeFanout) writes a fanout's deliveries, inserts their webhook.deliver
// jobs through River and commits: on PostgreSQL a round trip each. Where
// the store can (store.Q.WriteFanoutAndCommit), writeAndCommit sends the
// deliveries, their jobs and the COMMIT as one statement; where it cannot,
// it sends nothing and the plain path runs.

import (
	"context"
	"fmt"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/store"
)

// writeAndCommit writes the fanout w (its deliveries' jobs from params)
// and commits, in one round trip where the store can
// (store.Q.WriteFanoutAndCommit); wrote false: it sent nothing, and the
// caller writes them the usual way.
func writeAndCommit(ctx context.Context, q *store.Q, w store.FanoutWrite, params []river.InsertManyParams) (wrote bool, err error) {
	jobs := make([]*store.Job, len(params))
	for i, p := range params {
		// DeliverArgs has no InsertOpts of its own: params' are the job's.
		if jobs[i], err = storeJob(p.Args, p.InsertOpts); err != nil {
			return false, err
		}
	}
	w.Jobs = jobs
	wrote, err = q.WriteFanoutAndCommit(ctx, w)
	if err != nil {
		return wrote, fmt.Errorf("enqueue deliveries: %w", err)
	}
	return wrote, nil
}
