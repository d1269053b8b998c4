package egress

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/sync/singleflight"

	"github.com/hookd/hookd/internal/endpoint"
)

// ErrToken is matched (with errors.Is) by every failure to get an OAuth2
// token for a delivery: the delivery is retried, and its last_error is the
// [*TokenError]'s text, which names the token server's answer.
var ErrToken = errors.New("oauth2 token")

// TokenError is a failed token fetch.
type TokenError struct {
	// URL is the token endpoint, redacted.
	URL string
	Err error
}

// Error names the token server and what it answered (RFC 6749 §5.2 error
// and error_description when it sent them).
func (e *TokenError) Error() string {
	var re *oauth2.RetrieveError
	if errors.As(e.Err, &re) {
		msg := "HTTP " + re.Response.Status
		if re.ErrorCode != "" {
			msg += ": " + re.ErrorCode
		}
		if re.ErrorDescription != "" {
			msg += ": " + re.ErrorDescription
		}
		if re.ErrorCode == "" && len(re.Body) > 0 {
			msg += ": " + oneLine(string(re.Body), 200)
		}
		return fmt.Sprintf("oauth2 token from %s: %s", e.URL, msg)
	}
	return fmt.Sprintf("oauth2 token from %s: %s", e.URL, e.Err)
}

// Unwrap lets ErrBlocked (a token URL the guard refused) and timeouts show.
func (e *TokenError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrToken].
func (e *TokenError) Is(target error) bool { return target == ErrToken }

func oneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return s
}

// Token lifetimes: a token without expires_in is kept this long (a 401
// refreshes it sooner), and one is dropped a margin before it expires so
// that it does not expire in flight.
const (
	defaultTokenLife = time.Hour
	maxTokenMargin   = 30 * time.Second
	maxTokens        = 4096
)

// tokenCache holds the OAuth2 access tokens of every endpoint that uses
// oauth2_client_credentials, shared by all of the process's workers: one
// fetch per client at a time (singleflight), reused until shortly before
// it expires, dropped when a receiver refuses it with 401.
//
// x/oauth2's clientcredentials does the fetch (the RFC 6749 §4.4 form
// post, both answer encodings, RetrieveError with the server's error);
// the caching is ours because its ReuseTokenSource reads the wall clock
// (hookd's tests inject one) and cannot be told that a receiver refused a
// token it still thinks valid.
type tokenCache struct {
	http    *http.Client // the guarded client: token URLs are owners' input too
	now     func() time.Time
	timeout time.Duration
	group   singleflight.Group
	mu      sync.Mutex
	tokens  map[string]cachedToken
}

type cachedToken struct {
	value   string
	expires time.Time // drop it from then on (the margin already taken off)
}

func newTokenCache(hc *http.Client, now func() time.Time, timeout time.Duration) *tokenCache {
	return &tokenCache{http: hc, now: now, timeout: timeout, tokens: map[string]cachedToken{}}
}

// tokenKey is the cache key of a's client: a changed secret or scope is
// another client.
func tokenKey(a *endpoint.Auth) string {
	h := sha256.New()
	for _, s := range []string{a.TokenURL, a.ClientID, a.ClientSecret, strings.Join(a.Scopes, " "), a.Audience} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return string(h.Sum(nil))
}

// token returns a's access token, fetched only when none is cached.
func (c *tokenCache) token(ctx context.Context, a *endpoint.Auth) (string, error) {
	key := tokenKey(a)
	c.mu.Lock()
	t, ok := c.tokens[key]
	c.mu.Unlock()
	if ok && c.now().Before(t.expires) {
		return t.value, nil
	}
	ch := c.group.DoChan(key, func() (any, error) { return c.fetch(ctx, key, a) })
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		return "", &TokenError{URL: redact(a.TokenURL), Err: ctx.Err()}
	}
}

// fetch gets a new token and caches it. It runs for every caller waiting
// on the key, so it is bounded by the client's timeout, not by the first
// caller's context.
func (c *tokenCache) fetch(ctx context.Context, key string, a *endpoint.Auth) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	cfg := clientcredentials.Config{
		ClientID: a.ClientID, ClientSecret: a.ClientSecret, TokenURL: a.TokenURL, Scopes: a.Scopes,
		// RFC 6749 §2.3.1: every server must take the credentials in the
		// Authorization header; auto-detection would send a wrong secret twice.
		AuthStyle: oauth2.AuthStyleInHeader,
	}
	if a.Audience != "" {
		cfg.EndpointParams = url.Values{"audience": {a.Audience}}
	}
	start := c.now()
	t, err := cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, c.http))
	if err != nil {
		return "", &TokenError{URL: redact(a.TokenURL), Err: err}
	}
	if !strings.EqualFold(t.Type(), "bearer") {
		return "", &TokenError{URL: redact(a.TokenURL), Err: fmt.Errorf("token_type %q is not Bearer", t.TokenType)}
	}
	// x/oauth2 turns expires_in into a wall-clock Expiry; the lifetime is
	// counted again on c.now, the clock tests inject.
	life := time.Duration(t.ExpiresIn) * time.Second
	if life <= 0 && !t.Expiry.IsZero() {
		life = time.Until(t.Expiry).Round(time.Second)
	}
	if life <= 0 {
		life = defaultTokenLife
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.tokens) >= maxTokens {
		c.prune(start)
	}
	c.tokens[key] = cachedToken{value: t.AccessToken, expires: start.Add(life - min(maxTokenMargin, life/4))}
	return t.AccessToken, nil
}

// prune drops expired tokens, and one more if none had expired, to keep
// the cache bounded. c.mu is held.
func (c *tokenCache) prune(now time.Time) {
	for k, t := range c.tokens {
		if !now.Before(t.expires) {
			delete(c.tokens, k)
		}
	}
	for k := range c.tokens {
		if len(c.tokens) < maxTokens {
			return
		}
		delete(c.tokens, k)
	}
}

// refused drops a's token when it is still the one a receiver refused
// (value), so that many refusals at once cause one fetch.
func (c *tokenCache) refused(a *endpoint.Auth, value string) {
	key := tokenKey(a)
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.tokens[key]; ok && t.value == value {
		delete(c.tokens, key)
	}
}

// redact is raw without userinfo and query (where a careless token URL
// could carry a credential).
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
