package console_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/hookdtest"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

// bobsDelivery makes bob an endpoint on a real receiver and a delivered test
// to it; it returns the endpoint, the delivery and its job.
func bobsDelivery(t *testing.T, s *site) (ep string, d *endpoint.Delivery) {
	t.Helper()
	rc := newReceiver(t, false)
	bob := ops.Principal{Role: owner.Admin, OwnerID: "bob"}
	out, err := s.h.Ops.Op("webhooks.create").Call(t.Context(), bob, &ops.CreateEndpointIn{URL: rc.URL + "/bob-only", EventTypes: []string{"invoice.paid"}})
	if err != nil {
		t.Fatal(err)
	}
	v := out.(*ops.EndpointView)
	rc.setSecret(v.Secret)
	if _, err := s.h.Ops.Op("webhooks.send_test").Call(t.Context(), bob, &ops.EndpointRef{ID: v.ID}); err != nil {
		t.Fatal(err)
	}
	rc.expect(t, "webhook.test")
	// The delivery record settles right after, and hookd logs the attempt.
	var ds []*endpoint.Delivery
	if !hookdtest.WaitFor(20*time.Second, s.logs.Wrote(), func() bool {
		var err error
		ds, err = s.h.DB.Q().ListDeliveries(t.Context(), "bob", v.ID, 1, "")
		if err != nil {
			t.Fatal(err)
		}
		return len(ds) == 1 && ds[0].State == endpoint.Delivered && ds[0].JobID != 0
	}) {
		t.Fatalf("bob's delivery %+v not recorded delivered", ds)
	}
	return v.ID, ds[0]
}

// TestIsolation: an admin opening another owner's endpoint, delivery or
// job by URL gets the 404 a missing one gets, and River UI a 403; an
// operator reaches River UI, is sent to its job page, and switches owners.
func TestIsolation(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			s := startSite(t, backend)
			ep, d := bobsDelivery(t, s)
			job := strconv.FormatInt(d.JobID, 10)
			bob := ops.Principal{Role: owner.Admin, OwnerID: "bob"}
			out, err := s.h.Ops.Op("grants.create").Call(t.Context(), bob, &ops.CreateGrantIn{Description: "bob-only partner", Allow: []string{"wiki://bob/*"}})
			if err != nil {
				t.Fatal(err)
			}
			grant := out.(*ops.GrantView).ID
			const noGrant = "grt_01M0000000000000000000000"
			p := &page{t: t, tab: browser(t), s: s}
			p.signIn(s.keys["acme"])

			for _, c := range []struct{ theirs, missing string }{
				{"/admin/webhooks/" + ep, "/admin/webhooks/ep_01M0000000000000000000000"},
				{"/admin/webhooks/" + ep + "/edit", "/admin/webhooks/ep_01M0000000000000000000000/edit"},
				{"/admin/webhooks/" + ep + "/deliveries", "/admin/webhooks/ep_01M0000000000000000000000/deliveries"},
				{"/admin/webhooks/" + ep + "/deliveries/" + d.ID, "/admin/webhooks/" + ep + "/deliveries/dlv_01M0000000000000000000000"},
				{"/admin/tasks?job=" + job, "/admin/tasks?job=987654321"},
				{"/admin/grants/" + grant, "/admin/grants/" + noGrant},
				{"/admin/grants/" + grant + "/edit", "/admin/grants/" + noGrant + "/edit"},
			} {
				st := p.open(c.theirs)
				theirs := p.text("main")
				if st != http.StatusNotFound {
					t.Errorf("%s: %d, want 404", c.theirs, st)
				}
				// (A page may echo the id in its own URL; never bob's other things.)
				for _, mark := range []string{"bob-only", d.EventID} {
					if strings.Contains(theirs, mark) {
						t.Errorf("%s shows bob's %q", c.theirs, mark)
					}
				}
				if st2 := p.open(c.missing); st2 != st {
					t.Errorf("%s answered %d, a missing one %d: they must look the same", c.theirs, st, st2)
				}
				missing := p.text("main")
				norm := func(s string) string {
					for _, x := range []string{ep, d.ID, grant, noGrant, "ep_01M0000000000000000000000", "dlv_01M0000000000000000000000", "987654321", "job " + job} {
						s = strings.ReplaceAll(s, x, "ID")
						s = strings.ReplaceAll(s, "job ID", "ID")
					}
					return s
				}
				if norm(theirs) != norm(missing) {
					t.Errorf("%s says %q, a missing one %q", c.theirs, theirs, missing)
				}
			}
			// Revoking or deleting bob's grant, with a valid form, is the
			// 404 of a missing one and changes nothing.
			p.open("/admin/grants")
			for _, action := range []string{"revoke", "delete"} {
				st := run(p, chromedp.Evaluate[int](`fetch('/admin/grants/`+grant+`/`+action+`', {method: 'POST', body: new URLSearchParams({csrf: document.querySelector('input[name=csrf]').value, confirm: 'yes'})}).then(r => r.status)`, chromedp.EvalAwaitPromise))
				if st != http.StatusNotFound {
					t.Errorf("acme's POST %s of bob's grant: %d, want 404", action, st)
				}
			}
			if g, err := s.h.DB.Q().GetGrant(t.Context(), "bob", grant); err != nil || g.RevokedAt != nil {
				t.Errorf("bob's grant after acme's posts: %+v, %v", g, err)
			}
			if st := p.open("/admin/tasks/"); st != http.StatusForbidden {
				t.Errorf("River UI for an admin: %d, want 403", st)
			}
			if st := p.open("/admin/tasks/api/jobs?limit=10"); st != http.StatusForbidden {
				t.Errorf("River UI's API for an admin: %d, want 403", st)
			}
			if shots := backend.Name == "sqlite"; shots {
				p.open("/admin/tasks/")
				p.shoot("tasks-forbidden")
			}

			// An operator: River UI's job page, and the owner switch.
			op := &page{t: t, tab: browser(t), s: s}
			op.signIn(s.keys["operator"])
			op.open("/admin/tasks?job=" + job)
			if got := op.path(); got != "/admin/tasks/jobs/"+job {
				t.Fatalf("operator's task link went to %s, want River UI's job page", got)
			}
			if _, err := chromedp.Run(p.timedFor(op, 90*time.Second), chromedp.Poll[bool](`document.body.innerText.includes('webhook.deliver')`)); err != nil {
				t.Fatalf("River UI's job page never showed the job (%v): %q", err, run(op, chromedp.Evaluate[string](`document.documentElement.outerHTML`)))
			}
			if backend.Name == "sqlite" {
				op.shoot("river-ui-job")
			}
			op.open("/admin/webhooks")
			// Choosing an owner switches at once (the script submits the
			// form; without script the Switch button does).
			ctx, cancel := op.timed()
			if _, err := chromedp.RunResponse(ctx, chromedp.SetValue(chromedp.ID("owner-select"), "bob")); err != nil {
				t.Fatalf("switch owner: %v", err)
			}
			cancel()
			if got := op.text("table.endpoints"); !strings.Contains(got, "bob-only") {
				t.Errorf("after switching to bob the list says %q", got)
			}
			if backend.Name == "sqlite" {
				op.shoot("endpoints-operator")
			}
			// An admin has no owner switch, and posting one is refused.
			if n := run(p, chromedp.Evaluate[int](`document.querySelectorAll('#owner-select').length`)); n != 0 {
				t.Error("an admin sees the owner switch")
			}
		})
	}
}
