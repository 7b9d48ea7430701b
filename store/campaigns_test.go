package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func str(s string) *string { return &s }

// campaignEnv is an account with two overlapping lists.
type campaignEnv struct {
	db   *store.DB
	acct int64
	a, b store.List
}

// newCampaignEnv: list a has u1..u4, list b has u3..u6; u4 is unsubscribed,
// u5 is blocked (without being unsubscribed).
func newCampaignEnv(t testing.TB) campaignEnv {
	t.Helper()
	db := dbtest.NewDB(t)
	e := campaignEnv{db: db, acct: newAccount(t, db, "business")}
	e.a = mkList(t, db, e.acct, "A", false)
	e.b = mkList(t, db, e.acct, "B", false)
	for i := 1; i <= 6; i++ {
		var lists []int64
		if i <= 4 {
			lists = append(lists, e.a.ID)
		}
		if i >= 3 {
			lists = append(lists, e.b.ID)
		}
		upsert(t, db, e.acct, store.ContactInput{Email: fmt.Sprintf("u%d@example.com", i), FirstName: str(fmt.Sprintf("U%d", i)), ListIDs: lists})
	}
	e.exec(t, `UPDATE contacts SET status = 'unsubscribed' WHERE account_id = $1 AND email = 'u4@example.com'`, e.acct)
	e.exec(t, `INSERT INTO blocked_addresses (account_id, email, source) VALUES ($1, 'u5@example.com', 'import')`, e.acct)
	return e
}

func (e campaignEnv) exec(t testing.TB, q string, args ...any) {
	t.Helper()
	if _, err := e.db.ExecContext(context.Background(), q, args...); err != nil {
		t.Fatal(err)
	}
}

func (e campaignEnv) newsletter(t testing.TB, in store.NewsletterInput) store.Campaign {
	t.Helper()
	c, err := e.db.CreateNewsletter(context.Background(), e.acct, apiActor, in)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e campaignEnv) ready(t *testing.T) store.Campaign {
	return e.newsletter(t, store.NewsletterInput{Subject: str("Hallo {{vorname}}"), HTML: str("<p>Hallo</p>"), ListIDs: &[]int64{e.a.ID, e.b.ID}})
}

func wantValidation(t *testing.T, err error, fields ...string) {
	t.Helper()
	var ve *store.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want a validation error on %v, got %v", fields, err)
	}
	for _, f := range fields {
		if ve.Fields[f] == "" {
			t.Errorf("no message for %s: %v", f, ve.Fields)
		}
	}
	if len(ve.Fields) != len(fields) {
		t.Errorf("fields %v, want %v", ve.Fields, fields)
	}
}

func wantConflict(t *testing.T, err error, reason string) {
	t.Helper()
	var ce *store.ConflictError
	if !errors.As(err, &ce) || ce.Reason != reason {
		t.Fatalf("want conflict %s, got %v", reason, err)
	}
}

func TestNewsletterDraftRules(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	c := e.newsletter(t, store.NewsletterInput{Subject: str(" Betreff ")})
	if c.Status != store.CampaignDraft || c.Name != "Betreff" || c.Subject != "Betreff" || !c.TrackOpens || !c.TrackClicks {
		t.Fatalf("draft: %+v", c)
	}
	for _, tc := range []struct {
		in     store.NewsletterInput
		fields []string
	}{
		{store.NewsletterInput{ListIDs: &[]int64{999999}}, []string{"list_ids"}},
		{store.NewsletterInput{ReplyTo: str("kein-name")}, []string{"reply_to"}},
		{store.NewsletterInput{Subject: str("zwei\nZeilen")}, []string{"subject"}},
		{store.NewsletterInput{HTML: str("<p>x</p>"), Markdown: str("# x")}, []string{"markdown"}},
		{store.NewsletterInput{SMTPServerID: ptr(int64(424242))}, []string{"smtp_server_id"}},
	} {
		_, err := e.db.CreateNewsletter(ctx, e.acct, apiActor, tc.in)
		wantValidation(t, err, tc.fields...)
	}
	u, err := e.db.UpdateNewsletter(ctx, e.acct, apiActor, c.ID, store.NewsletterInput{HTML: str("<p>neu</p>"), ListIDs: &[]int64{e.a.ID, e.a.ID}})
	if err != nil || u.HTML != "<p>neu</p>" || len(u.ListIDs) != 1 {
		t.Fatalf("patch: %+v %v", u, err)
	}
	d, err := e.db.DuplicateNewsletter(ctx, e.acct, apiActor, c.ID)
	if err != nil || d.ID == c.ID || d.Name != "Betreff (Kopie)" || d.HTML != "<p>neu</p>" || d.Status != store.CampaignDraft {
		t.Fatalf("duplicate: %+v %v", d, err)
	}
	// Another account sees nothing.
	other := newAccount(t, e.db, "business")
	if _, err := e.db.Newsletter(ctx, other, c.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("other account: %v", err)
	}
	if _, err := e.db.Email(ctx, e.acct, c.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a newsletter is no email: %v", err)
	}
	if err := e.db.DeleteNewsletter(ctx, e.acct, apiActor, d.ID); err != nil {
		t.Fatal(err)
	}
	list, total, err := e.db.Newsletters(ctx, e.acct, "", store.Page{Page: 1, PerPage: 10})
	if err != nil || total != 1 || len(list) != 1 || list[0].ID != c.ID {
		t.Errorf("list: %d %v %v", total, list, err)
	}
}

func TestStartNewsletterQueuesOnceAndChecks(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)

	// Everything missing: one 422 naming every field, the SMTP check included.
	empty := e.newsletter(t, store.NewsletterInput{})
	smtpMissing := func(context.Context, store.Campaign) error { return store.Invalid("smtp_server_id", "fehlt") }
	_, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, empty.ID, store.StartOptions{Check: smtpMissing})
	wantValidation(t, err, "subject", "html", "list_ids", "smtp_server_id")

	// Lists without subscribed members.
	lonely := mkList(t, e.db, e.acct, "Leer", false)
	c := e.newsletter(t, store.NewsletterInput{Subject: str("x"), Text: str("x"), ListIDs: &[]int64{lonely.ID}})
	_, _, err = e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{})
	wantValidation(t, err, "list_ids")

	c = e.ready(t)
	got, res, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{
		Links: func(store.Campaign) ([]store.LinkInput, error) {
			return []store.LinkInput{{URL: "https://a.test/"}, {URL: "https://b.test/?e={{email}}", Personalized: true}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// u1..u6 deduplicated across both lists, u4 unsubscribed (absent), u5 blocked (skipped).
	if res.Queued != 4 || res.Skipped != 1 || got.Status != store.CampaignSending || got.RecipientsCount != 4 || got.StartedAt == nil {
		t.Fatalf("start: %+v %+v", res, got)
	}
	var rows []struct {
		Email  string  `db:"email"`
		Status string  `db:"status"`
		Error  *string `db:"error"`
	}
	if err := e.db.SelectContext(ctx, &rows, `SELECT email, status, error FROM campaign_recipients WHERE campaign_id = $1 ORDER BY email`, c.ID); err != nil {
		t.Fatal(err)
	}
	want := "u1@example.com:queued u2@example.com:queued u3@example.com:queued u5@example.com:skipped:blocked u6@example.com:queued"
	var gotRows []string
	for _, r := range rows {
		s := r.Email + ":" + r.Status
		if r.Error != nil {
			s += ":" + *r.Error
		}
		gotRows = append(gotRows, s)
	}
	if strings.Join(gotRows, " ") != want {
		t.Errorf("recipients %v", gotRows)
	}
	links, err := e.db.CampaignLinks(ctx, c.ID)
	if err != nil || len(links) != 2 || links[1].Position != 1 || !links[1].Personalized {
		t.Errorf("links %+v %v", links, err)
	}
	if u, err := e.db.Usage(ctx, e.acct, time.Now()); err != nil || u.SendsToday != 4 {
		t.Errorf("sends today %d (%v), want 4", u.SendsToday, err)
	}
	_, _, err = e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{})
	wantConflict(t, err, "already_sent")
	_, err = e.db.UpdateNewsletter(ctx, e.acct, apiActor, c.ID, store.NewsletterInput{Subject: str("neu")})
	wantConflict(t, err, "not_draft")
	wantConflict(t, e.db.DeleteNewsletter(ctx, e.acct, apiActor, c.ID), "not_draft")
}

func TestDailySendLimit(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	e.exec(t, `UPDATE plans SET max_sends_per_day = 5 WHERE name = 'business'`)
	first := e.ready(t)
	if _, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, first.ID, store.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	second := e.ready(t)
	_, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, second.ID, store.StartOptions{})
	var le *store.LimitError
	if !errors.As(err, &le) || le.Limit != "sends_per_day" || le.Max != 5 {
		t.Fatalf("want the daily limit, got %v", err)
	}
	// Refused before anything was queued or counted.
	var rows int
	if err := e.db.GetContext(ctx, &rows, `SELECT count(*) FROM campaign_recipients WHERE campaign_id = $1`, second.ID); err != nil || rows != 0 {
		t.Errorf("%d rows queued (%v)", rows, err)
	}
	if c, _ := e.db.Newsletter(ctx, e.acct, second.ID); c.Status != store.CampaignDraft {
		t.Errorf("status %s", c.Status)
	}
	if u, _ := e.db.Usage(ctx, e.acct, time.Now()); u.SendsToday != 4 {
		t.Errorf("sends today %d", u.SendsToday)
	}
	// One more fits, two do not; the next Berlin day starts at zero.
	if err := e.db.CountSends(ctx, e.acct, 1, time.Now()); err != nil {
		t.Error(err)
	}
	if err := e.db.CountSends(ctx, e.acct, 1, time.Now()); !errors.As(err, &le) {
		t.Errorf("over the limit: %v", err)
	}
	if err := e.db.CountSends(ctx, e.acct, 5, time.Now().Add(48*time.Hour)); err != nil {
		t.Errorf("another day: %v", err)
	}
}

func TestClaimLeaseAndRecord(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	c := e.ready(t)
	if _, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	rows, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 2, time.Minute, nil)
	if err != nil || len(rows) != 2 || rows[0].Email != "u1@example.com" || rows[0].FirstName != "U1" || rows[0].Attempts != 1 {
		t.Fatalf("claim: %+v %v", rows, err)
	}
	// Leased rows are nobody else's; the rest is.
	other, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 10, time.Minute, nil)
	if err != nil || len(other) != 2 {
		t.Fatalf("second claim: %+v %v", other, err)
	}
	if more, _ := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 10, time.Minute, nil); len(more) != 0 {
		t.Fatalf("everything is leased, yet claimed %+v", more)
	}
	// A lease that ran out makes the row claimable again (its worker died).
	e.exec(t, `UPDATE campaign_recipients SET claimed_until = now() - interval '1 second' WHERE id = $1`, other[1].ID)
	again, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 10, time.Minute, nil)
	if err != nil || len(again) != 1 || again[0].ID != other[1].ID || again[0].Attempts != 2 {
		t.Fatalf("after the lease: %+v %v", again, err)
	}

	now := time.Now()
	outs := []store.Outcome{
		{RecipientID: rows[0].ID, ContactID: rows[0].ContactID, Email: rows[0].Email, Status: store.RecipientSent, MessageID: "m1@acme.test", At: now},
		{RecipientID: rows[1].ID, ContactID: rows[1].ContactID, Email: rows[1].Email, Status: store.RecipientFailed, Error: "550 5.1.1 unknown", Bounce: true, Code: 550, At: now},
		{RecipientID: other[0].ID, Email: other[0].Email, Status: store.RecipientQueued, Error: "451 later", RetryIn: time.Hour, At: now},
	}
	status, err := e.db.RecordOutcomes(ctx, e.acct, c.ID, outs)
	if err != nil || status != store.CampaignSending {
		t.Fatalf("record: %s %v", status, err)
	}
	// Recording again (a second worker after a lease ran out) counts nothing twice.
	if _, err := e.db.RecordOutcomes(ctx, e.acct, c.ID, outs[:2]); err != nil {
		t.Fatal(err)
	}
	got, _ := e.db.Newsletter(ctx, e.acct, c.ID)
	if got.SentCount != 1 || got.FailedCount != 1 {
		t.Errorf("counters sent %d failed %d", got.SentCount, got.FailedCount)
	}
	names := outboxNames(outbox(t, e.db, e.acct))
	var sent, bounced int
	for _, n := range names {
		switch n {
		case store.EventEmailSent:
			sent++
		case store.EventEmailBounced:
			bounced++
		}
	}
	if sent != 1 || bounced != 1 {
		t.Errorf("events %v", names)
	}
	// The retried row waits for its backoff.
	if more, _ := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 10, time.Minute, nil); len(more) != 0 {
		t.Errorf("a row waiting for its retry was claimed: %+v", more)
	}
	// Released rows are due at once and get their attempt back.
	if err := e.db.ReleaseRecipients(ctx, c.ID, []int64{again[0].ID}, 0, true); err != nil {
		t.Fatal(err)
	}
	back, _ := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 10, time.Minute, nil)
	if len(back) != 1 || back[0].Attempts != 2 {
		t.Errorf("released row: %+v", back)
	}
	if done, err := e.db.FinishCampaign(ctx, c.ID); err != nil || done {
		t.Errorf("finished with rows left: %v %v", done, err)
	}
}

func TestRetryFailedAndPause(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	c := e.ready(t)
	_, _, err := e.db.RetryFailed(ctx, e.acct, apiActor, c.ID, time.Now())
	wantConflict(t, err, "not_sent")
	_, err = e.db.PauseNewsletter(ctx, e.acct, apiActor, c.ID)
	wantConflict(t, err, "not_sending")
	if _, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	rows, _ := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 10, time.Minute, nil)
	var outs []store.Outcome
	for i, r := range rows {
		o := store.Outcome{RecipientID: r.ID, Email: r.Email, Status: store.RecipientSent, At: time.Now()}
		if i < 2 {
			o.Status, o.Error = store.RecipientFailed, "550 no"
		}
		outs = append(outs, o)
	}
	if _, err := e.db.RecordOutcomes(ctx, e.acct, c.ID, outs); err != nil {
		t.Fatal(err)
	}
	if done, err := e.db.FinishCampaign(ctx, c.ID); err != nil || !done {
		t.Fatalf("finish: %v %v", done, err)
	}
	_, err = e.db.PauseNewsletter(ctx, e.acct, apiActor, c.ID)
	wantConflict(t, err, "not_sending")
	got, n, err := e.db.RetryFailed(ctx, e.acct, apiActor, c.ID, time.Now())
	if err != nil || n != 2 || got.Status != store.CampaignSending || got.FailedCount != 0 || got.FinishedAt != nil {
		t.Fatalf("retry: %+v %d %v", got, n, err)
	}
	requeued, _ := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 10, time.Minute, nil)
	if len(requeued) != 2 || requeued[0].Attempts != 1 {
		t.Errorf("requeued %+v", requeued)
	}
	if p, err := e.db.PauseNewsletter(ctx, e.acct, apiActor, c.ID); err != nil || p.Status != store.CampaignPaused {
		t.Errorf("pause: %v %v", p.Status, err)
	}
	if active, _ := e.db.ActiveCampaigns(ctx, 10); len(active) != 0 {
		t.Errorf("a paused campaign is not active: %v", active)
	}
	if r, err := e.db.ResumeNewsletter(ctx, e.acct, apiActor, c.ID); err != nil || r.Status != store.CampaignSending {
		t.Errorf("resume: %v %v", r.Status, err)
	}
}

func TestScheduleAndEmails(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	c := e.ready(t)
	now := time.Now()
	_, err := e.db.ScheduleNewsletter(ctx, e.acct, apiActor, c.ID, now.Add(-time.Minute), store.StartOptions{Now: now})
	wantValidation(t, err, "scheduled_at")
	s, err := e.db.ScheduleNewsletter(ctx, e.acct, apiActor, c.ID, now.Add(time.Hour), store.StartOptions{Now: now})
	if err != nil || s.Status != store.CampaignScheduled || s.ScheduledAt == nil {
		t.Fatalf("schedule: %+v %v", s, err)
	}
	_, err = e.db.UpdateNewsletter(ctx, e.acct, apiActor, c.ID, store.NewsletterInput{Name: str("x")})
	wantConflict(t, err, "not_draft")
	if _, _, err := e.db.StartNextDue(ctx, store.StartOptions{Now: now}); !errors.Is(err, store.ErrNothingDue) {
		t.Errorf("not due yet: %v", err)
	}
	u, err := e.db.UnscheduleNewsletter(ctx, e.acct, apiActor, c.ID)
	if err != nil || u.Status != store.CampaignDraft || u.ScheduledAt != nil {
		t.Fatalf("unschedule: %+v %v", u, err)
	}
	_, err = e.db.UnscheduleNewsletter(ctx, e.acct, apiActor, c.ID)
	wantConflict(t, err, "not_scheduled")

	for _, tc := range []struct {
		in     store.EmailInput
		fields []string
	}{
		{store.EmailInput{}, []string{"to", "subject", "html"}},
		{store.EmailInput{To: []string{"x"}, Subject: "s", Text: "t"}, []string{"to"}},
		{store.EmailInput{Type: store.TypeTransactional, To: []string{"a@b.test"}, Subject: "s", Text: "t", ListIDs: []int64{e.a.ID}}, []string{"list_ids"}},
		{store.EmailInput{To: []string{"a@b.test"}, Subject: "s", Text: "t", Type: "newsletter"}, []string{"type"}},
		{store.EmailInput{Type: store.TypeFollowUp, ContactIDs: []int64{999999}, Subject: "s", Text: "t"}, []string{"contact_ids"}},
		{store.EmailInput{To: []string{"a@b.test"}, Subject: "s", Text: "t", ScheduledAt: ptr(now.Add(-time.Hour))}, []string{"scheduled_at"}},
	} {
		_, err := e.db.CreateEmail(ctx, e.acct, apiActor, tc.in, store.StartOptions{Now: now})
		wantValidation(t, err, tc.fields...)
	}
	// A follow-up to a list and two contacts, deduplicated; the unsubscribed
	// contact and the blocked address are skipped.
	var ids []int64
	for _, addr := range []string{"u4@example.com", "u6@example.com"} {
		c, err := e.db.ContactByEmail(ctx, e.acct, addr)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	res, err := e.db.CreateEmail(ctx, e.acct, apiActor, store.EmailInput{Type: store.TypeFollowUp, To: []string{"U1@Example.com", "fremd@example.net"},
		ContactIDs: ids, ListIDs: []int64{e.b.ID}, Subject: "Nachfass", Text: "Hallo"}, store.StartOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	// u1, fremd, u6, u3 queued; u4 (unsubscribed) and u5 (blocked) skipped.
	if res.Queued != 4 || res.Skipped != 2 || res.Campaign.Status != store.CampaignSending {
		t.Errorf("follow-up: %+v", res)
	}
	later := now.Add(time.Hour)
	sched, err := e.db.CreateEmail(ctx, e.acct, apiActor, store.EmailInput{To: []string{"a@b.test"}, Subject: "s", Text: "t", ScheduledAt: &later}, store.StartOptions{Now: now})
	if err != nil || sched.Campaign.Status != store.CampaignScheduled || sched.Queued != 0 {
		t.Fatalf("scheduled email: %+v %v", sched, err)
	}
	cancelled, err := e.db.CancelEmail(ctx, e.acct, apiActor, sched.Campaign.ID)
	if err != nil || cancelled.Status != store.CampaignCancelled {
		t.Fatalf("cancel: %+v %v", cancelled, err)
	}
	_, err = e.db.CancelEmail(ctx, e.acct, apiActor, res.Campaign.ID)
	wantConflict(t, err, "not_scheduled")
	list, total, err := e.db.Emails(ctx, e.acct, store.CampaignCancelled, store.Page{Page: 1, PerPage: 10})
	if err != nil || total != 1 || list[0].ID != sched.Campaign.ID || list[0].HTML != "" {
		t.Errorf("emails: %d %+v %v", total, list, err)
	}
}
