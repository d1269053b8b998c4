package destination

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsConn is one NATS connection. nats.go reconnects it by itself after
// a server restart; a closed one is dialed again by the pool.
type natsConn struct {
	nc *nats.Conn
	js jetstream.JetStream
	// denied is the server's last permissions violation, reported
	// asynchronously: a publish it refused otherwise only times out.
	mu     sync.Mutex
	denied string
}

func dialNATS(ctx context.Context, d *Dest, dial *net.Dialer) (conn, error) {
	u := *d.URL
	u.Path, u.RawQuery = "", ""
	c := &natsConn{}
	opts := []nats.Option{}
	if d.TLS {
		opts = append(opts, nats.Secure(&tls.Config{RootCAs: d.roots, ServerName: d.URL.Hostname(), MinVersion: tls.VersionTLS12}))
	}
	nc, err := nats.Connect(u.String(), append(opts,
		nats.Name("hookd"),
		nats.SetCustomDialer(contextDialer{ctx: ctx, d: dial}),
		nats.Timeout(dial.Timeout),
		nats.MaxReconnects(-1),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				c.mu.Lock()
				c.denied = err.Error()
				c.mu.Unlock()
			}
		}),
	)...)
	if err != nil {
		if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) {
			return nil, refused(403, "NATS connect: %v", err)
		}
		if e := tlsError(err); e != "" {
			return nil, fmt.Errorf("NATS connect: %s", e)
		}
		return nil, fmt.Errorf("NATS connect: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("NATS JetStream: %w", err)
	}
	c.nc, c.js = nc, js
	return c, nil
}

// contextDialer is the egress dialer in the form nats.go takes. The
// context is the first send's: nats.go redials after a restart with it,
// so only the dial's own timeout bounds those.
type contextDialer struct {
	ctx context.Context
	d   *net.Dialer
}

func (c contextDialer) Dial(network, address string) (net.Conn, error) {
	return c.d.DialContext(context.WithoutCancel(c.ctx), network, address)
}

// send publishes m to JetStream and waits for the stream's ack;
// Nats-Msg-Id is the event id, so the stream's duplicate window drops a
// second copy.
func (c *natsConn) send(ctx context.Context, d *Dest, m Message) error {
	msg := nats.NewMsg(d.Subject)
	msg.Data = m.Body
	eachHeader(m.Headers, func(name, value string) { msg.Header.Set(name, value) })
	_, err := c.js.PublishMsg(ctx, msg, jetstream.WithMsgID(m.EventID))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders):
		return refused(404, "NATS: no JetStream stream takes subject %q", d.Subject)
	case errors.Is(err, nats.ErrPermissionViolation) || errors.Is(err, nats.ErrAuthorization):
		return refused(403, "NATS publish to %q: %v", d.Subject, err)
	}
	c.mu.Lock()
	denied := c.denied
	c.mu.Unlock()
	if strings.Contains(denied, `"`+d.Subject+`"`) {
		return refused(403, "NATS publish to %q: %s", d.Subject, denied)
	}
	return fmt.Errorf("NATS publish to %q: %w", d.Subject, err)
}

func (c *natsConn) broken() bool { return c.nc.IsClosed() }

func (c *natsConn) close() error { c.nc.Close(); return nil }

// tlsError says plainly what a failed TLS handshake means, "" when err is
// not one: retried (the owner may fix the certificate), but never a
// mystery in the delivery log.
func tlsError(err error) string {
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknown):
		return fmt.Sprintf("the broker's TLS certificate is not signed by a CA hookd trusts (add its CA to the system's, or SSL_CERT_FILE): %v", err)
	case errors.As(err, &host):
		return fmt.Sprintf("the broker's TLS certificate is not for the host in the url: %v", err)
	case errors.As(err, &invalid):
		return fmt.Sprintf("the broker's TLS certificate is not valid (expired, or not for a server): %v", err)
	case errors.As(err, &verify):
		return fmt.Sprintf("the broker's TLS certificate was refused: %v", err)
	case strings.Contains(err.Error(), "tls:"):
		return fmt.Sprintf("the TLS handshake failed: %v", err)
	}
	return ""
}
