package event

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// standardTypes is the standard profile's table of webhook-visible types, in its order.
var standardTypes = strings.Fields(`corpus.note.changed webhook.test
	access_request.created access_request.approved access_request.status_changed
	code.issued code.revoked code.redeemed
	conversation.started conversation.message conversation.pruned ghost.accepted
	booking.created booking.cancelled booking.rescheduled
	application.committed jobs.fetched
	writing.published writing.unpublished vault.imported
	microsite.build.settled page.promoted_live page.rolled_back page.unpublished microsite.store.doc_inserted
	api_key.issued api_key.revoked supplier.connected supplier.disconnected supplier.activated block.installed block.failed
	gas.exhausted gas.refilled instance.upgrade_requested owner.login owner.email_changed owner.recovery_requested ip_ban.added`)

func TestStandmeetCatalog(t *testing.T) {
	t.Parallel()
	if len(standardTypes) != 39 {
		t.Fatalf("the standard profile's table has %d types here, want 39", len(standardTypes))
	}
	c, ok := BuiltinCatalog("standmeet")
	if !ok {
		t.Fatal("no built-in catalog standmeet")
	}
	if len(c) != len(standardTypes) {
		t.Fatalf("standmeet has %d types, want %d", len(c), len(standardTypes))
	}
	for i, typ := range c {
		if typ.Name != standardTypes[i] {
			t.Errorf("type %d is %q, want %q", i, typ.Name, standardTypes[i])
		}
		if err := ValidateTypeName(typ.Name); err != nil {
			t.Error(err)
		}
		if typ.Exposure != Webhook {
			t.Errorf("%s is %s; every standmeet type is webhook-visible", typ.Name, typ.Exposure)
		}
		if typ.Scoped != (typ.Name == "corpus.note.changed") {
			t.Errorf("%s scoped = %v; only corpus.note.changed is scoped", typ.Name, typ.Scoped)
		}
		if d := typ.Description; d == "" || strings.Contains(d, "\n") || len(d) > 200 {
			t.Errorf("%s: description %q is not one line", typ.Name, d)
		}
	}
	// A copy: callers cannot change the built-in catalog.
	c[0].Scoped = false
	if again, _ := BuiltinCatalog("standmeet"); !again[0].Scoped {
		t.Fatal("BuiltinCatalog returned the catalog itself, not a copy")
	}
}

func TestLoadCatalogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "extra.yaml")
	if err := os.WriteFile(file, []byte("- name: invoice.paid\n  exposure: webhook\n  scoped: true\n  description: An invoice was paid.\n- name: audit.log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LoadCatalogs([]string{"standmeet", " " + file})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 41 || got[39].Name != "invoice.paid" || !got[39].Scoped || got[40].Exposure != Internal {
		t.Fatalf("standmeet + file: %d types, tail %+v", len(got), got[39:])
	}
	if _, err := LoadCatalogs([]string{"standmet"}); err == nil || !strings.Contains(err.Error(), "standmeet") {
		t.Fatalf("a misspelt name: %v, want an error naming the built-in catalogs", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`[{"name": "Bad Name"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCatalogs([]string{bad}); err == nil || !strings.Contains(err.Error(), "Bad Name") {
		t.Fatalf("a bad type name: %v", err)
	}
}
