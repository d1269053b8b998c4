package egress

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/egress/egresstest"
	"github.com/hookd/hookd/internal/endpoint"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestBasicAndBearer: the Authorization header each sends, and the
// signature headers the caller set still go.
func TestBasicAndBearer(t *testing.T) {
	t.Parallel()
	var got atomic.Value
	rcv := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Clone())
		w.WriteHeader(http.StatusNoContent)
	})
	c := New(Config{Allow: allowList(t, "127.0.0.1/32")})
	for _, tc := range []struct {
		auth *endpoint.Auth
		want string
	}{
		{&endpoint.Auth{Type: endpoint.AuthBasic, Username: "hookd", Password: "s3cret"}, "Basic aG9va2Q6czNjcmV0"},
		{&endpoint.Auth{Type: endpoint.AuthBearer, Token: "abc.def"}, "Bearer abc.def"},
	} {
		h := http.Header{"Webhook-Signature": {"v1,xyz"}}
		resp, err := c.PostAuth(context.Background(), rcv.URL, tc.auth, h, []byte("{}"), nil)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("%s: %v %v", tc.auth.Type, resp.StatusCode, err)
		}
		sent := got.Load().(http.Header)
		if sent.Get("Authorization") != tc.want || sent.Get("Webhook-Signature") != "v1,xyz" {
			t.Errorf("%s: sent Authorization %q and signature %q, want %q and v1,xyz", tc.auth.Type, sent.Get("Authorization"), sent.Get("Webhook-Signature"), tc.want)
		}
		if h.Get("Authorization") != "" {
			t.Errorf("%s: the caller's header was changed", tc.auth.Type)
		}
	}
}

// TestOAuth2Token: the first post fetches a token, the next hundred reuse
// it, one past its expiry (less the margin) gets a new one, a receiver's
// 401 refreshes it once, and a wrong secret is an ErrToken naming the
// token server's error.
func TestOAuth2Token(t *testing.T) {
	t.Parallel()
	ts := egresstest.NewTokenServer(t, "hookd-client", "right-secret", 300)
	var delivered atomic.Int64
	rcv := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		ts.Protected(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			delivered.Add(1)
			w.WriteHeader(http.StatusNoContent)
		})).ServeHTTP(w, r)
	})
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := New(Config{Allow: allowList(t, "127.0.0.1/32"), Now: clk.Now})
	auth := &endpoint.Auth{Type: endpoint.AuthOAuth2, TokenURL: ts.URL + "/token", ClientID: "hookd-client", ClientSecret: "right-secret",
		Scopes: []string{"webhooks:write", "events"}, Audience: "https://receiver.example"}
	post := func() Response {
		t.Helper()
		resp, err := c.PostAuth(context.Background(), rcv.URL, auth, nil, []byte("{}"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	for i := range 101 {
		if resp := post(); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("post %d: HTTP %d", i, resp.StatusCode)
		}
	}
	if n := ts.Issued(); n != 1 {
		t.Fatalf("101 posts fetched %d tokens, want 1", n)
	}
	form := ts.LastForm()
	if strings.Join(form["scope"], "") != "webhooks:write events" || strings.Join(form["audience"], "") != "https://receiver.example" {
		t.Errorf("token request form %v: want scope and audience", form)
	}

	clk.Add(300*time.Second - maxTokenMargin - time.Second) // still inside its life less the margin
	post()
	if n := ts.Issued(); n != 1 {
		t.Fatalf("a token %s before its margin was refetched (%d issued)", time.Second, n)
	}
	clk.Add(2 * time.Second) // within the margin: refresh before it expires
	post()
	if n := ts.Issued(); n != 2 {
		t.Fatalf("a token inside its expiry margin was reused (%d issued, want 2)", n)
	}

	ts.RevokeAll() // the receiver now refuses the cached token: one 401, one refresh, one resend
	before := delivered.Load()
	if resp := post(); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("after a revocation: HTTP %d, want the resend's 204", resp.StatusCode)
	}
	if n := ts.Issued(); n != 3 || delivered.Load() != before+1 {
		t.Fatalf("after a 401: %d tokens issued (want 3), %d delivered (want 1)", n, delivered.Load()-before)
	}

	// A receiver that refuses every token: refreshed once only, the 401 is the answer.
	refusing := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	resp, err := c.PostAuth(context.Background(), refusing.URL, auth, nil, []byte("{}"), nil)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || refusing.hits.Load() != 2 || ts.Issued() != 4 {
		t.Fatalf("always-401 receiver: %v %v, %d hits (want 2), %d tokens (want 4)", resp.StatusCode, err, refusing.hits.Load(), ts.Issued())
	}

	wrong := *auth
	wrong.ClientSecret = "wrong-secret"
	_, err = c.PostAuth(context.Background(), rcv.URL, &wrong, nil, []byte("{}"), nil)
	if !errors.Is(err, ErrToken) || errors.Is(err, ErrBlocked) {
		t.Fatalf("wrong secret: %v, want ErrToken", err)
	}
	for _, want := range []string{"oauth2 token from " + ts.URL + "/token", "401", "invalid_client", "client authentication failed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("wrong secret error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("error %q shows the client secret", err)
	}
}

// TestOAuth2Shared: many workers at once share one token fetch.
func TestOAuth2Shared(t *testing.T) {
	t.Parallel()
	ts := egresstest.NewTokenServer(t, "id", "secret", 3600)
	rcv := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		ts.Protected(http.HandlerFunc(ok)).ServeHTTP(w, r)
	})
	c := New(Config{Allow: allowList(t, "127.0.0.1/32")})
	auth := &endpoint.Auth{Type: endpoint.AuthOAuth2, TokenURL: ts.URL, ClientID: "id", ClientSecret: "secret"}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			resp, err := c.PostAuth(context.Background(), rcv.URL, auth, nil, []byte("{}"), nil)
			if err == nil && resp.StatusCode != http.StatusNoContent {
				err = fmt.Errorf("HTTP %d", resp.StatusCode)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := ts.Issued(); n != 1 {
		t.Fatalf("32 concurrent posts fetched %d tokens, want 1", n)
	}
}

// TestOAuth2TokenURLGuarded: the token URL is an owner's input too: the
// guard refuses an internal one at connect time (a discard, not a retry).
func TestOAuth2TokenURLGuarded(t *testing.T) {
	t.Parallel()
	ts := egresstest.NewTokenServer(t, "id", "secret", 3600)
	rcv := newReceiver(t, "127.0.0.2:0", ok)
	c := New(Config{Allow: allowList(t, "127.0.0.2/32")}) // the receiver, not the token server
	auth := &endpoint.Auth{Type: endpoint.AuthOAuth2, TokenURL: ts.URL, ClientID: "id", ClientSecret: "secret"}
	_, err := c.PostAuth(context.Background(), rcv.URL, auth, nil, []byte("{}"), nil)
	if !errors.Is(err, ErrBlocked) || !errors.Is(err, ErrToken) || ts.Issued() != 0 || rcv.hits.Load() != 0 {
		t.Fatalf("token URL on a refused address: %v (issued %d, hits %d), want blocked", err, ts.Issued(), rcv.hits.Load())
	}
}

// TestCheckAuth: each bad input names its field.
func TestCheckAuth(t *testing.T) {
	t.Parallel()
	ca := egresstest.NewCA(t, "test CA")
	other := egresstest.NewCA(t, "other CA")
	good, stranger := ca.Client(t, "hookd"), other.Client(t, "hookd")
	allow := allowList(t, "127.0.0.1/32")
	for _, tc := range []struct {
		name  string
		auth  endpoint.Auth
		field string // "" valid
	}{
		{"basic", endpoint.Auth{Type: "basic", Username: "u", Password: "p"}, ""},
		{"basic no password", endpoint.Auth{Type: "basic", Username: "u"}, "password"},
		{"basic colon", endpoint.Auth{Type: "basic", Username: "u:x", Password: "p"}, "username"},
		{"bearer", endpoint.Auth{Type: "bearer", Token: "t"}, ""},
		{"bearer newline", endpoint.Auth{Type: "bearer", Token: "t\r\nX: y"}, "token"},
		{"oauth2 https", endpoint.Auth{Type: "oauth2_client_credentials", TokenURL: "https://auth.example/token", ClientID: "c", ClientSecret: "s"}, ""},
		{"oauth2 http public", endpoint.Auth{Type: "oauth2_client_credentials", TokenURL: "http://auth.example/token", ClientID: "c", ClientSecret: "s"}, "token_url"},
		{"oauth2 http allowed", endpoint.Auth{Type: "oauth2_client_credentials", TokenURL: "http://127.0.0.1:9/token", ClientID: "c", ClientSecret: "s"}, ""},
		{"oauth2 private", endpoint.Auth{Type: "oauth2_client_credentials", TokenURL: "https://10.0.0.1/token", ClientID: "c", ClientSecret: "s"}, "token_url"},
		{"oauth2 no secret", endpoint.Auth{Type: "oauth2_client_credentials", TokenURL: "https://auth.example/token", ClientID: "c"}, "client_secret"},
		{"mtls", endpoint.Auth{Type: "mtls", CertPEM: good.CertPEM, PrivateKeyPEM: good.KeyPEM, CAPEM: ca.PEM}, ""},
		{"mtls malformed cert", endpoint.Auth{Type: "mtls", CertPEM: "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n", PrivateKeyPEM: good.KeyPEM}, "cert_pem"},
		{"mtls malformed key", endpoint.Auth{Type: "mtls", CertPEM: good.CertPEM, PrivateKeyPEM: "not pem"}, "private_key_pem"},
		{"mtls key of another cert", endpoint.Auth{Type: "mtls", CertPEM: good.CertPEM, PrivateKeyPEM: stranger.KeyPEM}, "private_key_pem"},
		{"mtls bad ca", endpoint.Auth{Type: "mtls", CertPEM: good.CertPEM, PrivateKeyPEM: good.KeyPEM, CAPEM: "junk"}, "ca_pem"},
		{"unknown type", endpoint.Auth{Type: "kerberos"}, "type"},
	} {
		err := CheckAuth(&tc.auth, allow)
		var ae *AuthError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.name, err)
		case tc.field != "" && (!errors.As(err, &ae) || ae.Field != tc.field):
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.field)
		}
		if err != nil && (strings.Contains(err.Error(), strings.Split(good.KeyPEM, "\n")[1]) || strings.Contains(err.Error(), "junk")) {
			t.Errorf("%s: error %q quotes the credential", tc.name, err)
		}
	}
}
