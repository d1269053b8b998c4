package profile

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
)

// TestKworkAPIVersionDefault: an owner without api_version still gets a
// dated apiVersion (the kwork profile's current one), never "".
func TestKworkAPIVersionDefault(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ attr, want string }{{"", "2026-10-28"}, {"2027-01-15", "2027-01-15"}} {
		o := &owner.Owner{Attributes: map[string]string{AttrApp: "shop-sync", AttrEnv: "live"}}
		if c.attr != "" {
			o.Attributes[AttrAPIVersion] = c.attr
		}
		body, err := Kwork{}.Body(&event.Event{ID: "evt_1", Type: "app.installed", Data: json.RawMessage(`{}`)}, o)
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			APIVersion string `json:"apiVersion"`
		}
		if err := json.Unmarshal(body, &env); err != nil || env.APIVersion != c.want {
			t.Errorf("api_version %q: apiVersion %q (%v), want %q", c.attr, env.APIVersion, err, c.want)
		}
	}
}

func TestKworkCatalog(t *testing.T) {
	t.Parallel()
	want := map[string]bool{AppInstalled: true, AppUninstalled: true, AppUpgraded: true, AppScopesChanged: true, OpenPing: true}
	for _, typ := range (Kwork{}).Catalog() {
		if !want[typ.Name] {
			t.Errorf("unexpected catalog type %q", typ.Name)
		}
		if typ.Exposure != event.Webhook {
			t.Errorf("%s is %s, want webhook", typ.Name, typ.Exposure)
		}
		if err := event.ValidateTypeName(typ.Name); err != nil {
			t.Error(err)
		}
		delete(want, typ.Name)
	}
	if len(want) != 0 {
		t.Errorf("catalog lacks %v", want)
	}
}

func TestKworkImplicit(t *testing.T) {
	t.Parallel()
	kinds := map[string]*owner.Owner{}
	for _, kind := range []string{"integration", "page", ""} {
		kinds[kind] = &owner.Owner{Attributes: map[string]string{AttrAppKind: kind}}
	}
	cases := []struct {
		typ  string
		kind string
		want bool
	}{
		{AppInstalled, "integration", true}, {AppInstalled, "page", true}, {AppInstalled, "", true},
		{AppUninstalled, "integration", true}, {AppUninstalled, "page", true},
		{AppUpgraded, "integration", true}, {AppUpgraded, "page", true},
		{AppScopesChanged, "integration", true},
		{AppScopesChanged, "page", false}, // a page app never gets it
		{AppScopesChanged, "", false},
		{OpenPing, "integration", false}, // to one subscription only, via send_test
		{"order.paid", "integration", false},
		{"app.installed.extra", "integration", false},
	}
	for _, c := range cases {
		if got := (Kwork{}).Implicit(c.typ, kinds[c.kind]); got != c.want {
			t.Errorf("Implicit(%s, %q) = %v, want %v", c.typ, c.kind, got, c.want)
		}
		if (Standard{}).Implicit(c.typ, kinds[c.kind]) || (Standard{}).Excluded(c.typ, kinds[c.kind]) {
			t.Errorf("standard routes %s specially", c.typ)
		}
		// Only app.scopes_changed is ever refused, and only to non-integration apps.
		wantExcluded := c.typ == AppScopesChanged && c.kind != "integration"
		if got := (Kwork{}).Excluded(c.typ, kinds[c.kind]); got != wantExcluded {
			t.Errorf("Excluded(%s, %q) = %v, want %v", c.typ, c.kind, got, wantExcluded)
		}
		if (Kwork{}).Excluded(c.typ, kinds[c.kind]) && (Kwork{}).Implicit(c.typ, kinds[c.kind]) {
			t.Errorf("%s for %q is both implicit and excluded", c.typ, c.kind)
		}
	}
}

func TestKworkValidateOwner(t *testing.T) {
	t.Parallel()
	cases := []struct {
		attrs map[string]string
		ok    bool
	}{
		{map[string]string{"app": "shop-sync", "environment": "live", "app_kind": "integration", "api_version": "2026-10-28"}, true},
		{map[string]string{"app": "shop-sync", "environment": "test", "app_kind": "page"}, true},
		{map[string]string{"app": "shop-sync", "environment": "live"}, true},
		{map[string]string{"environment": "live"}, false},
		{map[string]string{"app": "shop-sync"}, false},
		{map[string]string{"app": "shop-sync", "environment": "prod"}, false},
		{map[string]string{"app": "shop-sync", "environment": "live", "app_kind": "widget"}, false},
		{nil, false},
	}
	for _, c := range cases {
		if err := (Kwork{}).ValidateOwner(c.attrs); (err == nil) != c.ok {
			t.Errorf("ValidateOwner(%v) = %v, want ok=%v", c.attrs, err, c.ok)
		}
	}
	if (Standard{}).ValidateOwner(nil) != nil {
		t.Error("standard needs no attributes")
	}
}

// appendString must agree with encoding/json on what a string decodes to,
// and always produce valid JSON, whatever bytes a caller sent.
func checkAppendString(t *testing.T, s string) {
	t.Helper()
	got := appendString(nil, s)
	if !json.Valid(got) {
		t.Fatalf("appendString(%q) = %s: not JSON", s, got)
	}
	var dec, ref string
	if err := json.Unmarshal(got, &dec); err != nil {
		t.Fatal(err)
	}
	std, _ := json.Marshal(s)
	_ = json.Unmarshal(std, &ref)
	if dec != ref {
		t.Fatalf("appendString(%q) decodes to %q, encoding/json to %q", s, dec, ref)
	}
	if bytes.ContainsAny(got, "\u2028\u2029") {
		t.Fatalf("appendString(%q) leaves a raw line separator: %s", s, got)
	}
}
