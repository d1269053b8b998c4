package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/group"
	"github.com/hookd/hookd/internal/owner"
)

// Speeds up: looking an API key up (apikey.go, APIKeyByHash). The plain
// path: one query per request. Here: outside a transaction on an engine
// whose queries are round trips, concurrent lookups share one query; and
// APIKeyByHashCached answers from the keys this process read before, for
// ops that confirm the key in their own transaction.

// Every API request looks its key up, and once single publishes share
// their commits (internal/delivery's group commit) that lookup is the one
// round trip each request still makes alone: under 32 concurrent
// publishers it was more of hookd's CPU than the publish. So lookups made
// outside a transaction share one query with the lookups in flight beside
// them (internal/group): a lone request still queries at once, and each
// query starts after every lookup in it was asked, so a key revoked before
// a request arrived is seen revoked, as with a query of its own.
//
// PostgreSQL only: on SQLite a lookup is a call into the embedded engine,
// not a round trip, and sharing measured no gain (publish-only, 4 pairs:
// 804–2,621 against 1,259–2,740/s).

// keyLookupMax bounds the keys one shared lookup reads.
const keyLookupMax = 100

// keyLookupTimeout bounds a shared lookup: it runs on behalf of several
// requests, so no one request's cancellation may cut it short.
const keyLookupTimeout = 10 * time.Second

type keyLookup struct {
	hash []byte
	key  *owner.APIKey
	err  error
}

// keyLookups is the DB's shared API key lookup, made on first use.
type keyLookups struct {
	once sync.Once
	r    *group.Runner[*keyLookup]
}

func (db *DB) sharedAPIKeyByHash(ctx context.Context, hash []byte) (*owner.APIKey, error) {
	db.keys.once.Do(func() {
		db.keys.r = &group.Runner[*keyLookup]{Max: keyLookupMax, Run: db.lookUpKeys}
	})
	l := &keyLookup{hash: hash, err: fmt.Errorf("api key lookup: not run")}
	db.keys.r.Do(ctx, l)
	return l.key, l.err
}

// lookUpKeys reads the keys of ls in one query and answers each.
func (db *DB) lookUpKeys(ctx context.Context, ls []*keyLookup) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keyLookupTimeout)
	defer cancel()
	found, err := db.keysByHash(ctx, ls)
	for _, l := range ls {
		switch k, ok := found[string(l.hash)]; {
		case err != nil:
			l.err = err
		case !ok:
			l.err = apperr.New(apperr.Unauthorized, "API key not recognised")
		default:
			own := *k // each request its own copy
			l.key, l.err = &own, nil
		}
	}
}

func (db *DB) keysByHash(ctx context.Context, ls []*keyLookup) (map[string]*owner.APIKey, error) {
	args := make([]any, len(ls))
	for i, l := range ls {
		args[i] = l.hash
	}
	keys, err := collect(ctx, db.d.foreground(), scanAPIKey, `SELECT `+apiKeyCols+` FROM hookd_api_keys WHERE hash IN (`+placeholders(1, len(ls))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("api key lookup: %w", err)
	}
	found := make(map[string]*owner.APIKey, len(keys))
	for _, k := range keys {
		found[string(k.Hash)] = k
	}
	return found, nil
}

// The key cache. Even shared, a key lookup is a round trip of its own
// ahead of every request, and under load it is one more wait for a busy
// PostgreSQL backend. A single publish does not need it: its group commit
// confirms each caller's key in its first statement (ReadPublishRules),
// after the request arrived, so a key revoked before then is refused there
// as surely as by a lookup. So the keys this process has looked up are
// remembered for the ops that confirm their key that way (ops.Op
// ConfirmsKey); every other request still looks its key up. A key's owner
// and role never change; only its revocation does, and a revoked key is
// not remembered.

// keyCacheMax bounds the keys remembered: past it the cache starts over.
const keyCacheMax = 10_000

// keyCache is the DB's key cache, by hash.
type keyCache struct {
	mu   sync.Mutex
	keys map[string]owner.APIKey
}

// APIKeyByHashCached is APIKeyByHash, answered from the keys this process
// looked up before when it can: for an op that confirms the key in its own
// transaction (above). remembered says the answer came from the cache
// (the key was not read now).
func (db *DB) APIKeyByHashCached(ctx context.Context, hash []byte) (k *owner.APIKey, remembered bool, err error) {
	db.keyCache.mu.Lock()
	got, ok := db.keyCache.keys[string(hash)]
	db.keyCache.mu.Unlock()
	if ok {
		return &got, true, nil
	}
	k, err = db.Q().APIKeyByHash(ctx, hash)
	if err != nil || k.RevokedAt != nil {
		return k, false, err
	}
	db.keyCache.remember(hash, *k)
	return k, false, nil
}

// remember keeps k, starting over past keyCacheMax keys.
func (c *keyCache) remember(hash []byte, k owner.APIKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil || len(c.keys) >= keyCacheMax {
		c.keys = make(map[string]owner.APIKey)
	}
	c.keys[string(hash)] = k
}

// forgetKeys empties the key cache (a key was revoked here: its next
// request is refused at once rather than in its transaction).
func (db *DB) forgetKeys() {
	db.keyCache.mu.Lock()
	db.keyCache.keys = nil
	db.keyCache.mu.Unlock()
}
