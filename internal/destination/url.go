package destination

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/hookd/hookd/internal/egress"
)

// The kinds of destination, by URL scheme.
const (
	KindAMQP   = "amqp"      // amqp://, amqps://
	KindNATS   = "nats"      // nats://
	KindRedis  = "redis"     // redis://, rediss://
	KindKafka  = "kafka"     // kafka://
	KindSQS    = "sqs"       // sqs://
	KindPubSub = "gcppubsub" // gcppubsub://
)

// kinds maps a scheme to its kind.
var kinds = map[string]string{"amqp": KindAMQP, "amqps": KindAMQP, "nats": KindNATS, "redis": KindRedis, "rediss": KindRedis, "kafka": KindKafka, "sqs": KindSQS, "gcppubsub": KindPubSub}

// Masked is what a password reads as in an answer, a log line or a page.
const Masked = "***"

// Dest is a parsed destination URL.
type Dest struct {
	Kind string
	URL  *url.URL // with its credentials
	// AMQP: the exchange ("" is the default exchange, which routes by
	// queue name) and routing key.
	Exchange, RoutingKey string
	// NATS: the subject published to.
	Subject string
	// Redis: the stream, its approximate MAXLEN, the database.
	Stream string
	MaxLen int64
	DB     int
	// Kafka: the seed brokers (host:port) and the topic.
	Brokers []string
	Topic   string // and Pub/Sub's
	// SQS: the queue's name and URL, the service's endpoint
	// (https://host, or http:// with tls=false), the region; a FIFO
	// queue's name ends in .fifo.
	Queue, QueueURL, Endpoint, Region string
	FIFO                              bool
	// Pub/Sub: the project (Topic is the topic), whether the subject is
	// the ordering key, the service account's JSON key (nil: none),
	// whether the endpoint speaks gRPC without TLS (an emulator).
	Project        string
	Ordered        bool
	ServiceAccount []byte
	Plaintext      bool
	// TLS: NATS over TLS (?tls=true; amqps:// and rediss:// say it by
	// their scheme).
	TLS bool
	// roots are the CAs a broker's certificate must chain to (the pool's
	// Config.RootCAs; nil: the system's).
	roots *x509.CertPool
}

// FieldError is a destination URL's fault, naming the part to fix.
type FieldError struct {
	Field  string // "url", or a part of it: "routing_key", "subject", "stream", "maxlen", "host"
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func bad(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Is says whether raw names a destination other than HTTP (its scheme is
// one of Parse's).
func Is(raw string) bool {
	scheme, _, ok := strings.Cut(raw, "://")
	return ok && kinds[strings.ToLower(scheme)] != ""
}

// KindOf is raw's destination kind: "http" for anything that is not one
// of Parse's schemes.
func KindOf(raw string) string {
	scheme, _, _ := strings.Cut(raw, "://")
	if k := kinds[strings.ToLower(scheme)]; k != "" {
		return k
	}
	return KindHTTP
}

// Parse reads a destination URL (docs/destinations.md):
//
//	amqp[s]://user:pass@host[:5672]/[vhost]?exchange=x&routing_key=k
//	nats://[user:pass@]host[:4222]/subject[?tls=true]
//	redis[s]://[user:pass@]host[:6379][/db]?stream=s[&maxlen=10000]
//	kafka://[user:pass@]broker1:9092,broker2:9092/topic (one broker may omit :9092)
//	sqs://[key_id:secret@]host[:port]/account/queue[?region=r][&tls=false]
//	gcppubsub://[sa:base64url(JSON key)@]host[:port]/project/topic[?ordered=true][&tls=false]
//
// and applies the egress guard to its host (allow as in egress.Config).
// Errors are *FieldError, naming the part to fix; no error repeats the
// password.
func Parse(raw string, allow []netip.Prefix) (*Dest, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, bad("url", "not a URL: %v", redactErr(err, raw))
	}
	d := &Dest{Kind: kinds[strings.ToLower(u.Scheme)], URL: u}
	if d.Kind == "" {
		return nil, bad("url", "scheme %q is none of http, https, amqp, amqps, nats, redis, rediss, kafka, sqs, gcppubsub", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, bad("host", "no host: write %s://host:port/…", u.Scheme)
	}
	if d.Kind == KindKafka { // several hosts
		if err := parseKafka(d, func(host string) error { return checkHost(host, allow) }); err != nil {
			return nil, err
		}
		return d, nil
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, bad("port", "port %q out of range", p)
		}
	}
	if err := checkHost(u.Hostname(), allow); err != nil {
		return nil, err
	}
	q := u.Query()
	switch d.Kind {
	case KindAMQP:
		d.Exchange, d.RoutingKey = q.Get("exchange"), q.Get("routing_key")
		if d.RoutingKey == "" && d.Exchange == "" {
			return nil, bad("routing_key", "missing: give ?routing_key=<queue> (the default exchange routes by queue name) or ?exchange=<exchange>&routing_key=<key>")
		}
		if err := onlyParams(q, "exchange", "routing_key"); err != nil {
			return nil, err
		}
	case KindNATS:
		d.Subject = strings.TrimPrefix(u.Path, "/")
		if d.Subject == "" || strings.ContainsAny(d.Subject, " \t/*>") {
			return nil, bad("subject", "give one literal subject as the path: nats://host:4222/orders.events (no wildcards, spaces or slashes)")
		}
		if d.TLS, err = boolParam(q, "tls", false); err != nil {
			return nil, err
		}
		if err := onlyParams(q, "tls"); err != nil {
			return nil, err
		}
	case KindRedis:
		if err := parseRedis(d, q); err != nil {
			return nil, err
		}
	case KindSQS:
		if err := parseSQS(d, q); err != nil {
			return nil, err
		}
	case KindPubSub:
		if err := parsePubSub(d, q); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// checkHost is the egress guard's judgement of a broker's host.
func checkHost(host string, allow []netip.Prefix) error {
	if err := egress.CheckHost(host, allow); err != nil {
		if errors.Is(err, egress.ErrBlocked) {
			return bad("host", "not reachable by hookd: %v", err)
		}
		return bad("host", "%v", err)
	}
	return nil
}

// parseRedis reads a Redis destination's database, stream and MAXLEN.
func parseRedis(d *Dest, q url.Values) error {
	if db := strings.TrimPrefix(d.URL.Path, "/"); db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 || n > 15 {
			return bad("db", "the path is the database number, 0 to 15 (got %q)", db)
		}
		d.DB = n
	}
	d.Stream = q.Get("stream")
	if d.Stream == "" {
		return bad("stream", "missing: give ?stream=<stream key>")
	}
	d.MaxLen = DefaultMaxLen
	if v := q.Get("maxlen"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return bad("maxlen", "want a whole number of entries, at least 1 (got %q)", v)
		}
		d.MaxLen = n
	}
	return onlyParams(q, "stream", "maxlen")
}

// DefaultMaxLen is a Redis stream's approximate MAXLEN when the URL sets none.
const DefaultMaxLen = 10000

// boolParam reads query parameter name as true or false (def when absent).
func boolParam(q url.Values, name string, def bool) (bool, error) {
	switch v := q.Get(name); v {
	case "":
		return def, nil
	case "true", "false":
		return v == "true", nil
	default:
		return false, bad(name, "want true or false (got %q)", v)
	}
}

// onlyParams refuses query parameters other than known.
func onlyParams(q url.Values, known ...string) error {
	for k := range q {
		switch {
		case slices.Contains(known, k):
		case len(known) == 0:
			return bad(k, "unknown parameter: this destination takes none")
		default:
			return bad(k, "unknown parameter (known: %s)", strings.Join(known, ", "))
		}
	}
	return nil
}

// redactErr is a url.Parse error without the URL it quotes (which may
// carry a password).
func redactErr(err error, raw string) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return strings.ReplaceAll(err.Error(), raw, Redact(raw))
}

// HasPassword says whether raw carries a password (sealed at rest, shown
// as Masked).
func HasPassword(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return false
	}
	_, ok := u.User.Password()
	return ok
}

// Redact is raw with its password shown as Masked: the form stored in the
// endpoint's url, answered, logged and shown.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unreadable URL)"
	}
	if u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); !ok {
		return raw
	}
	// Built by hand: url.UserPassword would escape the asterisks.
	shown := *u
	shown.User = nil
	rest := strings.TrimPrefix(shown.String(), u.Scheme+"://")
	return u.Scheme + "://" + url.PathEscape(u.User.Username()) + ":" + Masked + "@" + rest
}

// Keep is update's rule for a password given back masked: next (the new
// URL, its password Masked) takes the password of old (the stored URL with
// its credentials) when both name the same host and user; a different
// host or user must be given its password again.
func Keep(next, old string) (string, error) {
	n, err := url.Parse(next)
	if err != nil {
		return "", bad("url", "not a URL: %v", redactErr(err, next))
	}
	o, err := url.Parse(old)
	if err != nil || o.User == nil {
		return "", bad("url", "the password is %s but no password is stored: give it", Masked)
	}
	pass, _ := o.User.Password()
	if n.Host != o.Host || n.User.Username() != o.User.Username() {
		return "", bad("url", "the host or user changed: give the password again (it is kept only for the same host and user)")
	}
	n.User = url.UserPassword(o.User.Username(), pass)
	return n.String(), nil
}

// connKey names what one connection serves: the scheme, credentials, host
// and (AMQP) vhost or (Redis) database, hashed so no password is kept in
// a map key that a dump could show.
func (d *Dest) connKey() string {
	var part string
	switch d.Kind {
	case KindAMQP:
		part = d.URL.Path
	case KindRedis:
		part = strconv.Itoa(d.DB)
	case KindKafka:
		part = "" // the host is the whole seed list
	case KindSQS:
		part = d.Endpoint + "\x00" + d.Region
	case KindPubSub:
		part = d.Project + "\x00" + strconv.FormatBool(d.Plaintext)
	}
	sum := sha256.Sum256([]byte(d.URL.Scheme + "\x00" + d.URL.User.String() + "\x00" + strings.ToLower(d.URL.Host) + "\x00" + part))
	return d.Kind + ":" + hex.EncodeToString(sum[:16])
}
