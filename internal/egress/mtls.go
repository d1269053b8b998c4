package egress

import (
	"container/list"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/hookd/hookd/internal/endpoint"
)

// maxTLSTransports bounds the transports kept for client certificates: one
// per certificate (its connections carry that identity), the least
// recently used closed first.
const maxTLSTransports = 128

// clientTLS builds the TLS settings of an mtls auth: the client
// certificate, and the receiver's CA instead of the system roots when one
// is given. Errors name the field at fault.
func clientTLS(a *endpoint.Auth) (*tls.Config, error) {
	cert, err := tls.X509KeyPair([]byte(a.CertPEM), []byte(a.PrivateKeyPEM))
	if err != nil {
		if _, cerr := parseCertPEM(a.CertPEM); cerr != nil {
			return nil, &AuthError{Field: "cert_pem", Problem: cerr.Error()}
		}
		return nil, &AuthError{Field: "private_key_pem", Problem: "not a PEM private key matching cert_pem: " + err.Error()}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if a.CAPEM != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(a.CAPEM)) {
			return nil, &AuthError{Field: "ca_pem", Problem: "no PEM certificate in it (want -----BEGIN CERTIFICATE-----)"}
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// parseCertPEM reads the first certificate of a PEM text.
func parseCertPEM(text string) (*x509.Certificate, error) {
	rest := []byte(text)
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return nil, errors.New("no PEM certificate in it (want -----BEGIN CERTIFICATE-----)")
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("its certificate is unreadable: %w", err)
		}
		return c, nil
	}
}

// tlsPool keeps one HTTP client per client certificate, keyed by the hash
// of the auth's PEM texts, so deliveries with the same certificate reuse
// connections and a changed certificate never rides an old connection.
type tlsPool struct {
	mu    sync.Mutex
	max   int
	byKey map[[32]byte]*list.Element
	lru   *list.List // of *tlsEntry, most recent first
	build func(*tls.Config) (*http.Client, *http.Transport)
}

type tlsEntry struct {
	key       [32]byte
	client    *http.Client
	transport *http.Transport
}

func newTLSPool(limit int, build func(*tls.Config) (*http.Client, *http.Transport)) *tlsPool {
	return &tlsPool{max: limit, byKey: map[[32]byte]*list.Element{}, lru: list.New(), build: build}
}

// client returns the client for a's certificate, building it on first use.
func (p *tlsPool) client(a *endpoint.Auth) (*http.Client, error) {
	h := sha256.New()
	for _, s := range []string{a.CertPEM, a.PrivateKeyPEM, a.CAPEM} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var key [32]byte
	h.Sum(key[:0])
	p.mu.Lock()
	defer p.mu.Unlock()
	if el, ok := p.byKey[key]; ok {
		p.lru.MoveToFront(el)
		return el.Value.(*tlsEntry).client, nil
	}
	cfg, err := clientTLS(a)
	if err != nil {
		return nil, err
	}
	c, t := p.build(cfg)
	p.byKey[key] = p.lru.PushFront(&tlsEntry{key: key, client: c, transport: t})
	for p.lru.Len() > p.max {
		old := p.lru.Remove(p.lru.Back()).(*tlsEntry)
		delete(p.byKey, old.key)
		old.transport.CloseIdleConnections()
	}
	return c, nil
}

// len is how many transports are kept.
func (p *tlsPool) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lru.Len()
}

// closeIdle closes every kept transport's idle connections.
func (p *tlsPool) closeIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for el := p.lru.Front(); el != nil; el = el.Next() {
		el.Value.(*tlsEntry).transport.CloseIdleConnections()
	}
}
