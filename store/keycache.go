package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
)

// KeyCacheTTL bounds how long a key, its account and plan are served from memory:
// even without NOTIFY a revoked key is refused everywhere within this time.
const KeyCacheTTL = time.Second

// keysChannel is the NOTIFY channel on which key, account and plan changes are announced.
const keysChannel = "rundbrief_keys"

// keyCache is a read-through cache of Authenticate results. PostgreSQL stays the
// source of truth; the cache only saves a query per request.
type keyCache struct {
	mu      sync.Mutex
	gen     uint64 // bumped by every flush, so a lookup racing a flush is not cached
	entries map[[32]byte]cachedPrincipal
}

type cachedPrincipal struct {
	p       Principal
	expires time.Time
}

func newKeyCache() *keyCache {
	return &keyCache{entries: make(map[[32]byte]cachedPrincipal)}
}

func (c *keyCache) get(hash []byte) (Principal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[[32]byte(hash)]
	if !ok || time.Now().After(e.expires) {
		return Principal{}, false
	}
	return e.p, true
}

func (c *keyCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *keyCache) put(hash []byte, p Principal, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.entries) > 100_000 {
		clear(c.entries)
	}
	c.entries[[32]byte(hash)] = cachedPrincipal{p: p, expires: time.Now().Add(KeyCacheTTL)}
}

func (c *keyCache) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
}

func notifyKeysChanged(ctx context.Context, tx *sqlx.Tx) error {
	if _, err := tx.ExecContext(ctx, `SELECT pg_notify('`+keysChannel+`', '')`); err != nil {
		return fmt.Errorf("store: notify key change: %w", err)
	}
	return nil
}
