package store

import (
	"bytes"
	"context"
	"crypto/md5"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// This file holds A/B tests (issue 6): the test resource, its start together
// with the target's send (variant assignment, the held-back recipients of
// mode winner), the results with their significance, the decision of a
// winner (by hand, or by the scheduler once, across processes), stopping,
// and the insights of past tests. See migrations/00010_abtests.sql.

// A/B test statuses.
const (
	ABDraft     = "draft"
	ABRunning   = "running"
	ABCompleted = "completed"
	ABStopped   = "stopped"
)

// A/B test target types; newsletters and single emails are campaigns.
const (
	ABTargetNewsletter = "newsletter"
	ABTargetEmail      = "email"
	ABTargetSeinfeld   = "seinfeld"
	ABTargetSoap       = "soap"
)

// A/B test types, modes and metrics.
const (
	ABTypeSubject = "subject"
	ABTypeContent = "content"
	ABTypeDesign  = "design"
	ABTypeSender  = "sender"
	ABTypeCombo   = "combo"

	ABModeSplit  = "split"
	ABModeWinner = "winner"

	ABMetricClicks = "clicks"
	ABMetricOpens  = "opens"
	ABMetricCTR    = "ctr"
)

// Object type of A/B tests in the activity log.
const ObjectABTest = "ab_test"

// ABLinkOffset is added to the positions of variant B's tracked links in
// campaign_links: variant A's links keep positions 0…n-1, B's are stored
// after them, so that clicks on either variant are counted.
const ABLinkOffset = 1_000_000

// RecipientWaiting is a recipient held back in mode winner until the winner
// is decided.
const RecipientWaiting = "waiting"

// ABTest is one A/B test row.
type ABTest struct {
	ID              int64      `db:"id"`
	AccountID       int64      `db:"account_id"`
	Name            string     `db:"name"`
	TargetType      string     `db:"target_type"`
	TargetID        int64      `db:"target_id"`
	CampaignID      *int64     `db:"campaign_id"`
	TestType        string     `db:"test_type"`
	Mode            string     `db:"mode"`
	SplitA          int        `db:"split_a"`
	SamplePct       int        `db:"sample_pct"`
	WaitHours       int        `db:"wait_hours"`
	WinnerMetric    string     `db:"winner_metric"`
	AutoApplyWinner bool       `db:"auto_apply_winner"`
	Status          string     `db:"status"`
	BSubject        *string    `db:"b_subject"`
	BPreheader      *string    `db:"b_preheader"`
	BHTML           *string    `db:"b_html"`
	BFromName       *string    `db:"b_from_name"`
	ASubject        string     `db:"a_subject"`
	APreheader      string     `db:"a_preheader"`
	AFromName       string     `db:"a_from_name"`
	Winner          *string    `db:"winner"`
	SuggestedWinner *string    `db:"suggested_winner"`
	ARate           *float64   `db:"a_rate"`
	BRate           *float64   `db:"b_rate"`
	Confidence      *float64   `db:"confidence"`
	Released        int64      `db:"released"`
	Copied          bool       `db:"copied"`
	StartedAt       *time.Time `db:"started_at"`
	DecideAt        *time.Time `db:"decide_at"`
	DecidedAt       *time.Time `db:"decided_at"`
	FinishedAt      *time.Time `db:"finished_at"`
	CreatedAt       time.Time  `db:"created_at"`
	UpdatedAt       time.Time  `db:"updated_at"`

	// Variant A's subject, preheader and sender name as the target has them
	// now (read with the test; empty for targets that are no campaign).
	TargetSubject   string `db:"target_subject"`
	TargetPreheader string `db:"target_preheader"`
	TargetFromName  string `db:"target_from_name"`
}

// ABStatusLabel is the German display label of an A/B test status.
func ABStatusLabel(status string) string {
	switch status {
	case ABDraft:
		return "Bereit"
	case ABRunning:
		return "Läuft"
	case ABCompleted:
		return "Abgeschlossen"
	case ABStopped:
		return "Gestoppt"
	}
	return status
}

// StatusLabel is the German display label of the test's status.
func (t ABTest) StatusLabel() string { return ABStatusLabel(t.Status) }

// ApplyB returns the campaign as variant B: the b_* fields that are set put
// over variant A's content. New HTML replaces Markdown and text as well (the
// text part is then made from the HTML).
func (t ABTest) ApplyB(c Campaign) Campaign {
	if t.BSubject != nil {
		c.Subject = *t.BSubject
	}
	if t.BPreheader != nil {
		c.Preheader = *t.BPreheader
	}
	if t.BHTML != nil {
		c.HTML, c.Markdown, c.Text = *t.BHTML, "", ""
	}
	if t.BFromName != nil {
		c.FromName = *t.BFromName
	}
	return c
}

// A/B groups are exact (issue 27, item 13): the recipients are ranked by a
// hash of the test id and the address, md5("<id>:<salt>:<email>") (salt "s"
// for the test group of mode winner, "v" for the variant), ties by the
// address, and cut at round(pct × recipients): the test group is the first
// round(sample_pct % × recipients) by the "s" rank, and variant A the first
// round(split_a % × group) of the group (every recipient in mode split) by
// the "v" rank. Drawing each address on its own gave 9 of 40 for 20 %; the
// rank gives 8, and the assignment can still be recomputed from the test id
// and the addresses alone (ABAssignment).

// abRankSQL is the rank key of r.email in SQL, with the test id as $1; bytea
// compares bytewise, as abRankKey's callers do in Go.
func abRankSQL(salt string) string {
	return `decode(md5($1::text || ':` + salt + `:' || r.email), 'hex'), r.email COLLATE "C", r.id`
}

// abRankKey is the md5 that ranks an address for one test and salt.
func abRankKey(testID int64, salt, email string) [md5.Size]byte {
	return md5.Sum([]byte(strconv.FormatInt(testID, 10) + ":" + salt + ":" + email))
}

// abCut is round(pct % × n), halves up, as the SQL computes it.
func abCut(pct, n int) int { return (n*pct + 50) / 100 }

// abRanked returns emails ordered by their rank for testID and salt.
func abRanked(testID int64, salt string, emails []string) []string {
	keys := make(map[string][md5.Size]byte, len(emails))
	for _, e := range emails {
		keys[e] = abRankKey(testID, salt, e)
	}
	out := slices.Clone(emails)
	slices.SortStableFunc(out, func(a, b string) int {
		ka, kb := keys[a], keys[b]
		if c := bytes.Compare(ka[:], kb[:]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return out
}

// ABAssignment recomputes a test's assignment from its id, mode, split_a,
// sample_pct and the addresses that were queued when it started: each
// address's variant, "A" or "B", or "" for a recipient held back (mode
// winner). It is what startABTestTx does in SQL.
func ABAssignment(testID int64, mode string, splitA, samplePct int, emails []string) map[string]string {
	out := make(map[string]string, len(emails))
	group := emails
	if mode == ABModeWinner {
		ranked := abRanked(testID, "s", emails)
		group = ranked[:abCut(samplePct, len(ranked))]
		for _, e := range ranked[len(group):] {
			out[e] = ""
		}
	}
	ranked := abRanked(testID, "v", group)
	a := abCut(splitA, len(ranked))
	for i, e := range ranked {
		if i < a {
			out[e] = "A"
		} else {
			out[e] = "B"
		}
	}
	return out
}

// ABInput is the body of POST /ab-tests and PATCH /ab-tests/{id}: nil means
// not given. On PATCH the target fields are ignored.
type ABInput struct {
	Name            *string
	TargetType      *string
	TargetID        *int64
	CampaignID      *int64
	TestType        *string
	Mode            *string
	SplitA          *int
	SamplePct       *int
	WaitHours       *int
	WinnerMetric    *string
	AutoApplyWinner *bool
	BSubject        *string
	BPreheader      *string
	BHTML           *string
	BFromName       *string
}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

// defaultMetric is the metric a test type is usually judged by: what the
// recipient sees before opening decides the opens, the content the clicks.
func defaultMetric(testType string) string {
	switch testType {
	case ABTypeSubject, ABTypeSender:
		return ABMetricOpens
	}
	return ABMetricClicks
}

// apply puts the input over t (a new test with defaults, or a draft) and
// returns the field errors of the values given. The rules that need the
// whole test (which changes a test type requires) are in check.
func (in ABInput) apply(t *ABTest, errs Errs) {
	if in.Name != nil {
		v := *in.Name
		normLine(errs, "name", &v, maxNameLen)
		t.Name = v
	}
	if in.TestType != nil {
		if !oneOf(*in.TestType, ABTypeSubject, ABTypeContent, ABTypeDesign, ABTypeSender, ABTypeCombo) {
			errs.Add("test_type", "Erlaubt sind subject, content, design, sender und combo.")
		}
		t.TestType = *in.TestType
	}
	if in.Mode != nil {
		if !oneOf(*in.Mode, ABModeSplit, ABModeWinner) {
			errs.Add("mode", "Erlaubt sind split und winner.")
		}
		t.Mode = *in.Mode
	}
	if in.SplitA != nil {
		if *in.SplitA < 10 || *in.SplitA > 90 {
			errs.Add("split_a", "Der Anteil von Variante A liegt zwischen 10 und 90 Prozent.")
		}
		t.SplitA = *in.SplitA
	}
	if in.SamplePct != nil {
		if *in.SamplePct < 5 || *in.SamplePct > 50 {
			errs.Add("sample_pct", "Die Testgruppe umfasst 5 bis 50 Prozent.")
		}
		t.SamplePct = *in.SamplePct
	}
	if in.WaitHours != nil {
		if *in.WaitHours < 1 || *in.WaitHours > 72 {
			errs.Add("wait_hours", "Die Wartezeit liegt zwischen 1 und 72 Stunden.")
		}
		t.WaitHours = *in.WaitHours
	}
	if in.WinnerMetric != nil {
		if !oneOf(*in.WinnerMetric, ABMetricClicks, ABMetricOpens, ABMetricCTR) {
			errs.Add("winner_metric", "Erlaubt sind clicks, opens und ctr.")
		}
		t.WinnerMetric = *in.WinnerMetric
	}
	if in.AutoApplyWinner != nil {
		t.AutoApplyWinner = *in.AutoApplyWinner
	}
	// An empty change is no change: "" clears a field of variant B.
	set := func(field string, dst **string, v *string, max int, line bool) {
		if v == nil {
			return
		}
		s := *v
		if line {
			normLine(errs, field, &s, max)
		} else if len(s) > max {
			errs.Add(field, "Der Inhalt ist zu groß (höchstens 2 MB).")
		}
		if strings.TrimSpace(s) == "" {
			*dst = nil
			return
		}
		*dst = &s
	}
	set("b_subject", &t.BSubject, in.BSubject, maxSubjectLen, true)
	set("b_preheader", &t.BPreheader, in.BPreheader, maxPreheaderLen, true)
	set("b_html", &t.BHTML, in.BHTML, MaxHTMLBytes, false)
	if t.BHTML != nil && IsRichText(*t.BHTML) { // written in the rich-text editor: sanitised as every mail's
		clean := SanitizeRichText(*t.BHTML)
		t.BHTML = &clean
	}
	set("b_from_name", &t.BFromName, in.BFromName, maxFromNameLen, true)
}

// check adds the rules that depend on the test type: which changes variant B
// needs, and that they differ from variant A (the target c).
func (t ABTest) check(c Campaign, errs Errs) {
	differs := func(field string, b *string, a string) bool {
		if b == nil {
			return false
		}
		if strings.TrimSpace(*b) == strings.TrimSpace(a) {
			errs.Add(field, "Variante B muss sich von Variante A unterscheiden.")
			return false
		}
		return true
	}
	subject := differs("b_subject", t.BSubject, c.Subject)
	preheader := differs("b_preheader", t.BPreheader, c.Preheader)
	content := differs("b_html", t.BHTML, c.HTML)
	sender := differs("b_from_name", t.BFromName, c.FromName)
	need := func(field string, ok bool, msg string) {
		if !ok {
			errs.Add(field, msg)
		}
	}
	switch t.TestType {
	case ABTypeSubject:
		need("b_subject", subject, "Ein Betreff-Test braucht den Betreff von Variante B (b_subject).")
	case ABTypeContent, ABTypeDesign:
		need("b_html", content, "Dieser Test braucht den Inhalt von Variante B (b_html).")
	case ABTypeSender:
		need("b_from_name", sender, "Ein Absender-Test braucht den Absendernamen von Variante B (b_from_name).")
	case ABTypeCombo:
		n := 0
		for _, ok := range []bool{subject, preheader, content, sender} {
			if ok {
				n++
			}
		}
		if n < 2 && errs["b_subject"] == "" && errs["b_html"] == "" && errs["b_preheader"] == "" && errs["b_from_name"] == "" {
			errs.Add("test_type", "Ein Kombi-Test braucht mindestens zwei Änderungen (b_subject, b_preheader, b_html, b_from_name).")
		}
	}
}

const abTestColumns = `t.id, t.account_id, t.name, t.target_type, t.target_id, t.campaign_id, t.test_type, t.mode, t.split_a,
  t.sample_pct, t.wait_hours, t.winner_metric, t.auto_apply_winner, t.status, t.b_subject, t.b_preheader, t.b_html,
  t.b_from_name, t.a_subject, t.a_preheader, t.a_from_name, t.winner, t.suggested_winner, t.a_rate, t.b_rate, t.confidence,
  t.released, t.copied, t.started_at, t.decide_at, t.decided_at, t.finished_at, t.created_at, t.updated_at,
  coalesce(c.subject, '') AS target_subject, coalesce(c.preheader, '') AS target_preheader,
  coalesce(c.from_name, '') AS target_from_name`

// abTestFrom joins a test's target campaign: the campaign it started with,
// and for a draft test of a sequence day the day's campaign now (an edited
// day that had sent gets a new campaign; the test starts with that one).
const abTestFrom = ` FROM ab_tests t
LEFT JOIN sequence_days sd ON t.target_type = 'soap' AND t.status = 'draft' AND sd.id = t.target_id AND sd.account_id = t.account_id
LEFT JOIN campaigns c ON c.id = coalesce(sd.campaign_id, t.campaign_id)`

const selectABTest = `SELECT ` + abTestColumns + abTestFrom + ` WHERE t.account_id = $1 AND t.id = $2`

const lockABTest = selectABTest + ` FOR UPDATE OF t`

// ABTest returns one test of the account.
func (db *DB) ABTest(ctx context.Context, accountID, id int64) (ABTest, error) {
	var t ABTest
	if err := db.GetContext(ctx, &t, selectABTest, accountID, id); err != nil {
		return ABTest{}, notFound("ab test", err)
	}
	return t, nil
}

func lockABTestTx(ctx context.Context, tx *sqlx.Tx, accountID, id int64) (ABTest, error) {
	var t ABTest
	if err := tx.GetContext(ctx, &t, lockABTest, accountID, id); err != nil {
		return ABTest{}, notFound("ab test", err)
	}
	return t, nil
}

// ABFilter selects tests for GET /ab-tests: Status is "", "all", "active"
// (draft and running) or a status; TargetType "" or a target type.
type ABFilter struct {
	Status     string
	TargetType string
}

// Validate checks the filter values (422 naming status or type).
func (f ABFilter) Validate() error {
	errs := Errs{}
	if f.Status != "" && !oneOf(f.Status, "all", "active", ABDraft, ABRunning, ABCompleted, ABStopped) {
		errs.Add("status", "Erlaubt sind all, active, draft, running, completed und stopped.")
	}
	if f.TargetType != "" && !oneOf(f.TargetType, ABTargetNewsletter, ABTargetEmail, ABTargetSeinfeld, ABTargetSoap) {
		errs.Add("type", "Erlaubt sind newsletter, email, seinfeld und soap.")
	}
	return errs.Err()
}

const selectABTests = `SELECT ` + abTestColumns + abTestFrom + `
WHERE t.account_id = $1
  AND ($2 = '' OR $2 = 'all' OR ($2 = 'active' AND t.status IN ('draft', 'running')) OR t.status = $2)
  AND ($3 = '' OR t.target_type = $3)
ORDER BY (t.status IN ('draft', 'running')) DESC, t.id DESC LIMIT $4 OFFSET $5`

const countABTests = `SELECT count(*) FROM ab_tests t WHERE t.account_id = $1
  AND ($2 = '' OR $2 = 'all' OR ($2 = 'active' AND t.status IN ('draft', 'running')) OR t.status = $2)
  AND ($3 = '' OR t.target_type = $3)`

// ABTests lists an account's tests, active ones (draft, running) first, then
// newest first.
func (db *DB) ABTests(ctx context.Context, accountID int64, f ABFilter, p Page) ([]ABTest, int, error) {
	if err := f.Validate(); err != nil {
		return nil, 0, err
	}
	var out []ABTest
	var total int
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.SelectContext(ctx, &out, selectABTests, accountID, f.Status, f.TargetType, p.PerPage, p.Offset()); err != nil {
			return fmt.Errorf("store: ab tests: %w", err)
		}
		if err := tx.GetContext(ctx, &total, countABTests, accountID, f.Status, f.TargetType); err != nil {
			return fmt.Errorf("store: ab tests: %w", err)
		}
		return nil
	})
	return out, total, err
}

// abTarget resolves the target of a new test to its campaign, locked: 422
// for targets whose feature is not there yet, 404 for another account's or a
// missing one, 409 when it was sent already.
func abTarget(ctx context.Context, tx *sqlx.Tx, accountID int64, targetType string, targetID int64) (Campaign, error) {
	if targetType == ABTargetSoap {
		// A sequence day is sent to each participant who reaches it: a test
		// can start on it at any time (sequences.go: startSoapTestsTx).
		return soapTargetTx(ctx, tx, accountID, targetID)
	}
	c, err := lockCampaignTx(ctx, tx, accountID, targetID, abKind(targetType))
	if err != nil {
		return Campaign{}, err
	}
	if !c.startable() {
		return Campaign{}, &ConflictError{Reason: "already_sent", Message: "Diese E-Mail wurde bereits versendet; ein A/B-Test ist nur vor dem Versand möglich."}
	}
	return c, nil
}

// abKind is the campaign kind of an A/B target type: a seinfeld test is on
// a story email (kind story), a soap test on a sequence day (kind sequence).
func abKind(targetType string) string {
	switch targetType {
	case ABTargetSeinfeld:
		return KindStory
	case ABTargetSoap:
		return KindSequence
	}
	return targetType
}

// abTargetType is the A/B target type of a campaign kind (abKind reversed).
func abTargetType(kind string) string {
	switch kind {
	case KindStory:
		return ABTargetSeinfeld
	case KindSequence:
		return ABTargetSoap
	}
	return kind
}

const insertABTest = `INSERT INTO ab_tests (account_id, name, target_type, target_id, campaign_id, test_type, mode, split_a,
  sample_pct, wait_hours, winner_metric, auto_apply_winner, b_subject, b_preheader, b_html, b_from_name)
VALUES (:account_id, :name, :target_type, :target_id, :campaign_id, :test_type, :mode, :split_a, :sample_pct,
  :wait_hours, :winner_metric, :auto_apply_winner, :b_subject, :b_preheader, :b_html, :b_from_name)
ON CONFLICT DO NOTHING RETURNING id`

var errABTestExists = &ConflictError{Reason: "ab_test_exists", Message: "Für diese E-Mail gibt es bereits einen A/B-Test."}

// CreateABTest creates a test in status draft for a mail that is not sent
// yet: 422 naming every invalid field, 404 for a target of another account,
// 409 already_sent or ab_test_exists.
func (db *DB) CreateABTest(ctx context.Context, accountID int64, actor Actor, in ABInput) (ABTest, error) {
	errs := Errs{}
	t := ABTest{AccountID: accountID, Mode: ABModeSplit, SplitA: 50, SamplePct: 20, WaitHours: 4, AutoApplyWinner: true}
	if in.CampaignID != nil {
		if *in.CampaignID <= 0 {
			errs.Add("campaign_id", "Bitte eine gültige ID angeben.")
		}
		t.TargetID = *in.CampaignID
	} else {
		switch {
		case in.TargetID == nil:
			errs.Add("target_id", "Bitte das Ziel angeben (target_id oder campaign_id).")
		case *in.TargetID <= 0:
			errs.Add("target_id", "Bitte eine gültige ID angeben.")
		default:
			t.TargetID = *in.TargetID
		}
		if in.TargetType == nil {
			errs.Add("target_type", "Bitte den Zieltyp angeben (newsletter, email, seinfeld oder soap).")
		}
	}
	if in.TargetType != nil {
		if !oneOf(*in.TargetType, ABTargetNewsletter, ABTargetEmail, ABTargetSeinfeld, ABTargetSoap) {
			errs.Add("target_type", "Erlaubt sind newsletter, email, seinfeld und soap.")
		}
		t.TargetType = *in.TargetType
	}
	if in.TestType == nil {
		errs.Add("test_type", "Bitte die Art des Tests angeben (subject, content, design, sender oder combo).")
	}
	in.apply(&t, errs)
	if in.WinnerMetric == nil {
		t.WinnerMetric = defaultMetric(t.TestType)
	}
	// Without a valid target and test type the rules of variant B cannot be
	// checked; otherwise they are reported together with the other fields.
	if errs["target_type"] != "" || errs["target_id"] != "" || errs["campaign_id"] != "" || errs["test_type"] != "" {
		return ABTest{}, errs.Err()
	}
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var c Campaign
		var err error
		if t.TargetType == "" {
			// The short form campaign_id: a newsletter or a single email (or
			// the campaign of a story email or a sequence day).
			if c, err = campaignAnyKind(ctx, tx, accountID, t.TargetID); err != nil {
				return err
			}
			t.TargetType = abTargetType(c.Kind)
			if t.TargetType == ABTargetSoap {
				if t.TargetID, err = dayOfCampaignTx(ctx, tx, accountID, t.TargetID); err != nil {
					return err
				}
			}
		}
		if c, err = abTarget(ctx, tx, accountID, t.TargetType, t.TargetID); err != nil {
			return err
		}
		t.CampaignID = &c.ID
		t.check(c, errs)
		t.checkSoap(errs)
		if err := errs.Err(); err != nil {
			return err
		}
		if t.Name == "" {
			t.Name = "A/B-Test: " + c.Name
			if r := []rune(t.Name); len(r) > maxNameLen {
				t.Name = string(r[:maxNameLen])
			}
		}
		q, args, err := tx.BindNamed(insertABTest, t)
		if err != nil {
			return fmt.Errorf("store: create ab test: %w", err)
		}
		if err := tx.GetContext(ctx, &t.ID, q, args...); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return errABTestExists
			}
			return fmt.Errorf("store: create ab test: %w", err)
		}
		if t, err = lockABTestTx(ctx, tx, accountID, t.ID); err != nil {
			return err
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "ab_test.created", ObjectType: ObjectABTest,
			ObjectID: t.ID, Details: map[string]any{"target_type": t.TargetType, "target_id": t.TargetID, "test_type": t.TestType}})
	})
	if err != nil {
		return ABTest{}, err
	}
	return t, nil
}

const selectCampaignKind = `SELECT kind FROM campaigns WHERE account_id = $1 AND id = $2`

// campaignAnyKind finds the kind of a campaign of the account.
func campaignAnyKind(ctx context.Context, tx *sqlx.Tx, accountID, id int64) (Campaign, error) {
	var c Campaign
	if err := tx.GetContext(ctx, &c.Kind, selectCampaignKind, accountID, id); err != nil {
		return Campaign{}, notFound("campaign", err)
	}
	return c, nil
}

func errABNotDraft(t ABTest) error {
	return &ConflictError{Reason: "not_draft", Message: fmt.Sprintf("Der A/B-Test ist nicht mehr im Entwurf (%s).", ABStatusLabel(t.Status))}
}

const updateABTest = `UPDATE ab_tests SET name = :name, test_type = :test_type, mode = :mode, split_a = :split_a,
  sample_pct = :sample_pct, wait_hours = :wait_hours, winner_metric = :winner_metric, campaign_id = :campaign_id,
  auto_apply_winner = :auto_apply_winner, b_subject = :b_subject, b_preheader = :b_preheader, b_html = :b_html,
  b_from_name = :b_from_name, updated_at = now()
WHERE id = :id`

// UpdateABTest changes a draft test (409 not_draft otherwise); the target
// stays.
func (db *DB) UpdateABTest(ctx context.Context, accountID int64, actor Actor, id int64, in ABInput) (ABTest, error) {
	var t ABTest
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if t, err = lockABTestTx(ctx, tx, accountID, id); err != nil {
			return err
		}
		if t.Status != ABDraft {
			return errABNotDraft(t)
		}
		errs := Errs{}
		in.apply(&t, errs)
		if t.TargetType == ABTargetSoap {
			c, err := soapTargetTx(ctx, tx, accountID, t.TargetID)
			if err != nil {
				return err
			}
			t.CampaignID = &c.ID
			t.check(c, errs)
			t.checkSoap(errs)
		} else if t.CampaignID != nil {
			c, err := lockCampaignTx(ctx, tx, accountID, *t.CampaignID, abKind(t.TargetType))
			if err != nil {
				return err
			}
			t.check(c, errs)
		}
		if err := errs.Err(); err != nil {
			return err
		}
		q, args, err := tx.BindNamed(updateABTest, t)
		if err != nil {
			return fmt.Errorf("store: update ab test: %w", err)
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("store: update ab test: %w", err)
		}
		if t, err = lockABTestTx(ctx, tx, accountID, id); err != nil {
			return err
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "ab_test.updated", ObjectType: ObjectABTest, ObjectID: id})
	})
	return t, err
}

// DeleteABTest deletes a draft test (409 not_draft otherwise).
func (db *DB) DeleteABTest(ctx context.Context, accountID int64, actor Actor, id int64) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		t, err := lockABTestTx(ctx, tx, accountID, id)
		if err != nil {
			return err
		}
		if t.Status != ABDraft {
			return errABNotDraft(t)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM ab_tests WHERE id = $1`, id); err != nil {
			return fmt.Errorf("store: delete ab test: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "ab_test.deleted", ObjectType: ObjectABTest, ObjectID: id})
	})
}

// ABTestOfCampaign returns the test of a campaign that has started (running,
// completed or stopped): what the send workers render variant B from.
// ErrNotFound when the campaign has none.
func (db *DB) ABTestOfCampaign(ctx context.Context, campaignID int64) (ABTest, error) {
	var t ABTest
	if err := db.GetContext(ctx, &t, `SELECT `+abTestColumns+abTestFrom+` WHERE t.campaign_id = $1 AND t.status <> 'draft'`, campaignID); err != nil {
		return ABTest{}, notFound("ab test", err)
	}
	return t, nil
}

const lockDraftABTestOfCampaign = `SELECT ` + abTestColumns + abTestFrom + `
WHERE t.campaign_id = $1 AND t.account_id = $2 AND t.status = 'draft' FOR UPDATE OF t`

// assignSplit gives the first round(split_a ($2) % × recipients) of the
// queued recipients by their variant rank variant A, the others B.
var assignSplit = `WITH v AS (
  SELECT r.id, row_number() OVER (ORDER BY ` + abRankSQL("v") + `) AS n, count(*) OVER () AS total
  FROM campaign_recipients r WHERE r.campaign_id = $3 AND r.status = 'queued')
UPDATE campaign_recipients r SET variant = CASE WHEN v.n <= (v.total * $2 + 50) / 100 THEN 'A' ELSE 'B' END
FROM v WHERE r.id = v.id`

// assignWinner puts the first round(sample_pct ($4) % × recipients) of the
// queued recipients by their sample rank into the test group, split there
// like assignSplit; the others wait. The test group is ranked within a
// partition of the same pass rather than by a second query joined back: the
// planner, which right after the recipients were queued expects one row,
// nested that join and ranked the test group again for every recipient (9 s
// for 10,000, quadratic).
var assignWinner = `WITH s AS (
  SELECT r.id, r.email, row_number() OVER (ORDER BY ` + abRankSQL("s") + `) <= (count(*) OVER () * $4 + 50) / 100 AS sampled
  FROM campaign_recipients r WHERE r.campaign_id = $3 AND r.status = 'queued'
), v AS (
  SELECT r.id, r.sampled, row_number() OVER (PARTITION BY r.sampled ORDER BY ` + abRankSQL("v") + `) AS n,
    count(*) FILTER (WHERE r.sampled) OVER () AS total
  FROM s AS r
)
UPDATE campaign_recipients r SET
  variant = CASE WHEN NOT v.sampled THEN NULL WHEN v.n <= (v.total * $2 + 50) / 100 THEN 'A' ELSE 'B' END,
  status = CASE WHEN v.sampled THEN 'queued' ELSE 'waiting' END,
  ab_held = NOT v.sampled
FROM v WHERE r.id = v.id`

const markABStarted = `UPDATE ab_tests SET status = 'running', started_at = $2, decide_at = $3, a_subject = $4,
  a_from_name = $5, a_preheader = $6, updated_at = now() WHERE id = $1`

// startABTestTx starts the draft test of a campaign whose send starts in tx
// (called by startCampaign after the recipients were queued): it assigns the
// variants, holds back the non-sample recipients in mode winner, stores
// variant B's tracked links after A's, and marks the test running with its
// decision time. A campaign without a draft test is left as it is.
func startABTestTx(ctx context.Context, tx *sqlx.Tx, c *Campaign, opts StartOptions, now time.Time) error {
	var t ABTest
	if err := tx.GetContext(ctx, &t, lockDraftABTestOfCampaign, c.ID, c.AccountID); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return fmt.Errorf("store: start ab test: %w", err)
	}
	var err error
	if t.Mode == ABModeWinner {
		_, err = tx.ExecContext(ctx, assignWinner, t.ID, t.SplitA, c.ID, t.SamplePct)
	} else {
		_, err = tx.ExecContext(ctx, assignSplit, t.ID, t.SplitA, c.ID)
	}
	if err != nil {
		return fmt.Errorf("store: assign ab variants: %w", err)
	}
	if t.BHTML != nil && c.TrackClicks && opts.Links != nil {
		links, err := opts.Links(t.ApplyB(*c))
		if err != nil {
			return err
		}
		if len(links) > 0 {
			urls := make(pq.StringArray, len(links))
			pers := make(pq.BoolArray, len(links))
			for i, l := range links {
				urls[i], pers[i] = l.URL, l.Personalized
			}
			if _, err := tx.ExecContext(ctx, insertBLinks, c.AccountID, c.ID, urls, pers, ABLinkOffset); err != nil {
				return fmt.Errorf("store: ab test links: %w", err)
			}
		}
	}
	decide := now.Add(time.Duration(t.WaitHours) * time.Hour)
	if _, err := tx.ExecContext(ctx, markABStarted, t.ID, now, decide, c.Subject, c.FromName, c.Preheader); err != nil {
		return fmt.Errorf("store: start ab test: %w", err)
	}
	return LogActivity(ctx, tx, c.AccountID, Actor{Type: ActorSystem}, ActivityEntry{Action: "ab_test.started",
		ObjectType: ObjectABTest, ObjectID: t.ID, Details: map[string]any{"campaign_id": c.ID, "mode": t.Mode}})
}

const insertBLinks = `INSERT INTO campaign_links (account_id, campaign_id, position, url, personalized)
SELECT $1, $2, $5 + x.n - 1, x.url, x.p FROM unnest($3::text[], $4::boolean[]) WITH ORDINALITY AS x(url, p, n)`

// ABVariantResult is one variant's figures in a test's results.
type ABVariantResult struct {
	Sent         int64 `db:"sent"`
	UniqueOpens  int64 `db:"opens"`
	UniqueClicks int64 `db:"clicks"`
}

// OpenRate is unique opens per sent mail.
func (v ABVariantResult) OpenRate() float64 { return ratio(v.UniqueOpens, v.Sent) }

// ClickRate is unique clicks per sent mail.
func (v ABVariantResult) ClickRate() float64 { return ratio(v.UniqueClicks, v.Sent) }

// CTR is the click-to-open rate: unique clicks per unique open.
func (v ABVariantResult) CTR() float64 { return ratio(v.UniqueClicks, v.UniqueOpens) }

// Trials returns the successes and trials of a metric: opens of sent, clicks
// of sent, or clicks of opens (ctr).
func (v ABVariantResult) Trials(metric string) (successes, trials int64) {
	switch metric {
	case ABMetricOpens:
		return v.UniqueOpens, v.Sent
	case ABMetricCTR:
		return v.UniqueClicks, v.UniqueOpens
	}
	return v.UniqueClicks, v.Sent
}

// Rate is the metric's rate.
func (v ABVariantResult) Rate(metric string) float64 { return ratio(v.Trials(metric)) }

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// ABResults are a test's live figures: per variant of the test group (the
// held-back recipients do not count), the confidence that the rates of the
// metric differ, and the leader ("" while they are equal).
type ABResults struct {
	Metric     string
	A, B       ABVariantResult
	Waiting    int64
	Confidence float64
	Leader     string
}

// ZTestConfidence is the two-sided confidence 1 − p of a two-proportion
// z-test (pooled) for x1 of n1 against x2 of n2: erf(|z|/√2), in 0…1; 0 when
// a group is empty or the pooled rate is 0 or 1.
func ZTestConfidence(x1, n1, x2, n2 int64) float64 {
	if n1 <= 0 || n2 <= 0 {
		return 0
	}
	p1, p2 := float64(x1)/float64(n1), float64(x2)/float64(n2)
	p := float64(x1+x2) / float64(n1+n2)
	if p <= 0 || p >= 1 {
		return 0
	}
	se := math.Sqrt(p * (1 - p) * (1/float64(n1) + 1/float64(n2)))
	z := (p1 - p2) / se
	return math.Erf(math.Abs(z) / math.Sqrt2)
}

const selectABResults = `SELECT coalesce(variant, '') AS variant, count(*) FILTER (WHERE status = 'sent') AS sent,
  count(opened_at) AS opens, count(clicked_at) AS clicks, count(*) FILTER (WHERE status = 'waiting') AS waiting
FROM campaign_recipients
WHERE campaign_id = $1 AND account_id = $2 AND (variant IS NOT NULL AND NOT ab_held OR status = 'waiting')
GROUP BY 1`

// abResults reads a test's results through q (the database or a transaction).
func abResults(ctx context.Context, q sqlx.QueryerContext, t ABTest) (ABResults, error) {
	res := ABResults{Metric: t.WinnerMetric}
	if t.CampaignID == nil || t.Status == ABDraft {
		return res, nil
	}
	rows, err := q.QueryxContext(ctx, selectABResults, *t.CampaignID, t.AccountID)
	if err != nil {
		return ABResults{}, fmt.Errorf("store: ab results: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		var r ABVariantResult
		var waiting int64
		if err := rows.Scan(&v, &r.Sent, &r.UniqueOpens, &r.UniqueClicks, &waiting); err != nil {
			return ABResults{}, fmt.Errorf("store: ab results: %w", err)
		}
		res.Waiting += waiting
		switch v {
		case "A":
			res.A = r
		case "B":
			res.B = r
		}
	}
	if err := rows.Err(); err != nil {
		return ABResults{}, fmt.Errorf("store: ab results: %w", err)
	}
	xa, na := res.A.Trials(res.Metric)
	xb, nb := res.B.Trials(res.Metric)
	res.Confidence = math.Round(ZTestConfidence(xa, na, xb, nb)*10000) / 10000
	switch ra, rb := res.A.Rate(res.Metric), res.B.Rate(res.Metric); {
	case ra > rb:
		res.Leader = "A"
	case rb > ra:
		res.Leader = "B"
	}
	return res, nil
}

// ABResults returns a test's live results.
func (db *DB) ABResults(ctx context.Context, t ABTest) (ABResults, error) {
	return abResults(ctx, db, t)
}

// ABWinnerResult is what deciding a winner did.
type ABWinnerResult struct {
	Test     ABTest
	Winner   string
	Released int64 // held-back recipients queued with the winner
	Copied   bool  // variant B's content was copied onto the target
}

func errABState(t ABTest) error {
	switch {
	case t.Status == ABDraft && t.TargetType == ABTargetSoap:
		return &ConflictError{Reason: "ab_test_not_running", Message: "Der A/B-Test läuft noch nicht: er beginnt, sobald der erste Teilnehmer den Tag erreicht."}
	case t.Status == ABDraft:
		return &ConflictError{Reason: "ab_test_not_running", Message: "Der A/B-Test läuft noch nicht: er beginnt mit dem Versand der E-Mail."}
	case t.Status == ABCompleted:
		return &ConflictError{Reason: "ab_test_completed", Message: "Der A/B-Test ist bereits abgeschlossen."}
	}
	return &ConflictError{Reason: "ab_test_stopped", Message: "Der A/B-Test wurde gestoppt."}
}

// releaseWaiting queues a campaign's held-back recipients with a variant.
const releaseWaiting = `UPDATE campaign_recipients SET status = 'queued', variant = $2
WHERE campaign_id = $1 AND waiting`

// copyVariantB puts variant B's content onto the target campaign.
const copyVariantB = `UPDATE campaigns c SET subject = coalesce(t.b_subject, c.subject),
  preheader = coalesce(t.b_preheader, c.preheader), html = coalesce(t.b_html, c.html),
  markdown = CASE WHEN t.b_html IS NULL THEN c.markdown ELSE '' END,
  plain_text = CASE WHEN t.b_html IS NULL THEN c.plain_text ELSE '' END,
  from_name = coalesce(t.b_from_name, c.from_name), updated_at = now()
FROM ab_tests t WHERE t.id = $1 AND c.id = t.campaign_id`

const completeABTest = `UPDATE ab_tests SET status = 'completed', winner = $2, a_rate = $3, b_rate = $4, confidence = $5,
  released = $6, copied = $7, decided_at = coalesce(decided_at, $8), finished_at = $8, updated_at = now()
WHERE id = $1 AND status = 'running'`

// abCompleted is the payload of ab_test.completed (decisions.md).
type abCompleted struct {
	ABTest abCompletedData `json:"ab_test"`
}

type abCompletedData struct {
	ID         int64   `json:"id"`
	Winner     string  `json:"winner"`
	Metric     string  `json:"metric"`
	Confidence float64 `json:"confidence"`
}

// completeABTx completes a locked running test with a winner: the held-back
// recipients are queued with the winner, variant B's content is copied onto
// the target when B won, and ab_test.completed goes into the outbox.
func completeABTx(ctx context.Context, tx *sqlx.Tx, t ABTest, winner string, res ABResults, actor Actor, now time.Time) (ABWinnerResult, error) {
	out := ABWinnerResult{Winner: winner}
	if t.CampaignID != nil {
		r, err := tx.ExecContext(ctx, releaseWaiting, *t.CampaignID, winner)
		if err != nil {
			return ABWinnerResult{}, fmt.Errorf("store: release ab recipients: %w", err)
		}
		out.Released, _ = r.RowsAffected()
		switch {
		case winner == "B" && t.TargetType == ABTargetSoap:
			// The test's campaign is sending; the day gets B as new content.
			if out.Copied, err = copySoapWinnerTx(ctx, tx, t); err != nil {
				return ABWinnerResult{}, err
			}
		case winner == "B":
			if _, err := tx.ExecContext(ctx, copyVariantB, t.ID); err != nil {
				return ABWinnerResult{}, fmt.Errorf("store: copy ab winner: %w", err)
			}
			out.Copied = true
		}
	}
	if _, err := tx.ExecContext(ctx, completeABTest, t.ID, winner, res.A.Rate(res.Metric), res.B.Rate(res.Metric),
		res.Confidence, out.Released, out.Copied, now); err != nil {
		return ABWinnerResult{}, fmt.Errorf("store: complete ab test: %w", err)
	}
	if _, err := Emit(ctx, tx, t.AccountID, EventABTestCompleted, abCompleted{ABTest: abCompletedData{
		ID: t.ID, Winner: winner, Metric: t.WinnerMetric, Confidence: res.Confidence}}); err != nil {
		return ABWinnerResult{}, err
	}
	if err := LogActivity(ctx, tx, t.AccountID, actor, ActivityEntry{Action: "ab_test.completed", ObjectType: ObjectABTest,
		ObjectID: t.ID, Details: map[string]any{"winner": winner, "released": out.Released, "confidence": res.Confidence}}); err != nil {
		return ABWinnerResult{}, err
	}
	var err error
	out.Test, err = lockABTestTx(ctx, tx, t.AccountID, t.ID)
	return out, err
}

// autoWinner is the leader, and variant A (the target as it is) while the
// variants are level.
func autoWinner(res ABResults) string {
	if res.Leader == "B" {
		return "B"
	}
	return "A"
}

// SetABWinner decides a running test: variant "A", "B", or "auto" (or "")
// for the leader by the data. The held-back recipients are queued with the
// winner (the caller wakes the send workers). 409 ab_test_not_running before
// the send, ab_test_completed or ab_test_stopped afterwards.
func (db *DB) SetABWinner(ctx context.Context, accountID int64, actor Actor, id int64, variant string, now time.Time) (ABWinnerResult, error) {
	if !oneOf(variant, "", "auto", "A", "B") {
		return ABWinnerResult{}, Invalid("variant", "Erlaubt sind A, B und auto.")
	}
	var out ABWinnerResult
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		t, err := lockABTestTx(ctx, tx, accountID, id)
		if err != nil {
			return err
		}
		if t.Status != ABRunning {
			return errABState(t)
		}
		res, err := abResults(ctx, tx, t)
		if err != nil {
			return err
		}
		winner := variant
		if winner == "" || winner == "auto" {
			winner = autoWinner(res)
		}
		out, err = completeABTx(ctx, tx, t, winner, res, actor, now)
		return err
	})
	return out, err
}

const stopABTest = `UPDATE ab_tests SET status = 'stopped', released = $2, finished_at = $3, updated_at = now() WHERE id = $1`

// StopABTest calls a draft or running test off: the held-back recipients of
// a running one are queued with variant A. It returns the test and how many
// were released. 409 for a completed or stopped test.
func (db *DB) StopABTest(ctx context.Context, accountID int64, actor Actor, id int64, now time.Time) (ABTest, int64, error) {
	var (
		t        ABTest
		released int64
	)
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if t, err = lockABTestTx(ctx, tx, accountID, id); err != nil {
			return err
		}
		if t.Status != ABDraft && t.Status != ABRunning {
			return errABState(t)
		}
		if t.Status == ABRunning && t.CampaignID != nil {
			r, err := tx.ExecContext(ctx, releaseWaiting, *t.CampaignID, "A")
			if err != nil {
				return fmt.Errorf("store: stop ab test: %w", err)
			}
			released, _ = r.RowsAffected()
		}
		if _, err := tx.ExecContext(ctx, stopABTest, id, released, now); err != nil {
			return fmt.Errorf("store: stop ab test: %w", err)
		}
		if err := LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "ab_test.stopped", ObjectType: ObjectABTest,
			ObjectID: id, Details: map[string]any{"released": released}}); err != nil {
			return err
		}
		t, err = lockABTestTx(ctx, tx, accountID, id)
		return err
	})
	return t, released, err
}

// pickDueABTest takes the running test whose decision is due longest,
// skipping tests another process is deciding.
const pickDueABTest = `SELECT ` + abTestColumns + abTestFrom + `
WHERE t.status = 'running' AND t.decided_at IS NULL AND t.decide_at <= $1
ORDER BY t.decide_at, t.id LIMIT 1 FOR UPDATE OF t SKIP LOCKED`

const suggestABWinner = `UPDATE ab_tests SET decided_at = $2, suggested_winner = $3, a_rate = $4, b_rate = $5,
  confidence = $6, updated_at = now() WHERE id = $1`

// ABDecision is what the scheduler did with one due test.
type ABDecision struct {
	Test    ABTest
	Applied bool // completed with the winner (auto_apply_winner)
	ABWinnerResult
}

// ErrNoDueABTest means no running test waits for its decision.
var ErrNoDueABTest = errors.New("store: no a/b test is due")

// DecideNextDueABTest decides the test whose decide_at (start + wait_hours)
// passed longest ago, as of now. Several processes may call it: the row is
// claimed with FOR UPDATE SKIP LOCKED and decided_at is set in the same
// transaction, so each test is decided exactly once. With auto_apply_winner
// the leader (A when level) wins and the test completes; otherwise the
// leader is recorded as suggested_winner and the test waits for POST
// /ab-tests/{id}/winner. ErrNoDueABTest when none is due.
func (db *DB) DecideNextDueABTest(ctx context.Context, now time.Time) (ABDecision, error) {
	var out ABDecision
	none := false
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var t ABTest
		if err := tx.GetContext(ctx, &t, pickDueABTest, now); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				none = true
				return nil
			}
			return fmt.Errorf("store: due ab test: %w", err)
		}
		res, err := abResults(ctx, tx, t)
		if err != nil {
			return err
		}
		winner := autoWinner(res)
		if t.AutoApplyWinner {
			w, err := completeABTx(ctx, tx, t, winner, res, Actor{Type: ActorSystem}, now)
			if err != nil {
				return err
			}
			out = ABDecision{Test: w.Test, Applied: true, ABWinnerResult: w}
			return nil
		}
		if _, err := tx.ExecContext(ctx, suggestABWinner, t.ID, now, winner, res.A.Rate(res.Metric), res.B.Rate(res.Metric),
			res.Confidence); err != nil {
			return fmt.Errorf("store: decide ab test: %w", err)
		}
		if err := LogActivity(ctx, tx, t.AccountID, Actor{Type: ActorSystem}, ActivityEntry{Action: "ab_test.decided",
			ObjectType: ObjectABTest, ObjectID: t.ID, Details: map[string]any{"suggested_winner": winner, "confidence": res.Confidence}}); err != nil {
			return err
		}
		out.Test, err = lockABTestTx(ctx, tx, t.AccountID, t.ID)
		out.Winner = winner
		return err
	})
	if err != nil {
		return ABDecision{}, err
	}
	if none {
		return ABDecision{}, ErrNoDueABTest
	}
	return out, nil
}

// ABInsight is what won in an account's completed tests of one scope
// (target type) and test type.
type ABInsight struct {
	Scope    string
	TestType string
	Tests    int
	WinsA    int
	WinsB    int
	// AvgLift is the winners' average relative lift over the losers on the
	// tests' metrics (0.18 = +18 %), over the tests where the loser had a
	// rate above 0.
	AvgLift float64
	// Findings describe the latest tests, newest first, one line each.
	Findings []string
}

const selectABHistory = `SELECT t.target_type, t.test_type, t.winner_metric, t.winner, coalesce(t.a_rate, 0) AS a_rate,
  coalesce(t.b_rate, 0) AS b_rate, coalesce(t.confidence, 0) AS confidence, t.a_subject, coalesce(t.b_subject, '') AS b_subject,
  t.a_from_name, coalesce(t.b_from_name, '') AS b_from_name
FROM ab_tests t
WHERE t.account_id = $1 AND t.status = 'completed' AND t.winner IS NOT NULL AND ($2 = '' OR t.target_type = $2)
  AND ($3 = '' OR t.test_type = $3)
ORDER BY t.finished_at DESC, t.id DESC LIMIT 500`

type abHistory struct {
	TargetType   string  `db:"target_type"`
	TestType     string  `db:"test_type"`
	WinnerMetric string  `db:"winner_metric"`
	Winner       string  `db:"winner"`
	ARate        float64 `db:"a_rate"`
	BRate        float64 `db:"b_rate"`
	Confidence   float64 `db:"confidence"`
	ASubject     string  `db:"a_subject"`
	BSubject     string  `db:"b_subject"`
	AFromName    string  `db:"a_from_name"`
	BFromName    string  `db:"b_from_name"`
}

// maxFindings bounds the findings of one insight.
const maxFindings = 5

var metricWords = map[string]string{ABMetricOpens: "Öffnungen", ABMetricClicks: "Klicks", ABMetricCTR: "Klicks pro Öffnung"}

var testTypeWords = map[string]string{ABTypeSubject: "Betreff", ABTypeContent: "Inhalt", ABTypeDesign: "Design",
	ABTypeSender: "Absender", ABTypeCombo: "Kombination"}

// finding describes one completed test in a German line.
func (h abHistory) finding() string {
	win, lose := h.BRate, h.ARate
	if h.Winner == "A" {
		win, lose = h.ARate, h.BRate
	}
	lift := ""
	if lose > 0 {
		lift = fmt.Sprintf(" (%+.0f %% %s", (win-lose)/lose*100, metricWords[h.WinnerMetric])
	} else {
		lift = fmt.Sprintf(" (%.1f %% %s", win*100, metricWords[h.WinnerMetric])
	}
	lift += fmt.Sprintf(", Konfidenz %.0f %%)", h.Confidence*100)
	pair := func(a, b string) (string, string) {
		if h.Winner == "A" {
			return a, b
		}
		return b, a
	}
	switch {
	case h.TestType == ABTypeSubject || h.TestType == ABTypeCombo && h.BSubject != "":
		w, l := pair(h.ASubject, h.BSubject)
		return fmt.Sprintf("Betreff „%s“ schlug „%s“%s", w, l, lift)
	case h.TestType == ABTypeSender && h.BFromName != "":
		w, l := pair(h.AFromName, h.BFromName)
		return fmt.Sprintf("Absender „%s“ schlug „%s“%s", w, l, lift)
	}
	v := "der neue Inhalt (B)"
	if h.Winner == "A" {
		v = "der bisherige Inhalt (A)"
	}
	return fmt.Sprintf("%s-Test: %s gewann%s", testTypeWords[h.TestType], v, lift)
}

// ABInsights summarises an account's completed tests per scope and test
// type (both filters optional), in a fixed order of scopes and test types.
func (db *DB) ABInsights(ctx context.Context, accountID int64, scope, testType string) ([]ABInsight, error) {
	errs := Errs{}
	if scope != "" && !oneOf(scope, ABTargetNewsletter, ABTargetEmail, ABTargetSeinfeld, ABTargetSoap) {
		errs.Add("scope", "Erlaubt sind newsletter, email, seinfeld und soap.")
	}
	if testType != "" && !oneOf(testType, ABTypeSubject, ABTypeContent, ABTypeDesign, ABTypeSender, ABTypeCombo) {
		errs.Add("test_type", "Erlaubt sind subject, content, design, sender und combo.")
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	var hist []abHistory
	if err := db.SelectContext(ctx, &hist, selectABHistory, accountID, scope, testType); err != nil {
		return nil, fmt.Errorf("store: ab insights: %w", err)
	}
	type key struct{ scope, testType string }
	groups := map[key]*ABInsight{}
	lifts := map[key][]float64{}
	for _, h := range hist {
		k := key{h.TargetType, h.TestType}
		g := groups[k]
		if g == nil {
			g = &ABInsight{Scope: h.TargetType, TestType: h.TestType}
			groups[k] = g
		}
		g.Tests++
		win, lose := h.BRate, h.ARate
		if h.Winner == "A" {
			g.WinsA++
			win, lose = h.ARate, h.BRate
		} else {
			g.WinsB++
		}
		if lose > 0 {
			lifts[k] = append(lifts[k], (win-lose)/lose)
		}
		if len(g.Findings) < maxFindings {
			g.Findings = append(g.Findings, h.finding())
		}
	}
	var out []ABInsight
	for _, s := range []string{ABTargetNewsletter, ABTargetEmail, ABTargetSeinfeld, ABTargetSoap} {
		for _, tt := range []string{ABTypeSubject, ABTypeContent, ABTypeDesign, ABTypeSender, ABTypeCombo} {
			k := key{s, tt}
			g := groups[k]
			if g == nil {
				continue
			}
			if l := lifts[k]; len(l) > 0 {
				sum := 0.0
				for _, v := range l {
					sum += v
				}
				g.AvgLift = math.Round(sum/float64(len(l))*10000) / 10000
			}
			out = append(out, *g)
		}
	}
	return out, nil
}

// ABInsightSource gives the AI service (store/ai.Insights) the findings of
// an account's past A/B tests of one scope, newest first.
type ABInsightSource struct{ DB *DB }

// Insights returns one line per finding of the scope.
func (s ABInsightSource) Insights(ctx context.Context, accountID int64, scope string) ([]string, error) {
	list, err := s.DB.ABInsights(ctx, accountID, scope, "")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, in := range list {
		out = append(out, in.Findings...)
	}
	return out, nil
}

// Tests of sequence days (target_type soap). A day is sent to each
// participant who reaches it, at any time, so such a test does not start
// with a campaign's send: it starts in the sequence worker's claim
// (ClaimSequenceDays) with the first participant who reaches the day after
// the test was created, and runs wait_hours from then. Its participants are
// queued into a campaign of their own (the day's campaign while it is still
// a draft, otherwise a fresh copy that becomes the day's campaign), so that
// the send workers compile variant B with it and the results count the test
// alone. While it runs each participant who reaches the day gets a variant
// in the claim's transaction, in the order of their rank
// md5("<id>:v:<email>") within the batch, each taking the variant that keeps
// the shares closest to split_a (assigned_a, assigned_b count them). Mode
// split assigns until the test is decided; in mode winner the participants
// who reach the day in the window [started_at, decide_at) are the test
// group (sample_pct does not apply), and those who reach it after wait
// (held back, as in a newsletter's winner mode) until the winner is decided
// and get it. When B wins, the day gets B's content as a new campaign, so
// that everyone who reaches the day afterwards gets the winner.

// soapTargetTx resolves a sequence day of the account to the campaign that
// carries its content now, locked (404 for another account's day).
func soapTargetTx(ctx context.Context, tx *sqlx.Tx, accountID, dayID int64) (Campaign, error) {
	var campaignID int64
	if err := tx.GetContext(ctx, &campaignID, `SELECT campaign_id FROM sequence_days WHERE account_id = $1 AND id = $2`,
		accountID, dayID); err != nil {
		return Campaign{}, notFound("sequence day", err)
	}
	return lockCampaignTx(ctx, tx, accountID, campaignID, KindSequence)
}

// dayOfCampaignTx is the sequence day a campaign of kind sequence belongs to
// (the short form campaign_id of POST /ab-tests).
func dayOfCampaignTx(ctx context.Context, tx *sqlx.Tx, accountID, campaignID int64) (int64, error) {
	var dayID int64
	if err := tx.GetContext(ctx, &dayID, `SELECT day_id FROM sequence_day_campaigns WHERE account_id = $1 AND campaign_id = $2`,
		accountID, campaignID); err != nil {
		return 0, notFound("sequence day", err)
	}
	return dayID, nil
}

// checkSoap adds the rule of sequence days: the sender is the sequence's,
// the same for all its days, so a day cannot test it.
func (t ABTest) checkSoap(errs Errs) {
	if t.TargetType != ABTargetSoap {
		return
	}
	if t.TestType == ABTypeSender {
		errs.Add("test_type", "Der Absender gilt für alle Tage einer Sequenz und lässt sich nicht für einen Tag testen.")
	}
	if t.BFromName != nil {
		errs.Add("b_from_name", "Der Absender gilt für alle Tage einer Sequenz und lässt sich nicht für einen Tag testen.")
	}
}

// soapTest is a draft or running test of a sequence day as the claim locks
// it, with its assignment counts.
type soapTest struct {
	ABTest
	AssignedA int64 `db:"assigned_a"`
	AssignedB int64 `db:"assigned_b"`
}

// lockSoapTests locks the draft and running tests of the days $1, in id
// order (the claims of several processes take them in the same order).
const lockSoapTests = `SELECT ` + abTestColumns + `, t.assigned_a, t.assigned_b` + abTestFrom + `
WHERE t.target_type = 'soap' AND t.status IN ('draft', 'running') AND t.target_id = ANY($1)
ORDER BY t.id FOR UPDATE OF t`

const markSoapStarted = `UPDATE ab_tests SET status = 'running', campaign_id = $2, started_at = $3, decide_at = $4,
  a_subject = $5, a_from_name = $6, a_preheader = $7, updated_at = now() WHERE id = $1`

// startSoapTestTx starts a draft test of a sequence day whose campaign is
// campaignID, in the claim that queues the first participant to reach the
// day: the test gets a campaign of its own (the day's, while it is a draft;
// else a copy that becomes the day's campaign), variant B's tracked links
// are stored after A's (A's are stored by the claim, as for any day
// campaign that sends for the first time), and the test runs until
// now + wait_hours. It returns the test's campaign.
func startSoapTestTx(ctx context.Context, tx *sqlx.Tx, t *soapTest, campaignID int64, links func(Campaign) ([]LinkInput, error), now time.Time) (int64, error) {
	var c Campaign
	if err := tx.GetContext(ctx, &c, `SELECT `+campaignColumns+` FROM campaigns WHERE id = $1 FOR UPDATE`, campaignID); err != nil {
		return 0, fmt.Errorf("store: soap test campaign: %w", err)
	}
	if c.Status != CampaignDraft {
		fresh, err := insertCampaignTx(ctx, tx, dayCopy(c))
		if err != nil {
			return 0, err
		}
		if err := setDayCampaignTx(ctx, tx, t.AccountID, t.TargetID, fresh.ID); err != nil {
			return 0, err
		}
		c = fresh
	}
	if t.BHTML != nil && c.TrackClicks && links != nil {
		ls, err := links(t.ApplyB(c))
		if err != nil {
			return 0, err
		}
		if len(ls) > 0 {
			urls := make(pq.StringArray, len(ls))
			pers := make(pq.BoolArray, len(ls))
			for i, l := range ls {
				urls[i], pers[i] = l.URL, l.Personalized
			}
			if _, err := tx.ExecContext(ctx, insertBLinks, c.AccountID, c.ID, urls, pers, ABLinkOffset); err != nil {
				return 0, fmt.Errorf("store: ab test links: %w", err)
			}
		}
	}
	decide := now.Add(time.Duration(t.WaitHours) * time.Hour)
	if _, err := tx.ExecContext(ctx, markSoapStarted, t.ID, c.ID, now, decide, c.Subject, c.FromName, c.Preheader); err != nil {
		return 0, fmt.Errorf("store: start ab test: %w", err)
	}
	t.Status, t.CampaignID, t.StartedAt, t.DecideAt = ABRunning, &c.ID, &now, &decide
	return c.ID, LogActivity(ctx, tx, t.AccountID, Actor{Type: ActorSystem}, ActivityEntry{Action: "ab_test.started",
		ObjectType: ObjectABTest, ObjectID: t.ID, Details: map[string]any{"campaign_id": c.ID, "mode": t.Mode, "day_id": t.TargetID}})
}

// soapSlot is what a running test gives one participant: a variant, or
// held back until the winner is decided (mode winner after the window).
type soapSlot struct {
	Variant string
	Held    bool
}

// assign gives the participants who reach the test's day in one claim
// (their addresses) their slots, in the order of their rank, and counts the
// variants on the test row (locked by the claim).
func (t *soapTest) assign(ctx context.Context, tx *sqlx.Tx, emails []string, now time.Time) ([]soapSlot, error) {
	out := make([]soapSlot, len(emails))
	if t.Mode == ABModeWinner && t.DecideAt != nil && !now.Before(*t.DecideAt) {
		for i := range out {
			out[i].Held = true
		}
		return out, nil
	}
	order := make([]int, len(emails))
	keys := make([][md5.Size]byte, len(emails))
	for i, e := range emails {
		order[i], keys[i] = i, abRankKey(t.ID, "v", e)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := bytes.Compare(keys[a][:], keys[b][:]); c != 0 {
			return c
		}
		return strings.Compare(emails[a], emails[b])
	})
	a, b := t.AssignedA, t.AssignedB
	for _, i := range order {
		if a < int64(abCut(t.SplitA, int(a+b+1))) {
			out[i].Variant = "A"
			a++
		} else {
			out[i].Variant = "B"
			b++
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE ab_tests SET assigned_a = $2, assigned_b = $3 WHERE id = $1`, t.ID, a, b); err != nil {
		return nil, fmt.Errorf("store: ab test assignment: %w", err)
	}
	t.AssignedA, t.AssignedB = a, b
	return out, nil
}

// copySoapWinnerTx gives the day of a test that B won B's content as a new
// campaign (the test's campaign is sending: the send workers compiled it),
// so that everyone who reaches the day from now on gets the winner. Nothing
// is copied when the day is gone or carries other content by now.
func copySoapWinnerTx(ctx context.Context, tx *sqlx.Tx, t ABTest) (bool, error) {
	var campaignID int64
	err := tx.GetContext(ctx, &campaignID, `SELECT campaign_id FROM sequence_days WHERE account_id = $1 AND id = $2 FOR UPDATE`,
		t.AccountID, t.TargetID)
	if errors.Is(err, sql.ErrNoRows) || err == nil && (t.CampaignID == nil || campaignID != *t.CampaignID) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: copy ab winner: %w", err)
	}
	var c Campaign
	if err := tx.GetContext(ctx, &c, `SELECT `+campaignColumns+` FROM campaigns WHERE id = $1`, campaignID); err != nil {
		return false, fmt.Errorf("store: copy ab winner: %w", err)
	}
	fresh, err := insertCampaignTx(ctx, tx, dayCopy(t.ApplyB(c)))
	if err != nil {
		return false, err
	}
	if err := setDayCampaignTx(ctx, tx, t.AccountID, t.TargetID, fresh.ID); err != nil {
		return false, err
	}
	return true, nil
}
