package delivery

import (
	"context"
	"slices"

	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
)

// The one-round-trip group commit. A group whose owners had no enabled
// endpoint when this process last read their types' rules (lastRules,
// schema.go) needs no fanout job, and its rules are almost always what
// they were then; so the group commits with
// store.Q.InsertQuietEventsAndCommit, which reads the rules and inserts the
// events in one statement, sent with BEGIN and COMMIT, and writes only if
// the rules are what this process expected. Each caller's answer is what
// the usual way (insertAdmitted) would have given: the schema verdict
// precheck reached against the expected schema is the verdict of the
// schema read, a revoked key or a gone owner makes the expectation fail,
// and the usual way then answers. A group with any call whose type was
// last read with an endpoint, or whose data precheck did not check against
// the schema expected, goes the usual way at once.

// insertQuiet commits the group's calls in one round trip if it can (see
// above): tried says it sent that round trip, held that it committed them,
// and then every call is answered, a call refused by its schema with its
// refusal and the others by admitted and out. Not held, nothing was
// written and q begins anew; err is as insertAdmitted's.
func (s *Service) insertQuiet(ctx context.Context, q *store.Q, calls []*publishCall) (admitted []*publishCall, out []Published, tried, held bool, err error) {
	if !q.CanInsertQuiet() {
		return nil, nil, false, false, nil
	}
	var expect []store.Expected
	var keys []string
	var refused []*publishCall // by their schema, if what was expected holds
	admitted = make([]*publishCall, 0, len(calls))
	evs := make([]*event.Event, 0, len(calls))
	exposure := make([]event.Exposure, 0, len(calls))
	for _, c := range calls {
		last, ok := s.lastRules.get(c.ev.OwnerID, c.ev.Type)
		if !ok || !last.quiet || last.rule.SchemaHash != c.pre.hash && last.rule.SchemaHash != "" {
			return nil, nil, false, false, nil
		}
		k := store.OwnerType{Owner: c.ev.OwnerID, Type: c.ev.Type}
		if !slices.ContainsFunc(expect, func(e store.Expected) bool { return e.OwnerType == k }) {
			expect = append(expect, store.Expected{OwnerType: k, Rule: last.rule})
		}
		if c.confirmKey != "" && !slices.Contains(keys, c.confirmKey) {
			keys = append(keys, c.confirmKey)
		}
		if last.rule.SchemaHash != "" && c.pre.err != nil {
			refused = append(refused, c)
			continue
		}
		admitted, evs, exposure = append(admitted, c), append(evs, c.ev), append(exposure, last.rule.Exposure)
	}
	if len(evs) == 0 {
		return nil, nil, false, false, nil
	}
	res, held, err := q.InsertQuietEventsAndCommit(ctx, evs, expect, keys)
	if h := s.hook().QuietGroup; h != nil && err == nil {
		h(held)
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
