package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// TestConsoleChangeAudited: a change made through the console by a
// session signed in with an API key leaves one audit record whose actor
// is the console, naming that key and the browser's address; neither the
// key nor the session's cookie is in any record. (TestOIDCSignin checks
// the same for a user signed in through the identity provider.) Plain
// HTTP, as a browser would send the forms: the page is not under test.
func TestConsoleChangeAudited(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			s := startSite(t, backend)
			ctx := context.Background()
			jar, _ := cookiejar.New(nil)
			browser := &http.Client{Jar: jar}
			post := func(path string, form url.Values) *http.Response {
				t.Helper()
				req, _ := http.NewRequest(http.MethodPost, s.srv.URL+path, strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Origin", s.srv.URL)
				resp, err := browser.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp
			}
			if resp := post("/admin/signin", url.Values{"key": {s.keys["acme"]}}); resp.StatusCode != http.StatusOK {
				t.Fatalf("sign-in: %d", resp.StatusCode)
			}
			resp, err := browser.Get(s.srv.URL + "/admin/event_types")
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			m := regexp.MustCompile(`action="/admin/event_types/invoice\.paid">\s*<input type="hidden" name="csrf" value="([^"]+)"`).FindSubmatch(page)
			if m == nil {
				t.Fatalf("the event types page has no form for invoice.paid:\n%.3000s", page)
			}
			if resp := post("/admin/event_types/invoice.paid", url.Values{"csrf": {string(m[1])}, "description": {"An invoice was paid."}, "scoped": {"false"}, "exposure": {"internal"}}); resp.StatusCode != http.StatusOK {
				t.Fatalf("the change: %d", resp.StatusCode)
			}

			rs, err := s.h.DB.Q().ListAudit(ctx, store.AuditFilter{AllOwners: true, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 {
				t.Fatalf("%d audit records, want the change's one: %+v", len(rs), rs)
			}
			key, err := s.h.DB.Q().APIKeyByHash(ctx, owner.HashKey(s.keys["acme"]))
			if err != nil {
				t.Fatal(err)
			}
			r := rs[0]
			if r.Op != "event_types.put" || r.OwnerID != "acme" || r.ResourceID != "invoice.paid" ||
				r.Actor.Kind != audit.KindConsole || r.Actor.ID != key.ID || !strings.HasPrefix(r.Actor.Remote, "127.0.0.1:") {
				t.Errorf("record %+v: want event_types.put on acme's invoice.paid by the console session of key %s from 127.0.0.1", r, key.ID)
			}
			dump, _ := json.Marshal(rs)
			secrets := []string{s.keys["acme"]}
			for _, c := range jar.Cookies(mustParse(t, s.srv.URL+"/admin/")) {
				secrets = append(secrets, c.Value)
			}
			if len(secrets) < 2 {
				t.Fatal("the browser holds no session cookie")
			}
			for _, sec := range secrets {
				if strings.Contains(string(dump), sec) {
					t.Errorf("the audit log holds a credential (%.8s…)", sec)
				}
			}

			// A tenant's portal session: its change is the portal's, named
			// by the session's ps_ handle, and neither the link's token nor
			// the session's (both in URLs) is recorded.
			rc := newReceiver(t, false)
			var ep struct {
				ID string `json:"id"`
			}
			if st := s.api(s.keys["acme"], http.MethodPost, "/api/admin/webhooks", map[string]any{"url": rc.URL + "/acme", "event_types": []string{"order.shipped"}}, &ep); st != http.StatusCreated {
				t.Fatalf("acme endpoint: %d", st)
			}
			link := s.link(s.keys["acme"], nil)
			base := s.open(link)
			fw := csrfField.FindStringSubmatch(fetch(t, http.MethodGet, base+"/webhooks/"+ep.ID, nil, "").body)
			if fw == nil {
				t.Fatal("the portal's endpoint page has no CSRF field")
			}
			n := len(auditOf(t, s))
			if a := fetch(t, http.MethodPost, base+"/webhooks/"+ep.ID+"/enabled", url.Values{"csrf": {fw[1]}, "enabled": {"false"}}, s.srv.URL); a.status/100 != 3 && a.status != http.StatusOK {
				t.Fatalf("disabling through the portal: %d", a.status)
			}
			rs = auditOf(t, s)
			if len(rs) != n+1 {
				t.Fatalf("the portal's change left %d records, want 1", len(rs)-n)
			}
			if r := rs[0]; r.Op != "webhooks.update" || r.OwnerID != "acme" || r.ResourceID != ep.ID ||
				r.Actor.Kind != audit.KindPortal || !strings.HasPrefix(r.Actor.ID, "ps_") || r.Actor.Remote == "" || !hasField(r, "enabled") {
				t.Errorf("the portal's record %+v: want webhooks.update of %s by a ps_ session, enabled changed", r, ep.ID)
			}
			dump, _ = json.Marshal(rs)
			for _, tok := range []string{link[strings.LastIndex(link, "/")+1:], base[strings.LastIndex(base, "/")+1:]} {
				if len(tok) < 16 || strings.Contains(string(dump), tok) {
					t.Errorf("the audit log holds a portal token (%.8s…), or it is too short to be one", tok)
				}
			}

			// The console's audit page, filtered by op and by actor: the
			// console session's own view of the same records.
			get := func(query string, lang ...string) (int, string) {
				t.Helper()
				req, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/admin/audit?"+query, nil)
				for _, l := range lang {
					req.Header.Set("Accept-Language", l)
				}
				resp, err := browser.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				table := string(b)
				if resp.StatusCode != http.StatusOK {
					return resp.StatusCode, table
				}
				if i := strings.Index(table, `id="audit"`); i >= 0 {
					table = table[i:]
				} else {
					table = ""
				}
				return resp.StatusCode, table
			}
			if st, table := get("op=webhooks.update"); st != http.StatusOK || !strings.Contains(table, ep.ID) || strings.Contains(table, "event_types.put") || strings.Contains(table, "webhooks.create") {
				t.Errorf("the audit page filtered by op webhooks.update: %d, want the portal's change only:\n%.2000s", st, table)
			}
			if st, table := get("actor=" + url.QueryEscape(key.ID)); st != http.StatusOK || !strings.Contains(table, "event_types.put") || strings.Contains(table, "webhooks.update") {
				t.Errorf("the audit page filtered by the console key's id: %d, want its event_types.put only:\n%.2000s", st, table)
			}
			// A bad filter is a 422 whose message is framed in the
			// reader's language.
			if st, page := get("before=bogus", "zh-CN"); st != http.StatusUnprocessableEntity || !strings.Contains(page, "输入有误") || !strings.Contains(page, "aud_") {
				t.Errorf("the audit page with before=bogus in Chinese: %d, want 422 and 输入有误 naming aud_:\n%.3000s", st, page)
			}
		})
	}
}

func auditOf(t *testing.T, s *site) []*audit.Record {
	t.Helper()
	rs, err := s.h.DB.Q().ListAudit(context.Background(), store.AuditFilter{AllOwners: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func hasField(r *audit.Record, field string) bool {
	for _, c := range r.Changes {
		if c.Field == field {
			return true
		}
	}
	return false
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
