// Package egresstest runs, on loopback, the real servers that the tests of
// receiver authentication and the forward proxy talk to: a certificate
// authority with a TLS receiver that requires client certificates, an
// OAuth2 token endpoint (RFC 6749 §4.4, client credentials) and an HTTP
// CONNECT proxy. They speak the real protocols; nothing here is a mock.
package egresstest

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// CA is a test certificate authority.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate.
	PEM  string
	Pool *x509.CertPool
}

// NewCA makes a CA valid for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{cert: cert, key: key, PEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), Pool: pool}
}

// Pair is an issued certificate and its key.
type Pair struct {
	CertPEM, KeyPEM string
	TLS             tls.Certificate
}

// Client issues a client certificate for cn.
func (ca *CA) Client(t testing.TB, cn string) Pair {
	return ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: cn}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

// Server issues a server certificate for localhost and 127.0.0.1.
func (ca *CA) Server(t testing.TB) Pair {
	return ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
}

func (ca *CA) issue(t testing.TB, tmpl *x509.Certificate) Pair {
	t.Helper()
	key := newKey(t)
	tmpl.SerialNumber = serial(t)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := Pair{
		CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		KeyPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})),
	}
	if p.TLS, err = tls.X509KeyPair([]byte(p.CertPEM), []byte(p.KeyPEM)); err != nil {
		t.Fatal(err)
	}
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// MTLSReceiver starts an HTTPS receiver on 127.0.0.1 whose certificate ca
// issued (for localhost and 127.0.0.1) and which requires a client
// certificate that ca issued too. The handshake refuses any other.
func MTLSReceiver(t testing.TB, ca *CA, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{
		MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{ca.Server(t).TLS},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool,
	}
	srv.Config.ErrorLog = discardLog()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// TokenServer is an OAuth2 token endpoint for the client credentials
// grant: one client, tokens that live ExpiresIn seconds (as it tells the
// client; it does not expire them itself), revocable at once.
type TokenServer struct {
	*httptest.Server
	ClientID, ClientSecret string

	mu        sync.Mutex
	expiresIn int
	issued    int
	live      map[string]bool
	forms     []map[string][]string
}

// NewTokenServer starts a token server on 127.0.0.1 (plain http: the
// tests allow-list it).
func NewTokenServer(t testing.TB, clientID, clientSecret string, expiresIn int) *TokenServer {
	t.Helper()
	ts := &TokenServer{ClientID: clientID, ClientSecret: clientSecret, expiresIn: expiresIn, live: map[string]bool{}}
	ts.Server = httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *TokenServer) serve(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, code, desc string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
	}
	if r.Method != http.MethodPost {
		fail(http.StatusMethodNotAllowed, "invalid_request", "POST only")
		return
	}
	if err := r.ParseForm(); err != nil {
		fail(http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != ts.ClientID || secret != ts.ClientSecret {
		fail(http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	if g := r.PostForm.Get("grant_type"); g != "client_credentials" {
		fail(http.StatusBadRequest, "unsupported_grant_type", "grant_type "+g)
		return
	}
	ts.mu.Lock()
	ts.issued++
	token := "tok-" + strconv.Itoa(ts.issued)
	ts.live[token] = true
	ts.forms = append(ts.forms, r.PostForm)
	expiresIn := ts.expiresIn
	ts.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": expiresIn})
}

// Issued is how many tokens the server has issued.
func (ts *TokenServer) Issued() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.issued
}

// LastForm is the form of the last token request that got a token.
func (ts *TokenServer) LastForm() map[string][]string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.forms) == 0 {
		return nil
	}
	return ts.forms[len(ts.forms)-1]
}

// Valid reports whether header is "Bearer <a live token>".
func (ts *TokenServer) Valid(header string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var token string
	if _, err := fmt.Sscanf(header, "Bearer %s", &token); err != nil {
		return false
	}
	return ts.live[token]
}

// RevokeAll makes every token issued so far invalid.
func (ts *TokenServer) RevokeAll() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.live = map[string]bool{}
}

// Protected wraps next: a request without a live token gets 401.
func (ts *TokenServer) Protected(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ts.Valid(r.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Proxy is an HTTP CONNECT proxy on 127.0.0.1 that records every tunnel
// it was asked for and the local addresses of the connections it opened
// (what a receiver sees as the client).
type Proxy struct {
	URL string
	ln  net.Listener

	mu       sync.Mutex
	connects []string
	outbound map[string]bool
	wg       sync.WaitGroup
}

// NewProxy starts a CONNECT proxy.
func NewProxy(t testing.TB) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{URL: "http://" + ln.Addr().String(), ln: ln, outbound: map[string]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.tunnel(c)
	}
}

func (p *Proxy) tunnel(c net.Conn) {
	defer p.wg.Done()
	defer func() { _ = c.Close() }()
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return
	}
	p.mu.Lock()
	p.connects = append(p.connects, req.Method+" "+req.Host)
	p.mu.Unlock()
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
		return
	}
	up, err := net.DialTimeout("tcp", req.Host, 5*time.Second)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer func() { _ = up.Close() }()
	p.mu.Lock()
	p.outbound[up.LocalAddr().String()] = true
	p.mu.Unlock()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done // one side ended: close both (deferred), which ends the other
}

// Connects returns the requests the proxy got ("CONNECT 127.0.0.1:8443").
func (p *Proxy) Connects() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.connects...)
}

// Relayed reports whether remoteAddr (a receiver's r.RemoteAddr) is a
// connection the proxy opened.
func (p *Proxy) Relayed(remoteAddr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.outbound[remoteAddr]
}

// discardLog drops the receiver's handshake errors: refusing them is what
// the tests want.
func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }
