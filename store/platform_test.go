package store_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// No pool compiles with JIT, whose cost follows the planner's estimate: a
// generic plan's LIMIT $n is estimated at a tenth of the table, and the
// first-page listing was compiled on every execution (seconds under load).
func TestPoolsRunWithoutJIT(t *testing.T) {
	db := dbtest.NewDB(t)
	got, err := db.PoolSettings(context.Background(), "jit")
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != "off" {
			t.Errorf("pool %d: jit = %s, want off", i, v)
		}
	}
}

func TestRateCounterIsSharedBetweenProcesses(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	a, b := dbtest.Open(t, url), dbtest.Open(t, url)
	acct := newAccount(t, a, "business")
	now := time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC)
	allowed := 0
	for i := range 12 {
		db := a
		if i%2 == 1 {
			db = b
		}
		res, err := db.Hit(ctx, acct, "key:1", 10, now)
		if err != nil {
			t.Fatal(err)
		}
		if res.Allowed {
			allowed++
		}
		if res.ResetAt != time.Date(2026, 11, 22, 10, 1, 0, 0, time.UTC) || res.RetryAfter(now) != 30 {
			t.Errorf("reset %v, retry after %d", res.ResetAt, res.RetryAfter(now))
		}
		if want := max(10-(i+1), 0); res.Remaining != want {
			t.Errorf("hit %d: remaining %d, want %d", i+1, res.Remaining, want)
		}
	}
	if allowed != 10 {
		t.Errorf("allowed %d of 12 with limit 10", allowed)
	}
	res, err := a.Hit(ctx, acct, "key:1", 10, now.Add(time.Minute))
	if err != nil || !res.Allowed || res.Remaining != 9 {
		t.Errorf("next window: %+v %v", res, err)
	}
}

func TestRateLimiterSharesOneBudgetAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	acct := newAccount(t, dbtest.Open(t, url), "business")
	now := time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC)
	for _, limit := range []int{3, 10, 500} {
		procs := []*store.RateLimiter{store.NewRateLimiter(dbtest.Open(t, url)), store.NewRateLimiter(dbtest.Open(t, url))}
		bucket := fmt.Sprintf("key:%d", limit)
		allowed := 0
		for i := range limit*2 + 50 {
			res, err := procs[i%2].Allow(ctx, acct, bucket, limit, now)
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed {
				allowed++
			} else if res.RetryAfter(now) != 30 || res.Remaining != 0 {
				t.Errorf("limit %d: refusal %+v", limit, res)
			}
			// Small budgets are counted exactly, request by request.
			if limit <= 16 && i < limit && res.Remaining != limit-i-1 {
				t.Errorf("limit %d, request %d: remaining %d", limit, i+1, res.Remaining)
			}
		}
		if allowed != limit {
			t.Errorf("limit %d: two processes admitted %d", limit, allowed)
		}
		// The next window starts afresh.
		if res, _ := procs[0].Allow(ctx, acct, bucket, limit, now.Add(time.Minute)); !res.Allowed {
			t.Errorf("limit %d: next window refused", limit)
		}
	}
}

func TestIdempotencyClaims(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	a, b := dbtest.Open(t, url), dbtest.Open(t, url)
	acct := newAccount(t, a, "business")
	h1, h2 := []byte("hash-1"), []byte("hash-2")

	// Twenty concurrent claims over two processes: exactly one proceeds.
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[store.IdemOutcome]int{}
	for i := range 20 {
		db := a
		if i%2 == 1 {
			db = b
		}
		wg.Go(func() {
			o, _, err := db.ClaimIdempotencyKey(ctx, acct, "k1", h1)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			outcomes[o]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if outcomes[store.IdemProceed] != 1 || outcomes[store.IdemRunning] != 19 {
		t.Fatalf("outcomes %v", outcomes)
	}
	if o, _, _ := b.ClaimIdempotencyKey(ctx, acct, "k1", h2); o != store.IdemMismatch {
		t.Errorf("other body while running: %v", o)
	}
	stored := store.StoredResponse{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"data":1}`)}
	if err := a.CompleteIdempotencyKey(ctx, acct, "k1", stored); err != nil {
		t.Fatal(err)
	}
	o, got, err := b.ClaimIdempotencyKey(ctx, acct, "k1", h1)
	if err != nil || o != store.IdemReplay || got.Status != 201 || !bytes.Equal(got.Body, stored.Body) || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("replay: %v %+v %v", o, got, err)
	}
	if o, _, _ := b.ClaimIdempotencyKey(ctx, acct, "k1", h2); o != store.IdemMismatch {
		t.Errorf("other body after completion: %v", o)
	}
	// Keys are per account.
	other := newAccount(t, a, "business")
	if o, _, _ := a.ClaimIdempotencyKey(ctx, other, "k1", h2); o != store.IdemProceed {
		t.Errorf("same key in another account: %v", o)
	}
	// A released key (5xx) runs again.
	if o, _, _ := a.ClaimIdempotencyKey(ctx, acct, "k2", h1); o != store.IdemProceed {
		t.Fatal("k2 not claimed")
	}
	if err := a.ReleaseIdempotencyKey(ctx, acct, "k2"); err != nil {
		t.Fatal(err)
	}
	if o, _, _ := b.ClaimIdempotencyKey(ctx, acct, "k2", h1); o != store.IdemProceed {
		t.Errorf("after release: %v", o)
	}
	// After 24 hours a key is free again, even for another body.
	if _, err := a.ExecContext(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = 'k1'`); err != nil {
		t.Fatal(err)
	}
	if o, _, _ := a.ClaimIdempotencyKey(ctx, acct, "k1", h2); o != store.IdemProceed {
		t.Errorf("expired key: %v", o)
	}
	// A claim whose owner died is taken over after its lease, by the same request only.
	if _, err := a.ExecContext(ctx, `UPDATE idempotency_keys SET locked_until = now() - interval '1 second' WHERE key = 'k1'`); err != nil {
		t.Fatal(err)
	}
	if o, _, _ := a.ClaimIdempotencyKey(ctx, acct, "k1", h1); o != store.IdemMismatch {
		t.Errorf("stale claim, other body: %v", o)
	}
	if o, _, _ := a.ClaimIdempotencyKey(ctx, acct, "k1", h2); o != store.IdemProceed {
		t.Errorf("stale claim, same body: %v", o)
	}
}

func TestPurge(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	now := time.Now()
	w := store.NewAPILogWriter(db, nil)
	for _, age := range []time.Duration{91 * 24 * time.Hour, 89 * 24 * time.Hour} {
		w.Add(ctx, store.APILogEntry{AccountID: acct, RequestID: "req_x", Method: "GET", Path: "/v1/me", Status: 200, CreatedAt: now.Add(-age)})
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Hit(ctx, acct, "key:1", 10, now.Add(-5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Hit(ctx, acct, "key:1", 10, now); err != nil {
		t.Fatal(err)
	}
	if err := db.Purge(ctx, now); err != nil {
		t.Fatal(err)
	}
	var logs, windows int
	_ = db.GetContext(ctx, &logs, `SELECT count(*) FROM api_log`)
	_ = db.GetContext(ctx, &windows, `SELECT count(*) FROM rate_counters`)
	if logs != 1 || windows != 1 {
		t.Errorf("after purge: %d log rows (want 1), %d rate windows (want 1)", logs, windows)
	}
}
