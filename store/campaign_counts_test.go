package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// TestCampaignCountersStriped: outcome writes add to the campaign's stripes
// (campaign_counts), not to its row, from many writers at once; every read
// reports column plus stripes exactly; finishing folds the stripes into the
// columns and leaves none.
func TestCampaignCountersStriped(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	c := e.ready(t)
	if _, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	// u1, u2, u3, u6 queued; u5 skipped (blocked) when queued.
	rows, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 10, time.Minute, nil)
	if err != nil || len(rows) != 4 {
		t.Fatalf("claim: %+v %v", rows, err)
	}
	// One writer per recipient, at once: each on its own connection.
	var wg sync.WaitGroup
	for i, r := range rows {
		o := store.Outcome{RecipientID: r.ID, ContactID: r.ContactID, Email: r.Email, Status: store.RecipientSent, MessageID: r.Email, At: time.Now()}
		if i == 0 {
			o.Status, o.Error, o.MessageID = store.RecipientFailed, "550 no", ""
		}
		wg.Go(func() {
			if _, err := e.db.RecordOutcomes(ctx, e.acct, c.ID, []store.Outcome{o}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()

	var stored struct {
		Sent, Failed, Skipped int64
	}
	if err := e.db.QueryRowContext(ctx, `SELECT sent_count, failed_count, skipped_count FROM campaigns WHERE id = $1`, c.ID).
		Scan(&stored.Sent, &stored.Failed, &stored.Skipped); err != nil {
		t.Fatal(err)
	}
	if stored.Sent != 0 || stored.Failed != 0 {
		t.Errorf("outcomes were added to the campaign's row: %+v", stored)
	}
	var stripes int
	if err := e.db.GetContext(ctx, &stripes, `SELECT count(*) FROM campaign_counts WHERE campaign_id = $1`, c.ID); err != nil || stripes == 0 {
		t.Fatalf("stripes %d %v", stripes, err)
	}
	check := func(when string, got store.Campaign) {
		t.Helper()
		if got.SentCount != 3 || got.FailedCount != 1 || got.SkippedCount != 1 {
			t.Errorf("%s: sent %d failed %d skipped %d, want 3 1 1", when, got.SentCount, got.FailedCount, got.SkippedCount)
		}
	}
	got, err := e.db.Newsletter(ctx, e.acct, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	check("while sending", got)
	list, _, err := e.db.Newsletters(ctx, e.acct, "", store.Page{Page: 1, PerPage: 10})
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %v %v", list, err)
	}
	check("list while sending", list[0])
	if _, _, sent, err := e.db.CampaignLinkStats(ctx, e.acct, c.ID, store.Page{Page: 1, PerPage: 10}); err != nil || sent != 3 {
		t.Errorf("link stats' sent %d %v", sent, err)
	}

	if done, err := e.db.FinishCampaign(ctx, c.ID); err != nil || !done {
		t.Fatalf("finish: %v %v", done, err)
	}
	if err := e.db.GetContext(ctx, &stripes, `SELECT count(*) FROM campaign_counts WHERE campaign_id = $1`, c.ID); err != nil || stripes != 0 {
		t.Errorf("stripes left after finishing: %d %v", stripes, err)
	}
	if err := e.db.QueryRowContext(ctx, `SELECT sent_count, failed_count, skipped_count FROM campaigns WHERE id = $1`, c.ID).
		Scan(&stored.Sent, &stored.Failed, &stored.Skipped); err != nil {
		t.Fatal(err)
	}
	if stored.Sent != 3 || stored.Failed != 1 || stored.Skipped != 1 {
		t.Errorf("folded columns %+v, want 3 1 1", stored)
	}
	got, _ = e.db.Newsletter(ctx, e.acct, c.ID)
	check("finished", got)
	if got.Status != store.CampaignSent {
		t.Errorf("status %s", got.Status)
	}

	// Retrying the failed one reopens the campaign; its new outcome is
	// striped again and counted once.
	if _, n, err := e.db.RetryFailed(ctx, e.acct, apiActor, c.ID, time.Now()); err != nil || n != 1 {
		t.Fatalf("retry: %d %v", n, err)
	}
	again, _ := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 10, time.Minute, nil)
	if len(again) != 1 {
		t.Fatalf("requeued %+v", again)
	}
	if _, err := e.db.RecordOutcomes(ctx, e.acct, c.ID, []store.Outcome{{RecipientID: again[0].ID, Email: again[0].Email,
		Status: store.RecipientSent, MessageID: "m@acme.test", At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	got, _ = e.db.Newsletter(ctx, e.acct, c.ID)
	if got.SentCount != 4 || got.FailedCount != 0 {
		t.Errorf("after the retry: sent %d failed %d, want 4 0", got.SentCount, got.FailedCount)
	}
	if done, err := e.db.FinishCampaign(ctx, c.ID); err != nil || !done {
		t.Fatalf("finish again: %v %v", done, err)
	}
	got, _ = e.db.Newsletter(ctx, e.acct, c.ID)
	if got.SentCount != 4 || got.FailedCount != 0 || got.SkippedCount != 1 {
		t.Errorf("finished again: sent %d failed %d skipped %d", got.SentCount, got.FailedCount, got.SkippedCount)
	}
}
