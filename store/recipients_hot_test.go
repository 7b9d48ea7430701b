package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// TestClaimIsHOTUpdate: a claim ('queued' to 'sending', the lease, the
// attempt) changes no indexed column, so PostgreSQL updates the rows in place
// on their pages (HOT) and writes no index entry (migration 00028). It breaks
// when an index names status, claimed_until or attempts again, or when the
// pages have no room for the new versions.
func TestClaimIsHOTUpdate(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	c := e.ready(t)
	if _, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	// One connection of the send queue's pool, where claims run: the claim's
	// statistics are this backend's, flushed on demand
	// (pg_stat_force_next_flush) before they are read.
	queue := e.db.QueuePool()
	queue.SetMaxOpenConns(1)
	hot := func() (upd, hot int64) {
		t.Helper()
		if _, err := queue.ExecContext(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		if err := queue.QueryRowContext(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
WHERE relid = 'campaign_recipients'::regclass`).Scan(&upd, &hot); err != nil {
			t.Fatal(err)
		}
		return upd, hot
	}
	upd0, hot0 := hot()
	rows, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 10, time.Minute, nil)
	if err != nil || len(rows) != 4 {
		t.Fatalf("claim: %+v %v", rows, err)
	}
	upd1, hot1 := hot()
	if upd1-upd0 != 4 || hot1-hot0 != 4 {
		t.Errorf("the claim updated %d rows, %d of them HOT; want 4 and 4", upd1-upd0, hot1-hot0)
	}
	// The claimed rows are still in the queue index: a sweep finds them once
	// their lease ran out.
	if _, err := e.db.ExecContext(ctx, `UPDATE campaign_recipients SET claimed_until = now() - interval '1 second'
WHERE campaign_id = $1 AND status = 'sending'`, c.ID); err != nil {
		t.Fatal(err)
	}
	var viaIndex int
	if err := e.db.QueryRowContext(ctx, `SELECT count(*) FROM campaign_recipients WHERE campaign_id = $1 AND pending`, c.ID).Scan(&viaIndex); err != nil {
		t.Fatal(err)
	}
	again, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 10, time.Minute, nil)
	if err != nil || len(again) != 4 || viaIndex != 4 {
		t.Fatalf("after the lease ran out: claimed %+v (%v), %d pending", again, err, viaIndex)
	}
}
