package mcpserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/owner"
)

// TestPortalLinkTool: portal.create_link over MCP, both transports and
// both engines. Its url is a path (an MCP client has no origin of hookd's
// to offer), which, joined to hookd's address, opens the portal once; an
// operator names the owner; bad input is refused saying what to fix.
func TestPortalLinkTool(t *testing.T) {
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	open := func(t *testing.T, u string) (int, string) {
		t.Helper()
		resp, err := noRedirect.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Location")
	}
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			b := setup(t, backend)
			admin := b.key("acme", owner.Admin)
			operator := b.key("", owner.Operator)
			for _, tr := range transports {
				t.Run(tr.name, func(t *testing.T) {
					var link struct {
						URL       string `json:"url"`
						ExpiresAt string `json:"expires_at"`
					}
					mustCall(t, tr.connect(t, b, admin), "portal.create_link", map[string]any{"ttl": "30m", "features": []string{"endpoints", "deliveries"}, "locale": "zh-Hans"}, &link)
					if !strings.HasPrefix(link.URL, "/portal/") || link.ExpiresAt == "" {
						t.Fatalf("link over MCP: %+v, want a /portal/ path and an expiry", link)
					}
					if st, where := open(t, b.api.URL+link.URL); st != http.StatusSeeOther || !strings.Contains(where, "/portal/s/") {
						t.Fatalf("opening the MCP link: %d to %q, want 303 to a session", st, where)
					}
					if st, _ := open(t, b.api.URL+link.URL); st != http.StatusGone {
						t.Errorf("the MCP link opened twice: %d, want 410", st)
					}

					ops := tr.connect(t, b, operator)
					mustCall(t, ops, "portal.create_link", map[string]any{"owner": "acme"}, &link)
					if !strings.HasPrefix(link.URL, "/portal/") {
						t.Errorf("operator's link for acme: %+v", link)
					}
					for _, c := range []struct {
						args       map[string]any
						code, says string
					}{
						{map[string]any{"owner": "acme", "ttl": "8d"}, "invalid", "give at most 7d"},
						{map[string]any{"owner": "acme", "features": []string{"billing"}}, "invalid", `"billing" is not a portal feature`},
						{map[string]any{"owner": "nobody"}, "not_found", `owner "nobody" not found`},
					} {
						e := call(t, ops, "portal.create_link", c.args, nil)
						if e == nil || e.Error.Code != c.code || !strings.Contains(e.Error.Message, c.says) {
							t.Errorf("portal.create_link %v: %+v, want %s saying %q", c.args, e, c.code, c.says)
						}
					}
					var revoked struct {
						Sessions int64 `json:"sessions"`
					}
					mustCall(t, ops, "portal.revoke_sessions", map[string]any{"owner": "acme"}, &revoked)
					if revoked.Sessions < 1 {
						t.Errorf("revoke_sessions over MCP ended %d sessions, want the one opened", revoked.Sessions)
					}
				})
			}
		})
	}
}
