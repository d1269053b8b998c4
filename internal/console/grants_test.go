package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

// TestGrants drives the grants pages in the browser, on both engines: a
// refused glob is shown next to its field with what was typed kept; a
// grant is created, attached to an endpoint through the endpoint form,
// revoked and deleted (each asking first), and the endpoint page and list
// flag that the endpoint then admits no scoped events.
func TestGrants(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			s := startSite(t, backend)
			rc := newReceiver(t, false)
			p := &page{t: t, tab: browser(t), s: s}
			shots := backend.Name == "sqlite"
			acme := ops.Principal{Role: owner.Admin, OwnerID: "acme"}
			getGrant := func(id string) (*ops.GrantView, error) {
				out, err := s.h.Ops.Op("grants.get").Call(t.Context(), acme, &ops.GrantRef{ID: id})
				if err != nil {
					return nil, err
				}
				return out.(*ops.GrantView), nil
			}

			p.signIn(s.keys["acme"])
			p.click(`nav a[href$="/admin/grants"]`)
			if got := p.text(".empty-state"); !strings.Contains(got, "No grants yet") {
				t.Errorf("empty grants page says %q", got)
			}

			// A bad glob: 422, the server's message at the field, input kept.
			p.click("a.button.primary")
			p.do(
				chromedp.SendKeys(chromedp.ID("description"), "Partner <portal>"),
				chromedp.SendKeys(chromedp.ID("allow"), "wiki://software/*\nwiki://bad glob"),
				chromedp.SendKeys(chromedp.ID("deny"), "wiki://software/private/*"),
				chromedp.Click(chromedp.ID("published_only")),
				chromedp.SetValue(chromedp.ID("expires_at"), "2099-01-31T12:00"),
			)
			if st := p.click("form.form button[type=submit]"); st != http.StatusUnprocessableEntity {
				t.Fatalf("a glob with a space answered %d, want 422", st)
			}
			if msg := p.text("#allow-error"); !strings.Contains(msg, `"wiki://bad glob"`) || !strings.Contains(msg, "space") {
				t.Errorf("allow error says %q", msg)
			}
			if v := run(p, chromedp.Value(chromedp.ID("allow"))); v != "wiki://software/*\nwiki://bad glob" {
				t.Errorf("the typed allow globs were not kept: %q", v)
			}
			if v := run(p, chromedp.Value(chromedp.ID("description"))); v != "Partner <portal>" {
				t.Errorf("the typed description was not kept: %q", v)
			}
			if !run(p, chromedp.Evaluate[bool](`document.getElementById('published_only').checked && document.getElementById('expires_at').value === '2099-01-31T12:00'`)) {
				t.Error("published only or the expiry was not kept")
			}
			if shots {
				p.shoot("grant-new-error")
			}
			if n, err := s.h.DB.Q().ListGrants(t.Context(), "acme"); err != nil || len(n) != 0 {
				t.Fatalf("a refused form stored %d grants (%v)", len(n), err)
			}

			// Fixed: created, and stored as typed.
			p.do(chromedp.SetValue(chromedp.ID("allow"), "wiki://software/*\n\nwiki://blog/*\n"))
			p.click("form.form button[type=submit]")
			if !strings.HasPrefix(p.path(), "/admin/grants/grt_") {
				t.Fatalf("after create the address is %s, want the grant's page", p.path())
			}
			grantID := strings.TrimPrefix(strings.SplitN(p.path(), "?", 2)[0], "/admin/grants/")
			g, err := getGrant(grantID)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(g.Allow, " ") != "wiki://software/* wiki://blog/*" || strings.Join(g.Deny, " ") != "wiki://software/private/*" || !g.PublishedOnly ||
				g.ExpiresAt == nil || g.ExpiresAt.UTC().Format("2006-01-02T15:04") != "2099-01-31T12:00" || g.Description != "Partner <portal>" {
				t.Errorf("stored grant %+v", g.Grant)
			}
			if got := p.text("main h1"); got != "Partner <portal>" {
				t.Errorf("grant page title %q", got)
			}
			if got := p.text("#grant-state"); got != "active" {
				t.Errorf("new grant's state is %q", got)
			}

			// The endpoint form picks it.
			p.open("/admin/webhooks/new")
			if got := run(p, chromedp.Evaluate[string](`document.querySelector('#grant_id option[value=""]').textContent`)); got != "none — published notes only" {
				t.Errorf("the no-grant choice says %q", got)
			}
			p.do(
				chromedp.SendKeys(chromedp.ID("url"), rc.URL+"/partner"),
				chromedp.Click(chromedp.CSS(`input[value="invoice.voided"]`)),
				chromedp.SetValue(chromedp.ID("grant_id"), grantID),
			)
			if st := p.click("form.form button[type=submit]"); st != http.StatusCreated {
				t.Fatalf("create endpoint with a grant: %d", st)
			}
			epPath := p.path()
			epID := strings.TrimPrefix(epPath, "/admin/webhooks/")
			ep, err := s.h.DB.Q().GetEndpoint(t.Context(), "acme", epID)
			if err != nil || ep.GrantID != grantID {
				t.Fatalf("endpoint's grant is %q (%v), want %s", ep.GrantID, err, grantID)
			}
			p.open(epPath)
			if got := p.text("#grant"); got != "Partner <portal>" {
				t.Errorf("endpoint page's grant says %q", got)
			}
			p.open("/admin/grants")
			if got := p.text("table.grants tbody"); !strings.Contains(got, "Partner <portal>") || !strings.Contains(got, "wiki://blog/*") || !strings.Contains(got, "active") || !strings.HasSuffix(got, "1") {
				t.Errorf("grants list row says %q", got)
			}
			if shots {
				p.shoot("grants")
			}

			// Revoke asks first, then the grant, the endpoint page and the
			// list say it admits nothing.
			p.open("/admin/grants/" + grantID)
			p.click(`form[action$="/revoke"] button`)
			if got := p.text("main"); !strings.Contains(got, "Revoke this grant?") || !strings.Contains(got, rc.URL+"/partner") {
				t.Fatalf("revoke did not ask, naming the endpoint: %q", got)
			}
			if g, _ := getGrant(grantID); g.RevokedAt != nil {
				t.Fatal("asking revoked it")
			}
			p.click(`form[action$="/revoke"] button.danger`)
			if g, _ := getGrant(grantID); g.RevokedAt == nil {
				t.Fatal("the grant is not revoked")
			}
			if got := p.text("#grant-state"); !strings.HasPrefix(got, "revoked at 20") {
				t.Errorf("revoked grant's state says %q", got)
			}
			if shots {
				p.shoot("grant-revoked")
			}
			p.open(epPath)
			if got := p.text("#grant"); !strings.Contains(got, "grant revoked: admits no scoped events") {
				t.Errorf("endpoint page's grant says %q after revoke", got)
			}
			p.open("/admin/webhooks")
			if got := p.text("table.endpoints tbody"); !strings.Contains(got, "grant revoked: admits no scoped events") {
				t.Errorf("list says %q after revoke", got)
			}

			// Delete asks first, saying what becomes of its endpoints.
			p.open("/admin/grants/" + grantID)
			p.click(`form[action$="/delete"] button`)
			if got := p.text("main"); !strings.Contains(got, "Delete this grant?") || !strings.Contains(got, "will admit no events of scoped types until it is given another grant") {
				t.Fatalf("delete did not ask: %q", got)
			}
			if _, err := getGrant(grantID); err != nil {
				t.Fatalf("asking deleted it: %v", err)
			}
			if shots {
				p.shoot("grant-delete")
			}
			p.click(`form[action$="/delete"] button.danger`)
			if _, err := getGrant(grantID); err == nil {
				t.Fatal("the grant still exists")
			}
			if got := p.text(".notice"); !strings.Contains(got, "Grant deleted") {
				t.Errorf("after delete the page says %q", got)
			}
			p.open("/admin/webhooks")
			if got := p.text("table.endpoints tbody"); !strings.Contains(got, "grant deleted: admits no scoped events") {
				t.Errorf("list says %q after delete", got)
			}
			if shots {
				p.shoot("endpoints-grant-deleted")
			}
			p.open(epPath)
			if got := p.text("#grant"); !strings.Contains(got, "grant deleted: admits no scoped events") {
				t.Errorf("endpoint page's grant says %q after delete", got)
			}
			if shots {
				p.shoot("endpoint-grant-deleted")
			}

			// Saving the endpoint's form keeps the gone grant: it does not
			// quietly widen to the published slice.
			p.open(epPath + "/edit")
			if !run(p, chromedp.Evaluate[bool](`(() => { const o = document.querySelector('#grant_id').selectedOptions[0]; return o.value === '`+grantID+`' && o.disabled && o.textContent.includes('deleted'); })()`)) {
				t.Error("the edit form does not show the deleted grant, selected and disabled")
			}
			p.do(chromedp.SetValue(chromedp.ID("description"), "partner feed"))
			p.click("form.form button[type=submit]")
			if ep, err := s.h.DB.Q().GetEndpoint(t.Context(), "acme", epID); err != nil || ep.GrantID != grantID || ep.Description != "partner feed" {
				t.Errorf("after saving, the endpoint's grant is %q and description %q (%v)", ep.GrantID, ep.Description, err)
			}
			// Choosing none is a real choice.
			p.open(epPath + "/edit")
			if got := run(p, chromedp.Evaluate[string](`(() => { const s = document.getElementById('grant_id'); s.selectedIndex = 0; return s.value + '|' + new FormData(s.form).has('grant_id'); })()`)); got != "|true" {
				t.Fatalf("choosing none: %q", got)
			}
			p.click("form.form button[type=submit]")
			if ep, err := s.h.DB.Q().GetEndpoint(t.Context(), "acme", epID); err != nil || ep.GrantID != "" {
				t.Errorf("after choosing none, the endpoint's grant is %q (%v)", ep.GrantID, err)
			}
			if got := p.text("#grant"); got != "none — published notes only" {
				t.Errorf("endpoint page's grant says %q with none", got)
			}
		})
	}
}
