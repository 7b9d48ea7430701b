package mailer_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/abtest"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func sp(s string) *string { return &s }
func ip(v int) *int       { return &v }

// testClock is a clock tests move by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

type abRow struct {
	Email   string  `db:"email"`
	Status  string  `db:"status"`
	Variant *string `db:"variant"`
	Held    bool    `db:"ab_held"`
}

func (e *sendEnv) abRows(t *testing.T, campaignID int64) map[string]abRow {
	t.Helper()
	var rows []abRow
	if err := e.db.SelectContext(context.Background(), &rows, `SELECT email, status, variant, ab_held FROM campaign_recipients WHERE campaign_id = $1`, campaignID); err != nil {
		t.Fatal(err)
	}
	out := map[string]abRow{}
	for _, r := range rows {
		out[r.Email] = r
	}
	return out
}

// waitIdle waits until none of the campaign's recipients is queued or being
// sent.
func (e *sendEnv) waitIdle(t *testing.T, campaignID int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		e.scalar(&n, `SELECT count(*) FROM campaign_recipients WHERE campaign_id = $1 AND status IN ('queued', 'sending')`, campaignID)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("campaign %d: %d recipients still queued", campaignID, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestABWinnerModeSendsSampleThenWinner sends a newsletter with an A/B test
// in mode winner through the real SMTP test server: first only the test
// group, each recipient with its variant's subject and content; the others
// wait. The scheduler, on an injected clock, decides nothing before
// wait_hours and then the winner by clicks exactly once; the waiting
// recipients get the winner, and in the end every recipient got exactly one
// message.
func TestABWinnerModeSendsSampleThenWinner(t *testing.T) {
	const n = 300
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{})
	nl := e.newsletter(e.seedList("ab", n))
	bHTML := `<p>Hallo {{vorname}}, <a href="https://b.example.com/angebot">das neue Angebot</a></p>`
	ab, err := e.db.CreateABTest(ctx, e.acct, systemActor, store.ABInput{CampaignID: &nl.ID, TestType: sp("combo"),
		BSubject: sp("B: Neues für {{vorname}}"), BHTML: &bHTML, Mode: sp("winner"), SamplePct: ip(30), WaitHours: ip(2)})
	if err != nil {
		t.Fatal(err)
	}
	clock := &testClock{now: time.Now()}
	w := e.worker(e.db, e.transports, mailer.WorkerOptions{})
	svc := campaign.New(e.db, e.transports, w, campaign.Options{Links: e.links, Now: clock.Now})
	stop := running(w.Run)
	defer stop()
	if _, err := svc.SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}
	e.waitIdle(t, nl.ID)

	rows := e.abRows(t, nl.ID)
	sample, held := 0, 0
	for _, r := range rows {
		if r.Held {
			held++
			if r.Status != store.RecipientWaiting {
				t.Fatalf("held back but %s: %+v", r.Status, r)
			}
		} else {
			sample++
		}
	}
	if sample == 0 || held == 0 || e.srv.Count() != sample {
		t.Fatalf("sample %d, held %d, messages %d", sample, held, e.srv.Count())
	}
	if c, _ := e.db.CampaignByID(ctx, nl.ID); c.Status != store.CampaignSending {
		t.Fatalf("campaign finished while recipients wait: %s", c.Status)
	}
	var bLinks int
	e.scalar(&bLinks, `SELECT count(*) FROM campaign_links WHERE campaign_id = $1 AND position = $2 AND url = 'https://b.example.com/angebot'`, nl.ID, store.ABLinkOffset)
	if bLinks != 1 {
		t.Fatal("variant B's link is not stored for click tracking")
	}
	for i := 1; i <= n; i++ {
		addr := userEmail("ab", i)
		r := rows[addr]
		if r.Held {
			continue
		}
		m := e.messageTo(t, addr)
		switch *r.Variant {
		case "A":
			if m.subject != fmt.Sprintf("Neuigkeiten für Vorname%d", i) || !strings.Contains(m.html, "Ihre Kundennummer") {
				t.Fatalf("variant A to %s: %q", addr, m.subject)
			}
		case "B":
			if m.subject != fmt.Sprintf("B: Neues für Vorname%d", i) || strings.Contains(m.html, "Kundennummer") ||
				!strings.Contains(m.html, "https://rb.test/c/") || strings.Contains(m.html, "b.example.com") {
				t.Fatalf("variant B to %s: %q\n%s", addr, m.subject, m.html)
			}
		}
	}

	// B gets the clicks; the decision waits for wait_hours on the clock.
	e.exec(`UPDATE campaign_recipients SET opened_at = now(), clicked_at = now() WHERE campaign_id = $1 AND variant = 'B' AND NOT ab_held`, nl.ID)
	abs := abtest.New(e.db, w, abtest.Options{Now: clock.Now})
	started := clock.Now()
	clock.Set(started.Add(2*time.Hour - time.Minute))
	if k, err := abs.DecideDue(ctx); err != nil || k != 0 {
		t.Fatalf("decided before wait_hours: %d %v", k, err)
	}
	clock.Set(started.Add(2*time.Hour + time.Minute))
	other := abtest.New(dbtest.Open(t, e.url), nil, abtest.Options{Now: clock.Now})
	var wg sync.WaitGroup
	var k1, k2 int
	wg.Go(func() { k1, _ = abs.DecideDue(ctx) })
	wg.Go(func() { k2, _ = other.DecideDue(ctx) })
	wg.Wait()
	if k1+k2 != 1 {
		t.Fatalf("decided %d + %d times", k1, k2)
	}
	c := e.waitStatus(nl.ID, store.CampaignSent)

	counts := rcptCounts(e.srv.Messages())
	for i := 1; i <= n; i++ {
		addr := userEmail("ab", i)
		if counts[addr] != 1 {
			t.Errorf("%s got %d messages", addr, counts[addr])
		}
		if rows[addr].Held {
			if m := e.messageTo(t, addr); m.subject != fmt.Sprintf("B: Neues für Vorname%d", i) {
				t.Errorf("winner to %s: %q", addr, m.subject)
			}
		}
	}
	if e.srv.Count() != n || c.SentCount != n {
		t.Errorf("%d messages, %d sent, want %d", e.srv.Count(), c.SentCount, n)
	}
	got, err := e.db.ABTest(ctx, e.acct, ab.ID)
	if err != nil || got.Status != store.ABCompleted || got.Winner == nil || *got.Winner != "B" || got.Released != int64(held) || !got.Copied {
		t.Fatalf("test: %+v %v", got, err)
	}
	var events int
	e.scalar(&events, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'ab_test.completed'`, e.acct)
	if events != 1 {
		t.Errorf("%d ab_test.completed events", events)
	}
	res, err := e.db.ABResults(ctx, got)
	if err != nil || res.A.Sent+res.B.Sent != int64(sample) || res.Leader != "B" || res.Waiting != 0 {
		t.Errorf("results count the test group only: %+v %v", res, err)
	}
}

// TestABSenderTestOfAScheduledEmail runs a split test of a single email
// (scheduled, so it can get a test before it is sent): each recipient gets
// its variant's sender name.
func TestABSenderTestOfAScheduledEmail(t *testing.T) {
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{})
	clock := &testClock{now: time.Now()}
	w := e.worker(e.db, e.transports, mailer.WorkerOptions{})
	svc := campaign.New(e.db, e.transports, w, campaign.Options{Links: e.links, Now: clock.Now})
	var to []string
	for i := range 40 {
		to = append(to, fmt.Sprintf("kunde%d@example.org", i))
	}
	at := clock.Now().Add(time.Hour)
	res, err := svc.SendEmail(ctx, e.acct, systemActor, store.EmailInput{To: to, Subject: "Ihre Rechnung", HTML: "<p>Danke</p>",
		FromName: "Acme", ScheduledAt: &at})
	if err != nil {
		t.Fatal(err)
	}
	ab, err := e.db.CreateABTest(ctx, e.acct, systemActor, store.ABInput{CampaignID: &res.Campaign.ID, TestType: sp("sender"),
		BFromName: sp("Jana von Acme"), SplitA: ip(50)})
	if err != nil || ab.TargetType != store.ABTargetEmail {
		t.Fatalf("create: %+v %v", ab, err)
	}
	clock.Set(at.Add(time.Second))
	if k, err := campaign.NewScheduler(e.db, svc, campaign.SchedulerOptions{Now: clock.Now}).StartDue(ctx); err != nil || k != 1 {
		t.Fatalf("start: %d %v", k, err)
	}
	stop := running(w.Run)
	defer stop()
	e.waitStatus(res.Campaign.ID, store.CampaignSent)
	rows := e.abRows(t, res.Campaign.ID)
	seen := map[string]int{}
	for _, addr := range to {
		m := e.messageTo(t, addr)
		v := *rows[addr].Variant
		seen[v]++
		want := map[string]string{"A": `"Acme" <news@acme.test>`, "B": `"Jana von Acme" <news@acme.test>`}[v]
		if got := m.header.Get("From"); got != want {
			t.Errorf("%s (variant %s): From %q, want %q", addr, v, got, want)
		}
	}
	if seen["A"] == 0 || seen["B"] == 0 || seen["A"]+seen["B"] != len(to) {
		t.Errorf("variants %v", seen)
	}
	if got, _ := e.db.ABTest(ctx, e.acct, ab.ID); got.Status != store.ABRunning {
		t.Errorf("status %s", got.Status)
	}
}
