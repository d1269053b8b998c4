package e2e_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/egress/egresstest"
	"github.com/hookd/hookd/webhook"
)

// authOut is the public side of an endpoint's auth, as answers show it.
type authOut struct {
	Type        string   `json:"type"`
	Username    string   `json:"username"`
	TokenURL    string   `json:"token_url"`
	ClientID    string   `json:"client_id"`
	Scopes      []string `json:"scopes"`
	CertSubject string   `json:"cert_subject"`
	CertSHA256  string   `json:"cert_sha256"`
	ReceiverCA  bool     `json:"receiver_ca"`
}

type authEndpointOut struct {
	endpointOut
	Auth *authOut `json:"auth"`
}

// noCredential fails the test if any of the texts holds one of secrets.
func noCredential(t *testing.T, where string, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("%s shows the credential %.12q…", where, s)
		}
	}
}

// rawGet is GET path's body as text.
func (b *bundle) rawGet(path string) string {
	b.t.Helper()
	var raw json.RawMessage
	b.must(200, "GET", path, nil, &raw)
	return string(raw)
}

// TestEndpointAuthOAuth2: a receiver behind an OAuth2 token server. The
// first delivery fetches a token, the next hundred (to several endpoints
// of the same client, so several workers) reuse it, an expired one is
// refreshed, and a wrong client secret fails the endpoint with the token
// server's error in last_error and the log. No secret shows anywhere.
func TestEndpointAuthOAuth2(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		ts := egresstest.NewTokenServer(t, "hookd-prod", "s3cret-client-value", 600)
		rc := newReceiver(t)
		rc.setRespond(func(r *http.Request, _ int) (int, http.Header) {
			if !ts.Valid(r.Header.Get("Authorization")) {
				return http.StatusUnauthorized, nil
			}
			return http.StatusNoContent, nil
		})
		b.registerType("oauth.thing")
		auth := map[string]any{"type": "oauth2_client_credentials", "token_url": ts.URL + "/oauth/token", "client_id": "hookd-prod",
			"client_secret": "s3cret-client-value", "scopes": []string{"webhooks"}, "audience": "https://receiver.example"}
		var eps []authEndpointOut
		for range 4 {
			var ep authEndpointOut
			b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"oauth.thing"}, "auth": auth}, &ep)
			eps = append(eps, ep)
		}
		if a := eps[0].Auth; a == nil || a.Type != "oauth2_client_credentials" || a.ClientID != "hookd-prod" || a.TokenURL != ts.URL+"/oauth/token" {
			t.Fatalf("record shows auth %+v: want its type, client id and token URL", a)
		}

		b.publish("oauth.thing", `{"n":0}`) // one event, four deliveries
		rc.waitFor(t, 4, 60*time.Second)
		if n := ts.Issued(); n != 1 {
			t.Fatalf("the first deliveries fetched %d tokens, want 1 shared", n)
		}
		for range 25 {
			b.publish("oauth.thing", `{"n":1}`)
		}
		got := rc.waitFor(t, 104, 120*time.Second)
		if n := ts.Issued(); n != 1 {
			t.Fatalf("104 deliveries fetched %d tokens, want 1", n)
		}
		for _, r := range got {
			if !ts.Valid(r.Header.Get("Authorization")) {
				t.Fatalf("a delivery went without a valid token: %q", r.Header.Get("Authorization"))
			}
		}
		for _, r := range got[:4] { // the signature headers still go: each verifies with one endpoint's secret
			if !verifiesWithOne(r, eps) {
				t.Fatalf("delivery %s verifies with no endpoint's secret", r.Header.Get("Webhook-Id"))
			}
		}

		b.clock.Advance(601 * time.Second) // past the token's life: hookd fetches another
		b.publish("oauth.thing", `{"n":2}`)
		rc.waitFor(t, 108, 60*time.Second)
		if n := ts.Issued(); n != 2 {
			t.Fatalf("after the token expired, %d tokens issued, want 2", n)
		}

		bad := map[string]any{}
		for k, v := range auth {
			bad[k] = v
		}
		bad["client_secret"] = "wrong-client-value"
		var badEp authEndpointOut
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"never.*"}, "auth": bad}, &badEp)
		var test struct {
			EventID string `json:"event_id"`
		}
		b.must(202, "POST", "/api/admin/webhooks/"+badEp.ID+"/send_test", nil, &test)
		d := b.waitDelivery(badEp.ID, test.EventID, 60*time.Second, func(d deliveryOut) bool { return d.LastError != "" })
		for _, want := range []string{"oauth2 token from " + ts.URL + "/oauth/token", "401", "invalid_client"} {
			if !strings.Contains(d.LastError, want) {
				t.Errorf("last_error %q does not say %q", d.LastError, want)
			}
		}
		if ep := b.getEndpoint(badEp.ID); ep.State != "failing" {
			t.Errorf("endpoint with a wrong client secret is %q, want failing", ep.State)
		}
		if !eventually(30*time.Second, func() bool { return strings.Contains(b.logs.String(), "invalid_client") }) {
			t.Error("the log does not carry the token server's error")
		}

		secrets := []string{"s3cret-client-value", "wrong-client-value"}
		noCredential(t, "the list", b.rawGet("/api/admin/webhooks"), secrets...)
		noCredential(t, "the record", b.rawGet("/api/admin/webhooks/"+eps[0].ID), secrets...)
		noCredential(t, "the audit log", b.rawGet("/api/admin/audit?limit=500"), secrets...)
		noCredential(t, "the log", b.logs.String(), secrets...)
	})
}

// TestEndpointAuthMTLS: a TLS receiver that requires a client certificate
// from its CA gets deliveries from the endpoint with the right one; with
// none, or one from another CA, the handshake fails and the delivery is
// retried. The answer shows the certificate's subject and hash, never the
// key.
func TestEndpointAuthMTLS(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		ca := egresstest.NewCA(t, "receiver CA")
		rc := newReceiver(t)
		srv := egresstest.MTLSReceiver(t, ca, http.HandlerFunc(rc.serve))
		b.registerType("mtls.thing")
		right := ca.Client(t, "hookd.example")
		var ep authEndpointOut
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": srv.URL, "event_types": []string{"mtls.thing"},
			"auth": map[string]any{"type": "mtls", "cert_pem": right.CertPEM, "private_key_pem": right.KeyPEM, "ca_pem": ca.PEM}}, &ep)
		if a := ep.Auth; a == nil || a.Type != "mtls" || a.CertSubject != "CN=hookd.example" || len(a.CertSHA256) != 64 || !a.ReceiverCA {
			t.Fatalf("record shows auth %+v: want mtls with the certificate's subject and hash", a)
		}
		stranger := egresstest.NewCA(t, "another CA").Client(t, "hookd.example")
		var wrong, none authEndpointOut
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": srv.URL, "event_types": []string{"never.*"},
			"auth": map[string]any{"type": "mtls", "cert_pem": stranger.CertPEM, "private_key_pem": stranger.KeyPEM, "ca_pem": ca.PEM}}, &wrong)
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": srv.URL, "event_types": []string{"never.*"}}, &none)

		id := b.publish("mtls.thing", `{}`)
		verify(t, ep.Secret, rc.waitForEvent(t, id, 60*time.Second))
		b.waitDelivery(ep.ID, id, 30*time.Second, func(d deliveryOut) bool { return d.State == "delivered" })

		for _, refused := range []authEndpointOut{wrong, none} {
			var test struct {
				EventID string `json:"event_id"`
			}
			b.must(202, "POST", "/api/admin/webhooks/"+refused.ID+"/send_test", nil, &test)
			d := b.waitDelivery(refused.ID, test.EventID, 60*time.Second, func(d deliveryOut) bool { return d.LastError != "" })
			// A refused handshake fails the connection; on a machine
			// starved enough, the handshake may not finish within its 5 s
			// first, which the error names (the request was never sent
			// either way: the receiver's count below).
			refusedTLS := strings.Contains(d.LastError, "connection failed") || strings.Contains(d.LastError, "TLS handshake did not finish")
			if d.State == "delivered" || !refusedTLS {
				t.Errorf("endpoint %s: delivery %+v, want a failed TLS connection, retried", refused.ID, d)
			}
		}
		if n := len(rc.receipts()); n != 1 {
			t.Fatalf("the receiver handled %d requests, want only the one with the right certificate", n)
		}
		key := strings.Split(right.KeyPEM, "\n")[1]
		noCredential(t, "the record", b.rawGet("/api/admin/webhooks/"+ep.ID), key)
		noCredential(t, "the audit log", b.rawGet("/api/admin/audit?limit=500"), key)
		noCredential(t, "the log", b.logs.String(), key)
	})
}

// TestEndpointAuthInput: bad auth is a 422 naming the field and changes
// nothing; basic and bearer reach the receiver; an update replaces the
// auth, type none removes it; a rotation keeps it.
func TestEndpointAuthInput(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		b := setup(t, backend)
		rc := newReceiver(t)
		b.registerType("auth.thing")
		ca := egresstest.NewCA(t, "CA")
		good, other := ca.Client(t, "a"), ca.Client(t, "b")
		for _, tc := range []struct {
			auth  map[string]any
			field string
		}{
			{map[string]any{"type": "mtls", "cert_pem": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "private_key_pem": good.KeyPEM}, "auth.cert_pem"},
			{map[string]any{"type": "mtls", "cert_pem": good.CertPEM, "private_key_pem": other.KeyPEM}, "auth.private_key_pem"},
			{map[string]any{"type": "mtls", "cert_pem": good.CertPEM, "private_key_pem": "garbage"}, "auth.private_key_pem"},
			{map[string]any{"type": "oauth2_client_credentials", "token_url": "http://auth.example/token", "client_id": "c", "client_secret": "s"}, "auth.token_url"},
			{map[string]any{"type": "oauth2_client_credentials", "token_url": "https://auth.example/token", "client_id": "c"}, "auth.client_secret"},
			{map[string]any{"type": "basic", "username": "u"}, "auth.password"},
			{map[string]any{"type": "kerberos"}, "auth.type"},
		} {
			var e struct {
				Error struct{ Message string } `json:"error"`
			}
			body := map[string]any{"url": rc.URL, "event_types": []string{"auth.thing"}, "auth": tc.auth}
			if got := b.do("POST", "/api/admin/webhooks", body, &e); got != 422 || !strings.Contains(e.Error.Message, tc.field) {
				t.Errorf("auth %v: %d %q, want 422 naming %s", tc.auth["type"], got, e.Error.Message, tc.field)
			}
			noCredential(t, "a 422", e.Error.Message, strings.Split(good.KeyPEM, "\n")[1], strings.Split(other.KeyPEM, "\n")[1])
		}
		var list struct {
			Data []json.RawMessage `json:"data"`
		}
		b.must(200, "GET", "/api/admin/webhooks", nil, &list)
		if len(list.Data) != 0 {
			t.Fatalf("refused creates left %d endpoints", len(list.Data))
		}

		var ep authEndpointOut
		b.must(201, "POST", "/api/admin/webhooks", map[string]any{"url": rc.URL, "event_types": []string{"auth.thing"},
			"auth": map[string]any{"type": "basic", "username": "hookd", "password": "pa55-word-value"}}, &ep)
		if ep.Auth == nil || ep.Auth.Type != "basic" || ep.Auth.Username != "hookd" {
			t.Fatalf("record shows auth %+v, want basic for hookd", ep.Auth)
		}
		b.publish("auth.thing", `{}`)
		r := rc.waitFor(t, 1, 60*time.Second)[0]
		if u, p, ok := (&http.Request{Header: r.Header}).BasicAuth(); !ok || u != "hookd" || p != "pa55-word-value" {
			t.Fatalf("receiver got Authorization %q, want basic hookd", r.Header.Get("Authorization"))
		}
		verify(t, ep.Secret, r)

		var bad struct {
			Error struct{ Message string } `json:"error"`
		}
		if got := b.do("PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"auth": map[string]any{"type": "bearer"}}, &bad); got != 422 || !strings.Contains(bad.Error.Message, "auth.token") {
			t.Fatalf("update to bearer without a token: %d %q, want 422 naming auth.token", got, bad.Error.Message)
		}
		b.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"auth": map[string]any{"type": "bearer", "token": "bearer-token-value"}}, &ep)
		var rotated authEndpointOut
		b.must(200, "POST", "/api/admin/webhooks/"+ep.ID+"/rotate_secret", map[string]any{"overlap": "0"}, &rotated)
		if rotated.Auth == nil || rotated.Auth.Type != "bearer" {
			t.Fatalf("after a rotation the record shows auth %+v, want bearer kept", rotated.Auth)
		}
		b.publish("auth.thing", `{}`)
		r = rc.waitFor(t, 2, 60*time.Second)[1]
		if r.Header.Get("Authorization") != "Bearer bearer-token-value" {
			t.Fatalf("after the update the receiver got Authorization %q, want the bearer token", r.Header.Get("Authorization"))
		}
		verify(t, rotated.Secret, r)

		var removed authEndpointOut
		b.must(200, "PATCH", "/api/admin/webhooks/"+ep.ID, map[string]any{"auth": map[string]any{"type": "none"}}, &removed)
		if removed.Auth != nil {
			t.Fatalf("type none left auth %+v", removed.Auth)
		}
		b.publish("auth.thing", `{}`)
		if r = rc.waitFor(t, 3, 60*time.Second)[2]; r.Header.Get("Authorization") != "" {
			t.Fatalf("after removing the auth the receiver got Authorization %q", r.Header.Get("Authorization"))
		}
		secrets := []string{"pa55-word-value", "bearer-token-value"}
		noCredential(t, "the record", b.rawGet("/api/admin/webhooks/"+ep.ID), secrets...)
		noCredential(t, "the audit log", b.rawGet("/api/admin/audit?limit=500"), secrets...)
		noCredential(t, "the log", b.logs.String(), secrets...)
	})
}

// TestEgressProxyDelivery: with an egress proxy every delivery goes
// through it, as a CONNECT to the checked address, and arrives signed.
func TestEgressProxyDelivery(t *testing.T) {
	t.Parallel()
	forBackend(t, func(t *testing.T, backend dbtest.Backend) {
		proxy := egresstest.NewProxy(t)
		pu, err := url.Parse(proxy.URL)
		if err != nil {
			t.Fatal(err)
		}
		b := setup(t, backend, setupOpts{mutate: func(c *app.Config) { c.EgressProxy = pu; c.UserAgent = "acme-hooks/2.1" }})
		var mu sync.Mutex
		var direct []string
		rc := newReceiver(t)
		rc.setRespond(func(r *http.Request, _ int) (int, http.Header) {
			mu.Lock()
			defer mu.Unlock()
			if !proxy.Relayed(r.RemoteAddr) {
				direct = append(direct, r.RemoteAddr)
			}
			return http.StatusNoContent, nil
		})
		b.registerType("proxy.thing")
		ep := b.endpoint(strings.Replace(rc.URL, "127.0.0.1", "localhost", 1), "proxy.thing")
		for range 3 {
			b.publish("proxy.thing", `{}`)
		}
		got := rc.waitFor(t, 3, 60*time.Second)
		mu.Lock()
		reachedDirectly := append([]string(nil), direct...)
		mu.Unlock()
		if len(reachedDirectly) != 0 {
			t.Fatalf("deliveries reached the receiver past the proxy from %v", reachedDirectly)
		}
		for _, c := range proxy.Connects() {
			if !strings.HasPrefix(c, "CONNECT 127.0.0.1:") {
				t.Errorf("the proxy was asked %q, want the checked IP", c)
			}
		}
		for _, r := range got {
			verify(t, ep.Secret, r)
			if ua := r.Header.Get("User-Agent"); ua != "acme-hooks/2.1" {
				t.Errorf("User-Agent %q, want the configured one", ua)
			}
		}
	})
}

// verifiesWithOne reports whether r's signature verifies with the secret
// of one of eps.
func verifiesWithOne(r receipt, eps []authEndpointOut) bool {
	for _, ep := range eps {
		v, err := webhook.NewVerifier(ep.Secret)
		if err != nil {
			continue
		}
		if _, err := v.Verify(r.Header, r.Body); err == nil {
			return true
		}
	}
	return false
}
