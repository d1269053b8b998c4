package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// The audit log. Every op that is not a GET declares the kind of resource
// it changes (Op.Audit) or why it changes none (Op.NoAudit: publishing, the
// hot path, is not an admin change). Call opens a pending record in the
// op's context; the store writes it in the first transaction of the op
// that commits (store.DB.InTx), so a change and its record commit or roll
// back together, and a failed op leaves none.

// Audited reports whether a call of o writes an audit record.
func (o *Op) Audited() bool { return o.Method != http.MethodGet && o.NoAudit == "" }

func (o *Op) callAudited(ctx context.Context, p Principal, in any) (any, error) {
	actor := p.Actor
	if actor.Kind == "" {
		actor = audit.Actor{Kind: audit.KindAPIKey, ID: p.KeyID}
	}
	rec := audit.Record{At: o.svc.now(), OwnerID: p.OwnerID, Actor: actor, Op: o.Name, Resource: o.Audit}
	ctx, pending := audit.Start(ctx, rec, o.finishAudit(in))
	out, err := o.call(ctx, p, in)
	if err != nil {
		return nil, err
	}
	if !pending.Taken() {
		// The op changed state without a transaction of its own: its
		// record follows in one, not atomic with the change. Every op
		// declared today writes in a transaction (TestAuditLog checks
		// this line is never logged).
		if o.svc.Log != nil {
			o.svc.Log.Warn("audit record written after the change, in a transaction of its own: make the op change state in store.DB.InTx", "op", o.Name)
		}
		if err := o.svc.DB.InTx(ctx, store.TxOptions{}, func(*store.Q) error { return nil }); err != nil {
			return nil, fmt.Errorf("%s: write its audit record: %w", o.Name, err)
		}
	}
	return out, nil
}

// finishAudit completes a record when it is written: the resource from the
// input's path (a create names it with audit.SetResource), and the changes
// from the resource as the op read it and left it (audit.Before and After),
// else from the input's fields, beside the old values the op read.
func (o *Op) finishAudit(in any) func(r *audit.Record, before, after map[string]any) {
	return func(r *audit.Record, before, after map[string]any) {
		path := pathFields(o.In)
		fields := audit.Fields(in)
		if r.ResourceID == "" {
			for _, name := range path {
				if v, ok := fields[name].(string); ok && v != "" {
					r.ResourceID = v
					break
				}
			}
		}
		if o.Audit == "owner" && r.ResourceID != "" {
			r.OwnerID = r.ResourceID
		}
		for _, name := range path {
			delete(fields, name)
		}
		if before != nil && after != nil {
			r.Changes = diff(before, after)
			return
		}
		r.Changes = changes(before, fields, o.Method == http.MethodDelete)
	}
}

// changes lists the fields set in the input, old value beside new; a
// field whose value did not change is left out. A delete lists what was.
func changes(before, after map[string]any, deleted bool) []audit.Change {
	out := []audit.Change{}
	if deleted {
		for _, k := range sortedKeys(before) {
			out = append(out, audit.Change{Field: k, Old: before[k]})
		}
		return out
	}
	for _, k := range sortedKeys(after) {
		c := audit.Change{Field: k, New: after[k]}
		if old, ok := before[k]; ok {
			if sameJSON(old, after[k]) {
				continue
			}
			c.Old = old
		}
		out = append(out, c)
	}
	return out
}

// diff lists every field that differs between the resource before and
// after the change.
func diff(before, after map[string]any) []audit.Change {
	out := []audit.Change{}
	keys := sortedKeys(before)
	for _, k := range sortedKeys(after) {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "updated_at" || sameJSON(before[k], after[k]) {
			continue
		}
		out = append(out, audit.Change{Field: k, Old: before[k], New: after[k]})
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// pathFields returns the JSON names of t's fields bound to the path.
func pathFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("path") == "" {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// AuditIn is audit.list's input.
type AuditIn struct {
	Resource string `json:"resource,omitempty" query:"resource" jsonschema:"only records of this resource kind (endpoint, grant…) or resource id"`
	Op       string `json:"op,omitempty" query:"op" jsonschema:"only records of this op (e.g. webhooks.update)"`
	Actor    string `json:"actor,omitempty" query:"actor" jsonschema:"only records of this actor: an API key id, an identity provider's subject, or a name"`
	Since    string `json:"since,omitempty" query:"since" jsonschema:"only records at or after this RFC 3339 time"`
	Until    string `json:"until,omitempty" query:"until" jsonschema:"only records before this RFC 3339 time"`
	Limit    int    `json:"limit,omitempty" query:"limit" jsonschema:"at most this many (default 50, max 500)"`
	Before   string `json:"before,omitempty" query:"before" jsonschema:"page: records older than this record id (the previous page's next)"`
}

// AuditList is one page of audit records, newest first.
type AuditList struct {
	Data []*audit.Record `json:"data"`
	// Next is the "before" value of the next page ("" when done).
	Next string `json:"next,omitempty"`
}

func (s *Service) auditOps() []*Op {
	return []*Op{
		define(Op{Name: "audit.list", Summary: "The audit log, newest first: who changed what, when and from where. An admin sees its owner's records; an operator every owner's (or the one it names).",
			Method: http.MethodGet, Path: "/api/admin/audit", Status: 200, Role: owner.Admin}, s.listAudit),
	}
}

func (s *Service) listAudit(ctx context.Context, p Principal, in *AuditIn) (*AuditList, error) {
	f := store.AuditFilter{OwnerID: p.OwnerID, AllOwners: p.Role == owner.Operator && p.OwnerID == "",
		Resource: strings.TrimSpace(in.Resource), Op: strings.TrimSpace(in.Op), Actor: strings.TrimSpace(in.Actor), Before: in.Before}
	switch {
	case in.Limit < 0 || in.Limit > 500:
		return nil, apperr.New(apperr.Invalid, "limit must be between 1 and 500")
	case in.Limit == 0:
		f.Limit = 50
	default:
		f.Limit = in.Limit
	}
	if f.Before != "" && !strings.HasPrefix(f.Before, "aud_") {
		// Compared as text, any other value would page from nowhere.
		return nil, apperr.New(apperr.Invalid, "before %q is not an audit record id (aud_…): give the previous page's next", f.Before)
	}
	var err error
	if f.Since, f.Until, err = parseWindow(in.Since, in.Until); err != nil {
		return nil, err
	}
	rs, err := s.DB.Q().ListAudit(ctx, f)
	if err != nil {
		return nil, err
	}
	out := &AuditList{Data: rs}
	if out.Data == nil {
		out.Data = []*audit.Record{}
	}
	if len(rs) == f.Limit {
		out.Next = rs[len(rs)-1].ID
	}
	return out, nil
}

// ByCLI returns ctx carrying the audit record of op run by the hookd
// command on the server itself (hookd apikey create, hookd owner create),
// which calls the Service directly rather than through Call. in is the
// op's input as the command understood its flags.
func (s *Service) ByCLI(ctx context.Context, opName, ownerID, command string, in any) context.Context {
	o := s.Op(opName)
	if o == nil || !o.Audited() {
		return ctx
	}
	rec := audit.Record{At: s.now(), OwnerID: ownerID, Actor: audit.Actor{Kind: audit.KindCLI, Name: command}, Op: o.Name, Resource: o.Audit}
	ctx, _ = audit.Start(ctx, rec, o.finishAudit(in))
	return ctx
}
