// Package store owns every SQL statement of Rundbrief and the domain services that
// hold the rules around them. Handlers call these services; they never see SQL.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
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
	keys    *keyCache
	stmts   stmtCache
}

// Open connects to PostgreSQL and checks the connection.
func Open(ctx context.Context, url string) (*DB, error) {
	db, err := sqlx.Open("postgres", url)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	db.SetMaxOpenConns(40)
	db.SetMaxIdleConns(40)
	db.SetConnMaxIdleTime(5 * time.Minute)
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
	relaxed.SetMaxOpenConns(20)
	relaxed.SetMaxIdleConns(20)
	return &DB{DB: db, relaxed: relaxed, keys: newKeyCache()}, nil
}

// Close closes both pools.
func (db *DB) Close() error {
	return errors.Join(db.relaxed.Close(), db.DB.Close())
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

// WithTx runs fn inside one transaction: committed when fn returns nil, rolled back
// otherwise (and on panic).
func (db *DB) WithTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	tx, err := db.BeginTxx(ctx, nil)
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

// notFound turns sql.ErrNoRows into ErrNotFound and wraps everything else.
func notFound(op string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return fmt.Errorf("store: %s: %w", op, err)
}
