// Package store owns every SQL statement of Rundbrief and the domain services that
// hold the rules around them. Handlers call these services; they never see SQL.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq" // the PostgreSQL driver registers itself as "postgres"
)

// DB is the connection pool every service shares.
type DB struct {
	*sqlx.DB
	// relaxed is a second pool with synchronous_commit off, for high-rate writes whose
	// last few hundred milliseconds may be lost in a database crash without harm: rate
	// counters and the API log. Business data never goes through it.
	relaxed *sqlx.DB
	// generic is the pool of the contact write path (applyOps) and of the
	// unfiltered contact listing: durable like the main pool, but its sessions
	// plan prepared statements once (plan_cache_mode force_generic_plan). By
	// default PostgreSQL plans a prepared statement anew on every execution when
	// its generic plan looks costlier than the custom ones, which for the write
	// path's array parameters and the listing's LIMIT and OFFSET it always does,
	// and the planning cost as much as the execution or more. Only statements
	// whose generic plan is the right one for every value run here: key
	// look-ups and inserts, and listings shaped so that their plans cannot
	// depend on LIMIT and OFFSET (contactPageSQL, firstPageSQL, memberPageSQL).
	generic *sqlx.DB
	// queue is the send queue's pool (claims, leases, outcomes:
	// recipients.go). Its sessions plan prepared statements once and without
	// sequential or bitmap scans (queueSessions), so that its hot statements
	// pay neither a parse nor a plan per call, and no plan made while the
	// recipients table was nearly empty can later walk it: every one of them
	// finds its rows through an index. It also keeps a large send from taking
	// the connections requests need.
	queue *sqlx.DB
	keys  *keyCache
	stmts stmtCache // the send queue's prepared statements (recipients.go)
	// contactStmts are the contact write path's prepared statements.
	contactStmts preparedStmts
	// upserts combines concurrent single upserts into shared transactions
	// (contacts_combine.go).
	upserts combiner[upsertGroupKey, *upsertCall]
	// reads combines concurrent reads of single contacts (contacts_read.go).
	reads combiner[int64, *readCall]
	// outcomes combines concurrent RecordOutcomes calls of a campaign
	// (recipients.go).
	outcomes combiner[outcomeKey, *outcomeCall]
	// listeners holds a token per open listener connection, so that the
	// listeners stay within the ListenerConns the connection bound keeps for
	// them.
	listeners chan struct{}
	// newEvents rings when events committed (ListenNotifications) and wakes
	// the outbox consumers of this process.
	newEvents bell
	// contactStats analyses the contact table in the background when writes
	// outgrew its statistics (contacts_stats.go).
	contactStats contactStats
	// passwords are the costs of new password hashes (PasswordCost).
	passwords PasswordParams
	// dummyHash is checked for sign-ins of unknown addresses: dummyPasswordHash
	// at the default costs, else one made once with the DB's own.
	dummyHash     string
	dummyHashOnce sync.Once
}

// preparedStmts holds the statements of the contact write path and the
// unfiltered contact listing as prepared statements.
// lib/pq prepares nothing by itself: a statement with parameters costs two round
// trips (parse and describe, then bind and execute) and a parse and plan on every
// call. A prepared statement costs one round trip and is planned once per
// connection (database/sql prepares it on each connection on first use there).
type preparedStmts struct {
	mu sync.Mutex
	m  map[string]*sqlx.Stmt
}

// DefaultMaxConns bounds a process's connections when Open is given no
// MaxConns: two serve processes (80) fit PostgreSQL's default max_connections
// of 100 with room for the CLI, tests and superuser_reserved_connections.
const DefaultMaxConns = 40

// ListenerConns is how many connections of the bound a DB keeps for listeners
// outside its pools: one, ListenNotifications, however many things wait for a
// notification.
const ListenerConns = 1

// MinMaxConns is the smallest bound Open accepts: the listener plus nine
// pool connections, which the split (poolSizes) turns into three for the main
// pool, four for the contact write path, one for counters and logs and one for
// the send queue. Below that the dozen background workers of a serve process,
// which each take a main-pool connection while they work, would keep requests
// waiting for most of the time.
const MinMaxConns = ListenerConns + 9

// Option tunes Open.
type Option func(*openOptions)

type openOptions struct {
	maxConns  int
	passwords PasswordParams
}

// MaxConns bounds all connections the DB opens to PostgreSQL together: its
// four pools and its listeners. Under load callers queue for a pooled
// connection (database/sql's MaxOpenConns) instead of the server refusing one
// with "too many clients".
func MaxConns(n int) Option {
	return func(o *openOptions) { o.maxConns = n }
}

// PasswordCost sets the argon2id costs of the password hashes this DB makes
// (accounts, users, password changes). For tests, which create hundreds of
// accounts: the defaults cost about a fifth of a CPU second and 64 MiB per hash.
// Production processes never pass it.
func PasswordCost(p PasswordParams) Option {
	return func(o *openOptions) { o.passwords = p }
}

// poolSizes splits a process's connection bound over the pools after the
// listeners' share. The main pool and the contact write path's generic pool
// carry the requests (contact writes and listings go through generic, nearly
// everything else and all background workers through the main pool) and get
// two fifths each; out of the main pool's share, an eighth of the bound goes
// to the send queue's pool, for the send lanes' claims and outcome writes,
// which used to run on the main pool. The relaxed pool's statements are
// single short writes (rate counters, sessions) and the API log's batched
// COPY, which queue well, and it gets the last fifth. At the default of 40
// that is 12, 16, 7 and 4: the contact benchmarks' 16 concurrent clients each
// find a connection in both request pools, and the default four send lanes'
// statements, a millisecond each between a dozen milliseconds of SMTP, rarely
// wait for one.
func poolSizes(maxConns int) (main, generic, relaxed, queue int) {
	pools := maxConns - ListenerConns
	relaxed = pools / 5
	generic = (pools - relaxed) / 2
	queue = max(1, pools/8)
	return pools - relaxed - generic - queue, generic, relaxed, queue
}

// queueSessions gives the send queue's sessions their run-time settings (see
// DB.queue). Without sequential scans a plan cannot read a campaign's
// recipients from the start for a batch of them; without bitmap scans the
// claim walks the queue index in id order and stops after its batch, where a
// bitmap scan reads every pending row after the cursor and sorts them (a
// plan the planner prefers while the statistics still call the campaign
// tiny: 125 ms per claim of 100 with 15,000 left).
func queueSessions(url string) string {
	url = withParam(url, "plan_cache_mode", "force_generic_plan")
	url = withParam(url, "enable_seqscan", "off")
	return withParam(url, "enable_bitmapscan", "off")
}

// Open connects to PostgreSQL and checks the connection. It opens no more than
// DefaultMaxConns connections unless told otherwise by MaxConns.
func Open(ctx context.Context, url string, opts ...Option) (*DB, error) {
	o := openOptions{maxConns: DefaultMaxConns}
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxConns < MinMaxConns {
		return nil, fmt.Errorf("store: open: a bound of %d connections is too small: at least %d", o.maxConns, MinMaxConns)
	}
	mainConns, genericConns, relaxedConns, queueConns := poolSizes(o.maxConns)
	// No session compiles queries with JIT: it pays off for queries that run
	// for seconds, which this service does not serve, and its cost follows the
	// planner's estimate, which for a generic plan assumes LIMIT $n returns a
	// tenth of the table. The first-page listing (firstPageSQL) was then
	// compiled with inlining and optimisation on every execution: seconds
	// under load, for a query that runs in a third of a millisecond.
	url = withParam(url, "jit", "off")
	db, err := sqlx.Open("postgres", url)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	limitPool(db, mainConns, idleConnTime)
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: ping: %w", err)
	}
	relaxed, err := sqlx.Open("postgres", withParam(url, "synchronous_commit", "off"))
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: open: %w", err)
	}
	limitPool(relaxed, relaxedConns, idleConnTime)
	generic, err := sqlx.Open("postgres", withParam(url, "plan_cache_mode", "force_generic_plan"))
	if err != nil {
		_ = db.Close()
		_ = relaxed.Close()
		return nil, fmt.Errorf("store: open: %w", err)
	}
	limitPool(generic, genericConns, 0) // kept warm (Warm)
	queue, err := sqlx.Open("postgres", queueSessions(url))
	if err != nil {
		_ = db.Close()
		_ = relaxed.Close()
		_ = generic.Close()
		return nil, fmt.Errorf("store: open: %w", err)
	}
	limitPool(queue, queueConns, idleConnTime)
	return &DB{DB: db, relaxed: relaxed, generic: generic, queue: queue, keys: newKeyCache(),
		listeners: make(chan struct{}, ListenerConns), passwords: o.passwords}, nil
}

// idleConnTime is how long a pool keeps an idle connection: the pools but
// the contact write path's give back to PostgreSQL what a burst opened.
const idleConnTime = 5 * time.Minute

// limitPool bounds a pool to n connections and keeps them all when idle (a
// connection the next burst needs costs a fork on the server), closing those
// idle for maxIdle (0: never). The contact write path's pool keeps its
// connections: Warm readies every one of them at start, and a connection
// opened anew costs its first call twenty times a warm one.
func limitPool(pool *sqlx.DB, n int, maxIdle time.Duration) {
	pool.SetMaxOpenConns(n)
	pool.SetMaxIdleConns(n)
	pool.SetConnMaxIdleTime(maxIdle)
}

// Close closes the pools and the prepared statements.
func (db *DB) Close() error {
	db.contactStats.close()
	db.contactStmts.mu.Lock()
	var errs []error
	for _, s := range db.contactStmts.m {
		errs = append(errs, s.Close())
	}
	db.contactStmts.m = nil
	db.contactStmts.mu.Unlock()
	db.stmts.mu.Lock()
	for _, s := range db.stmts.m {
		errs = append(errs, s.Close())
	}
	db.stmts.m = nil
	db.stmts.mu.Unlock()
	return errors.Join(append(errs, db.queue.Close(), db.generic.Close(), db.relaxed.Close(), db.DB.Close())...)
}

// prepare prepares the queries on pool (db.DB or db.generic) that are not
// prepared yet; a query is prepared on one pool only, the one whose
// transactions run it. Only
// fixed query texts belong here (the cache never shrinks), and only statements
// whose plan does not depend on the parameters' values: after five executions
// PostgreSQL may keep one generic plan for all of them. Call it while holding
// no connection: preparing takes one from the pool, and callers that each hold
// a transaction's connection while waiting for another could exhaust the pool.
func (db *DB) prepare(ctx context.Context, pool *sqlx.DB, queries ...string) error {
	for _, q := range queries {
		if db.cachedStmt(q) != nil {
			continue
		}
		s, err := pool.PreparexContext(ctx, q)
		if err != nil {
			return fmt.Errorf("store: prepare: %w", err)
		}
		db.contactStmts.mu.Lock()
		if db.contactStmts.m == nil {
			db.contactStmts.m = map[string]*sqlx.Stmt{}
		}
		if db.contactStmts.m[q] == nil {
			db.contactStmts.m[q], s = s, nil
		}
		db.contactStmts.mu.Unlock()
		if s != nil {
			_ = s.Close() // another call prepared it meanwhile
		}
	}
	return nil
}

// cachedStmt is the prepared statement of query, nil when it was not prepared.
func (db *DB) cachedStmt(query string) *sqlx.Stmt {
	db.contactStmts.mu.Lock()
	defer db.contactStmts.mu.Unlock()
	return db.contactStmts.m[query]
}

// stmtOn is query's prepared statement (DB.prepare), run on tx's connection
// when tx is not nil and on any connection of its pool otherwise. The
// optimistic write paths run their statements outside a transaction block;
// the warm-up (warm.go) runs them on each connection it warms, in a
// transaction it rolls back.
func (db *DB) stmtOn(ctx context.Context, tx *sqlx.Tx, query string) *sqlx.Stmt {
	s := db.cachedStmt(query)
	if tx != nil {
		return tx.StmtxContext(ctx, s)
	}
	return s
}

// querier runs statements: a plain *sqlx.Tx or a preparedTx.
type querier interface {
	sqlx.ExtContext
	GetContext(ctx context.Context, dest any, query string, args ...any) error
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
}

// preparedTx is a transaction that runs the statements DB.prepare prepared as
// prepared statements of its connection (database/sql prepares each on a
// connection at its first use there, within the transaction's connection); any
// other statement runs as usual. The contact write path runs on it: the same
// dozen fixed statements on every call.
type preparedTx struct {
	*sqlx.Tx
	db *DB
}

// stmt is query prepared on the transaction's connection, nil when the query
// is not one DB.prepare prepared.
func (t preparedTx) stmt(ctx context.Context, query string) *sqlx.Stmt {
	s := t.db.cachedStmt(query)
	if s == nil {
		return nil
	}
	return t.Tx.StmtxContext(ctx, s)
}

// QueryContext runs a query, prepared when it can.
func (t preparedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}

// QueryxContext runs a query, prepared when it can.
func (t preparedTx) QueryxContext(ctx context.Context, query string, args ...any) (*sqlx.Rows, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryxContext(ctx, args...)
	}
	return t.Tx.QueryxContext(ctx, query, args...)
}

// QueryRowxContext runs a query for one row, prepared when it can.
func (t preparedTx) QueryRowxContext(ctx context.Context, query string, args ...any) *sqlx.Row {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryRowxContext(ctx, args...)
	}
	return t.Tx.QueryRowxContext(ctx, query, args...)
}

// ExecContext runs a statement, prepared when it can.
func (t preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

// GetContext scans one row of a query into dest.
func (t preparedTx) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.GetContext(ctx, t, dest, query, args...)
}

// SelectContext scans the rows of a query into dest.
func (t preparedTx) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.SelectContext(ctx, t, dest, query, args...)
}

// preparedDB runs queries DB.prepare prepared as prepared statements, any
// other as usual.
type preparedDB struct{ db *DB }

// QueryContext runs a query, prepared when it can.
func (p preparedDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := p.db.cachedStmt(query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return p.db.QueryContext(ctx, query, args...)
}

// QueryxContext runs a query, prepared when it can.
func (p preparedDB) QueryxContext(ctx context.Context, query string, args ...any) (*sqlx.Rows, error) {
	if s := p.db.cachedStmt(query); s != nil {
		return s.QueryxContext(ctx, args...)
	}
	return p.db.QueryxContext(ctx, query, args...)
}

// QueryRowxContext runs a query for one row, prepared when it can.
func (p preparedDB) QueryRowxContext(ctx context.Context, query string, args ...any) *sqlx.Row {
	if s := p.db.cachedStmt(query); s != nil {
		return s.QueryRowxContext(ctx, args...)
	}
	return p.db.QueryRowxContext(ctx, query, args...)
}

// plainTx is the transaction underneath q, for functions that take a *sqlx.Tx.
func plainTx(q querier) *sqlx.Tx {
	if t, ok := q.(preparedTx); ok {
		return t.Tx
	}
	return q.(*sqlx.Tx)
}

// withParam adds a run-time parameter to a connection URL (lib/pq sends unknown
// URL parameters to the server as settings).
func withParam(raw, key, value string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return raw + " " + key + "=" + value // key=value connection string
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// withTxOn is WithTx on one of the pools.
func withTxOn(ctx context.Context, pool *sqlx.DB, fn func(tx *sqlx.Tx) error) error {
	tx, err := pool.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// WithTx runs fn inside one transaction: committed when fn returns nil, rolled back
// otherwise (and on panic).
func (db *DB) WithTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	return withTxOn(ctx, db.DB, fn)
}

// notFound turns sql.ErrNoRows into ErrNotFound and wraps everything else.
func notFound(op string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// ScrapeCountCap bounds the counts that metrics read at every scrape (send
// queue, webhook backlog, outbox lag): each walks a partial index and stops
// here, so a scrape costs the same at a million queued rows as at the cap.
// A gauge at the cap reads "at least this many".
const ScrapeCountCap = 100_000

// PoolStats is one connection pool's use, as database/sql reports it.
type PoolStats struct {
	MaxOpen      int
	Open         int
	InUse        int
	Idle         int
	WaitCount    int64
	WaitDuration time.Duration
}

// PoolStats reports the use of the process's four pools by name: "main"
// (everything by default), "relaxed" (rate counters and the API log),
// "generic" (the contact write path and listing) and "queue" (the send
// queue).
func (db *DB) PoolStats() map[string]PoolStats {
	out := make(map[string]PoolStats, 4)
	for name, pool := range map[string]*sqlx.DB{"main": db.DB, "relaxed": db.relaxed, "generic": db.generic, "queue": db.queue} {
		s := pool.Stats()
		out[name] = PoolStats{MaxOpen: s.MaxOpenConnections, Open: s.OpenConnections, InUse: s.InUse, Idle: s.Idle,
			WaitCount: s.WaitCount, WaitDuration: s.WaitDuration}
	}
	return out
}
