package egress

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/hookd/hookd/internal/egress/egresstest"
	"github.com/hookd/hookd/internal/endpoint"
)

func proxyURL(t *testing.T, p *egresstest.Proxy) *url.URL {
	t.Helper()
	u, err := ParseProxy(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestProxy: every delivery goes through the CONNECT proxy, which is asked
// for the checked IP, never the name; TLS inside the tunnel still verifies
// the name (SNI), with a client certificate too.
func TestProxy(t *testing.T) {
	t.Parallel()
	proxy := egresstest.NewProxy(t)
	var mu sync.Mutex
	var direct []string
	relayed := func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !proxy.Relayed(r.RemoteAddr) {
			direct = append(direct, r.RemoteAddr)
		}
	}
	plain := newReceiver(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		relayed(r)
		w.WriteHeader(http.StatusNoContent)
	})
	ca := egresstest.NewCA(t, "receiver CA")
	secure := egresstest.MTLSReceiver(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		relayed(r)
		w.WriteHeader(http.StatusNoContent)
	}))
	c := New(Config{Allow: allowList(t, "127.0.0.1/32"), Proxy: proxyURL(t, proxy)})
	client := ca.Client(t, "hookd")
	auth := &endpoint.Auth{Type: endpoint.AuthMTLS, CertPEM: client.CertPEM, PrivateKeyPEM: client.KeyPEM, CAPEM: ca.PEM}
	securePort := secure.URL[strings.LastIndex(secure.URL, ":")+1:]

	for i, target := range []struct {
		url  string
		auth *endpoint.Auth
	}{
		{"http://localhost:" + plain.port(t) + "/hook", nil},
		{plain.URL, nil},
		{"https://localhost:" + securePort + "/hook", auth}, // verified as localhost inside a tunnel to 127.0.0.1
	} {
		resp, err := c.PostAuth(context.Background(), target.url, target.auth, nil, []byte("{}"), nil)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("post %d %s: %v %v", i, target.url, resp.StatusCode, err)
		}
	}
	if plain.hits.Load() != 2 || len(direct) != 0 {
		t.Fatalf("plain receiver hit %d times (want 2); reached directly from %v", plain.hits.Load(), direct)
	}
	for _, req := range proxy.Connects() {
		if !strings.HasPrefix(req, "CONNECT 127.0.0.1:") {
			t.Errorf("the proxy was asked %q: want a CONNECT to the checked IP only", req)
		}
	}
	if len(proxy.Connects()) == 0 {
		t.Fatal("the proxy saw no CONNECT")
	}
}

// TestProxyGuard: a receiver that resolves to a refused address is refused
// before the proxy is asked anything.
func TestProxyGuard(t *testing.T) {
	t.Parallel()
	proxy := egresstest.NewProxy(t) // on loopback: the proxy's own address is the operator's choice
	rcv := newReceiver(t, "127.0.0.1:0", ok)
	c := New(Config{Proxy: proxyURL(t, proxy)}) // nothing allowed beyond public addresses
	for _, u := range []string{
		"http://localhost:" + rcv.port(t) + "/", // a name that resolves to loopback
		rcv.URL,                                 // the address itself
		"http://10.1.2.3/",                      // private
	} {
		_, err := c.PostAuth(context.Background(), u, nil, nil, []byte("{}"), nil)
		if !errors.Is(err, ErrBlocked) {
			t.Errorf("%s through the proxy: %v, want blocked", u, err)
		}
	}
	if got := proxy.Connects(); len(got) != 0 || rcv.hits.Load() != 0 {
		t.Fatalf("the proxy was asked %v and the receiver hit %d times; want neither", got, rcv.hits.Load())
	}
}

func TestParseProxy(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                            "",
		"http://proxy:3128":           "http://proxy:3128",
		"http://proxy":                "http://proxy:3128",
		"http://u:p@10.0.0.9:8080":    "http://u:p@10.0.0.9:8080",
		"https://proxy:3128":          "error",
		"socks5://proxy:1080":         "error",
		"http://proxy:3128/some/path": "error",
		"proxy:3128":                  "error",
	} {
		u, err := ParseProxy(in)
		got := ""
		switch {
		case err != nil:
			got = "error"
			if strings.Contains(err.Error(), ":p@") {
				t.Errorf("%q: error %q shows the proxy password", in, err)
			}
		case u != nil:
			got = u.String()
		}
		if got != want {
			t.Errorf("ParseProxy(%q) = %q, want %q", in, got, want)
		}
	}
}
