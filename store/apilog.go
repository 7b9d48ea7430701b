package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
)

// APILogRetention is how long API log rows are kept.
const APILogRetention = 90 * 24 * time.Hour

// APILogEntry is one authenticated API request.
type APILogEntry struct {
	ID         int64     `db:"id"`
	AccountID  int64     `db:"account_id"`
	KeyID      *int64    `db:"key_id"`
	RequestID  string    `db:"request_id"`
	Method     string    `db:"method"`
	Path       string    `db:"path"` // with query; an api_key parameter is masked
	Status     int       `db:"status"`
	IP         string    `db:"ip"`
	Origin     string    `db:"origin"`
	UserAgent  string    `db:"user_agent"`
	DurationUS int64     `db:"duration_us"`
	CreatedAt  time.Time `db:"created_at"`
}

// APILogFilter narrows GET /logs/api; zero fields do not filter.
type APILogFilter struct {
	KeyID      int64
	Status     int
	Method     string
	PathPrefix string
}

// insertAPILog appends a batch with COPY: one round trip for hundreds of rows.
func (db *DB) insertAPILog(ctx context.Context, entries []APILogEntry) error {
	tx, err := db.relaxed.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: api log: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	stmt, err := tx.PrepareContext(ctx, pq.CopyIn("api_log", "account_id", "key_id", "request_id", "method", "path",
		"status", "ip", "origin", "user_agent", "duration_us", "created_at"))
	if err != nil {
		return fmt.Errorf("store: api log: %w", err)
	}
	for _, e := range entries {
		if _, err := stmt.ExecContext(ctx, e.AccountID, e.KeyID, e.RequestID, e.Method, e.Path, e.Status, e.IP,
			e.Origin, e.UserAgent, e.DurationUS, e.CreatedAt); err != nil {
			_ = stmt.Close()
			return fmt.Errorf("store: api log: %w", err)
		}
	}
	if _, err := stmt.ExecContext(ctx); err != nil {
		_ = stmt.Close()
		return fmt.Errorf("store: api log: %w", err)
	}
	if err := stmt.Close(); err != nil {
		return fmt.Errorf("store: api log: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: api log: %w", err)
	}
	return nil
}

// APILogMaxCount is how many entries GET /v1/logs/api and the portal's API
// log count for their total: an exact count of a busy key's 90 days would cost
// every page load more than the page itself.
const APILogMaxCount = 10_000

// APILog lists an account's API log, newest first. Its total counts at most
// maxCount entries; capped reports that there are more.
func (db *DB) APILog(ctx context.Context, accountID int64, f APILogFilter, p Page, maxCount int) (entries []APILogEntry, total int, capped bool, err error) {
	where := []string{"account_id = $1"}
	args := []any{accountID}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.KeyID != 0 {
		add("key_id = $%d", f.KeyID)
	}
	if f.Status != 0 {
		add("status = $%d", f.Status)
	}
	if f.Method != "" {
		add("method = $%d", strings.ToUpper(f.Method))
	}
	if f.PathPrefix != "" {
		add("starts_with(path, $%d)", f.PathPrefix)
	}
	cond := strings.Join(where, " AND ")
	if total, capped, err = countUpTo(ctx, db, "api_log", cond, args, maxCount); err != nil {
		return nil, 0, false, fmt.Errorf("store: api log: %w", err)
	}
	args = append(args, p.PerPage, p.Offset())
	q := fmt.Sprintf(`SELECT id, account_id, key_id, request_id, method, path, status, ip, origin, user_agent, duration_us, created_at
FROM api_log WHERE %s ORDER BY id DESC LIMIT $%d OFFSET $%d`, cond, len(args)-1, len(args))
	if err := db.SelectContext(ctx, &entries, q, args...); err != nil {
		return nil, 0, false, fmt.Errorf("store: api log: %w", err)
	}
	return entries, total, capped, nil
}

const selectAPILogEntry = `SELECT id, account_id, key_id, request_id, method, path, status, ip, origin, user_agent, duration_us, created_at
FROM api_log WHERE account_id = $1 AND id = $2`

// APILogEntry returns one API log row.
func (db *DB) APILogEntry(ctx context.Context, accountID, id int64) (APILogEntry, error) {
	var e APILogEntry
	if err := db.GetContext(ctx, &e, selectAPILogEntry, accountID, id); err != nil {
		return APILogEntry{}, notFound("api log entry", err)
	}
	return e, nil
}

// APILogWriter buffers API log rows and writes them in batches, so that logging
// never adds a database round trip to a request.
type APILogWriter struct {
	db      *DB
	log     *slog.Logger
	ch      chan APILogEntry
	dropped atomic.Int64
}

// NewAPILogWriter returns a writer; Run must be running for rows to reach the database.
func NewAPILogWriter(db *DB, log *slog.Logger) *APILogWriter {
	return &APILogWriter{db: db, log: log, ch: make(chan APILogEntry, 20_000)}
}

// Add queues a row without blocking. When the buffer is full (the database is far
// behind) the row is dropped and counted rather than slowing requests down.
func (w *APILogWriter) Add(e APILogEntry) {
	select {
	case w.ch <- e:
	default:
		w.dropped.Add(1)
	}
}

// Run writes queued rows every 200 ms (or per 1000 rows) until ctx ends, then
// flushes what is left.
func (w *APILogWriter) Run(ctx context.Context) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	batch := make([]APILogEntry, 0, 1000)
	flush := func(ctx context.Context) {
		if len(batch) == 0 {
			return
		}
		if err := w.db.insertAPILog(ctx, batch); err != nil {
			w.log.Error("api log write failed", "rows", len(batch), "err", err)
		}
		w.touchKeys(ctx, batch)
		batch = batch[:0]
		if n := w.dropped.Swap(0); n > 0 {
			w.log.Warn("api log rows dropped: buffer full", "rows", n)
		}
	}
	for {
		select {
		case e := <-w.ch:
			batch = append(batch, e)
			if len(batch) == cap(batch) {
				flush(ctx)
			}
		case <-tick.C:
			flush(ctx)
		case <-ctx.Done():
			drain, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for {
				select {
				case e := <-w.ch:
					batch = append(batch, e)
					if len(batch) == cap(batch) {
						flush(drain)
					}
				default:
					flush(drain)
					return nil
				}
			}
		}
	}
}

// Flush writes everything queued so far; tests use it to read their own log rows.
func (w *APILogWriter) Flush(ctx context.Context) error {
	var batch []APILogEntry
	for {
		select {
		case e := <-w.ch:
			batch = append(batch, e)
		default:
			if len(batch) == 0 {
				return nil
			}
			w.touchKeys(ctx, batch)
			return w.db.insertAPILog(ctx, batch)
		}
	}
}

func (w *APILogWriter) touchKeys(ctx context.Context, batch []APILogEntry) {
	last := map[int64]APILogEntry{}
	for _, e := range batch {
		if e.KeyID != nil && e.CreatedAt.After(last[*e.KeyID].CreatedAt) {
			last[*e.KeyID] = e
		}
	}
	var accounts, keys []int64
	var used []time.Time
	for id, e := range last {
		accounts, keys, used = append(accounts, e.AccountID), append(keys, id), append(used, e.CreatedAt)
	}
	if err := w.db.TouchKeys(ctx, accounts, keys, used); err != nil {
		w.log.Error("api key last-used update failed", "err", err)
	}
}
