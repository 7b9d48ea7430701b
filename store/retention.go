package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Purge deletes what has outlived its retention: API log rows after 90 days,
// idempotency records after 24 hours, finished rate-limit windows (day windows
// once their Berlin day is over), used proof-of-work challenges once expired,
// webhook deliveries (with their attempts) after 30 days, the integrations'
// inbound event log after 90 days, and outbox events once
// every consumer has passed them (the webhook deliveries carry their body), or
// after EventRetention, so that a consumer that stopped for good (or was
// retired without removing its row from outbox_consumers) cannot keep them
// forever.
func (db *DB) Purge(ctx context.Context, now time.Time) error {
	stmts := []struct {
		name string
		sql  string
		arg  time.Time
	}{
		{"api log", `DELETE FROM api_log WHERE created_at < $1`, now.Add(-APILogRetention)},
		{"idempotency keys", `DELETE FROM idempotency_keys WHERE expires_at < $1`, now},
		{"rate counters", `DELETE FROM rate_counters WHERE window_start < $1 AND bucket NOT LIKE 'day:%'`, now.Add(-2 * RateWindow)},
		{"day rate counters", `DELETE FROM rate_counters WHERE window_start < $1 AND bucket LIKE 'day:%'`, berlinMidnight(now)},
		{"used challenges", `DELETE FROM used_challenges WHERE expires_at < $1`, now},
		{"webhook deliveries", `DELETE FROM webhook_deliveries WHERE created_at < $1`, now.Add(-WebhookDeliveryRetention)},
		{"expired events", `DELETE FROM events WHERE created_at < $1`, now.Add(-EventRetention)},
		{"integration events", `DELETE FROM integration_events WHERE received_at < $1`, now.Add(-IntegrationEventRetention)},
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s.sql, s.arg); err != nil {
			return fmt.Errorf("store: purge %s: %w", s.name, err)
		}
	}
	if _, err := db.ExecContext(ctx, purgeConsumedEvents); err != nil {
		return fmt.Errorf("store: purge consumed events: %w", err)
	}
	return nil
}

// EventRetention is how long an outbox event is kept for a consumer that has
// not passed it yet.
const EventRetention = 30 * 24 * time.Hour

// RunRetention purges every interval until ctx ends. Several processes may run it:
// the deletes are idempotent.
func (db *DB) RunRetention(ctx context.Context, interval time.Duration, log *slog.Logger) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if err := db.Purge(ctx, time.Now()); err != nil && ctx.Err() == nil {
			log.Error("retention", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
