package hookd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
)

// EventType is a kind of event your application publishes, offered to every
// owner's endpoints. Events of a type nobody registered are stored but
// never leave hookd, so a type you forgot to declare cannot leak.
type EventType struct {
	// Name is what endpoints subscribe to with globs: lowercase letters,
	// digits, '.', '_' and '-', e.g. "order.created".
	Name        string
	Description string
	// Scoped events are judged by Config.Scope for endpoints attached to a
	// scope source, and by the published slice for the others; events of
	// other types go to every endpoint subscribed to them.
	Scoped bool
	// Internal keeps events of this type inside hookd: stored, never sent.
	Internal bool
	// Schema, when set, is a JSON Schema (draft 2020-12) every event's
	// Data must match: Publish and PublishTx refuse one that does not, with
	// an error naming the field (e.g. "data/amount: minimum: got -1, want
	// 0"). Example is a Data payload that matches it. Open refuses a
	// schema that does not compile and an example that does not match.
	Schema  json.RawMessage
	Example json.RawMessage
}

func (t EventType) internal() event.Type {
	exp := event.Webhook
	if t.Internal {
		exp = event.Internal
	}
	return event.Type{Name: t.Name, Exposure: exp, Scoped: t.Scoped, Description: t.Description, Schema: t.Schema, Example: t.Example}
}

// registerCatalog makes the shared catalog exactly cfg's types (its
// Catalogs, then its EventTypes: offered to every owner) plus each
// profile's own types (offered to that profile's owners only), which win
// over the others on a name: a profile's test event stays its own. Types a
// previous start shared and this one does not are removed.
func registerCatalog(ctx context.Context, db *store.DB, deliverySvc *delivery.Service, profiles *profile.Registry, cfg Config) error {
	extra, err := event.LoadCatalogs(cfg.Catalogs)
	if err != nil {
		return err
	}
	for _, t := range cfg.EventTypes {
		extra = append(extra, t.internal())
	}
	// The failure notifications are offered to every owner.
	extra = append(extra, delivery.NotificationTypes...)
	byName := map[string]event.Type{}
	schemas := map[string]*event.Schema{}
	var names []string
	put := func(t event.Type, prof string, now time.Time) error {
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
		t.OwnerID, t.Exposure, t.Profile, t.CreatedAt = "", exp, prof, now.UTC()
		byName[t.Name] = t
		return nil
	}
	now := cfg.Now()
	for _, t := range extra {
		if err := put(t, "", now); err != nil {
			return err
		}
	}
	for _, p := range profiles.All() {
		for _, t := range p.Catalog() {
			if err := put(t, p.Name(), now); err != nil {
				return err
			}
		}
	}
	err = db.InTx(ctx, func(q *store.Q) error {
		for _, n := range names {
			t := byName[n]
			if err := q.PutEventType(ctx, &t); err != nil {
				return fmt.Errorf("register event type %s: %w", n, err)
			}
		}
		return q.KeepSharedEventTypes(ctx, names)
	})
	if err != nil {
		return err
	}
	for hash, sch := range schemas {
		deliverySvc.KeepSchema(hash, sch)
	}
	return nil
}
