package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// RateWindow is the length of a rate-limit window.
const RateWindow = time.Minute

// RateResult is the state of a bucket after counting one request.
type RateResult struct {
	Limit     int
	ResetAt   time.Time // end of the current window
	Remaining int
	Allowed   bool
}

// RetryAfter is how long a refused client should wait, at least one second.
func (r RateResult) RetryAfter(now time.Time) int {
	s := int(r.ResetAt.Sub(now).Round(time.Second) / time.Second)
	return max(s, 1)
}

const hitRate = `INSERT INTO rate_counters (account_id, bucket, window_start, count) VALUES ($1, $2, $3, $4)
ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_counters.count + EXCLUDED.count
RETURNING count`

// take adds n requests to bucket's counter for the window starting at start and
// returns the counter after the addition. The counter lives in PostgreSQL, so every
// process that serves the account counts into one budget.
func (db *DB) take(ctx context.Context, accountID int64, bucket string, start time.Time, n int) (int, error) {
	var count int
	if err := db.relaxed.GetContext(ctx, &count, hitRate, accountID, bucket, start, n); err != nil {
		return 0, fmt.Errorf("store: rate limit: %w", err)
	}
	return count, nil
}

// Hit counts exactly one request against bucket (e.g. "ai:7") in the current fixed
// one-minute window, with one database round trip.
func (db *DB) Hit(ctx context.Context, accountID int64, bucket string, limit int, now time.Time) (RateResult, error) {
	start := now.Truncate(RateWindow)
	count, err := db.take(ctx, accountID, bucket, start, 1)
	if err != nil {
		return RateResult{}, err
	}
	return RateResult{Limit: limit, ResetAt: start.Add(RateWindow), Remaining: max(limit-count, 0), Allowed: count <= limit}, nil
}

// DayBucketPrefix starts the bucket name of every day window (HitDay): Purge keeps
// those counters until their Europe/Berlin day is over, while it deletes minute
// windows two minutes after they ended.
const DayBucketPrefix = "day:"

// HitDay counts one request against bucket in the current Europe/Berlin day (the
// counter is stored as DayBucketPrefix+bucket), for budgets such as sign-ups per
// list and day. ResetAt is the next midnight in Berlin.
func (db *DB) HitDay(ctx context.Context, accountID int64, bucket string, limit int, now time.Time) (RateResult, error) {
	start := berlinMidnight(now)
	count, err := db.take(ctx, accountID, DayBucketPrefix+bucket, start, 1)
	if err != nil {
		return RateResult{}, err
	}
	return RateResult{Limit: limit, ResetAt: start.AddDate(0, 0, 1), Remaining: max(limit-count, 0), Allowed: count <= limit}, nil
}

// berlinMidnight is the start of t's day in Europe/Berlin, where day windows
// begin; a day window that began before it is over.
func berlinMidnight(t time.Time) time.Time {
	l := t.In(Berlin)
	return time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, Berlin)
}

// maxLease bounds how many requests one process reserves from a bucket at a time.
const maxLease = 100

// RateLimiter enforces per-bucket limits shared by every process through the
// counters in PostgreSQL, without a database write per request: a process reserves
// a small block of the window's budget (a lease) in the shared counter and hands it
// out locally. Together, all processes never admit more than the limit. A lease is
// at most a sixteenth of what is left, so it shrinks to a single request as the
// budget runs out, and small limits are counted exactly; leases that a process does
// not use before the window ends are lost, which can only refuse early, never admit
// too much. Once the shared counter reaches the limit the window is known to be
// exhausted (counters only grow), so refusals cost no query either.
type RateLimiter struct {
	db      *DB
	mu      sync.Mutex
	buckets map[string]*leaseState
}

type leaseState struct {
	mu sync.Mutex
	lease
}

// lease is what one process holds of one bucket's window.
type lease struct {
	window    time.Time
	limit     int
	granted   int  // requests reserved by this process in this window
	used      int  // of which handed out
	global    int  // the shared counter after this process's last reservation or peek
	synced    bool // global was read from the shared counter in this window
	exhausted bool
}

// NewRateLimiter returns a limiter over db's counters.
func NewRateLimiter(db *DB) *RateLimiter {
	return &RateLimiter{db: db, buckets: make(map[string]*leaseState)}
}

// Allow counts one request against bucket with the given per-minute limit.
func (rl *RateLimiter) Allow(ctx context.Context, accountID int64, bucket string, limit int, now time.Time) (RateResult, error) {
	start := now.Truncate(RateWindow)
	st := rl.state(bucket, start)
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.window.Equal(start) {
		st.lease = lease{window: start, limit: limit}
	}
	if st.limit != limit { // the key's limit was changed during the window
		st.limit = limit
		st.exhausted = st.global >= limit
	}
	res := RateResult{Limit: limit, ResetAt: start.Add(RateWindow)}
	if st.used >= st.granted && !st.exhausted {
		left := limit - st.global
		n := min(max(left/16, 1), maxLease)
		count, err := rl.db.take(ctx, accountID, bucket, start, n)
		if err != nil {
			return RateResult{}, err
		}
		// Of the n reserved, only those within the limit are usable.
		usable := min(max(limit-(count-n), 0), n)
		st.granted += usable
		st.global = count
		st.synced = true
		st.exhausted = count >= limit
	}
	if st.used >= st.granted {
		return res, nil
	}
	st.used++
	res.Allowed = true
	// Everything counted in PostgreSQL so far, less what this process reserved but
	// has not handed out yet.
	res.Remaining = max(limit-st.global+(st.granted-st.used), 0)
	return res, nil
}

const selectRateCount = `SELECT count FROM rate_counters WHERE bucket = $1 AND window_start = $2`

// Peek is where bucket's current window stands, without counting a request: for a
// request refused before it may spend the budget (a key used from an IP or origin
// it is not allowed for must not use up its owner's requests). The shared counter
// is read once per window and process; later peeks answer from what this process
// knows, as Allow does between its reservations, so refusals in bulk cost no
// query. Allowed says whether budget is left.
func (rl *RateLimiter) Peek(ctx context.Context, bucket string, limit int, now time.Time) (RateResult, error) {
	start := now.Truncate(RateWindow)
	st := rl.state(bucket, start)
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.window.Equal(start) {
		st.lease = lease{window: start, limit: limit}
	}
	if st.limit != limit {
		st.limit = limit
		st.exhausted = st.global >= limit
	}
	if !st.synced {
		// Nothing is reserved by this process in this window yet (Allow syncs
		// whenever it reserves), so the shared counter is all there is to know.
		var count int
		err := rl.db.relaxed.GetContext(ctx, &count, selectRateCount, bucket, start)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return RateResult{}, fmt.Errorf("store: peek rate limit: %w", err)
		}
		st.global, st.synced = count, true
		st.exhausted = count >= limit
	}
	remaining := max(limit-st.global+(st.granted-st.used), 0)
	return RateResult{Limit: limit, ResetAt: start.Add(RateWindow), Remaining: remaining, Allowed: remaining > 0}, nil
}

func (rl *RateLimiter) state(bucket string, start time.Time) *leaseState {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	st, ok := rl.buckets[bucket]
	if !ok {
		if len(rl.buckets) > 50_000 {
			// Drop buckets of finished windows so idle keys do not accumulate.
			for k, v := range rl.buckets {
				v.mu.Lock()
				old := v.window.Before(start)
				v.mu.Unlock()
				if old {
					delete(rl.buckets, k)
				}
			}
		}
		st = &leaseState{lease: lease{window: start}}
		rl.buckets[bucket] = st
	}
	return st
}
