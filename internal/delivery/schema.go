package delivery

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
)

// The check of an event's data against its type's schema. The type's rule
// (its exposure and the hash of its schema) is read in the publish's
// transaction, so a publish always meets the schema that is current when it
// commits. The check itself need not wait for that read: before the
// transaction (or, for a group commit, before the caller joins the group),
// precheck validates each event against the schema its type had at the last
// publish this process saw, in the caller's goroutine and, for a batch,
// spread over the CPUs. In the transaction admit keeps that verdict when
// the rule still names the same schema and checks again when it does not
// (the schema changed, or this process had not met the type yet). So the
// validator's cost is paid outside the transaction and out of the group
// commit's one goroutine, and it is paid once.

// checked is an event's verdict from precheck: its data against the schema
// of hash ("": not checked).
type checked struct {
	hash string
	err  error
}

// precheck checks each event's data against the last known schema of its
// type; see above. The verdicts are only hints: admit keeps one only if
// the type's current rule names the same schema.
func (s *Service) precheck(evs []*event.Event) []checked {
	var pre []checked
	var todo []int // of evs, with a kept, compiled schema
	var schemas []*event.Schema
	for i, ev := range evs {
		last, _ := s.lastRules.get(ev.OwnerID, ev.Type)
		hash := last.rule.SchemaHash
		if hash == "" {
			continue
		}
		sch, ok := s.schemas.Get(hash)
		if !ok {
			continue
		}
		if pre == nil {
			pre = make([]checked, len(evs))
		}
		pre[i].hash = hash
		todo = append(todo, i)
		schemas = append(schemas, sch)
	}
	validateAll(len(todo), func(j int) {
		i := todo[j]
		pre[i].err = schemas[j].Validate(evs[i].Data)
	})
	return pre
}

// parallelFrom is the fewest checks a batch spreads over more than one
// goroutine; perEach the fewest each goroutine then takes (a goroutine
// costs about as much as a small check).
const (
	parallelFrom = 16
	perEach      = 8
)

// validateAll runs check(0..n-1): in this goroutine for a few, else spread
// over the CPUs.
func validateAll(n int, check func(j int)) {
	workers := min(runtime.GOMAXPROCS(0), n/perEach)
	if n < parallelFrom || workers < 2 {
		for j := range n {
			check(j)
		}
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for j := w; j < n; j += workers {
				check(j)
			}
		})
	}
	wg.Wait()
}

// verdicts is what admit decided of a publish's events.
type verdicts struct {
	rules []store.Rule // event i's type rule
	// subscribed are the events' owners with an enabled endpoint: only
	// their events get fanout jobs.
	subscribed map[string]bool
	// confirmed are the API keys (of those admit was asked to confirm)
	// that exist unrevoked.
	confirmed map[string]bool
	refused   []error // event i's refusal (nil: admitted)
}

// admit reads the rule of each event's type and which of the events'
// owners have endpoints, in q's transaction and in one statement (in a
// group commit it goes out with BEGIN), and checks each event's data
// against its type's schema, keeping precheck's verdict (pre, nil for
// none) where it was reached with that schema; it also confirms apiKeys
// (ids, for the group commit's callers authenticated from the key cache).
// err is a failure of the
// reads, which admits nothing. It writes nothing, so a group commit
// answers a refused caller alone and goes on with the others.
func (s *Service) admit(ctx context.Context, q *store.Q, evs []*event.Event, pre []checked, apiKeys []string) (verdicts, error) {
	keys := make([]store.OwnerType, 0, 1)
	seen := make(map[store.OwnerType]bool, 1)
	for _, ev := range evs {
		if k := (store.OwnerType{Owner: ev.OwnerID, Type: ev.Type}); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	read, err := q.ReadPublishRules(ctx, keys, apiKeys)
	if err != nil {
		return verdicts{}, err
	}
	for _, k := range keys {
		s.lastRules.set(k, lastRule{rule: read.Of[k], live: !read.Gone[k.Owner], subscribed: read.Subscribed[k.Owner]})
	}
	v := verdicts{rules: make([]store.Rule, len(evs)), subscribed: read.Subscribed, confirmed: read.Confirmed, refused: make([]error, len(evs))}
	var todo []int // of evs, to check here
	var schemas []*event.Schema
	for i, ev := range evs {
		r := read.Of[store.OwnerType{Owner: ev.OwnerID, Type: ev.Type}]
		v.rules[i] = r
		switch {
		case read.Gone[ev.OwnerID]:
			v.refused[i] = apperr.New(apperr.NotFound, "owner %q not found: it was deleted", ev.OwnerID)
			continue
		case r.SchemaHash == "":
			continue
		case pre != nil && pre[i].hash == r.SchemaHash:
			v.refused[i] = pre[i].err
			continue
		}
		sch, err := s.schema(ctx, q, ev, r.SchemaHash)
		if err != nil {
			return verdicts{}, err
		}
		if sch != nil {
			todo = append(todo, i)
			schemas = append(schemas, sch)
		}
	}
	validateAll(len(todo), func(j int) {
		i := todo[j]
		v.refused[i] = schemas[j].Validate(evs[i].Data)
	})
	return v, nil
}

// schema returns the compiled schema of a hash: kept, or read with ev's
// type and compiled (the first publish of it in this process); nil when
// the type's schema was removed since its rule was read.
func (s *Service) schema(ctx context.Context, q *store.Q, ev *event.Event, hash string) (*event.Schema, error) {
	if sch, ok := s.schemas.Get(hash); ok {
		return sch, nil
	}
	text, got, err := q.TypeSchema(ctx, ev.OwnerID, ev.Type)
	if err != nil {
		return nil, err
	}
	if got == "" {
		return nil, nil
	}
	sch, err := event.CompileSchema(text)
	if err != nil {
		// It compiled when it was set; a library upgrade may disagree.
		return nil, fmt.Errorf("compile the schema of event type %s: %w", ev.Type, err)
	}
	s.schemas.Put(got, sch)
	return sch, nil
}

// KeepSchema keeps a schema compiled where it was set (an update, the
// catalog at start), so this process's next publish need not compile it.
func (s *Service) KeepSchema(hash string, sch *event.Schema) {
	if hash != "" && sch != nil {
		s.schemas.Put(hash, sch)
	}
}

// lastRules remembers, per owner and type, what the last publish read of
// it: its rule, whose schema precheck checks against, and whether its owner
// existed and had an enabled endpoint, which the group commit's
// one-round-trip insert expects to read again (publish_onetrip.go).
type lastRules struct {
	mu sync.RWMutex
	m  map[store.OwnerType]lastRule
}

type lastRule struct {
	rule store.Rule
	// live: the owner existed; subscribed: it had an enabled endpoint.
	live, subscribed bool
}

// lastRulesMax bounds the types remembered; past it all are forgotten,
// which costs the next publish of each a check in its transaction.
const lastRulesMax = 4096

func (t *lastRules) get(ownerID, typ string) (lastRule, bool) {
	t.mu.RLock()
	r, ok := t.m[store.OwnerType{Owner: ownerID, Type: typ}]
	t.mu.RUnlock()
	return r, ok
}

func (t *lastRules) set(k store.OwnerType, r lastRule) {
	t.mu.RLock()
	was, ok := t.m[k]
	t.mu.RUnlock()
	if ok && was == r {
		return
	}
	t.mu.Lock()
	if t.m == nil || len(t.m) >= lastRulesMax {
		t.m = map[store.OwnerType]lastRule{}
	}
	t.m[k] = r
	t.mu.Unlock()
}
