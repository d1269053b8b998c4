package destination

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/hookd/hookd/internal/egress"
)

// Config configures a Pool. The zero value is usable.
type Config struct {
	// Allow lets connections reach addresses the egress guard refuses by
	// default (as egress.Config.Allow).
	Allow []netip.Prefix
	// MaxConns bounds the open connections (default 64): one per
	// destination (scheme, credentials, host, vhost or database), however
	// many endpoints name it.
	MaxConns int
	// IdleAfter closes a connection unused this long (default 5 min).
	IdleAfter time.Duration
	// DialTimeout bounds a connect (default 10 s, as an HTTP attempt).
	DialTimeout time.Duration
	// RootCAs are the CAs a broker's TLS certificate must chain to
	// (amqps://, rediss://, nats://…?tls=true); nil: the system's, which
	// SSL_CERT_FILE and SSL_CERT_DIR extend.
	RootCAs *x509.CertPool
	// Now is the clock (default time.Now).
	Now func() time.Time
	Log *slog.Logger
}

// conn is one open connection to a broker.
type conn interface {
	send(ctx context.Context, d *Dest, m Message) error
	// broken says the connection is closed (the broker restarted …) and
	// must be dialed again.
	broken() bool
	close() error
}

// dialers opens a connection per kind.
var dialers = map[string]func(ctx context.Context, d *Dest, dial *net.Dialer) (conn, error){
	KindAMQP:   dialAMQP,
	KindNATS:   dialNATS,
	KindRedis:  dialRedis,
	KindKafka:  dialKafka,
	KindSQS:    dialSQS,
	KindPubSub: dialPubSub,
}

// ErrPoolFull is a send refused because MaxConns connections are open and
// all are in use: transient, the delivery is retried.
var ErrPoolFull = errors.New("destination pool full: every connection is in use")

// Pool holds the connections to destinations. Safe for concurrent use.
type Pool struct {
	cfg   Config
	dial  *net.Dialer
	mu    sync.Mutex
	conns map[string]*entry
	sweep *time.Timer // armed while connections are open (under mu)
}

// entry is one destination's connection; mu serializes its (re)dial.
type entry struct {
	mu       sync.Mutex
	c        conn
	inUse    int       // under Pool.mu
	lastUsed time.Time // under Pool.mu
}

// New returns a pool for cfg, its zero fields defaulted.
func New(cfg Config) *Pool {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 64
	}
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = 5 * time.Minute
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = egress.DefaultTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Pool{cfg: cfg, dial: egress.Dialer(cfg.Allow, cfg.DialTimeout), conns: map[string]*entry{}}
}

// Send sends m to the destination raw (a URL with its credentials). Its
// error is nil (acked), a *Refused (permanent), egress.ErrBlocked (the
// guard refused the host), or a transient error.
func (p *Pool) Send(ctx context.Context, raw string, m Message) error {
	d, err := Parse(raw, p.cfg.Allow)
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) && fe.Field == "host" {
			return fmt.Errorf("%w: %s", egress.ErrBlocked, fe.Reason)
		}
		return refused(400, "%v", err) // stored before a rule changed: never valid again
	}
	d.roots = p.cfg.RootCAs
	e, c, err := p.get(ctx, d)
	if err != nil {
		return scrub(err, d)
	}
	defer p.put(e)
	return scrub(c.send(ctx, d, m), d)
}

// scrub keeps d's password out of an error a client built (none of the
// clients quotes it today; a new version might): the message is
// recorded in the delivery log and logged.
func scrub(err error, d *Dest) error {
	pass, ok := d.URL.User.Password()
	if err == nil || !ok || pass == "" || !strings.Contains(err.Error(), pass) {
		return err
	}
	msg := strings.ReplaceAll(err.Error(), pass, Masked)
	if r, ok := AsRefused(err); ok {
		return &Refused{Status: r.Status, Reason: strings.ReplaceAll(r.Reason, pass, Masked)}
	}
	return errors.New(msg)
}

// get takes d's connection, dialing it when there is none or it broke.
func (p *Pool) get(ctx context.Context, d *Dest) (*entry, conn, error) {
	key := d.connKey()
	p.mu.Lock()
	e := p.conns[key]
	var evicted *entry
	if e == nil {
		if len(p.conns) >= p.cfg.MaxConns {
			if evicted = p.evictLocked(); evicted == nil {
				p.mu.Unlock()
				return nil, nil, ErrPoolFull
			}
		}
		e = &entry{}
		p.conns[key] = e
	}
	e.inUse++
	e.lastUsed = p.cfg.Now()
	p.armLocked()
	p.mu.Unlock()
	p.closeEntries(evicted)

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c != nil && e.c.broken() {
		p.closeConn(e.c)
		e.c = nil
	}
	if e.c == nil {
		c, err := dialers[d.Kind](ctx, d, p.dial)
		if err != nil {
			p.put(e)
			return nil, nil, err
		}
		e.c = c
	}
	return e, e.c, nil
}

// put gives back a connection taken by get.
func (p *Pool) put(e *entry) {
	p.mu.Lock()
	e.inUse--
	e.lastUsed = p.cfg.Now()
	p.mu.Unlock()
}

// evictLocked forgets the least recently used connection not in use, to
// make room, and returns it for closing; nil if every one is in use.
func (p *Pool) evictLocked() *entry {
	var oldest string
	for k, e := range p.conns {
		if e.inUse == 0 && (oldest == "" || e.lastUsed.Before(p.conns[oldest].lastUsed)) {
			oldest = k
		}
	}
	if oldest == "" {
		return nil
	}
	e := p.conns[oldest]
	delete(p.conns, oldest)
	return e
}

// closeEntries closes forgotten entries' connections: after the pool's
// lock is let go, since a close may wait on the broker.
func (p *Pool) closeEntries(es ...*entry) {
	for _, e := range es {
		if e == nil {
			continue
		}
		e.mu.Lock()
		if e.c != nil {
			p.closeConn(e.c)
			e.c = nil
		}
		e.mu.Unlock()
	}
}

func (p *Pool) closeConn(c conn) {
	if err := c.close(); err != nil {
		p.cfg.Log.Debug("closing a destination connection", "error", err)
	}
}

// CloseIdle closes the connections unused for IdleAfter, and says how many
// it closed. The pool runs it by itself while it holds connections.
func (p *Pool) CloseIdle() int {
	p.mu.Lock()
	now := p.cfg.Now()
	var idle []*entry
	for k, e := range p.conns {
		if e.inUse == 0 && now.Sub(e.lastUsed) >= p.cfg.IdleAfter {
			idle = append(idle, e)
			delete(p.conns, k)
		}
	}
	if len(p.conns) > 0 {
		p.armLocked()
	}
	p.mu.Unlock()
	p.closeEntries(idle...)
	return len(idle)
}

// armLocked schedules CloseIdle, IdleAfter from now, unless it is already.
func (p *Pool) armLocked() {
	if p.sweep == nil {
		p.sweep = time.AfterFunc(p.cfg.IdleAfter, func() {
			p.mu.Lock()
			p.sweep = nil
			p.mu.Unlock()
			p.CloseIdle()
		})
	}
}

// Open is how many connections the pool holds.
func (p *Pool) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close closes every connection.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.sweep != nil {
		p.sweep.Stop()
		p.sweep = nil
	}
	all := make([]*entry, 0, len(p.conns))
	for k, e := range p.conns {
		all = append(all, e)
		delete(p.conns, k)
	}
	p.mu.Unlock()
	p.closeEntries(all...)
}
