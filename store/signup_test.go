package store_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/botguard"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// signupClock is the bot guard's clock; tests move it to let the fill time pass.
type signupClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *signupClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *signupClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type signupEnv struct {
	db    *store.DB
	acct  int64
	clock *signupClock
	guard *botguard.Guard
}

func newSignupEnv(t *testing.T) *signupEnv {
	t.Helper()
	db := dbtest.NewDB(t)
	c := &signupClock{t: time.Now()}
	return &signupEnv{db: db, acct: newAccount(t, db, "business"), clock: c, guard: botguard.New("signup test secret", c.Now)}
}

// stamp renders the form now and lets 5 seconds pass, as a person filling it would.
func (e *signupEnv) stamp(token string) string {
	s := e.guard.Stamp(token)
	e.clock.Add(5 * time.Second)
	return s
}

func (e *signupEnv) signUp(token string, in store.SignUpInput) (store.SignUpResult, error) {
	if in.IP == "" {
		in.IP = "198.51.100.7"
	}
	return e.db.SignUp(context.Background(), e.guard, token, in, e.clock.Now())
}

func (e *signupEnv) mustSignUp(t *testing.T, token string, in store.SignUpInput) store.SignUpResult {
	t.Helper()
	res, err := e.signUp(token, in)
	if err != nil {
		t.Fatalf("sign up %s: %v", in.Email, err)
	}
	return res
}

func (e *signupEnv) contact(t *testing.T, email string) store.Contact {
	t.Helper()
	c, err := e.db.ContactByEmail(context.Background(), e.acct, email)
	if err != nil {
		t.Fatalf("contact %s: %v", email, err)
	}
	return c
}

// confirmToken returns the token of the newest confirmation mail to email.
func (e *signupEnv) confirmToken(t *testing.T, email string) string {
	t.Helper()
	var path string
	if err := e.db.GetContext(context.Background(), &path, `SELECT link_path FROM system_mails
		WHERE account_id = $1 AND to_email = $2 AND kind = $3 ORDER BY id DESC LIMIT 1`, e.acct, email, store.SystemMailDOI); err != nil {
		t.Fatalf("confirmation mail to %s: %v", email, err)
	}
	return strings.TrimPrefix(path, store.ConfirmPathPrefix)
}

func (e *signupEnv) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := e.db.GetContext(context.Background(), &n, query, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSignUpDoubleOptInAndConfirm(t *testing.T) {
	ctx := context.Background()
	e := newSignupEnv(t)
	l := mkList(t, e.db, e.acct, "News", false)
	f := mkForm(t, e.db, e.acct, store.FormInput{ListIDs: &[]int64{l.ID}, Tags: &[]string{"web"}, Fields: &[]string{"first_name", "city"}})

	res := e.mustSignUp(t, f.Token, store.SignUpInput{Email: " Erika@Example.com ", FirstName: " Erika ", City: "Köln",
		LastName: "Ignoriert", Stamp: e.stamp(f.Token)})
	if res.Status != store.StatusPending || res.Discarded || res.ContactID == 0 || !strings.Contains(res.Message(), "bestätigen") {
		t.Errorf("result = %+v (%q)", res, res.Message())
	}
	c := e.contact(t, "erika@example.com")
	if c.Status != store.StatusPending || c.Source != store.SourceForm || c.FirstName != "Erika" || c.City != "Köln" ||
		c.LastName != "" || !slices.Equal(c.Tags, []string{"web"}) || len(c.Lists) != 1 || c.Lists[0].ID != l.ID {
		t.Errorf("contact = %+v (last_name is not a field of the form)", c)
	}
	if n := e.count(t, `SELECT count(*) FROM system_mails WHERE account_id = $1 AND to_email = $2 AND kind = $3`, e.acct, c.Email, store.SystemMailDOI); n != 1 {
		t.Errorf("%d confirmation mails, want 1", n)
	}
	if n := e.count(t, `SELECT count(*) FROM activity_log WHERE account_id = $1 AND actor_type = 'public' AND action = 'contact.signed_up'`, e.acct); n != 1 {
		t.Errorf("%d sign-up activities by the public actor, want 1", n)
	}
	if got, _ := e.db.Form(ctx, e.acct, f.ID); got.Submissions != 1 {
		t.Errorf("submissions = %d, want 1", got.Submissions)
	}

	conf, err := e.db.ConfirmContact(ctx, e.confirmToken(t, c.Email))
	if err != nil || conf.Contact.Status != store.StatusSubscribed || conf.Contact.DOIConfirmedAt == nil {
		t.Errorf("confirm = %+v, %v", conf, err)
	}
}

func TestSignUpSingleOptIn(t *testing.T) {
	e := newSignupEnv(t)
	l := mkList(t, e.db, e.acct, "News", false)
	f := mkForm(t, e.db, e.acct, store.FormInput{ListIDs: &[]int64{l.ID}, DoubleOptIn: ptr(false), SuccessMessage: ptr("Willkommen!")})
	res := e.mustSignUp(t, f.Token, store.SignUpInput{Email: "max@example.com", Stamp: e.stamp(f.Token)})
	if res.Status != store.StatusSubscribed || res.Message() != "Willkommen!" {
		t.Errorf("result = %+v (%q)", res, res.Message())
	}
	if c := e.contact(t, "max@example.com"); c.Status != store.StatusSubscribed {
		t.Errorf("status = %s", c.Status)
	}
	if n := e.count(t, `SELECT count(*) FROM system_mails WHERE account_id = $1`, e.acct); n != 0 {
		t.Errorf("%d system mails for a single opt-in form", n)
	}

	// A list with double opt-in asks for confirmation even when the form does not.
	doi := mkList(t, e.db, e.acct, "Bestätigt", true)
	g := mkForm(t, e.db, e.acct, store.FormInput{ListIDs: &[]int64{doi.ID}, DoubleOptIn: ptr(false)})
	if res := e.mustSignUp(t, g.Token, store.SignUpInput{Email: "neu@example.com", Stamp: e.stamp(g.Token)}); res.Status != store.StatusPending {
		t.Errorf("double opt-in list: status %s", res.Status)
	}
}

func TestSignUpNeverOverwritesKnownFields(t *testing.T) {
	e := newSignupEnv(t)
	upsert(t, e.db, e.acct, store.ContactInput{Email: "known@example.com", FirstName: ptr("Anna")})
	f := mkForm(t, e.db, e.acct, store.FormInput{DoubleOptIn: ptr(false), Fields: &[]string{"first_name", "city"}})
	e.mustSignUp(t, f.Token, store.SignUpInput{Email: "known@example.com", FirstName: "Mallory", City: "Bonn", Stamp: e.stamp(f.Token)})
	if c := e.contact(t, "known@example.com"); c.FirstName != "Anna" || c.City != "Bonn" {
		t.Errorf("contact = %q from %q: a sign-up fills empty fields only", c.FirstName, c.City)
	}
}

func TestSignUpHoneypot(t *testing.T) {
	ctx := context.Background()
	e := newSignupEnv(t)
	for _, doi := range []bool{true, false} {
		f := mkForm(t, e.db, e.acct, store.FormInput{DoubleOptIn: &doi})
		// No stamp either: a bot that fills the honeypot is answered as a success anyway.
		res := e.mustSignUp(t, f.Token, store.SignUpInput{Email: "bot@example.com", Honeypot: "https://spam.example"})
		want := store.StatusSubscribed
		if doi {
			want = store.StatusPending
		}
		if !res.Discarded || res.Status != want || res.ContactID != 0 {
			t.Errorf("doi %v: result = %+v, want discarded with status %s", doi, res, want)
		}
		if got, _ := e.db.Form(ctx, e.acct, f.ID); got.Submissions != 0 {
			t.Errorf("submissions = %d after a bot", got.Submissions)
		}
	}
	if n := e.count(t, `SELECT count(*) FROM contacts WHERE account_id = $1`, e.acct); n != 0 {
		t.Errorf("%d contacts created by a bot", n)
	}
}

func TestSignUpStamp(t *testing.T) {
	e := newSignupEnv(t)
	f := mkForm(t, e.db, e.acct, store.FormInput{DoubleOptIn: ptr(false)})
	other := mkForm(t, e.db, e.acct, store.FormInput{})
	cases := []struct {
		name  string
		stamp func() string
	}{
		{"missing", func() string { return "" }},
		{"garbage", func() string { return "123.abc" }},
		{"too fast", func() string { s := e.guard.Stamp(f.Token); e.clock.Add(time.Second); return s }},
		{"expired", func() string { s := e.guard.Stamp(f.Token); e.clock.Add(25 * time.Hour); return s }},
		{"another form's", func() string { return e.stamp(other.Token) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.signUp(f.Token, store.SignUpInput{Email: "a@example.com", Stamp: c.stamp()})
			wantFields(t, err, store.FieldStamp)
		})
	}
	// The stamp's error comes together with the fields' errors.
	_, err := e.signUp(f.Token, store.SignUpInput{Email: "kaputt"})
	wantFields(t, err, store.FieldStamp, "email")
	if n := e.count(t, `SELECT count(*) FROM contacts WHERE account_id = $1`, e.acct); n != 0 {
		t.Errorf("%d contacts created without a valid stamp", n)
	}

	// min_fill_seconds 0 turns the stamp off (server-to-server integrations).
	api := mkForm(t, e.db, e.acct, store.FormInput{MinFillSeconds: ptr(0), DoubleOptIn: ptr(false)})
	if res := e.mustSignUp(t, api.Token, store.SignUpInput{Email: "server@example.com"}); res.Status != store.StatusSubscribed {
		t.Errorf("without stamp: %+v", res)
	}
}

func TestSignUpProofOfWork(t *testing.T) {
	e := newSignupEnv(t)
	f := mkForm(t, e.db, e.acct, store.FormInput{ProofOfWork: ptr(true), DoubleOptIn: ptr(false)})
	solve := func() string {
		t.Helper()
		c, err := e.guard.NewChallenge(2000, store.ChallengeTTL)
		if err != nil {
			t.Fatal(err)
		}
		p, err := botguard.Solve(c)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	payload := solve()
	if _, err := e.signUp(f.Token, store.SignUpInput{Email: "a@example.com", Stamp: e.stamp(f.Token), Proof: payload}); err != nil {
		t.Fatalf("solved challenge refused: %v", err)
	}
	_, err := e.signUp(f.Token, store.SignUpInput{Email: "b@example.com", Stamp: e.stamp(f.Token), Proof: payload})
	wantFields(t, err, store.FieldProof)

	wrong := tamper(t, solve())
	expired := solve()
	e.clock.Add(store.ChallengeTTL + time.Minute)
	for name, p := range map[string]string{"missing": "", "wrong": wrong, "not base64": "%%%", "expired": expired} {
		t.Run(name, func(t *testing.T) {
			_, err := e.signUp(f.Token, store.SignUpInput{Email: "c@example.com", Stamp: e.stamp(f.Token), Proof: p})
			wantFields(t, err, store.FieldProof)
		})
	}
	if n := e.count(t, `SELECT count(*) FROM contacts WHERE account_id = $1`, e.acct); n != 1 {
		t.Errorf("%d contacts, want only the one with a fresh solution", n)
	}
	if n := e.count(t, `SELECT count(*) FROM used_challenges WHERE account_id = $1`, e.acct); n != 1 {
		t.Errorf("%d used challenges recorded, want 1", n)
	}
}

// tamper changes the number of a solved payload: the signature still matches, the
// hash no longer does.
func tamper(t *testing.T, payload string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}
	var s botguard.Solution
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	s.Number++
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func TestSignUpRateLimitPerIP(t *testing.T) {
	e := newSignupEnv(t)
	// Start of a minute, so that the 11 sign-ups share one window.
	e.clock.t = e.clock.t.Truncate(time.Minute)
	f := mkForm(t, e.db, e.acct, store.FormInput{MinFillSeconds: ptr(0), DoubleOptIn: ptr(false)})
	for i := range store.SignUpsPerIPMinute {
		e.mustSignUp(t, f.Token, store.SignUpInput{Email: fmt.Sprintf("p%d@example.com", i), IP: "203.0.113.9"})
	}
	_, err := e.signUp(f.Token, store.SignUpInput{Email: "eleven@example.com", IP: "203.0.113.9"})
	var rl *store.RateLimitError
	if !errors.As(err, &rl) || rl.Limit != "ip" || rl.RetryAfter < 1 || rl.RetryAfter > 60 {
		t.Fatalf("11th sign-up: %v (%+v)", err, rl)
	}
	// Another address has its own budget; an IPv6 address counts by its /64.
	e.mustSignUp(t, f.Token, store.SignUpInput{Email: "other@example.com", IP: "203.0.113.10"})
	for i := range store.SignUpsPerIPMinute {
		e.mustSignUp(t, f.Token, store.SignUpInput{Email: fmt.Sprintf("v%d@example.com", i), IP: fmt.Sprintf("2001:db8:1:2::%x", i+1)})
	}
	if _, err := e.signUp(f.Token, store.SignUpInput{Email: "v6@example.com", IP: "2001:db8:1:2:ffff::1"}); !errors.As(err, &rl) {
		t.Errorf("11th sign-up from one /64: %v", err)
	}
	// The next minute has a fresh budget.
	e.clock.Add(time.Minute)
	e.mustSignUp(t, f.Token, store.SignUpInput{Email: "later@example.com", IP: "203.0.113.9"})
}

func TestSignUpRateLimitPerListAndDay(t *testing.T) {
	ctx := context.Background()
	e := newSignupEnv(t)
	// 20:00 in Berlin: the day window ends at midnight, 4 hours later.
	e.clock.t = time.Date(2026, 6, 10, 20, 0, 0, 0, store.Berlin)
	l := mkList(t, e.db, e.acct, "News", false)
	f := mkForm(t, e.db, e.acct, store.FormInput{ListIDs: &[]int64{l.ID}, MinFillSeconds: ptr(0), DoubleOptIn: ptr(false)})
	e.mustSignUp(t, f.Token, store.SignUpInput{Email: "first@example.com"})
	// Spend the rest of the day's budget: the counter is the real one HitDay keeps.
	if _, err := e.db.ExecContext(ctx, `UPDATE rate_counters SET count = $2 WHERE bucket = $1`,
		store.DayBucketPrefix+store.SignUpListBucket(l.ID), store.SignUpsPerListDay); err != nil {
		t.Fatal(err)
	}
	_, err := e.signUp(f.Token, store.SignUpInput{Email: "late@example.com", IP: "198.51.100.99"})
	var rl *store.RateLimitError
	if !errors.As(err, &rl) || rl.Limit != "list" || rl.RetryAfter != 4*3600 {
		t.Fatalf("sign-up over the day's budget: %v (%+v), want retry after 14400 s", err, rl)
	}
	// The budget is per list: another form onto another list still works.
	l2 := mkList(t, e.db, e.acct, "Andere", false)
	g := mkForm(t, e.db, e.acct, store.FormInput{ListIDs: &[]int64{l2.ID}, MinFillSeconds: ptr(0), DoubleOptIn: ptr(false)})
	e.mustSignUp(t, g.Token, store.SignUpInput{Email: "late@example.com", IP: "198.51.100.99"})

	// Purge keeps the day window until the Berlin day is over, then drops it.
	if err := e.db.Purge(ctx, e.clock.Now().Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	dayRows := `SELECT count(*) FROM rate_counters WHERE bucket LIKE 'day:%'`
	minuteRows := `SELECT count(*) FROM rate_counters WHERE bucket NOT LIKE 'day:%'`
	if n := e.count(t, dayRows); n != 2 {
		t.Errorf("%d day windows after a purge within the day, want 2", n)
	}
	if n := e.count(t, minuteRows); n != 0 {
		t.Errorf("%d minute windows kept 3 hours later", n)
	}
	e.clock.Add(4*time.Hour + time.Second)
	if err := e.db.Purge(ctx, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if n := e.count(t, dayRows); n != 0 {
		t.Errorf("%d day windows after the day ended", n)
	}
	// And the next day has a fresh budget.
	e.mustSignUp(t, f.Token, store.SignUpInput{Email: "nextday@example.com", IP: "198.51.100.99"})
}

func TestSignUpBlockedAddress(t *testing.T) {
	ctx := context.Background()
	e := newSignupEnv(t)
	c := upsert(t, e.db, e.acct, store.ContactInput{Email: "gone@example.com"}).Contact
	if _, err := e.db.UnsubscribeContact(ctx, e.acct, apiActor, c.ID, store.Unsubscribe{Source: store.UnsubLink}); err != nil {
		t.Fatal(err)
	}
	blocked := `SELECT count(*) FROM blocked_addresses WHERE account_id = $1 AND email = $2`
	if n := e.count(t, blocked, e.acct, c.Email); n != 1 {
		t.Fatalf("address not blocked after unsubscribing")
	}

	// Signing up again through a double opt-in form sends a confirmation; the block
	// stays until the person confirms.
	f := mkForm(t, e.db, e.acct, store.FormInput{})
	if res := e.mustSignUp(t, f.Token, store.SignUpInput{Email: c.Email, Stamp: e.stamp(f.Token)}); res.Status != store.StatusPending {
		t.Errorf("status %s, want pending", res.Status)
	}
	if n := e.count(t, blocked, e.acct, c.Email); n != 1 {
		t.Errorf("block lifted before confirming")
	}
	conf, err := e.db.ConfirmContact(ctx, e.confirmToken(t, c.Email))
	if err != nil || !conf.Unblocked || conf.Contact.Status != store.StatusSubscribed {
		t.Fatalf("confirm = %+v, %v", conf, err)
	}
	if n := e.count(t, blocked, e.acct, c.Email); n != 0 {
		t.Errorf("still blocked after confirming")
	}

	// On a single opt-in form a blocked address is asked for a confirmation too:
	// otherwise the sign-up could never take effect.
	c2 := upsert(t, e.db, e.acct, store.ContactInput{Email: "gone2@example.com"}).Contact
	if _, err := e.db.UnsubscribeContact(ctx, e.acct, apiActor, c2.ID, store.Unsubscribe{}); err != nil {
		t.Fatal(err)
	}
	g := mkForm(t, e.db, e.acct, store.FormInput{DoubleOptIn: ptr(false)})
	if res := e.mustSignUp(t, g.Token, store.SignUpInput{Email: c2.Email, Stamp: e.stamp(g.Token)}); res.Status != store.StatusPending {
		t.Errorf("blocked address on a single opt-in form: %s, want pending", res.Status)
	}
	if _, err := e.db.ConfirmContact(ctx, e.confirmToken(t, c2.Email)); err != nil {
		t.Fatal(err)
	}
	if got := e.contact(t, c2.Email); got.Status != store.StatusSubscribed {
		t.Errorf("after confirming: %s", got.Status)
	}
}

func TestSignUpUnknownToken(t *testing.T) {
	e := newSignupEnv(t)
	for _, tok := range []string{"", "nope", strings.Repeat("a", store.FormTokenLen)} {
		if _, err := e.signUp(tok, store.SignUpInput{Email: "x@example.com"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("token %q: %v", tok, err)
		}
	}
}

func TestPurgeUsedChallenges(t *testing.T) {
	ctx := context.Background()
	e := newSignupEnv(t)
	now := time.Now()
	if _, err := e.db.ExecContext(ctx, `INSERT INTO used_challenges (challenge, account_id, expires_at) VALUES ('old', $1, $2), ('live', $1, $3)`,
		e.acct, now.Add(-time.Minute), now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Purge(ctx, now); err != nil {
		t.Fatal(err)
	}
	var left []string
	if err := e.db.SelectContext(ctx, &left, `SELECT challenge FROM used_challenges`); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(left, []string{"live"}) {
		t.Errorf("after purge: %v", left)
	}
}

// Signing up again with a pending address sends no second confirmation mail
// within store.ConfirmationCooldown; after it, one more.
func TestSignUpConfirmationCooldown(t *testing.T) {
	ctx := context.Background()
	e := newSignupEnv(t)
	l := mkList(t, e.db, e.acct, "News", true)
	f := mkForm(t, e.db, e.acct, store.FormInput{ListIDs: &[]int64{l.ID}, MinFillSeconds: ptr(0)})
	mails := func() int {
		return e.count(t, `SELECT count(*) FROM system_mails WHERE account_id = $1 AND to_email = 'anna@example.com' AND kind = $2`,
			e.acct, store.SystemMailDOI)
	}
	for i := range 3 {
		if res := e.mustSignUp(t, f.Token, store.SignUpInput{Email: "anna@example.com"}); res.Status != store.StatusPending {
			t.Fatalf("sign-up %d: status %s", i, res.Status)
		}
	}
	if n := mails(); n != 1 {
		t.Fatalf("%d confirmation mails after three sign-ups within the cooldown, want 1", n)
	}
	if n := e.count(t, `SELECT count(*) FROM activity_log WHERE account_id = $1 AND action = 'contact.confirmation_sent'`, e.acct); n != 1 {
		t.Errorf("%d confirmation_sent activities, want 1", n)
	}
	// The API asking for pending again is held back the same way.
	if _, err := e.db.UpsertContact(ctx, e.acct, store.Actor{Type: store.ActorSystem}, store.ContactInput{Email: "anna@example.com", Status: ptr(store.StatusPending)}); err != nil {
		t.Fatal(err)
	}
	if n := mails(); n != 1 {
		t.Fatalf("%d confirmation mails, want 1", n)
	}
	// Once the cooldown is over, the next sign-up sends a new link; the first still works.
	first := e.confirmToken(t, "anna@example.com")
	if _, err := e.db.ExecContext(ctx, `UPDATE doi_tokens SET created_at = created_at - $2 * interval '1 second' WHERE account_id = $1`,
		e.acct, int64(store.ConfirmationCooldown/time.Second)+1); err != nil {
		t.Fatal(err)
	}
	e.mustSignUp(t, f.Token, store.SignUpInput{Email: "anna@example.com"})
	if n := mails(); n != 2 {
		t.Fatalf("%d confirmation mails after the cooldown, want 2", n)
	}
	if got, _ := e.db.Form(ctx, e.acct, f.ID); got.Submissions != 4 {
		t.Errorf("submissions = %d, want 4", got.Submissions)
	}
	if conf, err := e.db.ConfirmContact(ctx, first); err != nil || conf.Contact.Status != store.StatusSubscribed {
		t.Errorf("confirm with the first link = %+v, %v", conf, err)
	}
}
