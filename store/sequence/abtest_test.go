package sequence_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/abtest"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/sequence"
)

// sender runs the send queue against the test SMTP server until stop.
func (e *env) sender() (stop func()) {
	e.t.Helper()
	tr := mailer.NewTransports(e.db, e.box, mailer.TransportOptions{HELO: "rundbrief.test", DefaultFrom: mailer.DefaultFrom("https://rb.test")})
	tokens, err := mailer.NewTokens(testSecret)
	if err != nil {
		e.t.Fatal(err)
	}
	w := mailer.NewWorker(e.db, tr, mailer.WorkerOptions{Links: mailer.LinkBuilder{BaseURL: "https://rb.test", Tokens: tokens},
		PollInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Run(ctx) })
	return func() { cancel(); wg.Wait() }
}

// waitMessages waits until the SMTP server holds n messages and the send
// worker has recorded their outcomes (no recipient of the account is still
// being sent: a lane hands its outcomes over up to 250 ms after the messages
// went out, and a fixed pause here let a busy machine read the counts before
// them), and a moment longer, so that a message too many would show.
func (e *env) waitMessages(n int) {
	e.t.Helper()
	deadline := time.Now().Add(time.Minute)
	sending := func() int {
		var k int
		e.scalar(&k, `SELECT count(*) FROM campaign_recipients WHERE account_id = $1 AND status = 'sending'`, e.acct)
		return k
	}
	for (e.srv.Count() < n || sending() > 0) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(150 * time.Millisecond)
	if e.srv.Count() != n {
		e.t.Fatalf("%d messages at the SMTP server, want %d", e.srv.Count(), n)
	}
}

// subjectsByAddress is each recipient's subjects at the SMTP server.
func (e *env) subjectsByAddress() map[string][]string {
	out := map[string][]string{}
	for _, m := range e.srv.Messages() {
		s := headerOf(string(m.Data), "Subject")
		for _, to := range m.To {
			out[to] = append(out[to], s)
		}
	}
	return out
}

// variantCounts counts the recipient rows of a campaign by variant ("" for
// none) and held-back ("held").
func (e *env) variantCounts(campaignID int64) map[string]int {
	e.t.Helper()
	var rows []struct {
		Variant string `db:"variant"`
		N       int    `db:"n"`
	}
	if err := e.db.SelectContext(context.Background(), &rows, `SELECT CASE WHEN status = 'waiting' THEN 'held'
  ELSE coalesce(variant, '') END AS variant, count(*) AS n FROM campaign_recipients WHERE campaign_id = $1 GROUP BY 1`, campaignID); err != nil {
		e.t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range rows {
		out[r.Variant] = r.N
	}
	return out
}

func (e *env) onlyDay(seqID int64) store.SequenceDay {
	e.t.Helper()
	days, err := e.db.SequenceDays(context.Background(), e.acct, seqID)
	if err != nil || len(days) != 1 {
		e.t.Fatalf("days: %v, %v", days, err)
	}
	return days[0]
}

func ptr[T any](v T) *T { return &v }

// TestSoapSplitTest runs a split A/B test of a sequence day's subject with an
// injected clock against a real SMTP server: it starts with the first
// participant who reaches the day, every participant who reaches the day
// while it runs gets A or B (exactly half each, also when two workers claim
// at once), the results count sends and opens per variant, and once the
// A/B worker decided B after wait_hours, participants who reach the day
// afterwards get B. Every participant gets the day exactly once.
func TestSoapSplitTest(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.contacts("split", 50)
	seq := e.sequence("Split", "", 0)
	day := e.onlyDay(seq.ID)
	t0 := berlin(2026, 7, 1, 10, 0)
	e.clock.Set(t0)
	svc := sequence.New(e.db, nil, nil, nil, nil, sequence.Options{Now: e.clock.Now})
	ab := abtest.New(e.db, nil, abtest.Options{Now: e.clock.Now})
	test, err := ab.CreateABTest(ctx, e.acct, sys, store.ABInput{TargetType: ptr(store.ABTargetSoap), TargetID: &day.ID,
		TestType: ptr(store.ABTypeSubject), BSubject: ptr("Variante B für {{vorname}}"), WaitHours: ptr(2)})
	if err != nil {
		t.Fatal(err)
	}
	if test.Status != store.ABDraft || test.TargetSubject != "Tag 1 für {{vorname}}" || test.Mode != store.ABModeSplit {
		t.Fatalf("new test: %+v", test)
	}
	// One active test per day.
	var ce *store.ConflictError
	if _, err := ab.CreateABTest(ctx, e.acct, sys, store.ABInput{TargetType: ptr(store.ABTargetSoap), TargetID: &day.ID,
		TestType: ptr(store.ABTypeSubject), BSubject: ptr("Noch einer")}); !errors.As(err, &ce) || ce.Reason != "ab_test_exists" {
		t.Fatalf("second test: %v", err)
	}
	if _, err := ab.SetWinner(ctx, e.acct, sys, test.ID, "A"); !errors.As(err, &ce) || ce.Reason != "ab_test_not_running" {
		t.Fatalf("winner of a draft: %v", err)
	}
	if _, err := svc.Activate(ctx, e.acct, sys, seq.ID); err != nil {
		t.Fatal(err)
	}
	stop := e.sender()
	defer stop()

	if _, err := svc.Enrol(ctx, e.acct, sys, seq.ID, ids[:20], nil); err != nil {
		t.Fatal(err)
	}
	if r := e.tick(e.worker(e.db)); r.Queued != 20 {
		t.Fatalf("first claim: %+v", r)
	}
	test, err = e.db.ABTest(ctx, e.acct, test.ID)
	if err != nil {
		t.Fatal(err)
	}
	if test.Status != store.ABRunning || test.StartedAt == nil || !test.StartedAt.Equal(t0) ||
		!test.DecideAt.Equal(t0.Add(2*time.Hour)) || test.CampaignID == nil || *test.CampaignID != day.CampaignID {
		t.Fatalf("started test: %+v", test)
	}
	// A second batch an hour later, claimed by two workers at once.
	e.clock.Set(t0.Add(time.Hour))
	if _, err := svc.Enrol(ctx, e.acct, sys, seq.ID, ids[20:40], nil); err != nil {
		t.Fatal(err)
	}
	other := dbtest.Open(t, e.url)
	var wg sync.WaitGroup
	for _, w := range []*sequence.Worker{
		sequence.NewWorker(e.db, nil, sequence.WorkerOptions{Now: e.clock.Now, Batch: 7}),
		sequence.NewWorker(other, nil, sequence.WorkerOptions{Now: e.clock.Now, Batch: 7}),
	} {
		wg.Go(func() {
			if _, err := w.Tick(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := e.variantCounts(*test.CampaignID); got["A"] != 20 || got["B"] != 20 || len(got) != 2 {
		t.Fatalf("variants while running: %v", got)
	}
	e.waitMessages(40)
	subjects := map[string]int{}
	for _, m := range e.srv.Messages() {
		s := headerOf(string(m.Data), "Subject")
		subjects[strings.Fields(s)[0]]++
	}
	if subjects["Tag"] != 20 || subjects["Variante"] != 20 {
		t.Fatalf("subjects: %v", subjects)
	}
	// Opens for B: B leads on the metric opens.
	e.exec(`UPDATE campaign_recipients SET opened_at = now() WHERE id IN (SELECT id FROM campaign_recipients
  WHERE campaign_id = $1 AND variant = 'B' ORDER BY id LIMIT 8)`, *test.CampaignID)
	e.exec(`UPDATE campaign_recipients SET opened_at = now() WHERE id IN (SELECT id FROM campaign_recipients
  WHERE campaign_id = $1 AND variant = 'A' ORDER BY id LIMIT 2)`, *test.CampaignID)
	res, err := e.db.ABResults(ctx, test)
	if err != nil {
		t.Fatal(err)
	}
	if res.A.Sent != 20 || res.B.Sent != 20 || res.A.UniqueOpens != 2 || res.B.UniqueOpens != 8 || res.Leader != "B" ||
		res.Confidence < 0.9 || res.Metric != store.ABMetricOpens {
		t.Fatalf("results: %+v", res)
	}

	// Not due before wait_hours; then the A/B worker decides B.
	e.clock.Set(t0.Add(2*time.Hour - time.Second))
	if n, err := ab.DecideDue(ctx); err != nil || n != 0 {
		t.Fatalf("decided early: %d, %v", n, err)
	}
	e.clock.Set(t0.Add(2 * time.Hour))
	if n, err := ab.DecideDue(ctx); err != nil || n != 1 {
		t.Fatalf("decide: %d, %v", n, err)
	}
	test, _ = e.db.ABTest(ctx, e.acct, test.ID)
	if test.Status != store.ABCompleted || test.Winner == nil || *test.Winner != "B" || !test.Copied {
		t.Fatalf("decided test: %+v", test)
	}
	after := e.onlyDay(seq.ID)
	if after.CampaignID == *test.CampaignID || after.Subject != "Variante B für {{vorname}}" || after.HTML != day.HTML {
		t.Fatalf("day after the decision: %+v", after)
	}
	// Everyone after gets the winner; nobody gets the day twice.
	if _, err := svc.Enrol(ctx, e.acct, sys, seq.ID, ids[40:], nil); err != nil {
		t.Fatal(err)
	}
	if r := e.tick(e.worker(e.db)); r.Queued != 10 {
		t.Fatalf("after the decision: %+v", r)
	}
	if r := e.tick(e.worker(e.db)); r.Queued != 0 {
		t.Fatalf("queued twice: %+v", r)
	}
	e.waitMessages(50)
	got := e.subjectsByAddress()
	for i := 41; i <= 50; i++ {
		if s := got[addr("split", i)]; len(s) != 1 || !strings.HasPrefix(s[0], "Variante B") {
			t.Errorf("split%d after the decision: %q", i, s)
		}
	}
	if len(got) != 50 {
		t.Fatalf("%d recipients", len(got))
	}
	for a, s := range got {
		if len(s) != 1 {
			t.Errorf("%s got %d messages", a, len(s))
		}
	}
	if c := e.variantCounts(after.CampaignID); c[""] != 10 {
		t.Fatalf("rows of the winner's campaign: %v", c)
	}
	// The day can be tested again.
	if _, err := ab.CreateABTest(ctx, e.acct, sys, store.ABInput{TargetType: ptr(store.ABTargetSoap), TargetID: &day.ID,
		TestType: ptr(store.ABTypeSubject), BSubject: ptr("Dritter Betreff")}); err != nil {
		t.Fatalf("next test of the day: %v", err)
	}
}

func addr(prefix string, i int) string {
	return prefix + strconv.Itoa(i) + "@example.com"
}

// TestSoapWinnerTest runs a test of a day's content in mode winner: the
// participants who reach the day within wait_hours are the test group,
// split A/B with variant B's tracked links; those who reach it later wait,
// also while the decision waits for a person (auto_apply_winner false), and
// get the winner with everyone after. The day's content cannot change while
// the test runs. Every participant gets the day exactly once.
func TestSoapWinnerTest(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.contacts("win", 40)
	seq := e.sequence("Gewinner", "", 0)
	day := e.onlyDay(seq.ID)
	t0 := berlin(2026, 7, 2, 9, 0)
	e.clock.Set(t0)
	svc := sequence.New(e.db, nil, nil, nil, nil, sequence.Options{Now: e.clock.Now})
	ab := abtest.New(e.db, nil, abtest.Options{Now: e.clock.Now})
	if _, err := svc.Activate(ctx, e.acct, sys, seq.ID); err != nil {
		t.Fatal(err)
	}
	stop := e.sender()
	defer stop()
	// The day has sent before the test: the test gets a campaign of its own.
	if _, err := svc.Enrol(ctx, e.acct, sys, seq.ID, ids[:5], nil); err != nil {
		t.Fatal(err)
	}
	if r := e.tick(e.worker(e.db)); r.Queued != 5 {
		t.Fatalf("before the test: %+v", r)
	}
	_, err := ab.CreateABTest(ctx, e.acct, sys, store.ABInput{TargetType: ptr(store.ABTargetSoap), TargetID: &day.ID,
		TestType: ptr(store.ABTypeSender), BFromName: ptr("Jemand")})
	var ve *store.ValidationError
	if !errors.As(err, &ve) || ve.Fields["test_type"] == "" {
		t.Fatalf("sender test of a day: %v", err)
	}
	test, err := ab.CreateABTest(ctx, e.acct, sys, store.ABInput{TargetType: ptr(store.ABTargetSoap), TargetID: &day.ID,
		TestType: ptr(store.ABTypeContent), Mode: ptr(store.ABModeWinner), WaitHours: ptr(1), AutoApplyWinner: ptr(false),
		SplitA: ptr(50), BHTML: ptr(`<p>Variante B <a href="https://example.com/b">Angebot</a></p>`)})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Set(t0.Add(time.Minute))
	if _, err := svc.Enrol(ctx, e.acct, sys, seq.ID, ids[5:25], nil); err != nil {
		t.Fatal(err)
	}
	if r := e.tick(e.worker(e.db)); r.Queued != 20 {
		t.Fatalf("test group: %+v", r)
	}
	test, _ = e.db.ABTest(ctx, e.acct, test.ID)
	if test.Status != store.ABRunning || test.CampaignID == nil || *test.CampaignID == day.CampaignID {
		t.Fatalf("started test: %+v", test)
	}
	if c := e.variantCounts(*test.CampaignID); c["A"] != 10 || c["B"] != 10 || len(c) != 2 {
		t.Fatalf("test group: %v", c)
	}
	var bLinks int
	e.scalar(&bLinks, `SELECT count(*) FROM campaign_links WHERE campaign_id = $1 AND position >= $2 AND url = 'https://example.com/b'`,
		*test.CampaignID, store.ABLinkOffset)
	if bLinks != 1 {
		t.Fatalf("%d tracked links of variant B", bLinks)
	}
	content := "<p>Neu</p>"
	var ce *store.ConflictError
	if _, err := svc.UpdateDay(ctx, e.acct, sys, seq.ID, day.ID, store.DayInput{Content: store.NewsletterInput{HTML: &content}}); !errors.As(err, &ce) || ce.Reason != "ab_test_running" {
		t.Fatalf("edit while testing: %v", err)
	}

	// After the window: held back, before and after the suggestion.
	e.clock.Set(t0.Add(time.Hour + time.Minute))
	if _, err := svc.Enrol(ctx, e.acct, sys, seq.ID, ids[25:31], nil); err != nil {
		t.Fatal(err)
	}
	if r := e.tick(e.worker(e.db)); r.Queued != 6 {
		t.Fatalf("after the window: %+v", r)
	}
	if n, err := ab.DecideDue(ctx); err != nil || n != 1 {
		t.Fatalf("decide: %d, %v", n, err)
	}
	test, _ = e.db.ABTest(ctx, e.acct, test.ID)
	if test.Status != store.ABRunning || test.SuggestedWinner == nil {
		t.Fatalf("suggested: %+v", test)
	}
	if _, err := svc.Enrol(ctx, e.acct, sys, seq.ID, ids[31:35], nil); err != nil {
		t.Fatal(err)
	}
	if r := e.tick(e.worker(e.db)); r.Queued != 4 {
		t.Fatalf("waiting for the winner: %+v", r)
	}
	res, err := e.db.ABResults(ctx, test)
	if err != nil {
		t.Fatal(err)
	}
	if res.Waiting != 10 || res.A.Sent+res.B.Sent > 20 {
		t.Fatalf("results while waiting: %+v", res)
	}
	e.waitMessages(25)

	w, err := ab.SetWinner(ctx, e.acct, sys, test.ID, "B")
	if err != nil || w.Released != 10 || !w.Copied {
		t.Fatalf("winner: %+v, %v", w, err)
	}
	if _, err := svc.Enrol(ctx, e.acct, sys, seq.ID, ids[35:], nil); err != nil {
		t.Fatal(err)
	}
	if r := e.tick(e.worker(e.db)); r.Queued != 5 {
		t.Fatalf("after the winner: %+v", r)
	}
	e.waitMessages(40)
	res, _ = e.db.ABResults(ctx, test)
	if res.A.Sent != 10 || res.B.Sent != 10 || res.Waiting != 0 {
		t.Fatalf("final results: %+v", res)
	}
	bodies := map[string]string{}
	for _, m := range e.srv.Messages() {
		for _, to := range m.To {
			if _, dup := bodies[to]; dup {
				t.Errorf("%s got the day twice", to)
			}
			bodies[to] = string(m.Data)
		}
	}
	for i := 26; i <= 40; i++ {
		if b := bodies[addr("win", i)]; !strings.Contains(b, "Variante B") {
			t.Errorf("win%d did not get the winner B", i)
		}
	}
	q := e.queued(seq.ID)
	for _, id := range ids {
		if q[id] != 1 {
			t.Fatalf("contact %d has %d recipient rows", id, q[id])
		}
	}
}
