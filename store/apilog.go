package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

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
// One row the database refuses fails the whole batch (APILogWriter.write then
// writes the rows one by one).
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

const insertAPILogRow = `INSERT INTO api_log (account_id, key_id, request_id, method, path, status, ip, origin, user_agent, duration_us, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`

// insertAPILogRow appends one row, for a batch that COPY refused.
func (db *DB) insertAPILogRow(ctx context.Context, e APILogEntry) error {
	if _, err := db.relaxed.ExecContext(ctx, insertAPILogRow, e.AccountID, e.KeyID, e.RequestID, e.Method, e.Path, e.Status,
		e.IP, e.Origin, e.UserAgent, e.DurationUS, e.CreatedAt); err != nil {
		return fmt.Errorf("store: api log: %w", err)
	}
	return nil
}

// Byte limits of the logged strings. A request carries what its client wants
// (a path of kilobytes, any header); the log keeps enough to recognise it and
// a queued row stays small.
const (
	apiLogMaxPath   = 2048 // path with query
	apiLogMaxHeader = 300  // user agent, origin
	apiLogMaxShort  = 64   // method, request id, IP
)

// storable is e with every string valid UTF-8 without NUL and within its
// limit: PostgreSQL refuses both in a text column, and one such row would fail
// the COPY of its whole batch.
func (e APILogEntry) storable() APILogEntry {
	e.RequestID = logText(e.RequestID, apiLogMaxShort)
	e.Method = logText(e.Method, apiLogMaxShort)
	e.Path = logText(e.Path, apiLogMaxPath)
	e.IP = logText(e.IP, apiLogMaxShort)
	e.Origin = logText(e.Origin, apiLogMaxHeader)
	e.UserAgent = logText(e.UserAgent, apiLogMaxHeader)
	return e
}

// logText is s with invalid UTF-8 and NUL bytes replaced by U+FFFD (so that the
// log still shows that something odd was sent), cut to at most limit bytes on
// a character boundary.
func logText(s string, limit int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
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

// Sizes of the API log writer's queue, of the rows it sets aside beside it,
// and of its batches.
const (
	apiLogQueue = 20_000
	apiLogSpill = 20_000
	apiLogBatch = 1000
)

// APILogLossCounter counts API log rows that could not be stored (the metrics
// implement it).
type APILogLossCounter interface {
	CountAPILogLost(n int)
}

// APILogWriter buffers API log rows and writes them in batches, so that logging
// never adds a database round trip to a request. It loses no row silently: a
// full queue holds requests back (Add waits), a batch the database cannot take
// now is retried, and only a row the database refuses for its content is
// dropped, logged and counted.
type APILogWriter struct {
	db     *DB
	log    *slog.Logger
	ch     chan APILogEntry
	losses APILogLossCounter // nil: losses are only logged
	// failing is set while writes fail for want of the database, so that an
	// outage is logged when it begins and ends, not every 200 ms.
	failing atomic.Bool
	// spilled holds the rows of requests that ended while waiting for room
	// in the queue (the client gave up), up to apiLogSpill: memory stays
	// bounded however long the database is away.
	mu      sync.Mutex
	spilled []APILogEntry
}

// NewAPILogWriter returns a writer; Run must be running for rows to reach the database.
func NewAPILogWriter(db *DB, log *slog.Logger) *APILogWriter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &APILogWriter{db: db, log: log, ch: make(chan APILogEntry, apiLogQueue)}
}

// CountLosses makes the writer report the rows it had to drop to c. Call it
// before Run starts.
func (w *APILogWriter) CountLosses(c APILogLossCounter) *APILogWriter {
	w.losses = c
	return w
}

// Add queues a row. When the queue is full (the database is far behind) it
// waits for room, which slows the logged requests down to what the database
// takes; if the request ends meanwhile (ctx), the row is set aside and written
// with the next batch. Only when apiLogSpill rows are set aside as well (the
// database has been away for long) is a row lost, and counted.
func (w *APILogWriter) Add(ctx context.Context, e APILogEntry) {
	e = e.storable()
	select {
	case w.ch <- e:
		return
	default:
	}
	select {
	case w.ch <- e:
	case <-ctx.Done():
		w.mu.Lock()
		full := len(w.spilled) >= apiLogSpill
		if !full {
			w.spilled = append(w.spilled, e)
		}
		w.mu.Unlock()
		if full {
			w.countLost(1)
			w.log.Error("api log row lost: queue full and the database unavailable", "account_id", e.AccountID, "request_id", e.RequestID)
		}
	}
}

// Run writes queued rows every 200 ms (or per 1000 rows) until ctx ends, then
// flushes what is left.
func (w *APILogWriter) Run(ctx context.Context) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	batch := make([]APILogEntry, 0, apiLogBatch)
	for {
		// A full batch that could not be written stops taking rows until the
		// next tick retries it: the queue fills and Add holds requests back.
		in := w.ch
		if len(batch) >= apiLogBatch {
			in = nil
		}
		select {
		case e := <-in:
			batch = append(batch, e)
			if len(batch) == apiLogBatch {
				batch, _ = w.write(ctx, batch)
			}
		case <-tick.C:
			batch, _ = w.write(ctx, w.take(batch, 0))
		case <-ctx.Done():
			w.drain(batch)
			return nil
		}
	}
}

// drain writes what is left at shutdown, retrying for up to 5 seconds. Rows
// still unwritten then are lost: counted and logged.
func (w *APILogWriter) drain(batch []APILogEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	retry := time.NewTicker(200 * time.Millisecond)
	defer retry.Stop()
	for {
		batch = w.take(batch, apiLogBatch)
		if len(batch) == 0 {
			return
		}
		var err error
		if batch, err = w.write(ctx, batch); err == nil {
			continue
		}
		select {
		case <-retry.C:
		case <-ctx.Done():
			n := len(w.take(batch, apiLogQueue+len(batch)))
			w.countLost(n)
			w.log.Error("api log rows lost at shutdown: database unavailable", "rows", n, "err", err)
			return
		}
	}
}

// Flush writes everything queued so far; tests use it to read their own log rows.
func (w *APILogWriter) Flush(ctx context.Context) error {
	for {
		batch := w.take(nil, apiLogBatch)
		if len(batch) == 0 {
			return nil
		}
		if rest, err := w.write(ctx, batch); err != nil {
			w.spill(rest)
			return err
		}
	}
}

// take appends the set-aside rows and then queued ones to batch, until batch
// holds limit rows (0: the batch size) or the queue is empty.
func (w *APILogWriter) take(batch []APILogEntry, limit int) []APILogEntry {
	if limit == 0 {
		limit = apiLogBatch
	}
	w.mu.Lock()
	batch = append(batch, w.spilled...)
	w.spilled = nil
	w.mu.Unlock()
	for len(batch) < limit {
		select {
		case e := <-w.ch:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

// spill sets rows aside for the next write.
func (w *APILogWriter) spill(rows []APILogEntry) {
	w.mu.Lock()
	w.spilled = append(w.spilled, rows...)
	w.mu.Unlock()
}

// write stores rows and returns those it could not store for want of the
// database (with the error), to be retried; it returns rows[:0] when all are
// done. When the batch fails for a row's content, it writes the rows one by
// one, so that only the rows the database refuses are lost (and counted).
func (w *APILogWriter) write(ctx context.Context, rows []APILogEntry) ([]APILogEntry, error) {
	if len(rows) == 0 {
		return rows, nil
	}
	err := w.db.insertAPILog(ctx, rows)
	if err == nil {
		w.recovered()
		w.touchKeys(ctx, rows)
		return rows[:0], nil
	}
	if transient(err) {
		if ctx.Err() == nil { // a write cut short by shutdown is no outage: drain retries it
			w.unavailable(len(rows), err)
		}
		return rows, err
	}
	written := make([]APILogEntry, 0, len(rows))
	for i, e := range rows {
		err := w.db.insertAPILogRow(ctx, e)
		switch {
		case err == nil:
			written = append(written, e)
		case transient(err):
			w.touchKeys(ctx, written)
			if ctx.Err() == nil {
				w.unavailable(len(rows)-i, err)
			}
			return append(rows[:0], rows[i:]...), err
		default:
			w.countLost(1)
			w.log.Error("api log row refused by the database: lost", "account_id", e.AccountID, "request_id", e.RequestID, "err", err)
		}
	}
	w.recovered()
	w.touchKeys(ctx, written)
	return rows[:0], nil
}

// transient reports whether err says the database could not take a write
// now (connection, shutdown, lack of resources, cancellation, lock or
// serialization conflict) rather than that it refuses the rows' content: the
// rows are then kept for a retry. Any other refusal is final, so that one bad
// row can never hold up the log.
func transient(err error) bool {
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) {
		return true // no answer from the database: network, context, pool
	}
	switch pqErr.Code.Class() {
	case "08", "40", "53", "57", "58":
		return true
	}
	return pqErr.Code == "55P03" // lock_not_available
}

// unavailable logs the start of a database outage for the log writer.
func (w *APILogWriter) unavailable(rows int, err error) {
	if !w.failing.Swap(true) {
		w.log.Error("api log write failed: rows kept for a retry", "rows", rows, "err", err)
	}
}

// recovered logs the end of an outage.
func (w *APILogWriter) recovered() {
	if w.failing.Swap(false) {
		w.log.Info("api log writes work again")
	}
}

// countLost counts n dropped rows in the metrics.
func (w *APILogWriter) countLost(n int) {
	if n > 0 && w.losses != nil {
		w.losses.CountAPILogLost(n)
	}
}

// touchKeys records when the batch's keys were last used.
func (w *APILogWriter) touchKeys(ctx context.Context, batch []APILogEntry) {
	if len(batch) == 0 {
		return
	}
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
	switch err := w.db.TouchKeys(ctx, accounts, keys, used); {
	case err == nil:
	case ctx.Err() != nil:
		// Shutting down: the next process's requests set last_used_at again.
		w.log.Warn("api key last-used update left out at shutdown", "err", err)
	default:
		w.log.Error("api key last-used update failed", "err", err)
	}
}
