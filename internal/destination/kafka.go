package destination

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// kafkaConn is one franz-go client for one cluster (its seed brokers and
// credentials); it keeps its own connections to the brokers and reopens
// them after a restart.
type kafkaConn struct {
	c *kgo.Client
}

func dialKafka(_ context.Context, d *Dest, dial *net.Dialer) (conn, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(d.Brokers...),
		kgo.Dialer(dial.DialContext),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),      // one message per attempt: never wait for a batch
		kgo.RecordRetries(1),       // River retries, on the profile's schedule
		kgo.UnknownTopicRetries(1), // a missing topic answers, not hangs
		kgo.ClientID("hookd"),
	}
	if u := d.URL.User; u != nil {
		pass, _ := u.Password()
		opts = append(opts, kgo.SASL(plain.Auth{User: u.Username(), Pass: pass}.AsMechanism()))
	}
	c, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	return &kafkaConn{c: c}, nil
}

// send produces m to the topic with acks=all; the key is the event's
// subject, so one subject stays in one partition, in order.
func (k *kafkaConn) send(ctx context.Context, d *Dest, m Message) error {
	r := &kgo.Record{Topic: d.Topic, Key: []byte(m.Subject), Value: m.Body}
	eachHeader(m.Headers, func(name, value string) {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: name, Value: []byte(value)})
	})
	// Produce, not ProduceSync: a record buffered for a broker that is
	// down is not failed by ctx, so the attempt stops waiting at ctx's
	// end and RecordDeliveryTimeout fails the record later (sent after
	// all, it is a duplicate the receiver dedupes by webhook-id).
	done := make(chan error, 1)
	k.c.Produce(ctx, r, func(_ *kgo.Record, err error) { done <- err })
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		return fmt.Errorf("kafka produce to %q: %w", d.Topic, ctx.Err())
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return refused(404, "Kafka: no topic %q", d.Topic)
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed),
		errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState), errors.Is(err, kerr.UnsupportedSaslMechanism):
		return refused(403, "Kafka produce to %q: %v", d.Topic, err)
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.InvalidTopicException):
		return refused(400, "Kafka produce to %q: %v", d.Topic, err)
	}
	return fmt.Errorf("kafka produce to %q: %w", d.Topic, err)
}

func (k *kafkaConn) broken() bool { return false } // franz-go redials by itself

func (k *kafkaConn) close() error { k.c.Close(); return nil }

// parseKafka reads kafka://[user:pass@]broker1:9092,broker2:9092/topic.
func parseKafka(d *Dest, check func(host string) error) error {
	for b := range strings.SplitSeq(d.URL.Host, ",") {
		host, port, err := net.SplitHostPort(b)
		if err != nil {
			host, port = b, "9092"
		}
		if host == "" {
			return bad("host", "empty broker in %q: write host:port,host:port", d.URL.Host)
		}
		if err := check(host); err != nil {
			return err
		}
		d.Brokers = append(d.Brokers, net.JoinHostPort(host, port))
	}
	d.Topic = strings.TrimPrefix(d.URL.Path, "/")
	if d.Topic == "" || strings.ContainsAny(d.Topic, "/ ") {
		return bad("topic", "give the topic as the path: kafka://broker:9092/orders")
	}
	return onlyParams(d.URL.Query())
}
