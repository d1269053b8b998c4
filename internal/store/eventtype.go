package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hookd/hookd/internal/apperr"

	"github.com/hookd/hookd/internal/event"
)

// offered is the condition on a hookd_event_types row (named t) that makes
// it one owner $1 sees: its own, or a shared one offered to every owner or
// to the owner's profile.
const offered = `(t.owner_id = $1 OR (t.owner_id = '' AND t.profile IN ('', (SELECT profile FROM hookd_owners WHERE id = $1))))`

// offeredTo is offered for the owner whose id is the SQL expression o.
func offeredTo(o string) string {
	return `(t.owner_id = ` + o + ` OR (t.owner_id = '' AND t.profile IN ('', (SELECT profile FROM hookd_owners WHERE id = ` + o + `))))`
}

// effective adds to offered: a shared type the owner has registered itself
// is the owner's, not the shared one.
var effective = effectiveFor("$1")

// effectiveFor is effective for the owner the SQL expression o names.
func effectiveFor(o string) string {
	return offeredTo(o) + ` AND (t.owner_id <> '' OR NOT EXISTS (SELECT 1 FROM hookd_event_types o WHERE o.owner_id = ` + o + ` AND o.name = t.name))`
}

// byName picks the one type of a name an owner sees: its own registration
// first, then a shared one offered to it.
const byName = ` FROM hookd_event_types t WHERE t.name = $2 AND ` + offered + ` ORDER BY t.owner_id DESC LIMIT 1`

// PutEventType registers or updates an event type (OwnerID "" for the
// catalog shared by every owner).
func (q *Q) PutEventType(ctx context.Context, t *event.Type) error {
	_, err := q.exec(ctx, `INSERT INTO hookd_event_types (owner_id, name, exposure, scoped, profile, description, data_schema, schema_hash, example, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (owner_id, name) DO UPDATE SET exposure = excluded.exposure, scoped = excluded.scoped, profile = excluded.profile, description = excluded.description,
			data_schema = excluded.data_schema, schema_hash = excluded.schema_hash, example = excluded.example`,
		t.OwnerID, t.Name, string(t.Exposure), t.Scoped, t.Profile, t.Description, string(t.Schema), t.SchemaHash, string(t.Example), ts(t.CreatedAt))
	if err != nil {
		return fmt.Errorf("put event type: %w", err)
	}
	return nil
}

// SharedEventTypes returns the shared catalog, every owner's and each
// profile's own, by name, with Profile set.
func (q *Q) SharedEventTypes(ctx context.Context) ([]*event.Type, error) {
	out, err := collect(ctx, q, func(r row) (*event.Type, error) {
		var prof string
		t, err := scanTypeWith(r, &prof)
		if t != nil {
			t.Profile = prof
		}
		return t, err
	}, `SELECT `+typeColumns+`, t.profile FROM hookd_event_types t WHERE t.owner_id = '' ORDER BY t.name`)
	if err != nil {
		return nil, fmt.Errorf("shared event types: %w", err)
	}
	return out, nil
}

// RemoveSharedEventTypes removes the shared types named, all or none: a
// name the shared catalog does not hold is refused, naming it, and
// nothing is removed. Owners' own registrations of those names stay.
func (q *Q) RemoveSharedEventTypes(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	have, err := collect(ctx, q, scanOne[string], `SELECT name FROM hookd_event_types WHERE owner_id = '' AND name IN (`+placeholders(1, len(names))+`)`, anys(names)...)
	if err != nil {
		return fmt.Errorf("shared event types: %w", err)
	}
	held := setOf(have)
	var missing []string
	for _, n := range names {
		if !held[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return apperr.New(apperr.NotFound, "not in the shared catalog: %s ('hookd catalog list' shows what is); nothing was removed", strings.Join(missing, ", "))
	}
	if _, err := q.exec(ctx, `DELETE FROM hookd_event_types WHERE owner_id = '' AND name IN (`+placeholders(1, len(names))+`)`, anys(names)...); err != nil {
		return fmt.Errorf("remove shared event types: %w", err)
	}
	return nil
}

// ListEventTypes returns the types an owner sees: its own, then the shared
// ones offered to it (to every owner, or to its profile) that it has not
// registered itself, by name.
func (q *Q) ListEventTypes(ctx context.Context, ownerID string) ([]*event.Type, error) {
	out, err := collect(ctx, q, scanType, `SELECT `+typeColumns+` FROM hookd_event_types t
		WHERE `+effective+` ORDER BY t.name`, ownerID)
	if err != nil {
		return nil, fmt.Errorf("list event types: %w", err)
	}
	return out, nil
}

const typeColumns = `t.owner_id, t.name, t.exposure, t.scoped, t.description, t.data_schema, t.schema_hash, t.example, t.created_at`

func scanType(r row) (*event.Type, error) { return scanTypeWith(r) }

// scanTypeWith reads typeColumns, then any columns after them into extra.
func scanTypeWith(r row, extra ...any) (*event.Type, error) {
	var t event.Type
	var schema, example string
	var created int64
	if err := r.Scan(append([]any{&t.OwnerID, &t.Name, &t.Exposure, &t.Scoped, &t.Description, &schema, &t.SchemaHash, &example, &created}, extra...)...); err != nil {
		return nil, err
	}
	if schema != "" {
		t.Schema = json.RawMessage(schema)
	}
	if example != "" {
		t.Example = json.RawMessage(example)
	}
	t.CreatedAt = fromTS(created)
	return &t, nil
}

// GetEventType returns the type an owner sees by a name: its own
// registration, else the shared one offered to it.
func (q *Q) GetEventType(ctx context.Context, ownerID, name string) (*event.Type, error) {
	t, err := scanType(q.queryRow(ctx, `SELECT `+typeColumns+byName, ownerID, name))
	if NotFound(err) {
		return nil, apperr.New(apperr.NotFound, "event type %q is not registered: register it with PUT /api/admin/event_types/%s", name, name)
	}
	if err != nil {
		return nil, fmt.Errorf("get event type: %w", err)
	}
	return t, nil
}

// Exposure returns a type's exposure for an owner (its own registration
// first, then the shared ones offered to it) and whether it is registered
// at all. Unregistered types are Internal.
func (q *Q) Exposure(ctx context.Context, ownerID, name string) (event.Exposure, bool, error) {
	r, err := q.TypeRule(ctx, ownerID, name)
	return r.Exposure, r.Registered, err
}

// Rule is what a publish needs of an event's type: its exposure and the
// hash of its schema ("" none), read in the publish's transaction so an
// update committed before it is what it sees.
type Rule struct {
	Exposure   event.Exposure
	SchemaHash string
	Registered bool
}

// TypeRule returns the Rule of a type for an owner, as Exposure resolves
// it. Unregistered types are Internal, with no schema.
func (q *Q) TypeRule(ctx context.Context, ownerID, name string) (Rule, error) {
	var exp, hash string
	err := q.queryRow(ctx, `SELECT t.exposure, t.schema_hash`+byName, ownerID, name).Scan(&exp, &hash)
	if NotFound(err) {
		return Rule{Exposure: event.Internal}, nil
	}
	if err != nil {
		return Rule{}, fmt.Errorf("event type exposure: %w", err)
	}
	return Rule{Exposure: event.Exposure(exp), SchemaHash: hash, Registered: true}, nil
}

// OwnerType is one owner's event type, as a publish names it.
type OwnerType struct{ Owner, Type string }

// PublishRules is what a publish reads before it writes: the Rule of each
// of its events' types, which of their owners have an enabled endpoint (a
// publish makes fanout jobs only for their events), which of the API keys
// it confirms exist unrevoked, and which owners are gone.
type PublishRules struct {
	Of         map[OwnerType]Rule
	Subscribed map[string]bool
	Confirmed  map[string]bool // API key ids
	Gone       map[string]bool // owner ids with no row
}

// ReadPublishRules reads the rules of keys (distinct) and their owners'
// endpoints, and confirms apiKeys (ids; see APIKeyByHashCached), in one
// statement: in a group commit it is the transaction's first, and goes out
// with BEGIN (postgres_pipeline.go). Each rule is TypeRule's. On PostgreSQL it locks
// the owners' rows (FOR KEY SHARE) until the transaction ends: events have
// no foreign key to their owner there (migration 011), and the lock is
// what makes an owner's delete wait for the publish, then delete its
// events (DeleteOwner), as the key's check did.
func (q *Q) ReadPublishRules(ctx context.Context, keys []OwnerType, apiKeys []string) (PublishRules, error) {
	out := PublishRules{Of: make(map[OwnerType]Rule, len(keys)), Subscribed: map[string]bool{}, Confirmed: map[string]bool{}, Gone: map[string]bool{}}
	if len(keys) == 0 {
		return out, nil
	}
	var sb strings.Builder
	args := make([]any, 0, 2*len(keys)+len(apiKeys))
	sb.WriteString(`WITH k(o, n) AS (VALUES `)
	for i, k := range keys {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString("(" + placeholders(len(args)+1, 2) + ")")
		args = append(args, k.Owner, k.Type)
	}
	sb.WriteString(`), ` + q.liveOwners())
	sb.WriteString(` SELECT k.o, k.n, ` + ruleOf("exposure") + `, ` + ruleOf("schema_hash") + `, ` + subscribed + `, live.id IS NOT NULL FROM k LEFT JOIN live ON live.id = k.o`)
	if len(apiKeys) > 0 {
		// A confirmed key is a row with no type.
		sb.WriteString(` UNION ALL SELECT a.id, NULL, NULL, NULL, false, true FROM hookd_api_keys a WHERE a.revoked_at IS NULL AND a.id IN (` + placeholders(len(args)+1, len(apiKeys)) + `)`)
		args = append(args, anys(apiKeys)...)
	}
	type ruleRow struct {
		owner             string
		typ, exp, hash    *string
		subscribed, alive bool
	}
	rows, err := collect(ctx, q, func(r row) (v ruleRow, err error) {
		err = r.Scan(&v.owner, &v.typ, &v.exp, &v.hash, &v.subscribed, &v.alive)
		return v, err
	}, sb.String(), args...)
	if err != nil {
		return PublishRules{}, fmt.Errorf("event type rules: %w", err)
	}
	for _, v := range rows {
		if v.typ == nil {
			out.Confirmed[v.owner] = true
			continue
		}
		if !v.alive {
			out.Gone[v.owner] = true
		}
		r := Rule{Exposure: event.Internal}
		if v.exp != nil {
			r = Rule{Exposure: event.Exposure(*v.exp), Registered: true}
			if v.hash != nil {
				r.SchemaHash = *v.hash
			}
		}
		out.Of[OwnerType{Owner: v.owner, Type: *v.typ}] = r
		if v.subscribed {
			out.Subscribed[v.owner] = true
		}
	}
	return out, nil
}

// ruleOf is SQL for one column of the type k.n an owner k.o publishes, as
// TypeRule resolves it (NULL: not registered), in a statement whose rows
// k are (owner, type) pairs.
func ruleOf(col string) string {
	return `(SELECT t.` + col + ` FROM hookd_event_types t WHERE t.name = k.n AND ` + offeredTo(`k.o`) + ` ORDER BY t.owner_id DESC LIMIT 1)`
}

// subscribed is SQL for whether the owner k.o has an enabled endpoint.
const subscribed = `EXISTS (SELECT 1 FROM hookd_endpoints e WHERE e.owner_id = k.o AND e.enabled = true)`

// liveOwners is a CTE live of those owners k.o that exist, each locked
// (FOR KEY SHARE, PostgreSQL) until the transaction ends: see
// ReadPublishRules.
func (q *Q) liveOwners() string {
	return `live AS (SELECT id FROM hookd_owners WHERE id IN (SELECT o FROM k)` + q.keyShare() + `)`
}

// scopedTypesOf, followed by effective (or effectiveFor), reads the names
// of the scoped types an owner sees.
const scopedTypesOf = `SELECT t.name FROM hookd_event_types t WHERE t.scoped AND `

// TypeSchema returns the schema of a type for an owner and its hash, as
// TypeRule resolves the type: what a process compiles when it first meets
// a hash. An update committed since the rule was read shows here: its
// schema is the newer one, and the publish checks against that.
func (q *Q) TypeSchema(ctx context.Context, ownerID, name string) ([]byte, string, error) {
	var s, hash string
	err := q.queryRow(ctx, `SELECT t.data_schema, t.schema_hash`+byName, ownerID, name).Scan(&s, &hash)
	if err != nil && !NotFound(err) {
		return nil, "", fmt.Errorf("event type schema: %w", err)
	}
	return []byte(s), hash, nil
}

// ScopedTypes returns the names of the types that are scoped for an owner
// (usually none or one): fanout judges scope only for these.
func (q *Q) ScopedTypes(ctx context.Context, ownerID string) (map[string]bool, error) {
	names, err := collect(ctx, q, scanOne[string], scopedTypesOf+effective, ownerID)
	if err != nil {
		return nil, fmt.Errorf("scoped event types: %w", err)
	}
	return setOf(names), nil
}
