package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// The activity and API logs grow by a row per mail and per API call, a few
// rows per statement. Their per-account indexes take new ids at the end of
// the account's range, so pages fill up instead of splitting in halves that
// stay half empty (migration 00043), and that index is the primary key, so
// that a row pays for one unique index, not two (migration 00044).
func TestLogIndexesStayDense(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	if _, err := db.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS pgstattuple`); err != nil {
		t.Fatal(err)
	}
	for range 400 {
		if _, err := db.ExecContext(ctx, `INSERT INTO activity_log (account_id, actor_type, action, object_type, object_id)
SELECT $1, 'system', 'email.sent', 'contact', g FROM generate_series(1, 50) g`, acct); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO api_log (account_id, request_id, method, path, status, duration_us, created_at)
SELECT $1, 'r' || g, 'GET', '/v1/contacts', 200, 100, now() FROM generate_series(1, 50) g`, acct); err != nil {
			t.Fatal(err)
		}
	}
	for _, index := range []string{"activity_log_pkey", "api_log_pkey"} {
		var def string
		if err := db.GetContext(ctx, &def, `SELECT pg_get_indexdef($1::regclass)`, index); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(def, "USING btree (account_id, id)") {
			t.Errorf("%s: %s; want the key (account_id, id)", index, def)
		}
		var density float64
		if err := db.GetContext(ctx, &density, `SELECT avg_leaf_density FROM pgstatindex($1)`, index); err != nil {
			t.Fatal(err)
		}
		// Appended at the right edge, leaf pages fill to btree's 90 %; split
		// at the left edge of the range they stayed near 50 %.
		if density < 80 {
			t.Errorf("%s: leaf pages %.1f %% full after 20,000 appended rows, want at least 80 %%", index, density)
		}
	}
	// What each row is indexed by: the key, the activities' object (a
	// contact's timeline), the API log's age (retention), summarised per
	// range of pages (migration 00047): a B-tree cost every API call an entry.
	var indexes []string
	if err := db.SelectContext(ctx, &indexes, `SELECT indexrelid::regclass::text FROM pg_index
WHERE indrelid IN ('activity_log'::regclass, 'api_log'::regclass) ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	if want := "[activity_log_object_idx activity_log_pkey api_log_created_brin api_log_pkey]"; fmt.Sprint(indexes) != want {
		t.Errorf("the logs' indexes: %v; want %s", indexes, want)
	}
}

// An event is written for every mail sent and every contact written. Every
// read of the outbox walks the consumers' order (account_id, xid, id), which
// is the primary key, so that an event pays for one unique index, not two
// (migration 00046); retention finds old events by the BRIN index.
func TestEventsAreKeyedByTheOutboxOrder(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	var indexes []string
	if err := db.SelectContext(ctx, &indexes, `SELECT indexrelid::regclass::text || CASE WHEN indisprimary THEN ' (primary) ' ELSE ' ' END ||
  substring(pg_get_indexdef(indexrelid) FROM 'USING .*$')
FROM pg_index WHERE indrelid = 'events'::regclass ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	want := []string{"events_created_brin USING brin (created_at)", "events_pkey (primary) USING btree (account_id, xid, id)"}
	if !slices.Equal(indexes, want) {
		t.Errorf("the events' indexes: %q; want %q", indexes, want)
	}
}

// Retention deletes the API log's rows older than APILogRetention, found
// through the BRIN index on created_at (migration 00047), and keeps the rest.
func TestAPILogRetentionFindsOldRowsByAge(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	now := time.Now().Truncate(time.Second)
	if _, err := db.ExecContext(ctx, `INSERT INTO api_log (account_id, request_id, method, path, status, duration_us, created_at)
SELECT $1, 'r' || g, 'GET', '/v1/contacts', 200, 100, $2::timestamptz + g * interval '1 hour' FROM generate_series(0, 199) g`,
		acct, now.Add(-store.APILogRetention-100*time.Hour)); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	var lines []string
	if err := tx.SelectContext(ctx, &lines, `EXPLAIN (COSTS OFF) DELETE FROM api_log WHERE created_at < $1`, now); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(lines, "\n"), "api_log_created_brin") {
		t.Errorf("retention's delete does not use the BRIN index:\n%s", strings.Join(lines, "\n"))
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := db.Purge(ctx, now); err != nil {
		t.Fatal(err)
	}
	var left int
	var oldest time.Time
	if err := db.QueryRowxContext(ctx, `SELECT count(*), min(created_at) FROM api_log WHERE account_id = $1`, acct).Scan(&left, &oldest); err != nil {
		t.Fatal(err)
	}
	// Rows 0 … 99 are older than retention's line; row 100 is on it and
	// stays, with 101 … 199.
	if line := now.Add(-store.APILogRetention); left != 100 || !oldest.Equal(line) {
		t.Errorf("after retention: %d rows, the oldest from %v; want 100, the oldest from %v", left, oldest, line)
	}
}
