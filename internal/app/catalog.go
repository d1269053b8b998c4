package app

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
)

// registerCatalog adds cfg's types (its Catalogs, then its EventTypes:
// offered to every owner) and hookd's built-in ones (the failure
// notifications; each profile's own types, offered to that profile's
// owners only, which win over the others on a name: a profile's test
// event stays its own) to the shared catalog in the database. It never
// removes a type: the catalog is database state that every start adds
// to, so processes started with different catalogs offer the union, and
// only `hookd catalog remove` takes a type away (docs/scale-out.md). A
// type stored with another definition is rewritten (the latest start's
// wins) and named in a warning; one stored as it is declared is not
// written at all. With cfg.KeepCatalog nothing is added.
func registerCatalog(ctx context.Context, db *store.DB, deliverySvc *delivery.Service, profiles *profile.Registry, cfg Config) error {
	if cfg.KeepCatalog {
		return nil
	}
	extra, err := event.LoadCatalogs(cfg.Catalogs)
	if err != nil {
		return err
	}
	extra = append(extra, cfg.EventTypes...)
	byName := map[string]event.Type{}
	schemas := map[string]*event.Schema{}
	var names []string
	now := cfg.Now().UTC()
	for _, t := range append(extra, delivery.BuiltinTypes(profiles)...) {
		if err := event.ValidateTypeName(t.Name); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
		exp, err := event.ParseExposure(string(t.Exposure))
		if err != nil {
			return fmt.Errorf("catalog %s: %w", t.Name, err)
		}
		sch, err := t.CheckSchema()
		if err != nil {
			return fmt.Errorf("catalog %s: %w", t.Name, err)
		}
		schemas[t.SchemaHash] = sch
		if _, seen := byName[t.Name]; !seen {
			names = append(names, t.Name)
		}
		t.OwnerID, t.Exposure, t.CreatedAt = "", exp, now
		byName[t.Name] = t
	}
	var added, changed []string
	err = db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		added, changed = nil, nil
		stored, err := q.SharedEventTypes(ctx)
		if err != nil {
			return err
		}
		have := make(map[string]*event.Type, len(stored))
		for _, t := range stored {
			have[t.Name] = t
		}
		for _, n := range names {
			t := byName[n]
			old, ok := have[n]
			if ok && sameDefinition(old, &t) {
				continue
			}
			if err := q.PutEventType(ctx, &t); err != nil {
				return fmt.Errorf("register event type %s: %w", n, err)
			}
			if ok {
				changed = append(changed, n)
			} else {
				added = append(added, n)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(added) > 0 {
		cfg.Log.Info("catalog: shared event types added", "count", len(added))
	}
	if len(changed) > 0 {
		cfg.Log.Warn("catalog: shared event types stored with another definition were rewritten with this start's (check that every process runs the same catalogs)", "types", strings.Join(changed, ","))
	}
	for hash, sch := range schemas {
		deliverySvc.KeepSchema(hash, sch)
	}
	return nil
}

// sameDefinition reports whether two shared types say the same: what an
// owner is offered and what a publish checks.
func sameDefinition(a, b *event.Type) bool {
	return a.Exposure == b.Exposure && a.Scoped == b.Scoped && a.Profile == b.Profile && a.Description == b.Description &&
		a.SchemaHash == b.SchemaHash && bytes.Equal(a.Example, b.Example)
}
