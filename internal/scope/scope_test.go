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
	scoped := &endpoint.Endpoint{ScopeSource: "code_ok"}
	revoked := &endpoint.Endpoint{ScopeSource: "code_revoked"}
	cases := []struct {
		name    string
		ep      *endpoint.Endpoint
		subject string
		data    string
		want    bool
	}{
		{"raw never leaves", plain, "raw://x", `{}`, false},
		{"raw never leaves even scoped", scoped, "raw://x", `{}`, false},
		{"no publication fields", plain, "wiki://a", `{"op":"created"}`, true},
		{"published", plain, "wiki://a", `{"published":true}`, true},
		{"unpublished now but was", plain, "wiki://a", `{"published":false,"was_published":true}`, true},
		{"never published", plain, "wiki://a", `{"published":false,"was_published":false}`, false},
		{"granted source", scoped, "wiki://a", `{"published":false}`, true},
		{"revoked source", revoked, "wiki://a", `{}`, false},
	}
	for _, c := range cases {
		ev := &event.Event{Subject: c.subject, Data: json.RawMessage(c.data)}
		got, err := p.Admits(context.Background(), c.ep, ev)
		if err != nil || got != c.want {
			t.Errorf("%s: Admits = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	if ok, _ := (Predicate{}).Admits(context.Background(), scoped, &event.Event{Data: json.RawMessage(`{}`)}); ok {
		t.Error("scoped endpoint admitted with no source function (must fail closed)")
	}
}
