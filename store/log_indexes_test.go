package store_test

import (
	"context"
	"testing"

	"github.com/rundbrief/rundbrief/store/dbtest"
)

// The activity and API logs grow by a row per mail and per API call, a few
// rows per statement. Their per-account indexes take new ids at the end of
// the account's range, so pages fill up instead of splitting in halves that
// stay half empty (migration 00043).
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
	for _, index := range []string{"activity_log_account_idx", "api_log_account_idx"} {
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
}
