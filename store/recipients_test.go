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
