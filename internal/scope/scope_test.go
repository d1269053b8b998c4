package scope

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
)

func TestAdmits(t *testing.T) {
	t.Parallel()
	grants := map[string]bool{"code_ok": true}
	p := Predicate{Source: func(_ context.Context, id string, ev *event.Event) (bool, error) {
		return grants[id], nil
	}}
	plain := &endpoint.Endpoint{}
	granted := &endpoint.Endpoint{ScopeSource: "code_ok"}
	revoked := &endpoint.Endpoint{ScopeSource: "code_revoked"}
	cases := []struct {
		name    string
		ep      *endpoint.Endpoint
		scoped  bool
		subject string
		data    string
		want    bool
	}{
		{"raw never leaves", plain, true, "raw://x", `{"published":true}`, false},
		{"raw never leaves even granted", granted, true, "raw://x", `{}`, false},
		{"raw never leaves an unscoped type", plain, false, "raw://x", `{}`, false},
		{"scoped, no publication fields", plain, true, "wiki://a", `{"op":"created"}`, false},
		{"scoped, published", plain, true, "wiki://a", `{"published":true}`, true},
		{"scoped, unpublished now but was", plain, true, "wiki://a", `{"published":false,"was_published":true}`, true},
		{"scoped, never published", plain, true, "wiki://a", `{"published":false,"was_published":false}`, false},
		{"unscoped skips the published slice", plain, false, "wiki://a", `{"published":false,"was_published":false}`, true},
		{"unscoped skips the grant", revoked, false, "wiki://a", `{}`, true},
		{"scoped, granted source", granted, true, "wiki://a", `{"published":false}`, true},
		{"scoped, revoked source", revoked, true, "wiki://a", `{"published":true}`, false},
	}
	for _, c := range cases {
		ev := &event.Event{Subject: c.subject, Data: json.RawMessage(c.data)}
		got, err := p.Admits(context.Background(), c.ep, ev, c.scoped)
		if err != nil || got != c.want {
			t.Errorf("%s: Admits = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	if ok, _ := (Predicate{}).Admits(context.Background(), granted, &event.Event{Data: json.RawMessage(`{"published":true}`)}, true); ok {
		t.Error("endpoint with a grant admitted with no source function (must fail closed)")
	}
}
