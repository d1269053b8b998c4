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

// amqpConn is one RabbitMQ connection and its idle channels. A channel is
// used by one send at a time, in confirm mode, so a return (no queue bound
// to the routing key) and the ack that follows it belong to that send.
type amqpConn struct {
	c    *amqp.Connection
	mu   sync.Mutex
	idle []*amqpChannel
}

type amqpChannel struct {
	ch      *amqp.Channel
	returns chan amqp.Return
	closed  chan *amqp.Error
}

// maxIdleChannels bounds the channels a connection keeps between sends.
const maxIdleChannels = 32

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

func (a *amqpConn) channel() (*amqpChannel, error) {
	a.mu.Lock()
	if n := len(a.idle); n > 0 {
		ch := a.idle[n-1]
		a.idle = a.idle[:n-1]
		a.mu.Unlock()
		return ch, nil
	}
	a.mu.Unlock()
	ch, err := a.c.Channel()
	if err != nil {
		return nil, amqpError("open a channel", err)
	}
	if err := ch.Confirm(false); err != nil {
		return nil, amqpError("confirm mode", err)
	}
	return &amqpChannel{ch: ch, returns: ch.NotifyReturn(make(chan amqp.Return, 1)), closed: ch.NotifyClose(make(chan *amqp.Error, 1))}, nil
}

func (a *amqpConn) release(ch *amqpChannel, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ok && !ch.ch.IsClosed() && len(a.idle) < maxIdleChannels {
		a.idle = append(a.idle, ch)
		return
	}
	_ = ch.ch.Close() // closed already, or one too many: nothing to report
}

// send publishes m persistent and mandatory, and waits for the broker's
// confirm: an ack is the 2xx, a return (unroutable) a missing queue, a
// nack a retry, the channel closed by the broker (no such exchange,
// access refused) what its reason says.
func (a *amqpConn) send(ctx context.Context, d *Dest, m Message) error {
	ch, err := a.channel()
	if err != nil {
		return err
	}
	table := amqp.Table{}
	eachHeader(m.Headers, func(name, value string) { table[name] = value })
	dc, err := ch.ch.PublishWithDeferredConfirmWithContext(ctx, d.Exchange, d.RoutingKey, true, false, amqp.Publishing{
		Headers: table, ContentType: "application/json", DeliveryMode: amqp.Persistent,
		MessageId: m.EventID, Type: m.Type, Body: m.Body,
	})
	if err != nil {
		a.release(ch, false)
		return amqpError("publish", err)
	}
	acked, err := dc.WaitContext(ctx)
	if err != nil {
		a.release(ch, false) // its confirm may still come: never reuse it
		return amqpError("confirm", err)
	}
	// The broker sends a return before the ack of the same message, and
	// the channel's close reason before it ends the pending confirms.
	select {
	case r, ok := <-ch.returns:
		if ok {
			a.release(ch, true)
			return refused(404, "RabbitMQ returned the message unroutable (%d %s): no queue is bound to exchange %q with routing key %q", r.ReplyCode, r.ReplyText, d.Exchange, d.RoutingKey)
		}
	default:
	}
	select {
	case e, ok := <-ch.closed:
		if ok && e != nil {
			a.release(ch, false)
			return amqpError("publish", e)
		}
	default:
	}
	if !acked {
		a.release(ch, false)
		return errors.New("RabbitMQ publish: not confirmed (nack, or the channel closed)")
	}
	a.release(ch, true)
	return nil
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
