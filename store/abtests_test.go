package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

func intp(v int) *int { return &v }

// bigList puts n subscribed contacts ab<i>@example.com into a new list of
// the env's account, in two set-based statements.
func (e campaignEnv) bigList(t testing.TB, n int) int64 {
	t.Helper()
	prefix := "ab" + strings.ToLower(store.RandomString(6)) + "-"
	l := mkList(t, e.db, e.acct, prefix, false)
	e.exec(t, `INSERT INTO contacts (account_id, email, first_name) SELECT $1, $3 || g || '@example.com', 'V' || g FROM generate_series(1, $2::int) g`, e.acct, n, prefix)
	e.exec(t, `INSERT INTO list_members (list_id, contact_id, account_id) SELECT $1, id, account_id FROM contacts WHERE account_id = $2 AND email LIKE $3`, l.ID, e.acct, prefix+"%")
	return l.ID
}

func (e campaignEnv) abTest(t testing.TB, in store.ABInput) store.ABTest {
	t.Helper()
	ab, err := e.db.CreateABTest(context.Background(), e.acct, apiActor, in)
	if err != nil {
		t.Fatal(err)
	}
	return ab
}

type variantRow struct {
	Email   string  `db:"email"`
	Status  string  `db:"status"`
	Variant *string `db:"variant"`
	Held    bool    `db:"ab_held"`
}

func (e campaignEnv) variants(t *testing.T, campaignID int64) []variantRow {
	t.Helper()
	var rows []variantRow
	if err := e.db.SelectContext(context.Background(), &rows, `SELECT email, status, variant, ab_held FROM campaign_recipients WHERE campaign_id = $1`, campaignID); err != nil {
		t.Fatal(err)
	}
	return rows
}

// assignment recomputes a started test's assignment from its id and the
// recipients' addresses (store.ABAssignment).
func assignment(ab store.ABTest, rows []variantRow) map[string]string {
	emails := make([]string, len(rows))
	for i, r := range rows {
		emails[i] = r.Email
	}
	return store.ABAssignment(ab.ID, ab.Mode, ab.SplitA, ab.SamplePct, emails)
}

// checkAssignment checks each recipient's variant against the assignment
// recomputed from the test id and the addresses (store.ABAssignment).
func checkAssignment(t *testing.T, ab store.ABTest, rows []variantRow) {
	t.Helper()
	want := assignment(ab, rows)
	for _, r := range rows {
		got := ""
		if r.Variant != nil {
			got = *r.Variant
		}
		if got != want[r.Email] {
			t.Fatalf("%s: variant %q, ABAssignment says %q", r.Email, got, want[r.Email])
		}
	}
}

func TestABSplitRatioOver10000Recipients(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	list := e.bigList(t, 10000)
	c := e.newsletter(t, store.NewsletterInput{Subject: str("Hallo"), HTML: str("<p>Hallo</p>"), ListIDs: &[]int64{list}})
	ab := e.abTest(t, store.ABInput{CampaignID: &c.ID, TestType: str("subject"), BSubject: str("Hallo B"), SplitA: intp(30)})
	if ab.Status != store.ABDraft || ab.TargetType != store.ABTargetNewsletter || ab.WinnerMetric != store.ABMetricOpens || ab.Mode != store.ABModeSplit {
		t.Fatalf("created: %+v", ab)
	}
	if _, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	rows := e.variants(t, c.ID)
	if len(rows) != 10000 {
		t.Fatalf("%d recipients", len(rows))
	}
	ab.Mode, ab.SplitA = store.ABModeSplit, 30
	want := assignment(ab, rows)
	a := 0
	for _, r := range rows {
		if r.Variant == nil || r.Status != store.RecipientQueued || r.Held {
			t.Fatalf("split mode: %+v", r)
		}
		// Reproducible: the same ranking of test id and address in Go.
		if *r.Variant != want[r.Email] {
			t.Fatalf("%s: variant %s, ABAssignment says %s", r.Email, *r.Variant, want[r.Email])
		}
		if *r.Variant == "A" {
			a++
		}
	}
	if a != 3000 {
		t.Errorf("variant A: %d of 10000, want exactly 3000", a)
	}

	got, err := e.db.ABTest(ctx, e.acct, ab.ID)
	if err != nil || got.Status != store.ABRunning || got.StartedAt == nil || got.DecideAt == nil ||
		!got.DecideAt.Equal(got.StartedAt.Add(4*time.Hour)) || got.ASubject != "Hallo" {
		t.Fatalf("running: %+v %v", got, err)
	}
}

func TestABWinnerModeHoldsBackTheRest(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	list := e.bigList(t, 10000)
	c := e.newsletter(t, store.NewsletterInput{Subject: str("Hallo"), HTML: str("<p>Hallo</p>"), ListIDs: &[]int64{list}})
	ab := e.abTest(t, store.ABInput{CampaignID: &c.ID, TestType: str("content"), BHTML: str("<p>Neu</p>"), Mode: str("winner"),
		SamplePct: intp(20), SplitA: intp(50), WaitHours: intp(2)})
	if _, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	rows := e.variants(t, c.ID)
	want := assignment(ab, rows)
	sample, a := 0, 0
	for _, r := range rows {
		inSample := want[r.Email] != ""
		switch {
		case inSample && (r.Status != store.RecipientQueued || r.Held || r.Variant == nil || *r.Variant != want[r.Email]):
			t.Fatalf("sample row: %+v, ABAssignment says %q", r, want[r.Email])
		case !inSample && (r.Status != store.RecipientWaiting || !r.Held || r.Variant != nil):
			t.Fatalf("held row: %+v", r)
		}
		if inSample {
			sample++
			if *r.Variant == "A" {
				a++
			}
		}
	}
	if sample != 2000 || a != 1000 {
		t.Errorf("sample %d (A %d) of 10000, want exactly 2000 (A 1000)", sample, a)
	}

	// The campaign cannot finish while recipients wait.
	e.exec(t, `UPDATE campaign_recipients SET status = 'sent', sent_at = now() WHERE campaign_id = $1 AND status = 'queued'`, c.ID)
	if done, err := e.db.FinishCampaign(ctx, c.ID); err != nil || done {
		t.Fatalf("finished with waiting recipients: %v %v", done, err)
	}
	// Stop: the waiting recipients get variant A.
	ab, released, err := e.db.StopABTest(ctx, e.acct, apiActor, ab.ID, time.Now())
	if err != nil || released != int64(10000-sample) || ab.Status != store.ABStopped || ab.StatusLabel() != "Gestoppt" {
		t.Fatalf("stop: %+v %d %v", ab, released, err)
	}
	for _, r := range e.variants(t, c.ID) {
		if r.Held && (r.Status != store.RecipientQueued || *r.Variant != "A") {
			t.Fatalf("released row: %+v", r)
		}
	}
	if _, _, err := e.db.StopABTest(ctx, e.acct, apiActor, ab.ID, time.Now()); !isConflict(err, "ab_test_stopped") {
		t.Errorf("second stop: %v", err)
	}
}

// BenchmarkABWinnerStart starts a newsletter with an A/B test in winner
// mode (sample 20 %) to BENCH_AB_RECIPIENTS (default 50,000) subscribers:
// queueing them, drawing the sample, splitting it and holding back the rest,
// in the start's one transaction. It reports the start's milliseconds and
// microseconds per recipient.
func BenchmarkABWinnerStart(b *testing.B) {
	n := 50_000
	if v, err := strconv.Atoi(os.Getenv("BENCH_AB_RECIPIENTS")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		e := newCampaignEnv(b)
		list := e.bigList(b, n)
		c := e.newsletter(b, store.NewsletterInput{Subject: str("Hallo"), HTML: str("<p>Hallo</p>"), ListIDs: &[]int64{list}})
		e.abTest(b, store.ABInput{CampaignID: &c.ID, TestType: str("content"), BHTML: str("<p>Neu</p>"), Mode: str("winner"),
			SamplePct: intp(20), SplitA: intp(50), WaitHours: intp(2)})
		b.StartTimer()
		start := time.Now()
		_, res, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{})
		total += time.Since(start)
		if err != nil || res.Queued != int64(n) {
			b.Fatalf("start: %+v %v", res, err)
		}
	}
	per := total / time.Duration(b.N)
	b.ReportMetric(float64(per.Microseconds())/1000, "start_ms")
	b.ReportMetric(float64(per.Nanoseconds())/1000/float64(n), "us/recipient")
}

func isConflict(err error, reason string) bool {
	var ce *store.ConflictError
	return errors.As(err, &ce) && ce.Reason == reason
}

// TestABGroupsAreExact: the test group and variant A are round(pct ×
// recipients), halves up, however small the campaign (drawing each address on
// its own gave 9 of 40 for 20 %), and the assignment is the one ABAssignment
// recomputes from the test id and the addresses.
func TestABGroupsAreExact(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	cases := []struct {
		n, splitA, samplePct int
		mode                 string
		sample, a            int // wanted test group (all in mode split) and variant A
	}{
		{40, 50, 20, "winner", 8, 4},
		{40, 30, 20, "winner", 8, 2}, // 2.4
		{40, 50, 30, "winner", 12, 6},
		{40, 50, 10, "winner", 4, 2},
		{40, 30, 0, "split", 40, 12},
		{40, 20, 0, "split", 40, 8},
		{7, 50, 0, "split", 7, 4},     // 3.5 rounds up
		{5, 50, 30, "winner", 2, 1},   // 1.5 rounds up; 1.0
		{25, 10, 0, "split", 25, 3},   // 2.5 rounds up
		{19, 50, 50, "winner", 10, 5}, // 9.5, 5.0
		{3, 50, 50, "winner", 2, 1},   // 1.5, 1.0
		{40, 90, 0, "split", 40, 36},
		{40, 50, 50, "winner", 20, 10},
	}
	for _, tc := range cases {
		list := e.bigList(t, tc.n)
		c := e.newsletter(t, store.NewsletterInput{Subject: str("Hallo"), HTML: str("<p>Hallo</p>"), ListIDs: &[]int64{list}})
		in := store.ABInput{CampaignID: &c.ID, TestType: str("subject"), BSubject: str("Hallo B"), SplitA: intp(tc.splitA), Mode: str(tc.mode)}
		if tc.mode == "winner" {
			in.SamplePct = intp(tc.samplePct)
		}
		ab := e.abTest(t, in)
		if _, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		rows := e.variants(t, c.ID)
		sample, a := 0, 0
		for _, r := range rows {
			if r.Variant != nil {
				sample++
				if *r.Variant == "A" {
					a++
				}
			}
		}
		if len(rows) != tc.n || sample != tc.sample || a != tc.a {
			t.Errorf("%d recipients, %s, split_a %d, sample_pct %d: test group %d, A %d; want %d, %d",
				len(rows), tc.mode, tc.splitA, tc.samplePct, sample, a, tc.sample, tc.a)
		}
		checkAssignment(t, ab, rows)
	}
}

func TestZTestConfidenceByHand(t *testing.T) {
	// 120 of 1000 against 150 of 1000: pooled p = 270/2000 = 0.135,
	// se = sqrt(0.135 · 0.865 · (1/1000 + 1/1000)) = 0.0152824,
	// z = (0.12 − 0.15) / 0.0152824 = −1.96304, two-sided confidence
	// 2·Φ(1.96304) − 1 = 0.95036.
	if got := store.ZTestConfidence(120, 1000, 150, 1000); math.Abs(got-0.95036) > 0.00005 {
		t.Errorf("confidence %.5f, want 0.95036", got)
	}
	// 30 of 200 against 30 of 200: no difference at all.
	if got := store.ZTestConfidence(30, 200, 30, 200); got != 0 {
		t.Errorf("equal rates: %v", got)
	}
	// 0 of 100 against 20 of 100: p = 0.1, se = sqrt(0.1·0.9·0.02) = 0.0424264,
	// z = 4.71405, confidence 0.9999976.
	if got := store.ZTestConfidence(0, 100, 20, 100); math.Abs(got-0.9999976) > 0.0000005 {
		t.Errorf("confidence %.7f, want 0.9999976", got)
	}
	if store.ZTestConfidence(0, 0, 5, 10) != 0 || store.ZTestConfidence(0, 10, 0, 10) != 0 {
		t.Error("empty groups or no successes must give 0")
	}
}

// abRunning is a running split test of 400 recipients, all sent, with opens
// given per variant.
func abRunning(t *testing.T, e campaignEnv, in store.ABInput, opensA, opensB int) (store.Campaign, store.ABTest) {
	t.Helper()
	ctx := context.Background()
	list := e.bigList(t, 400)
	c := e.newsletter(t, store.NewsletterInput{Subject: str("Hallo"), FromName: str("Acme"), HTML: str("<p>Hallo</p>"), ListIDs: &[]int64{list}})
	in.CampaignID = &c.ID
	ab := e.abTest(t, in)
	if _, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	e.exec(t, `UPDATE campaign_recipients SET status = 'sent', sent_at = now() WHERE campaign_id = $1 AND status = 'queued'`, c.ID)
	for v, n := range map[string]int{"A": opensA, "B": opensB} {
		e.exec(t, `UPDATE campaign_recipients SET opened_at = now() WHERE id IN (
  SELECT id FROM campaign_recipients WHERE campaign_id = $1 AND variant = $2 AND NOT ab_held ORDER BY id LIMIT $3)`, c.ID, v, n)
	}
	ab, err := e.db.ABTest(ctx, e.acct, ab.ID)
	if err != nil {
		t.Fatal(err)
	}
	return c, ab
}

func TestABResultsAndManualWinner(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	c, ab := abRunning(t, e, store.ABInput{TestType: str("combo"), BSubject: str("Neu!"), BFromName: str("Acme Team")}, 20, 60)
	res, err := e.db.ABResults(ctx, ab)
	if err != nil {
		t.Fatal(err)
	}
	// The metric is clicks and nobody clicked: level, no confidence.
	if res.A.Sent+res.B.Sent != 400 || res.A.UniqueOpens != 20 || res.B.UniqueOpens != 60 || res.Leader != "" || res.Metric != "clicks" || res.Confidence != 0 {
		t.Fatalf("results: %+v", res)
	}
	// The metric is clicks; nobody clicked: level, so auto picks A.
	w, err := e.db.SetABWinner(ctx, e.acct, apiActor, ab.ID, "auto", time.Now())
	if err != nil || w.Winner != "A" || w.Copied || w.Test.Status != store.ABCompleted {
		t.Fatalf("winner: %+v %v", w, err)
	}
	if _, err := e.db.SetABWinner(ctx, e.acct, apiActor, ab.ID, "B", time.Now()); !isConflict(err, "ab_test_completed") {
		t.Errorf("second winner: %v", err)
	}
	if got, _ := e.db.Newsletter(ctx, e.acct, c.ID); got.Subject != "Hallo" {
		t.Errorf("A won, yet the subject changed: %q", got.Subject)
	}

	// A second test on opens, decided B by hand: B's subject and sender are
	// copied onto the newsletter, and ab_test.completed is in the outbox.
	c2, ab2 := abRunning(t, e, store.ABInput{TestType: str("combo"), BSubject: str("Neu!"), BFromName: str("Acme Team"), WinnerMetric: str("opens")}, 20, 60)
	res, err = e.db.ABResults(ctx, ab2)
	if err != nil || res.Leader != "B" {
		t.Fatalf("results on opens: %+v %v", res, err)
	}
	if want := store.ZTestConfidence(20, res.A.Sent, 60, res.B.Sent); res.Confidence != math.Round(want*10000)/10000 || res.Confidence < 0.99 {
		t.Errorf("confidence %v, want %v", res.Confidence, want)
	}
	w, err = e.db.SetABWinner(ctx, e.acct, apiActor, ab2.ID, "B", time.Now())
	if err != nil || w.Winner != "B" || !w.Copied || w.Released != 0 {
		t.Fatalf("winner B: %+v %v", w, err)
	}
	got, _ := e.db.Newsletter(ctx, e.acct, c2.ID)
	if got.Subject != "Neu!" || got.FromName != "Acme Team" || got.HTML != "<p>Hallo</p>" {
		t.Errorf("copied: %q %q %q", got.Subject, got.FromName, got.HTML)
	}
	var payload []byte
	if err := e.db.GetContext(ctx, &payload, `SELECT payload FROM events WHERE account_id = $1 AND name = 'ab_test.completed' AND payload->'ab_test'->>'id' = $2::text`, e.acct, ab2.ID); err != nil {
		t.Fatal(err)
	}
	var ev struct {
		ABTest struct {
			ID         int64   `json:"id"`
			Winner     string  `json:"winner"`
			Metric     string  `json:"metric"`
			Confidence float64 `json:"confidence"`
		} `json:"ab_test"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil || ev.ABTest.Winner != "B" || ev.ABTest.Metric != "opens" || ev.ABTest.Confidence < 0.99 {
		t.Errorf("event: %s %v", payload, err)
	}

	// Insights: what won, per scope and test type.
	ins, err := e.db.ABInsights(ctx, e.acct, "newsletter", "")
	if err != nil || len(ins) != 1 || ins[0].TestType != "combo" || ins[0].Tests != 2 || ins[0].WinsA != 1 || ins[0].WinsB != 1 || len(ins[0].Findings) != 2 {
		t.Fatalf("insights: %+v %v", ins, err)
	}
	if f := ins[0].Findings[0]; !strings.HasPrefix(f, "Betreff „Neu!“ schlug „Hallo“ (+") || !strings.HasSuffix(f, " % Öffnungen, Konfidenz 100 %)") {
		t.Errorf("finding: %q", f)
	}
	lines, err := store.ABInsightSource{DB: e.db}.Insights(ctx, e.acct, "newsletter")
	if err != nil || len(lines) != 2 {
		t.Errorf("insight lines: %v %v", lines, err)
	}
	if lines, _ := (store.ABInsightSource{DB: e.db}).Insights(ctx, e.acct, "email"); len(lines) != 0 {
		t.Errorf("email scope: %v", lines)
	}
}

func TestABDecisionOnceAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	_, ab := abRunning(t, e, store.ABInput{TestType: str("subject"), BSubject: str("Neu!"), WaitHours: intp(3)}, 10, 40)
	start := *ab.StartedAt
	if _, err := e.db.DecideNextDueABTest(ctx, start.Add(3*time.Hour-time.Second)); !errors.Is(err, store.ErrNoDueABTest) {
		t.Fatalf("decided before wait_hours: %v", err)
	}
	var (
		mu      sync.Mutex
		decided []store.ABDecision
		wg      sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			d, err := e.db.DecideNextDueABTest(ctx, start.Add(3*time.Hour))
			if errors.Is(err, store.ErrNoDueABTest) {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			decided = append(decided, d)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(decided) != 1 || decided[0].Winner != "B" || !decided[0].Applied || decided[0].Test.Status != store.ABCompleted {
		t.Fatalf("decisions: %+v", decided)
	}
	var n int
	if err := e.db.GetContext(ctx, &n, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'ab_test.completed'`, e.acct); err != nil || n != 1 {
		t.Errorf("%d events, %v", n, err)
	}

	// Without auto_apply_winner the scheduler only suggests.
	_, ab2 := abRunning(t, e, store.ABInput{TestType: str("subject"), BSubject: str("Neu!"), AutoApplyWinner: ptr(false)}, 10, 40)
	d, err := e.db.DecideNextDueABTest(ctx, ab2.StartedAt.Add(5*time.Hour))
	if err != nil || d.Applied || d.Test.Status != store.ABRunning || d.Test.SuggestedWinner == nil || *d.Test.SuggestedWinner != "B" {
		t.Fatalf("suggestion: %+v %v", d, err)
	}
	if _, err := e.db.DecideNextDueABTest(ctx, ab2.StartedAt.Add(6*time.Hour)); !errors.Is(err, store.ErrNoDueABTest) {
		t.Errorf("decided twice: %v", err)
	}
}

func TestABTestRules(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	c := e.ready(t)
	ab := e.abTest(t, store.ABInput{TargetType: str("newsletter"), TargetID: &c.ID, TestType: str("sender"), BFromName: str("Jana von Acme")})
	if ab.Name != "A/B-Test: Hallo {{vorname}}" || ab.WinnerMetric != "opens" || !ab.AutoApplyWinner {
		t.Errorf("defaults: %+v", ab)
	}
	_, err := e.db.CreateABTest(ctx, e.acct, apiActor, store.ABInput{CampaignID: &c.ID, TestType: str("subject"), BSubject: str("x")})
	wantConflict(t, err, "ab_test_exists")
	if _, err := e.db.SetABWinner(ctx, e.acct, apiActor, ab.ID, "A", time.Now()); !isConflict(err, "ab_test_not_running") {
		t.Errorf("winner of a draft: %v", err)
	}
	other := newAccount(t, e.db, "business")
	if _, err := e.db.CreateABTest(ctx, other, apiActor, store.ABInput{CampaignID: &c.ID, TestType: str("subject"), BSubject: str("x")}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("other account's target: %v", err)
	}
	u, err := e.db.UpdateABTest(ctx, e.acct, apiActor, ab.ID, store.ABInput{Mode: str("winner"), WaitHours: intp(12)})
	if err != nil || u.Mode != "winner" || u.WaitHours != 12 || u.BFromName == nil {
		t.Fatalf("patch: %+v %v", u, err)
	}
	_, err = e.db.UpdateABTest(ctx, e.acct, apiActor, ab.ID, store.ABInput{BFromName: str("")})
	wantValidation(t, err, "b_from_name")
	if err := e.db.DeleteABTest(ctx, e.acct, apiActor, ab.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ABTest(ctx, e.acct, ab.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted: %v", err)
	}
}
