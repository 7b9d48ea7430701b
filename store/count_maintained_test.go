package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// TestNewsletterStatsMaintainedCounts: the statistics' recipient counts come
// from the maintained counters and the unfinished recipients' indexes, and
// equal the exact count by status (CampaignRecipientCounts) at every stage of
// a send: queued, claimed, partly recorded (sent, failed, skipped), finished,
// retried.
func TestNewsletterStatsMaintainedCounts(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	c := e.ready(t)
	check := func(when string) {
		t.Helper()
		exact, err := e.db.CampaignRecipientCounts(ctx, e.acct, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		st, err := e.db.NewsletterStats(ctx, e.acct, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		got := st.Counts
		got.Opened, got.Clicked = exact.Opened, exact.Clicked // from the engagement counters, tested there
		if got != exact {
			t.Errorf("%s: maintained %+v, exact %+v", when, got, exact)
		}
	}
	check("draft")
	if _, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	check("queued")
	rows, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 10, time.Minute, nil)
	if err != nil || len(rows) != 4 {
		t.Fatalf("claim: %+v %v", rows, err)
	}
	check("claimed")
	outs := []store.Outcome{
		{RecipientID: rows[0].ID, Email: rows[0].Email, Status: store.RecipientFailed, Error: "550 no", At: time.Now()},
		{RecipientID: rows[1].ID, Email: rows[1].Email, Status: store.RecipientSkipped, Error: store.SkipBlocked, At: time.Now()},
		{RecipientID: rows[2].ID, Email: rows[2].Email, Status: store.RecipientSent, MessageID: "m2@acme.test", At: time.Now()},
	}
	if _, err := e.db.RecordOutcomes(ctx, e.acct, c.ID, outs); err != nil {
		t.Fatal(err)
	}
	check("partly recorded")
	if _, err := e.db.RecordOutcomes(ctx, e.acct, c.ID, []store.Outcome{{RecipientID: rows[3].ID, Email: rows[3].Email,
		Status: store.RecipientSent, MessageID: "m3@acme.test", At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if done, err := e.db.FinishCampaign(ctx, c.ID); err != nil || !done {
		t.Fatalf("finish: %v %v", done, err)
	}
	check("finished")
	if _, _, err := e.db.RetryFailed(ctx, e.acct, apiActor, c.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	check("retrying")
}
