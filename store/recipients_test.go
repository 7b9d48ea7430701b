package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// TestRenewRecipients: a worker's heartbeat extends the leases it holds, and
// only those: a lease that ran out (its row may be another worker's now) and a
// row put back into the queue stay as they are.
func TestRenewRecipients(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	c := e.ready(t)
	if _, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	rows, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 3, time.Second, nil)
	if err != nil || len(rows) != 3 {
		t.Fatalf("claim: %+v %v", rows, err)
	}
	live, expired, released := rows[0].ID, rows[1].ID, rows[2].ID
	e.exec(t, `UPDATE campaign_recipients SET claimed_until = now() - interval '1 second' WHERE id = $1`, expired)
	if err := e.db.ReleaseRecipients(ctx, c.ID, []int64{released}, 0, true); err != nil {
		t.Fatal(err)
	}
	if err := e.db.RenewRecipients(ctx, []int64{live, expired, released}, time.Hour); err != nil {
		t.Fatal(err)
	}
	var leasedMinutes []float64
	if err := e.db.SelectContext(ctx, &leasedMinutes, `SELECT coalesce(extract(epoch FROM claimed_until - now()) / 60, 0)
FROM campaign_recipients WHERE id = ANY(ARRAY[$1, $2, $3]::bigint[]) ORDER BY id`, live, expired, released); err != nil {
		t.Fatal(err)
	}
	if len(leasedMinutes) != 3 || leasedMinutes[0] < 59 || leasedMinutes[1] > 0 || leasedMinutes[2] != 0 {
		t.Errorf("minutes leased after the renewal (live, expired, released): %v; want 60, below 0, none", leasedMinutes)
	}
	// The expired row is anyone's; the renewed one is nobody else's.
	again, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 10, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range again {
		got = append(got, r.ID)
	}
	for _, id := range got {
		if id == live {
			t.Errorf("the renewed row %d was claimed again: %v", id, got)
		}
	}
	if len(got) < 2 || got[0] != expired || got[1] != released {
		t.Errorf("claimed %v after the renewal; want the expired %d and the released %d first", got, expired, released)
	}
	if err := e.db.RenewRecipients(ctx, nil, time.Hour); err != nil {
		t.Errorf("renewing nothing: %v", err)
	}
}

// TestClaimReadsOnlyItsBatch: a claim right after a large send was queued
// (the statistics still call the campaign tiny) reads about as many entries
// of the queue index as it claims. With the bitmap scan the planner chose for
// such statistics, every claim read every pending row after the cursor and
// sorted them: a send cost the database quadratic time in its size.
func TestClaimReadsOnlyItsBatch(t *testing.T) {
	const n, batch = 3000, 50
	ctx := context.Background()
	e := newCampaignEnv(t)
	l := mkList(t, e.db, e.acct, "Viele", false)
	e.exec(t, `INSERT INTO contacts (account_id, email) SELECT $1, 'viele' || g || '@example.com' FROM generate_series(1, $2::int) AS g`, e.acct, n)
	e.exec(t, `INSERT INTO list_members (list_id, contact_id, account_id)
SELECT $1, id, account_id FROM contacts WHERE account_id = $2 AND email LIKE 'viele%'`, l.ID, e.acct)
	c := e.newsletter(t, store.NewsletterInput{Subject: str("Hallo"), HTML: str("<p>Hallo</p>"), ListIDs: &[]int64{l.ID}})
	if _, res, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{}); err != nil || res.Queued != n {
		t.Fatalf("start: %+v %v", res, err)
	}
	// One connection: the claim's statistics are this backend's, flushed on
	// demand before they are read (as in TestClaimIsHOTUpdate).
	e.db.SetMaxOpenConns(1)
	read := func() int64 {
		t.Helper()
		var v int64
		if _, err := e.db.ExecContext(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		if err := e.db.QueryRowContext(ctx, `SELECT idx_tup_read FROM pg_stat_user_indexes
WHERE indexrelid = 'campaign_recipients_queue_idx'::regclass`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := read()
	rows, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, batch, time.Minute, nil)
	if err != nil || len(rows) != batch {
		t.Fatalf("claim: %d rows, %v", len(rows), err)
	}
	for i := 1; i < len(rows); i++ {
		if rows[i].ID <= rows[i-1].ID {
			t.Fatalf("claimed out of id order: %d after %d", rows[i].ID, rows[i-1].ID)
		}
	}
	if got := read() - before; got > 4*batch {
		t.Errorf("a claim of %d read %d entries of the queue index (of %d queued); want about %d", batch, got, n, batch)
	}
}
