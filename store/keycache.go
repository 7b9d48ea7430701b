package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
)

// KeyCacheTTL bounds how long a key, its account and plan are served from memory.
// A key change waits for every listening process to acknowledge its flush, but
// never longer than this: an entry lives at most KeyCacheTTL from the moment its
// query began, so after that time no process can hold one read before the change.
const KeyCacheTTL = time.Second

// keysChannel is the NOTIFY channel on which key, account and plan changes are
// announced; the payload is the change's key generation.
const keysChannel = "rundbrief_keys"

// keyListenerPrefix starts the application_name of every notification listener's
// connection: a key change finds the listeners it must wait for in pg_stat_activity,
// so a crashed process is never waited for.
const keyListenerPrefix = "rundbrief-keys-"

// keyCache is a read-through cache of Authenticate results. PostgreSQL stays the
// source of truth; the cache only saves a query per request. It serves entries
// only while this DB's notification listener is connected and has acknowledged
// the key generation: a process that cannot hear about key changes must not
// answer from memory.
type keyCache struct {
	mu      sync.Mutex
	gen     uint64 // bumped by every flush, so a lookup racing a flush is not cached
	enabled bool   // the listener is connected and has acknowledged
	lost    uint64 // bumped whenever the listener loses its connection
	entries map[[32]byte]cachedPrincipal
	// flights are the look-ups of keys missing from the cache now running,
	// so that the requests that find a key expired at once (16 at a time in
	// the contact benchmarks, every second) wait for one query instead of
	// each running its own: those queries were a tenth of PostgreSQL's CPU
	// per GET of a contact.
	flights map[[32]byte]*keyFlight
}

// keyFlight is one running look-up of a key; done closes when p and err are set.
type keyFlight struct {
	done  chan struct{}
	gen   uint64    // the cache generation when the look-up began
	start time.Time // when it began
	p     Principal
	err   error
}

type cachedPrincipal struct {
	p       Principal
	expires time.Time
}

func newKeyCache() *keyCache {
	return &keyCache{entries: make(map[[32]byte]cachedPrincipal), flights: make(map[[32]byte]*keyFlight)}
}

// join returns the running look-up of hash to wait for (lead false), or
// starts one that the caller runs and must land (lead true), with the
// generation its query must be cached under. While the cache does not serve
// (no listener) every caller looks up on its own (f nil): a result shared
// from a query that began before the caller came could then predate a key
// change of another process that nobody here was told about.
func (c *keyCache) join(hash []byte) (f *keyFlight, lead bool, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.enabled {
		return nil, true, c.gen
	}
	if f := c.flights[[32]byte(hash)]; f != nil {
		return f, false, c.gen
	}
	f = &keyFlight{done: make(chan struct{}), gen: c.gen, start: time.Now()}
	c.flights[[32]byte(hash)] = f
	return f, true, c.gen
}

// land ends a look-up started by join and wakes its waiters.
func (c *keyCache) land(hash []byte, f *keyFlight, p Principal, err error) {
	c.mu.Lock()
	if c.flights[[32]byte(hash)] == f {
		delete(c.flights, [32]byte(hash))
	}
	c.mu.Unlock()
	f.p, f.err = p, err
	close(f.done)
}

// shared is the result of a look-up waited for, if the caller may take it:
// only a key found, only if no flush came between the look-up's start and
// now, and only within KeyCacheTTL of its start, as a cache entry. A flush is
// how a key change reaches this process (changeKeys returns only after it,
// or KeyCacheTTL after its commit): a waiter that came after a change must
// not get a principal read before it.
func (c *keyCache) shared(f *keyFlight) (Principal, bool) {
	if f.err != nil || time.Since(f.start) >= KeyCacheTTL {
		return Principal{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != f.gen || !c.enabled {
		return Principal{}, false
	}
	return f.p, true
}

func (c *keyCache) get(hash []byte) (Principal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.enabled {
		return Principal{}, false
	}
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

// put caches p, read by a query that began at start, unless the cache was
// flushed since gen was taken. The entry expires KeyCacheTTL after start (not
// after the query returned), which is what bounds a key change's wait.
func (c *keyCache) put(hash []byte, p Principal, gen uint64, start time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || !c.enabled {
		return
	}
	if len(c.entries) > 100_000 {
		clear(c.entries)
	}
	c.entries[[32]byte(hash)] = cachedPrincipal{p: p, expires: start.Add(KeyCacheTTL)}
}

func (c *keyCache) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
}

// disable empties the cache and stops it serving, because the listener lost
// its connection (or stopped) and may miss key changes.
func (c *keyCache) disable() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.lost++
	clear(c.entries)
	c.enabled = false
}

// losses counts the listener's lost connections; enable compares it.
func (c *keyCache) losses() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

// enable lets the cache serve again, unless the listener lost its connection
// after losses returned since: an acknowledgement that raced a disconnect must
// not switch the cache on while nobody listens.
func (c *keyCache) enable(since uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lost == since {
		c.enabled = true
	}
}

const (
	bumpKeyGeneration   = `UPDATE key_generation SET gen = gen + 1 RETURNING gen`
	selectKeyGeneration = `SELECT gen FROM key_generation`
	ackKeyGeneration    = `INSERT INTO key_cache_acks (listener, gen) VALUES ($1, $2)
ON CONFLICT (listener) DO UPDATE SET gen = GREATEST(key_cache_acks.gen, EXCLUDED.gen), updated_at = now()`
	deleteKeyAck = `DELETE FROM key_cache_acks WHERE listener = $1`
	// Acknowledgements of listeners that are no longer connected (crashed
	// processes) are never read again; the next listener to start drops them.
	deleteGoneKeyAcks = `DELETE FROM key_cache_acks k WHERE NOT EXISTS (
  SELECT 1 FROM pg_stat_activity a WHERE a.datname = current_database() AND a.application_name = k.listener)`
	countUnacknowledged = `SELECT count(*) FROM pg_stat_activity a
WHERE a.datname = current_database() AND starts_with(a.application_name, '` + keyListenerPrefix + `')
  AND NOT EXISTS (SELECT 1 FROM key_cache_acks k WHERE k.listener = a.application_name AND k.gen >= $1)`
)

// changeKeys runs fn, a change that can make cached principals wrong (a key
// revoked, renewed or restricted, an account's plan changed), in a transaction
// that also bumps the key generation and announces it. It returns once every
// connected listener of every process has flushed its cache for the change, or
// KeyCacheTTL after the commit at most, so that no process accepts what the
// change took away once it returns.
func (db *DB) changeKeys(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	var gen int64
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		// Last in the transaction: the row lock orders the changes by generation
		// and is held only until the commit.
		if err := tx.GetContext(ctx, &gen, bumpKeyGeneration); err != nil {
			return fmt.Errorf("store: key generation: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, keysChannel, strconv.FormatInt(gen, 10)); err != nil {
			return fmt.Errorf("store: notify key change: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	committed := time.Now()
	db.keys.flush()
	return db.awaitKeyAcks(ctx, gen, committed.Add(KeyCacheTTL))
}

// awaitKeyAcks waits until every connected listener has acknowledged gen, or
// until deadline. Every cache entry that a process read before the change
// expires by deadline, so if the acknowledgements cannot be read the deadline
// alone keeps the promise, only more slowly.
func (db *DB) awaitKeyAcks(ctx context.Context, gen int64, deadline time.Time) error {
	pause := time.Millisecond
	for {
		var pending int
		if err := db.GetContext(ctx, &pending, countUnacknowledged, gen); err == nil && pending == 0 {
			return nil
		}
		wait := min(pause, time.Until(deadline))
		if wait <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("store: key change saved, but not yet seen by every process: %w", ctx.Err())
		case <-time.After(wait):
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// newKeyListenerName is the application_name of one listener connection.
func newKeyListenerName() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return keyListenerPrefix + hex.EncodeToString(b)
}

// ackKeys flushes the cache and records that this listener has seen every key
// change up to gen; the cache serves again only once that is recorded.
func (db *DB) ackKeys(ctx context.Context, listener string, gen int64) error {
	since := db.keys.losses()
	db.keys.flush()
	if _, err := db.ExecContext(ctx, ackKeyGeneration, listener, gen); err != nil {
		return fmt.Errorf("store: acknowledge key change: %w", err)
	}
	db.keys.enable(since)
	return nil
}

// resyncKeys acknowledges the generation committed now, after a (re)connect of
// the listener, when notifications may have been missed. The generation is read
// before the flush: every change up to it committed before the flush, so no
// query after the flush can see what it took away; every later change commits
// while the listener listens and is announced to it.
func (db *DB) resyncKeys(ctx context.Context, listener string) error {
	var gen int64
	if err := db.GetContext(ctx, &gen, selectKeyGeneration); err != nil {
		return fmt.Errorf("store: read key generation: %w", err)
	}
	return db.ackKeys(ctx, listener, gen)
}
