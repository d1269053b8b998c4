package egress

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/hookd/hookd/internal/egress/egresstest"
	"github.com/hookd/hookd/internal/endpoint"
)

// TestMTLS: a receiver that requires a client certificate from its CA gets
// the request with the right one, and refuses the handshake with none or
// one from another CA; a transport is kept per certificate and reused.
func TestMTLS(t *testing.T) {
	t.Parallel()
	ca := egresstest.NewCA(t, "receiver CA")
	var subjects []string
	rcv := egresstest.MTLSReceiver(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		subjects = append(subjects, r.TLS.PeerCertificates[0].Subject.CommonName)
		w.WriteHeader(http.StatusNoContent)
	}))
	c := New(Config{Allow: allowList(t, "127.0.0.1/32")})
	right := ca.Client(t, "hookd")
	auth := &endpoint.Auth{Type: endpoint.AuthMTLS, CertPEM: right.CertPEM, PrivateKeyPEM: right.KeyPEM, CAPEM: ca.PEM}

	for range 3 {
		resp, err := c.PostAuth(context.Background(), rcv.URL, auth, nil, []byte("{}"), nil)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("right certificate: %v %v", resp.StatusCode, err)
		}
	}
	if len(subjects) != 3 || subjects[0] != "hookd" {
		t.Fatalf("receiver saw client certificates %v, want hookd three times", subjects)
	}
	if n := c.tlsPool.len(); n != 1 {
		t.Fatalf("%d transports for one certificate, want 1", n)
	}

	// No certificate: the receiver's CA is not a public one either, so
	// this also proves ca_pem is what verified the receiver above.
	noCert := &endpoint.Auth{Type: endpoint.AuthMTLS, CAPEM: ca.PEM}
	if _, err := c.PostAuth(context.Background(), rcv.URL, nil, nil, []byte("{}"), nil); err == nil {
		t.Fatal("no auth: the receiver (a private CA) was reached")
	}
	if _, err := c.PostAuth(context.Background(), rcv.URL, noCert, nil, []byte("{}"), nil); err == nil {
		t.Fatal("mtls without a certificate was accepted")
	}
	stranger := egresstest.NewCA(t, "another CA").Client(t, "hookd")
	wrong := &endpoint.Auth{Type: endpoint.AuthMTLS, CertPEM: stranger.CertPEM, PrivateKeyPEM: stranger.KeyPEM, CAPEM: ca.PEM}
	_, err := c.PostAuth(context.Background(), rcv.URL, wrong, nil, []byte("{}"), nil)
	if err == nil {
		t.Fatal("a certificate from another CA was accepted")
	}
	if errors.Is(err, ErrBlocked) {
		t.Fatalf("a refused handshake reads as blocked: %v", err)
	}
	if len(subjects) != 3 {
		t.Fatalf("the receiver handled %d requests, want only the 3 with the right certificate", len(subjects))
	}
	if n := c.tlsPool.len(); n != 2 {
		t.Fatalf("%d transports, want 2 (one per usable certificate)", n)
	}
}

// TestTLSPoolBound: the pool keeps at most its limit, the least recently
// used closed first.
func TestTLSPoolBound(t *testing.T) {
	t.Parallel()
	ca := egresstest.NewCA(t, "CA")
	c := New(Config{})
	c.tlsPool.max = 2
	var auths []*endpoint.Auth
	for _, cn := range []string{"a", "b", "c"} {
		p := ca.Client(t, cn)
		auths = append(auths, &endpoint.Auth{Type: endpoint.AuthMTLS, CertPEM: p.CertPEM, PrivateKeyPEM: p.KeyPEM})
	}
	first, err := c.tlsPool.client(auths[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range auths[1:] {
		if _, err := c.tlsPool.client(a); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.tlsPool.len(); n != 2 {
		t.Fatalf("pool holds %d, want its limit 2", n)
	}
	again, err := c.tlsPool.client(auths[0])
	if err != nil {
		t.Fatal(err)
	}
	if again == first {
		t.Fatal("the least recently used transport was not evicted")
	}
}
