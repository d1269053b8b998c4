package scope

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
)

var t0 = time.Date(2026, 10, 28, 12, 0, 0, 0, time.UTC)

func TestAdmits(t *testing.T) {
	t.Parallel()
	foreign := map[string]bool{"code_ok": true}
	p := Predicate{Source: func(_ context.Context, id string, ev *event.Event) (bool, error) {
		return foreign[id], nil
	}}
	plain := &endpoint.Endpoint{}
	granted := &endpoint.Endpoint{GrantID: "code_ok"}
	revoked := &endpoint.Endpoint{GrantID: "code_revoked"}
	scoped := &View{Scoped: map[string]bool{"note.changed": true}, Now: t0}
	cases := []struct {
		name    string
		ep      *endpoint.Endpoint
		typ     string
		subject string
		data    string
		want    bool
	}{
		{"raw never leaves", plain, "note.changed", "raw://x", `{"published":true}`, false},
		{"raw never leaves even granted", granted, "note.changed", "raw://x", `{}`, false},
		{"raw never leaves an unscoped type", plain, "booking.created", "raw://x", `{}`, false},
		{"RAW:// is raw (schemes are case-insensitive)", plain, "booking.created", "RAW://x", `{}`, false},
		{"Raw:// is raw", granted, "note.changed", "Raw://x", `{"published":true}`, false},
		{"rAw:// is raw", plain, "note.changed", "rAw://x", `{"published":true}`, false},
		{"raw: without // is not", plain, "booking.created", "raw:x", `{}`, true},
		{"scoped, no publication fields", plain, "note.changed", "wiki://a", `{"op":"created"}`, false},
		{"scoped, published", plain, "note.changed", "wiki://a", `{"published":true}`, true},
		{"scoped, unpublished now but was", plain, "note.changed", "wiki://a", `{"published":false,"was_published":true}`, true},
		{"scoped, never published", plain, "note.changed", "wiki://a", `{"published":false,"was_published":false}`, false},
		{"unscoped skips the published slice", plain, "booking.created", "wiki://a", `{"published":false,"was_published":false}`, true},
		{"unscoped skips the grant", revoked, "booking.created", "wiki://a", `{}`, true},
		{"scoped, the program's source admits", granted, "note.changed", "wiki://a", `{"published":false}`, true},
		{"scoped, the program's source refuses", revoked, "note.changed", "wiki://a", `{"published":true}`, false},
	}
	for _, c := range cases {
		ev := &event.Event{Type: c.typ, Subject: c.subject, Data: json.RawMessage(c.data)}
		got, err := p.Admits(context.Background(), c.ep, ev, scoped)
		if err != nil || got != c.want {
			t.Errorf("%s: Admits = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

// TestGrantRules walks each rule of a stored grant: allow, deny,
// published_only on a published, an unpublished and a was-published note,
// revoked, expired and deleted.
func TestGrantRules(t *testing.T) {
	t.Parallel()
	past, future := t0.Add(-time.Minute), t0.Add(time.Hour)
	grants := map[string]*Grant{
		"docs":     {ID: "docs", Allow: []string{"wiki://software/*"}, Deny: []string{"wiki://software/secret/*"}},
		"pub":      {ID: "pub", Allow: []string{"*"}, PublishedOnly: true},
		"revoked":  {ID: "revoked", Allow: []string{"*"}, RevokedAt: &past},
		"expired":  {ID: "expired", Allow: []string{"*"}, ExpiresAt: &t0},
		"expiring": {ID: "expiring", Allow: []string{"*"}, ExpiresAt: &future},
	}
	v := &View{Scoped: map[string]bool{"corpus.note.changed": true}, Grants: grants, Now: t0}
	const (
		published    = `{"op":"updated","published":true,"was_published":true}`
		unpublished  = `{"op":"created","published":false,"was_published":false}`
		wasPublished = `{"op":"unpublished","published":false,"was_published":true}`
	)
	cases := []struct {
		grant, subject, data string
		want                 bool
	}{
		{"docs", "wiki://software/project/standmeet/architecture", unpublished, true}, // allow, and not published-only
		{"docs", "wiki://personal/diary", published, false},                           // outside allow
		{"docs", "wiki://software/secret/keys", published, false},                     // deny takes from allow
		{"pub", "wiki://a", published, true},
		{"pub", "wiki://a", unpublished, false},
		{"pub", "wiki://a", wasPublished, true},
		{"revoked", "wiki://a", published, false},
		{"expired", "wiki://a", published, false},
		{"expiring", "wiki://a", published, true},
		{"deleted", "wiki://a", published, false},
	}
	for _, c := range cases {
		ep := &endpoint.Endpoint{GrantID: c.grant}
		ev := &event.Event{Type: "corpus.note.changed", Subject: c.subject, Data: json.RawMessage(c.data)}
		got, err := Predicate{}.Admits(context.Background(), ep, ev, v)
		if err != nil || got != c.want {
			t.Errorf("grant %s, %s %s: Admits = %v, %v; want %v", c.grant, c.subject, c.data, got, err, c.want)
		}
	}
	for id, want := range map[string]GrantStatus{"docs": GrantActive, "revoked": GrantRevoked, "expired": GrantExpired, "expiring": GrantActive, "deleted": GrantDeleted} {
		if got := grants[id].Status(t0); got != want {
			t.Errorf("%s: status %s, want %s", id, got, want)
		}
	}
}

func TestValidateGrant(t *testing.T) {
	t.Parallel()
	for _, g := range []*Grant{
		{},                              // no allow
		{Allow: []string{""}},           // empty glob
		{Allow: []string{"wiki://a b"}}, // space
		{Allow: []string{"*"}, Deny: []string{"x\ny"}},
	} {
		if ValidateGrant(g) == nil {
			t.Errorf("grant %+v accepted", g)
		}
	}
	if err := ValidateGrant(&Grant{Allow: []string{"wiki://software/*"}, Deny: []string{"wiki://software/secret/*"}}); err != nil {
		t.Error(err)
	}
}
