package store

import (
	"context"
	"fmt"
	"time"
)

// RateWindow is the length of a rate-limit window.
const RateWindow = time.Minute

// RateResult is the state of a bucket after counting one request.
type RateResult struct {
	Limit     int
	Count     int
	ResetAt   time.Time // end of the current window
	Remaining int
	Allowed   bool
}

// RetryAfter is how long a refused client should wait, at least one second.
func (r RateResult) RetryAfter(now time.Time) int {
	s := int(r.ResetAt.Sub(now).Round(time.Second) / time.Second)
	return max(s, 1)
}

const hitRate = `INSERT INTO rate_counters (account_id, bucket, window_start, count) VALUES ($1, $2, $3, 1)
ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_counters.count + 1
RETURNING count`

// Hit counts one request against bucket (e.g. "key:42" or "ai:7") in the current
// fixed one-minute window. The counter lives in PostgreSQL, so every process that
// serves the account shares one budget.
func (db *DB) Hit(ctx context.Context, accountID int64, bucket string, limit int, now time.Time) (RateResult, error) {
	start := now.Truncate(RateWindow)
	var count int
	if err := db.relaxed.GetContext(ctx, &count, hitRate, accountID, bucket, start); err != nil {
		return RateResult{}, fmt.Errorf("store: rate limit: %w", err)
	}
	return RateResult{
		Limit:     limit,
		Count:     count,
		ResetAt:   start.Add(RateWindow),
		Remaining: max(limit-count, 0),
		Allowed:   count <= limit,
	}, nil
}
