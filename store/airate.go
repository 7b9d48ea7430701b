package store

import (
	"context"
	"strconv"
	"time"
)

// AIRateLimit is the account-wide budget of AI requests per minute, the same
// for the API's /ai endpoints and the portal's editor assistant: every AI
// call costs money, so every key, user and process of the account counts
// into one budget (rate_counters in PostgreSQL).
const AIRateLimit = 30

// HitAI counts one AI request of the account in the current minute; Allowed
// is false once AIRateLimit is spent. Every attempt counts, also one that
// later fails validation.
func (db *DB) HitAI(ctx context.Context, accountID int64, now time.Time) (RateResult, error) {
	return db.Hit(ctx, accountID, "ai:"+strconv.FormatInt(accountID, 10), AIRateLimit, now)
}
