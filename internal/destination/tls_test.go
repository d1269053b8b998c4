package destination_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookd/hookd/internal/destination"
)

// testCA makes a CA and a server certificate it signs for 127.0.0.1.
func testCA(t *testing.T) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hookd test CA"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// A NATS JetStream server that speaks only TLS, in the test's process:
// with its CA trusted the message arrives and verifies; without, the
// send fails saying the certificate is not trusted (retried, not refused).
func TestNATSOverTLS(t *testing.T) {
	roots, cert := testCA(t)
	srv, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
		TLS: true, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, TLSTimeout: 5})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("in-process NATS did not start")
	}
	addr := srv.Addr().String()
	nc, err := nats.Connect("nats://"+addr, nats.Secure(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx := ctxFor(t)
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "TLSORDERS", Subjects: []string{"tls.orders"}})
	if err != nil {
		t.Fatal(err)
	}

	raw := "nats://" + addr + "/tls.orders?tls=true"
	p := newPool(t, destination.Config{RootCAs: roots})
	if err := p.Send(ctx, raw, signed(t, "evt_t1")); err != nil {
		t.Fatalf("Send over TLS: %v", err)
	}
	m, err := stream.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	verify(t, m.Header, m.Data, "evt_t1")

	// The system's CAs do not know the test CA.
	untrusted := newPool(t, destination.Config{})
	err = untrusted.Send(ctx, raw, signed(t, "evt_t2"))
	wantTransient(t, err)
	if !strings.Contains(err.Error(), "not signed by a CA hookd trusts") {
		t.Fatalf("an untrusted certificate's error says %v; want it to say so", err)
	}
	if _, err := destination.Parse("nats://"+addr+"/tls.orders?tls=yes", loopback); err == nil || !strings.Contains(err.Error(), "tls") {
		t.Fatalf("tls=yes: %v, want a fault of tls", err)
	}
}
