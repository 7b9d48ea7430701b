package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
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

// TestCountContactsMaintained: CountContacts reads the filters a counter is
// maintained for (none, only a list, only a tag) off the counters, equal to
// the exact count (Contacts' total) after creates, changes and a deletion;
// every other filter is counted up to the limit, exactly below it and as
// "more than" the limit above it.
func TestCountContactsMaintained(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	a := mkList(t, db, acct, "A", false)
	b := mkList(t, db, acct, "B", false)
	var del int64
	for i := range 30 {
		in := store.ContactInput{Email: fmt.Sprintf("k%02d@example.com", i), LastName: str("Schmidt")}
		if i%2 == 0 {
			in.ListIDs = []int64{a.ID}
		}
		if i%3 == 0 {
			in.Tags = []string{"vip"}
		}
		res := upsert(t, db, acct, in)
		if i == 6 {
			del = res.Contact.ID
		}
	}
	// A change of tags and a deletion (a vip member of A) move the counters.
	upsert(t, db, acct, store.ContactInput{Email: "k01@example.com", Tags: []string{"vip"}})
	if err := db.DeleteContact(ctx, acct, apiActor, del); err != nil {
		t.Fatal(err)
	}
	exact := func(f store.ContactFilter) int {
		t.Helper()
		_, n, err := db.Contacts(ctx, acct, f, store.Page{Page: 1, PerPage: 1})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, f := range []store.ContactFilter{{}, {ListID: a.ID}, {ListID: b.ID}, {Tag: "vip"}, {Tag: " vip "}, {Tag: "nie"},
		{ListID: a.ID, Tag: "vip"}, {Status: "subscribed"}, {Query: "schmidt"}} {
		got, err := db.CountContacts(ctx, acct, f, 100)
		if err != nil {
			t.Fatal(err)
		}
		if want := exact(f); got.N != want || got.AtLeast {
			t.Errorf("%+v: %+v, want exactly %d", f, got, want)
		}
	}
	// The maintained counts are not capped; the others are.
	if got, _ := db.CountContacts(ctx, acct, store.ContactFilter{Tag: "vip"}, 3); got.N != exact(store.ContactFilter{Tag: "vip"}) || got.AtLeast {
		t.Errorf("tag count capped: %+v", got)
	}
	if got, _ := db.CountContacts(ctx, acct, store.ContactFilter{}, 3); got.N != 29 || got.AtLeast {
		t.Errorf("account count capped: %+v", got)
	}
	if got, _ := db.CountContacts(ctx, acct, store.ContactFilter{Query: "schmidt"}, 10); got.N != 10 || !got.AtLeast {
		t.Errorf("search count: %+v, want more than 10", got)
	}
	if _, err := db.CountContacts(ctx, acct, store.ContactFilter{ListID: a.ID + b.ID + 1000}, 10); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown list: %v", err)
	}
	if _, err := db.CountContacts(ctx, acct, store.ContactFilter{ListID: a.ID + b.ID + 1000, Status: "subscribed"}, 10); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown list, filtered: %v", err)
	}
}

// TestCampaignAudienceUpTo: the send confirmation's capped audience equals
// the exact one (CampaignAudience) below the cap, for lists and for a
// segment, and stops at the cap above it, each of queued and skipped on its
// own.
func TestCampaignAudienceUpTo(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	// Lists A and B: u1, u2, u3, u6 queued, u5 skipped (blocked), u4 not subscribed.
	c := e.ready(t)
	seg, err := e.db.CreateSegment(ctx, e.acct, apiActor, store.SegmentInput{Name: str("Alle"), Filter: &store.ContactFilter{Query: "example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	segmented := e.newsletter(t, store.NewsletterInput{Subject: str("Hallo"), Markdown: str("Text"), SegmentID: &seg.ID, ListIDs: &[]int64{e.b.ID}})
	none := e.newsletter(t, store.NewsletterInput{Subject: str("Hallo"), Markdown: str("Text")})
	for _, n := range []store.Campaign{c, segmented, none} {
		exact, err := e.db.CampaignAudience(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.db.CampaignAudienceUpTo(ctx, n, 100)
		if err != nil {
			t.Fatal(err)
		}
		if want := (store.AudienceCount{Queued: exact.Queued, Skipped: exact.Skipped}); got != want {
			t.Errorf("campaign %d: %+v, want %+v", n.ID, got, want)
		}
	}
	if got, _ := e.db.CampaignAudienceUpTo(ctx, c, 3); got != (store.AudienceCount{Queued: 3, QueuedAtLeast: true, Skipped: 1}) {
		t.Errorf("cap 3: %+v", got)
	}
	if got, _ := e.db.CampaignAudienceUpTo(ctx, c, 4); got != (store.AudienceCount{Queued: 4, Skipped: 1}) {
		t.Errorf("cap 4 (exactly at the cap): %+v", got)
	}
	if got, _ := e.db.CampaignAudienceUpTo(ctx, c, 0); got != (store.AudienceCount{QueuedAtLeast: true, SkippedAtLeast: true}) {
		t.Errorf("cap 0: %+v", got)
	}
}

// TestCampaignRecipientsUpTo: the recipient table's capped total equals the
// exact one below the cap and is "more than" the cap above it; the page is
// the same either way.
func TestCampaignRecipientsUpTo(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	c := e.ready(t)
	if _, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	skipped := store.RecipientFilter{Status: store.RecipientSkipped}
	for _, f := range []store.RecipientFilter{{}, skipped} {
		rows, total, err := e.db.CampaignRecipients(ctx, e.acct, c.ID, f, store.Page{Page: 1, PerPage: 2})
		if err != nil {
			t.Fatal(err)
		}
		got, n, more, err := e.db.CampaignRecipientsUpTo(ctx, e.acct, c.ID, f, store.Page{Page: 1, PerPage: 2}, 100)
		if err != nil || n != total || more || len(got) != len(rows) || got[0].ID != rows[0].ID {
			t.Errorf("%+v: %d %v %v, want %d", f, n, more, err, total)
		}
	}
	if _, n, more, err := e.db.CampaignRecipientsUpTo(ctx, e.acct, c.ID, store.RecipientFilter{}, store.Page{Page: 1, PerPage: 2}, 3); err != nil || n != 3 || !more {
		t.Errorf("capped at 3 of 5: %d %v %v", n, more, err)
	}
	if _, _, _, err := e.db.CampaignRecipientsUpTo(ctx, newAccount(t, e.db, "business"), c.ID, store.RecipientFilter{}, store.Page{Page: 1, PerPage: 2}, 3); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account's campaign: %v", err)
	}
}
