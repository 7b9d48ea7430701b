package store_test

import (
	"context"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestAPILogCountsUpToTheCap(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	if _, err := db.ExecContext(ctx, `INSERT INTO api_log (account_id, request_id, method, path, status, duration_us, created_at)
SELECT $1, 'req_' || i, 'GET', CASE WHEN i % 10 = 0 THEN '/v1/lists' ELSE '/v1/me' END, 200, 1, now() FROM generate_series(1, 30) i`, acct); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f            store.APILogFilter
		max, total   int
		capped       bool
		page, onPage int
	}{
		{store.APILogFilter{}, 20, 20, true, 1, 10},
		{store.APILogFilter{}, 20, 20, true, 3, 10}, // pages past the count still answer
		{store.APILogFilter{}, 30, 30, false, 3, 10},
		{store.APILogFilter{PathPrefix: "/v1/lists"}, 2, 2, true, 1, 3},
		{store.APILogFilter{PathPrefix: "/v1/lists"}, 3, 3, false, 1, 3},
	} {
		entries, total, capped, err := db.APILog(ctx, acct, tc.f, store.Page{Page: tc.page, PerPage: 10}, tc.max)
		if err != nil || total != tc.total || capped != tc.capped || len(entries) != tc.onPage {
			t.Errorf("%+v max %d page %d: %d entries, total %d, capped %v, %v", tc.f, tc.max, tc.page, len(entries), total, capped, err)
		}
	}
}
