// Package audit is the audit log's domain: a record of one state-changing
// op (who, from where, which op, which resource, what changed), and the
// pending record an op carries in its context until the store writes it in
// the op's own transaction (store.DB.InTx and its variants call Take).
//
// Nothing here knows the database: the ops open a Pending for every op that
// changes state (ops.Op.Call), the store writes it, and the op's answer
// says whether it was.
package audit

import (
	"context"
	"sync"
	"time"
)

// Actor kinds: who called.
const (
	KindAPIKey  = "api_key" // a REST call with a bearer key
	KindMCP     = "mcp"     // an MCP tool call
	KindConsole = "console" // a console session signed in with an API key
	KindOIDC    = "oidc"    // a console session signed in through the identity provider
	KindPortal  = "portal"  // a tenant portal session
	KindCLI     = "cli"     // the hookd command on the server
)

// Actor is who made a change and from where.
type Actor struct {
	Kind string `json:"kind" jsonschema:"api_key, mcp, console, oidc, portal or cli"`
	// ID is the API key's id (api_key, mcp, console), the identity
	// provider's subject (oidc), or empty.
	ID string `json:"id,omitempty"`
	// Name is what a person reads: the key's prefix, the user's e-mail or
	// name, the portal's owner.
	Name string `json:"name,omitempty"`
	// Remote is the caller's address (host:port), empty for the CLI.
	Remote string `json:"remote,omitempty"`
}

// Change is one field an op changed: its old value (absent for a create)
// and its new one (absent for a delete). A secret field's values read
// Redacted.
type Change struct {
	Field string `json:"field"`
	Old   any    `json:"old,omitempty"`
	New   any    `json:"new,omitempty"`
}

// Redacted stands for a secret value in a record.
const Redacted = "[redacted]"

// Record is one audit log entry.
type Record struct {
	ID         string    `json:"id"`
	At         time.Time `json:"at"`
	OwnerID    string    `json:"owner_id,omitempty" jsonschema:"the owner the op acted on (empty: server-wide, e.g. an operator key)"`
	Actor      Actor     `json:"actor"`
	Op         string    `json:"op"`
	Resource   string    `json:"resource" jsonschema:"the kind of thing changed: endpoint, grant, event_type, owner, api_key, portal_link…"`
	ResourceID string    `json:"resource_id,omitempty"`
	Changes    []Change  `json:"changes"`
}

// Pending is the record of an op in progress. The first transaction that
// commits while it is in the context writes it (Take); later ones of the
// same op do not.
type Pending struct {
	mu     sync.Mutex
	rec    Record
	before map[string]any
	after  map[string]any
	taken  bool
	finish func(r *Record, before, after map[string]any)
}

type pendingKey struct{}

// Start returns ctx carrying a pending record; finish, called when it is
// taken, fills in what the op knows by then (resource id, changes) from
// the snapshots Before and After stored.
func Start(ctx context.Context, rec Record, finish func(r *Record, before, after map[string]any)) (context.Context, *Pending) {
	p := &Pending{rec: rec, finish: finish}
	return context.WithValue(ctx, pendingKey{}, p), p
}

// From returns ctx's pending record (nil: none, the op changes nothing or
// is not an op).
func From(ctx context.Context) *Pending {
	p, _ := ctx.Value(pendingKey{}).(*Pending)
	return p
}

// Without returns ctx without its pending record: for work an op starts
// that is not its change (a background job inheriting the context).
func Without(ctx context.Context) context.Context {
	return context.WithValue(ctx, pendingKey{}, (*Pending)(nil))
}

// SetResource names the resource an op changes, when the input does not
// (a create's new id).
func SetResource(ctx context.Context, id string) {
	if p := From(ctx); p != nil {
		p.mu.Lock()
		p.rec.ResourceID = id
		p.mu.Unlock()
	}
}

// Before records the resource as it was before the change (an update reads
// it in its transaction): its JSON fields become the changes' old values.
func Before(ctx context.Context, v any) {
	snapshot(ctx, v, func(p *Pending) *map[string]any { return &p.before })
}

// After records the resource as the change leaves it, before the
// transaction commits: with Before, the changes are every field that
// differs.
func After(ctx context.Context, v any) {
	snapshot(ctx, v, func(p *Pending) *map[string]any { return &p.after })
}

// snapshot stores v's fields, read now, where field says.
func snapshot(ctx context.Context, v any, field func(*Pending) *map[string]any) {
	if p := From(ctx); p != nil {
		m := Fields(v)
		p.mu.Lock()
		*field(p) = m
		p.mu.Unlock()
	}
}

// Take returns the record to write in the committing transaction, once:
// nil when it was taken before (an op's second transaction). Untake gives
// it back if that transaction does not commit.
func (p *Pending) Take(now time.Time, newID func(at time.Time) string) *Record {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taken {
		return nil
	}
	p.taken = true
	rec := p.rec
	if rec.At.IsZero() {
		rec.At = now
	}
	rec.ID = newID(rec.At)
	if p.finish != nil {
		p.finish(&rec, p.before, p.after)
	}
	if rec.Changes == nil {
		rec.Changes = []Change{}
	}
	return &rec
}

// Untake undoes Take: the transaction that held the record rolled back.
func (p *Pending) Untake() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.taken = false
	p.mu.Unlock()
}

// Taken reports whether a committed transaction wrote the record.
func (p *Pending) Taken() bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.taken
}
