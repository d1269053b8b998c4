package delivery

// Fast path of a group commit's transaction (publish_group.go): one round
// trip. The plain path is insertAdmitted, which reads the types' rules,
// the owners' endpoints and the callers' keys, inserts the fanout jobs
// through River and then the events with the COMMIT: three round trips on
// PostgreSQL. Here, when the rules are what this process last read, one
// statement does it all, and the plain path runs when they are not.

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/riverqueue/river"

	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
)

// The one-round-trip group commit. A group's rules and its owners'
// endpoints are almost always what this process read at its last publish
// of the same types (lastRules, schema.go); so the group commits with
// store.Q.InsertExpectedAndCommit, which reads the rules and inserts the
// events, and the fanout jobs of the subscribed owners' events, in one
// statement sent with BEGIN and COMMIT, and writes only if the rules are
// what this process expected. Each caller's answer is what the usual way
// (insertAdmitted) would have given: the schema verdict precheck reached
// against the expected schema is the verdict of the schema read, a revoked
// key, a gone owner or an endpoint enabled or disabled since makes the
// expectation fail, and the usual way then answers. A group with any call
// whose type this process has not read yet, or whose data precheck did
// not check against the schema expected, goes the usual way at once; so
// does one with fanout jobs where the store may not write them
// (store.Q.CanInsertJobs: an application's River client, or tracing,
// whose jobs carry each caller's trace).

// insertExpected commits the group's calls in one round trip if it can
// (see above): tried says it sent that round trip, held that it committed
// them, and then every call is answered, a call refused by its schema with
// its refusal and the others by admitted and out. Not held, nothing was
// written and q begins anew; err is as insertAdmitted's.
func (s *Service) insertExpected(ctx context.Context, q *store.Q, calls []*publishCall) (admitted []*publishCall, out []Published, tried, held bool, err error) {
	if !q.CanInsertExpected() {
		return nil, nil, false, false, nil
	}
	var expect []store.Expected
	var keys []string
	var refused []*publishCall // by their schema, if what was expected holds
	admitted = make([]*publishCall, 0, len(calls))
	evs := make([]*event.Event, 0, len(calls))
	exposure := make([]event.Exposure, 0, len(calls))
	var jobs []*store.Job // of evs; nil: none
	for _, c := range calls {
		last, ok := s.lastRules.get(c.ev.OwnerID, c.ev.Type)
		if !ok || !last.live || last.rule.SchemaHash != c.pre.hash && last.rule.SchemaHash != "" {
			return nil, nil, false, false, nil
		}
		k := store.OwnerType{Owner: c.ev.OwnerID, Type: c.ev.Type}
		if !slices.ContainsFunc(expect, func(e store.Expected) bool { return e.OwnerType == k }) {
			expect = append(expect, store.Expected{OwnerType: k, Rule: last.rule, Subscribed: last.subscribed})
		}
		if c.confirmKey != "" && !slices.Contains(keys, c.confirmKey) {
			keys = append(keys, c.confirmKey)
		}
		if last.rule.SchemaHash != "" && c.pre.err != nil {
			refused = append(refused, c)
			continue
		}
		if last.subscribed && last.rule.Exposure == event.Webhook {
			// The job insertFanoutJobs would insert; with tracing on
			// it would carry the caller's trace, which only River's
			// client (its middleware) writes.
			if c.trace != nil || !q.CanInsertJobs() {
				return nil, nil, false, false, nil
			}
			if jobs == nil {
				jobs = make([]*store.Job, len(evs), len(calls))
			}
			job, err := fanoutJob(c.ev.ID)
			if err != nil {
				return nil, nil, false, false, err
			}
			jobs = append(jobs, job)
		} else if jobs != nil {
			jobs = append(jobs, nil)
		}
		admitted, evs, exposure = append(admitted, c), append(evs, c.ev), append(exposure, last.rule.Exposure)
	}
	if len(evs) == 0 {
		return nil, nil, false, false, nil
	}
	res, held, err := q.InsertExpectedAndCommit(ctx, evs, jobs, expect, keys)
	if err == nil {
		s.expectedGroup(held)
	}
	if err != nil || !held {
		return nil, nil, true, false, err
	}
	for _, c := range refused {
		c.err = c.pre.err
	}
	out = make([]Published, len(evs))
	for i := range evs {
		out[i] = Published{ID: res[i].ID, Duplicate: !res[i].Inserted, Exposure: exposure[i]}
	}
	if s.cfg.Metrics != nil {
		s.countPublished(ctx, q, evs, res)
	}
	return admitted, out, true, true, nil
}

// fanoutJob is the fanout job of the event id as River's InsertManyTx
// would write it for insertFanoutJobs: FanoutArgs with
// FanoutArgs.InsertOpts.
func fanoutJob(eventID string) (*store.Job, error) {
	args := FanoutArgs{EventID: eventID}
	opts := args.InsertOpts()
	return storeJob(args, &opts)
}

// storeJob is the job River's insert would write for args with opts (the
// job's whole options: the store applies no defaults), its args encoded
// as River encodes them (encoding/json).
func storeJob(args river.JobArgs, opts *river.InsertOpts) (*store.Job, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return &store.Job{Kind: args.Kind(), Queue: opts.Queue, MaxAttempts: opts.MaxAttempts, Args: b, Metadata: opts.Metadata, ScheduledAt: opts.ScheduledAt, Priority: opts.Priority}, nil
}
