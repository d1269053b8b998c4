package destination

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// amqpConn is one RabbitMQ connection and a few channels in confirm mode
// that every send shares: many publishes are in flight on one channel at
// once, each matched to its own confirm by delivery tag (amqp091-go's
// DeferredConfirmation), so the round trips of many workers overlap
// instead of each send holding a channel through its own.
type amqpConn struct {
	c    *amqp.Connection
	mu   sync.Mutex
	chs  []*amqpChannel
	next int
}

// amqpChannel is one shared channel. A mandatory publish that no queue
// takes comes back as a return, which RabbitMQ sends before that
// message's ack: the return is in the returns buffer before the ack
// resolves, so the sender, woken by its ack, finds it by draining the
// buffer (under mu) into returned.
type amqpChannel struct {
	ch      *amqp.Channel
	slots   chan struct{} // the sends in flight, bounded
	returns chan amqp.Return
	closed  chan *amqp.Error

	mu       sync.Mutex
	returned map[amqpRoute]int // returns not yet claimed by their sender
	closeErr *amqp.Error       // the broker's reason for closing the channel
}

// amqpRoute names a returned message: its id and where it was sent.
type amqpRoute struct{ id, exchange, key string }

const (
	// amqpChannels is how many channels a connection's sends share.
	amqpChannels = 4
	// amqpInFlight bounds the unconfirmed publishes on one channel.
	amqpInFlight = 256
)

func dialAMQP(ctx context.Context, d *Dest, dial *net.Dialer) (conn, error) {
	u := *d.URL
	u.RawQuery = "" // hookd's parameters, not the client's
	c, err := amqp.DialConfig(u.String(), amqp.Config{
		Dial:            func(network, addr string) (net.Conn, error) { return dial.DialContext(ctx, network, addr) },
		TLSClientConfig: &tls.Config{RootCAs: d.roots, ServerName: d.URL.Hostname(), MinVersion: tls.VersionTLS12}, // amqps:// only
	})
	if err != nil {
		if e := tlsError(err); e != "" {
			return nil, fmt.Errorf("RabbitMQ connect: %s", e)
		}
		return nil, amqpError("connect", err)
	}
	return &amqpConn{c: c}, nil
}

// channel is a shared channel, round robin, opened on first use and
// opened again when the broker closed it.
func (a *amqpConn) channel() (*amqpChannel, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	i := a.next % amqpChannels
	a.next++
	if i < len(a.chs) && !a.chs[i].ch.IsClosed() {
		return a.chs[i], nil
	}
	ch, err := a.c.Channel()
	if err != nil {
		return nil, amqpError("open a channel", err)
	}
	if err := ch.Confirm(false); err != nil {
		return nil, amqpError("confirm mode", err)
	}
	c := &amqpChannel{
		ch: ch, slots: make(chan struct{}, amqpInFlight), returned: map[amqpRoute]int{},
		// Room for every send in flight and as many abandoned by their
		// context: a full buffer would stall the connection's reader.
		returns: ch.NotifyReturn(make(chan amqp.Return, 4*amqpInFlight)),
		closed:  ch.NotifyClose(make(chan *amqp.Error, 1)),
	}
	if i < len(a.chs) {
		a.chs[i] = c
	} else {
		a.chs = append(a.chs, c)
	}
	return c, nil
}

// settle moves the returns and close reason that arrived into c's
// records (under c.mu).
func (c *amqpChannel) settleLocked() {
	for {
		select {
		case r, ok := <-c.returns:
			if !ok {
				c.returns = nil // closed with the channel: the close reason may still be unread
				continue
			}
			if len(c.returned) > 4*amqpInFlight { // senders that gave up never claim theirs
				clear(c.returned)
			}
			c.returned[amqpRoute{r.MessageId, r.Exchange, r.RoutingKey}]++
		case e, ok := <-c.closed:
			if !ok {
				c.closed = nil
				continue
			}
			if e != nil {
				c.closeErr = e
			}
		default:
			return
		}
	}
}

// send publishes m persistent and mandatory on a shared channel, and
// waits for its confirm: an ack is the 2xx, a return (unroutable) a
// missing queue, a nack a retry, the channel closed by the broker for
// this destination (no such exchange, access refused) what its reason
// says; closed for another send's fault, a retry.
func (a *amqpConn) send(ctx context.Context, d *Dest, m Message) error {
	ch, err := a.channel()
	if err != nil {
		return err
	}
	select {
	case ch.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("RabbitMQ publish: %d sends in flight on the channel: %w", amqpInFlight, ctx.Err())
	}
	defer func() { <-ch.slots }()
	table := amqp.Table{}
	eachHeader(m.Headers, func(name, value string) { table[name] = value })
	dc, err := ch.ch.PublishWithDeferredConfirmWithContext(ctx, d.Exchange, d.RoutingKey, true, false, amqp.Publishing{
		Headers: table, ContentType: "application/json", DeliveryMode: amqp.Persistent,
		MessageId: m.EventID, Type: m.Type, Body: m.Body,
	})
	if err != nil {
		return ch.closedFor(d, amqpError("publish", err))
	}
	acked, err := dc.WaitContext(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return amqpError("confirm", err) // its confirm may still come: matched by tag, harmless
		}
		return ch.closedFor(d, amqpError("confirm", err))
	}
	ch.mu.Lock()
	ch.settleLocked()
	route := amqpRoute{m.EventID, d.Exchange, d.RoutingKey}
	returned := ch.returned[route] > 0
	if returned {
		ch.returned[route]--
		if ch.returned[route] == 0 {
			delete(ch.returned, route)
		}
	}
	ch.mu.Unlock()
	if returned {
		return refused(404, "RabbitMQ returned the message unroutable: no queue is bound to exchange %q with routing key %q", d.Exchange, d.RoutingKey)
	}
	if !acked {
		return ch.closedFor(d, errors.New("RabbitMQ publish: not confirmed (nack, or the channel closed)"))
	}
	return nil
}

// closedFor is err, or the broker's reason for closing the channel when
// that reason is this destination's (it names its exchange): a shared
// channel closes for one send's fault and every send in flight on it
// fails, but only that one is refused; the others are retried.
func (c *amqpChannel) closedFor(d *Dest, err error) error {
	c.mu.Lock()
	c.settleLocked()
	e := c.closeErr
	c.mu.Unlock()
	if e == nil {
		return err
	}
	if d.Exchange != "" && strings.Contains(e.Reason, "'"+d.Exchange+"'") || e.Code == amqp.AccessRefused {
		return amqpError("publish", e)
	}
	return fmt.Errorf("RabbitMQ publish: the channel closed for another destination's fault (%d %s): retried", e.Code, e.Reason)
}

func (a *amqpConn) broken() bool { return a.c.IsClosed() }

func (a *amqpConn) close() error { return a.c.Close() }

// amqpError sorts an amqp091 error: authentication, access and missing
// exchange are permanent (Refused), anything else a retry.
func amqpError(doing string, err error) error {
	var e *amqp.Error
	if errors.As(err, &e) {
		switch e.Code {
		case amqp.AccessRefused, amqp.NotAllowed:
			return refused(403, "RabbitMQ %s: %d %s", doing, e.Code, e.Reason)
		case amqp.NotFound:
			return refused(404, "RabbitMQ %s: %d %s", doing, e.Code, e.Reason)
		}
		return fmt.Errorf("RabbitMQ %s: %d %s", doing, e.Code, e.Reason)
	}
	if strings.Contains(err.Error(), "ACCESS_REFUSED") {
		return refused(403, "RabbitMQ %s: %v", doing, err)
	}
	return fmt.Errorf("RabbitMQ %s: %w", doing, err)
}
