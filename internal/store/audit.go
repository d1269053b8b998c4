package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/event"
)

// The audit log (migration 020). An op's pending record (audit.Pending in
// its context) is written by the first transaction of the op that commits:
// InTx and its variants call writeAudit before their COMMIT, so the record
// and the change it describes commit or roll back together.

const auditCols = `id, at, owner_id, actor_kind, actor_id, actor_name, remote, op, resource, resource_id, changes`

// writeAudit inserts ctx's pending audit record, if it has one not yet
// written, into the transaction q. It returns the pending record, to give
// back (Untake) if the transaction does not commit.
func (q *Q) writeAudit(ctx context.Context) (*audit.Pending, error) {
	p := audit.From(ctx)
	rec := p.Take(time.Now().UTC(), func(at time.Time) string { return event.NewID("aud_", at) })
	if rec == nil {
		return nil, nil
	}
	if err := q.InsertAudit(ctx, rec); err != nil {
		p.Untake()
		return nil, err
	}
	return p, nil
}

// InsertAudit writes one audit record.
func (q *Q) InsertAudit(ctx context.Context, r *audit.Record) error {
	changes, err := json.Marshal(r.Changes)
	if err != nil {
		return fmt.Errorf("audit changes: %w", err)
	}
	_, err = q.exec(ctx, `INSERT INTO hookd_audit (`+auditCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		r.ID, ts(r.At), r.OwnerID, r.Actor.Kind, r.Actor.ID, r.Actor.Name, r.Actor.Remote, r.Op, r.Resource, r.ResourceID, string(changes))
	if err != nil {
		return fmt.Errorf("write audit record: %w", err)
	}
	return nil
}

func scanAudit(r row) (*audit.Record, error) {
	var a audit.Record
	var at int64
	var changes string
	if err := r.Scan(&a.ID, &at, &a.OwnerID, &a.Actor.Kind, &a.Actor.ID, &a.Actor.Name, &a.Actor.Remote, &a.Op, &a.Resource, &a.ResourceID, &changes); err != nil {
		return nil, err
	}
	a.At = fromTS(at)
	if err := json.Unmarshal([]byte(changes), &a.Changes); err != nil {
		return nil, fmt.Errorf("audit record %s changes: %w", a.ID, err)
	}
	if a.Changes == nil {
		a.Changes = []audit.Change{}
	}
	return &a, nil
}

// AuditFilter selects audit records; zero fields select everything.
type AuditFilter struct {
	// AllOwners lists every owner's records (an operator); else OwnerID's.
	AllOwners bool
	OwnerID   string
	// Resource matches the resource kind or id; Op the op's name; Actor
	// the actor's id or name.
	Resource, Op, Actor string
	Since, Until        time.Time
	// Before pages: records older than this id.
	Before string
	Limit  int
}

// ListAudit returns records newest first.
func (q *Q) ListAudit(ctx context.Context, f AuditFilter) ([]*audit.Record, error) {
	var where []string
	var args []any
	add := func(cond string, vs ...any) {
		for _, v := range vs {
			args = append(args, v)
			cond = strings.Replace(cond, "?", "$"+strconv.Itoa(len(args)), 1)
		}
		where = append(where, cond)
	}
	if !f.AllOwners {
		add(`owner_id = ?`, f.OwnerID)
	}
	if f.Resource != "" {
		add(`(resource = ? OR resource_id = ?)`, f.Resource, f.Resource)
	}
	if f.Op != "" {
		add(`op = ?`, f.Op)
	}
	if f.Actor != "" {
		add(`(actor_id = ? OR actor_name = ?)`, f.Actor, f.Actor)
	}
	if !f.Since.IsZero() {
		add(`at >= ?`, ts(f.Since))
	}
	if !f.Until.IsZero() {
		add(`at < ?`, ts(f.Until))
	}
	if f.Before != "" {
		add(`id < ?`, f.Before)
	}
	query := `SELECT ` + auditCols + ` FROM hookd_audit`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	args = append(args, f.Limit)
	query += ` ORDER BY id DESC LIMIT $` + strconv.Itoa(len(args))
	return collect(ctx, q, scanAudit, query, args...)
}

// PruneAudit deletes up to batch records older than cutoff (unix µs).
func (q *Q) PruneAudit(ctx context.Context, cutoff int64, batch int) (int64, error) {
	n, err := q.exec(ctx, `DELETE FROM hookd_audit WHERE id IN (SELECT id FROM hookd_audit WHERE at < $1 LIMIT $2)`, cutoff, batch)
	if err != nil {
		return 0, fmt.Errorf("prune audit: %w", err)
	}
	return n, nil
}
