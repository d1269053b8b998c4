package console

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/ops"
)

// auditFilter is the audit page's filter form as the browser sent it.
type auditFilter struct {
	Resource, Op, Actor, Since, Until string
}

type auditData struct {
	Filter  auditFilter
	Records *ops.AuditList
	NextURL string
	Error   string
}

// audit is the audit log (audit.list): the session's owner's records, or
// an operator's every owner's.
func (c *Console) audit(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	f := auditFilter{Resource: q.Get("resource"), Op: q.Get("op"), Actor: q.Get("actor"), Since: q.Get("since"), Until: q.Get("until")}
	in := &ops.AuditIn{Resource: f.Resource, Op: f.Op, Actor: f.Actor, Since: rfc3339(f.Since), Until: rfc3339(f.Until), Before: q.Get("before"), Limit: 50}
	p := s.principal()
	if s.operator() {
		p.OwnerID = "" // every owner's
	}
	d := auditData{Filter: f}
	out, err := c.cfg.Ops.Op("audit.list").Call(r.Context(), p, in)
	status := http.StatusOK
	switch {
	case apperr.CodeOf(err) == apperr.Invalid:
		d.Error, status = c.localeOf(r, s).Err(err), http.StatusUnprocessableEntity
		out = &ops.AuditList{}
	case err != nil:
		c.fail(w, r, s, err)
		return
	}
	d.Records = out.(*ops.AuditList)
	if d.Records.Next != "" {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("before", d.Records.Next)
		d.NextURL = "?" + next.Encode()
	}
	c.render(w, r, status, "audit", s, msg("nav.audit"), d)
}

// auditValue shows a change's value: a string as is, anything else as
// JSON.
func auditValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
