package destination

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// redisConn is one go-redis client: its own small pool of connections to
// one server and database, redialed by go-redis after a restart.
type redisConn struct {
	c *redis.Client
}

// redisPoolSize bounds one Redis destination's connections.
const redisPoolSize = 8

func dialRedis(_ context.Context, d *Dest, dial *net.Dialer) (conn, error) {
	u := *d.URL
	u.Path, u.RawQuery = "", "" // hookd's parameters, not go-redis's
	opt, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, refused(400, "Redis URL: %v", err)
	}
	opt.DB = d.DB
	opt.PoolSize, opt.MaxIdleConns = redisPoolSize, redisPoolSize
	opt.MaxRetries = -1 // River retries, on the profile's schedule
	opt.DialTimeout = dial.Timeout
	opt.Dialer = dial.DialContext
	if tc := opt.TLSConfig; tc != nil { // rediss://: go-redis leaves TLS to a custom dialer
		tc.RootCAs = d.roots
		opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return tls.Client(c, tc), nil
		}
	}
	return &redisConn{c: redis.NewClient(opt)}, nil
}

// send appends m to the stream with XADD, trimmed to about MaxLen
// entries: the field "body" is the envelope, every header one field.
func (r *redisConn) send(ctx context.Context, d *Dest, m Message) error {
	values := make([]any, 0, 2+2*len(m.Headers))
	values = append(values, "body", m.Body)
	eachHeader(m.Headers, func(name, value string) { values = append(values, name, value) })
	err := r.c.XAdd(ctx, &redis.XAddArgs{Stream: d.Stream, MaxLen: d.MaxLen, Approx: true, Values: values}).Err()
	if err == nil {
		return nil
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		switch {
		case hasPrefix(msg, "NOAUTH", "WRONGPASS", "NOPERM"):
			return refused(403, "Redis XADD %s: %s", d.Stream, msg)
		case hasPrefix(msg, "WRONGTYPE"):
			return refused(409, "Redis XADD %s: %s", d.Stream, msg)
		}
	}
	return fmt.Errorf("redis XADD %s: %w", d.Stream, err)
}

func hasPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func (r *redisConn) broken() bool { return false } // go-redis redials by itself

func (r *redisConn) close() error { return r.c.Close() }
