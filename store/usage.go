package store

import (
	_ "time/tzdata" // Europe/Berlin must resolve on machines without zoneinfo

	"context"
	"fmt"
	"time"
)

// Usage is an account's consumption of its plan's limits.
type Usage struct {
	Contacts     int64   `db:"contacts"`
	Lists        int64   `db:"lists"`
	SendsToday   int64   `db:"sends_today"`
	StorageBytes int64   `db:"storage_bytes"`
	Webhooks     int64   `db:"webhooks"`
	APIKeys      int64   `db:"api_keys"`
	AICreditEUR  float64 `db:"ai_credit_eur"`
}

const selectUsage = `SELECT
  coalesce(u.contacts + (SELECT sum(s.contacts) FROM account_contact_counts s WHERE s.account_id = a.id), u.contacts, 0)::bigint AS contacts, coalesce(u.lists, 0) AS lists,
  coalesce(u.storage_bytes, 0) AS storage_bytes, coalesce(u.webhooks, 0) AS webhooks,
  (SELECT coalesce(sum(count), 0) FROM send_counters s WHERE s.account_id = a.id AND s.day = $2) AS sends_today,
  (SELECT count(*) FROM api_keys k WHERE k.account_id = a.id AND k.revoked_at IS NULL) AS api_keys,
  (SELECT coalesce(sum(amount_eur), 0)::float8 FROM ai_ledger l WHERE l.account_id = a.id) AS ai_credit_eur
FROM accounts a LEFT JOIN account_usage u ON u.account_id = a.id
WHERE a.id = $1`

// Usage returns what an account uses of its plan today (days in Europe/Berlin).
func (db *DB) Usage(ctx context.Context, accountID int64, now time.Time) (Usage, error) {
	var u Usage
	if err := db.GetContext(ctx, &u, selectUsage, accountID, Day(now)); err != nil {
		return Usage{}, notFound("usage", err)
	}
	return u, nil
}

// Berlin is the time zone of every timestamp the service shows.
var Berlin = mustLoadBerlin()

func mustLoadBerlin() *time.Location {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(fmt.Sprintf("store: time zone Europe/Berlin missing (import time/tzdata): %v", err))
	}
	return loc
}

// Day is the calendar day of t in Europe/Berlin, as a date string for PostgreSQL.
func Day(t time.Time) string { return t.In(Berlin).Format(time.DateOnly) }
