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
	keys, err := collect(ctx, db.foreground(), scanAPIKey, `SELECT `+apiKeyCols+` FROM hookd_api_keys WHERE hash IN (`+placeholders(1, len(ls))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("api key lookup: %w", err)
	}
	found := make(map[string]*owner.APIKey, len(keys))
	for _, k := range keys {
		found[string(k.Hash)] = k
	}
	return found, nil
}
