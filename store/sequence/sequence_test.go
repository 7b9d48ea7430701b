package sequence_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"mime"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/sequence"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(killHelperEnv); url != "" {
		// A worker process of TestKilledWorkersQueueEveryDayOnce: it ticks until
		// it is killed.
		os.Exit(runKillHelper(url))
	}
	dbtest.Main(m)
}

// killHelperEnv carries the database URL to a worker process that the test
// kills with SIGKILL.
const killHelperEnv = "RUNDBRIEF_SEQUENCE_KILL_DB"

func runKillHelper(url string) int {
	ctx := context.Background()
	db, err := store.Open(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w := sequence.NewWorker(db, nil, sequence.WorkerOptions{Batch: 20})
	for {
		if _, err := w.Tick(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestKilledWorkersQueueEveryDayOnce runs the sequence worker in two
// processes that are killed with SIGKILL at random moments and started
// again, over 1500 participants of a 3-day sequence whose days are all due
// at once: in the end every participant completed with exactly one
// recipient row per day, none lost and none twice (the queueing and the move
// commit together).
func TestKilledWorkersQueueEveryDayOnce(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.contacts("kill", 1500)
	seq := e.sequence("Kill", "", 0, 0, 0)
	e.clock.Set(time.Now().Add(-time.Hour))
	svc := sequence.New(e.db, nil, nil, nil, nil, sequence.Options{Now: e.clock.Now})
	if _, err := svc.Activate(ctx, e.acct, sys, seq.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Enrol(ctx, e.acct, sys, seq.ID, ids[:1000], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Enrol(ctx, e.acct, sys, seq.ID, ids[1000:], nil); err != nil {
		t.Fatal(err)
	}
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), killHelperEnv+"="+e.url)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	procs := []*exec.Cmd{start(), start()}
	kills := 0
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var active int
		e.scalar(&active, `SELECT count(*) FROM sequence_participants WHERE sequence_id = $1 AND status = 'active'`, seq.ID)
		if active == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Duration(50+rand.IntN(250)) * time.Millisecond)
		i := rand.IntN(len(procs))
		_ = procs[i].Process.Signal(syscall.SIGKILL)
		_ = procs[i].Wait()
		kills++
		procs[i] = start()
	}
	for _, p := range procs {
		_ = p.Process.Signal(syscall.SIGKILL)
		_ = p.Wait()
	}
	q := e.queued(seq.ID)
	for _, id := range ids {
		if q[id] != 3 {
			t.Fatalf("contact %d has %d recipient rows after %d kills, want 3", id, q[id], kills)
		}
	}
	var completed, events int
	e.scalar(&completed, `SELECT count(*) FROM sequence_participants WHERE sequence_id = $1 AND status = 'completed' AND current_day = 3`, seq.ID)
	e.scalar(&events, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'sequence.completed'`, e.acct)
	if completed != len(ids) || events != len(ids) {
		t.Fatalf("%d completed, %d events after %d kills; want %d", completed, events, kills, len(ids))
	}
	t.Logf("%d kills", kills)
}

var sys = store.Actor{Type: store.ActorSystem}

const testSecret = "sequence-test-secret-0123456789abcdef"

// env is one account with an SMTP server on a real test server.
type env struct {
	t        testing.TB
	url      string
	db       *store.DB
	acct     int64
	srv      *smtptest.Server
	serverID int64
	box      *secret.Box
	clock    *clock
}

// clock is the injected clock of the sequence worker.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	url := dbtest.URL(t)
	db := dbtest.Open(t, url)
	res, err := db.CreateAccount(ctx, store.NewAccount{Name: "Acme", Email: "owner-" + store.RandomString(6) + "@acme.test", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, url: url, db: db, acct: res.Account.ID, clock: &clock{now: time.Now()}}
	e.srv = smtptest.Start(t, smtptest.Options{})
	if e.box, err = secret.NewBox(testSecret); err != nil {
		t.Fatal(err)
	}
	s, err := db.CreateSMTPServer(ctx, e.box, e.acct, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "Test", Host: e.srv.Host, Port: e.srv.Port, Encryption: "none", FromEmail: "story@acme.test", FromName: "Acme",
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.serverID = s.ID
	return e
}

func (e *env) exec(q string, args ...any) {
	e.t.Helper()
	if _, err := e.db.ExecContext(context.Background(), q, args...); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
}

func (e *env) scalar(dst any, q string, args ...any) {
	e.t.Helper()
	if err := e.db.GetContext(context.Background(), dst, q, args...); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
}

// contacts creates n subscribed contacts prefix<i>@example.com and returns
// their ids.
func (e *env) contacts(prefix string, n int) []int64 {
	e.t.Helper()
	e.exec(`INSERT INTO contacts (account_id, email, first_name)
SELECT $1, $3 || g || '@example.com', 'Vorname' || g FROM generate_series(1, $2::int) AS g`, e.acct, n, prefix)
	var ids []int64
	if err := e.db.SelectContext(context.Background(), &ids, `SELECT id FROM contacts WHERE account_id = $1 AND email LIKE $2 ORDER BY id`,
		e.acct, prefix+"%"); err != nil {
		e.t.Fatal(err)
	}
	return ids
}

// sequence creates a sequence with days of the given delays (subjects
// "Tag 1", "Tag 2", …) on the test SMTP server.
func (e *env) sequence(name string, sendTime string, delays ...int) store.Sequence {
	e.t.Helper()
	ctx := context.Background()
	sid := e.serverID
	s, err := e.db.CreateSequence(ctx, e.acct, sys, store.SequenceInput{Name: &name, SendTime: &sendTime, SMTPServerID: &sid})
	if err != nil {
		e.t.Fatal(err)
	}
	for i, d := range delays {
		subject, html := fmt.Sprintf("Tag %d für {{vorname}}", i+1), fmt.Sprintf("<p>Hallo {{vorname}}, das ist Tag %d.</p>", i+1)
		if _, err := e.db.CreateSequenceDay(ctx, e.acct, sys, s.ID, store.DayInput{DelayDays: &d,
			Content: store.NewsletterInput{Subject: &subject, HTML: &html}}); err != nil {
			e.t.Fatal(err)
		}
	}
	return s
}

func (e *env) worker(db *store.DB) *sequence.Worker {
	return sequence.NewWorker(db, nil, sequence.WorkerOptions{Now: e.clock.Now, Batch: 100})
}

func (e *env) tick(w *sequence.Worker) store.SequenceClaimResult {
	e.t.Helper()
	res, err := w.Tick(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// queuedDays counts the recipient rows per contact of the sequence's days.
func (e *env) queued(seqID int64) map[int64]int {
	e.t.Helper()
	var rows []struct {
		ContactID int64 `db:"contact_id"`
		N         int   `db:"n"`
	}
	if err := e.db.SelectContext(context.Background(), &rows, `SELECT r.contact_id, count(*) AS n FROM campaign_recipients r
JOIN sequence_day_campaigns m ON m.campaign_id = r.campaign_id WHERE m.sequence_id = $1 GROUP BY r.contact_id`, seqID); err != nil {
		e.t.Fatal(err)
	}
	out := map[int64]int{}
	for _, r := range rows {
		out[r.ContactID] = r.N
	}
	return out
}

func berlin(y int, m time.Month, d, hh, mm int) time.Time {
	return time.Date(y, m, d, hh, mm, 0, 0, store.Berlin)
}

func (e *env) participant(seqID, contactID int64) store.Participant {
	e.t.Helper()
	var p store.Participant
	e.scalar(&p, `SELECT id, sequence_id, contact_id, email, status, current_day, next_send_at, joined_at, completed_at,
  exited_at, exit_reason FROM sequence_participants WHERE sequence_id = $1 AND contact_id = $2`, seqID, contactID)
	return p
}

// TestThreeDaysAcrossDaylightSaving delivers a 3-day sequence with
// send_time 09:00 to a real SMTP server, the clock moving over the start of
// summer time (29 March 2026): each day goes out at 09:00 Berlin time, that
// is 08:00 UTC before the change and 07:00 UTC after it, and not a minute
// earlier. After the last day the participants are completed and
// sequence.completed is emitted once each.
func TestThreeDaysAcrossDaylightSaving(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.contacts("dst", 3)
	seq := e.sequence("Willkommen", "09:00", 0, 1, 1)
	e.clock.Set(berlin(2026, 3, 27, 10, 0)) // Friday, winter time
	svc := sequence.New(e.db, nil, nil, nil, nil, sequence.Options{Now: e.clock.Now})
	if _, err := svc.Activate(ctx, e.acct, sys, seq.ID); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Enrol(ctx, e.acct, sys, seq.ID, append(ids, ids[0], 999999), nil)
	if err != nil || res.Enrolled != 3 || res.Skipped != 2 {
		t.Fatalf("enrol: %+v, %v", res, err)
	}
	w := e.worker(e.db)
	want := []time.Time{
		time.Date(2026, 3, 28, 8, 0, 0, 0, time.UTC), // 09:00 CET
		time.Date(2026, 3, 29, 7, 0, 0, 0, time.UTC), // 09:00 CEST, the day of the change
		time.Date(2026, 3, 30, 7, 0, 0, 0, time.UTC),
	}
	for day, at := range want {
		p := e.participant(seq.ID, ids[0])
		if p.NextSendAt == nil || !p.NextSendAt.Equal(at) {
			t.Fatalf("day %d: next_send_at %v, want %v", day+1, p.NextSendAt, at)
		}
		e.clock.Set(at.Add(-time.Second))
		if r := e.tick(w); r.Queued != 0 {
			t.Fatalf("day %d queued a second early: %+v", day+1, r)
		}
		e.clock.Set(at)
		if r := e.tick(w); r.Queued != 3 {
			t.Fatalf("day %d at %v: %+v", day+1, at, r)
		}
		if r := e.tick(w); r.Queued != 0 {
			t.Fatalf("day %d queued twice: %+v", day+1, r)
		}
	}
	for _, id := range ids {
		p := e.participant(seq.ID, id)
		if p.Status != store.ParticipantCompleted || p.CurrentDay != 3 || p.NextSendAt != nil || p.CompletedAt == nil {
			t.Errorf("participant %d: %+v", id, p)
		}
	}
	var completed int
	e.scalar(&completed, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'sequence.completed'
  AND payload->'sequence'->>'name' = 'Willkommen' AND (payload->'contact'->>'id')::bigint = ANY($2)`, e.acct, ids)
	if completed != 3 {
		t.Errorf("%d sequence.completed events, want 3", completed)
	}

	// The send queue delivers them: three mails per contact, days in order.
	tr := mailer.NewTransports(e.db, e.box, mailer.TransportOptions{HELO: "rundbrief.test", DefaultFrom: mailer.DefaultFrom("https://rb.test")})
	tokens, err := mailer.NewTokens(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	sender := mailer.NewWorker(e.db, tr, mailer.WorkerOptions{Links: mailer.LinkBuilder{BaseURL: "https://rb.test", Tokens: tokens},
		PollInterval: 20 * time.Millisecond})
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = sender.Run(runCtx) })
	deadline := time.Now().Add(time.Minute)
	for e.srv.Count() < 9 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	cancel()
	wg.Wait()
	got := map[string][]string{}
	for _, m := range e.srv.Messages() {
		subject := headerOf(string(m.Data), "Subject")
		for _, to := range m.To {
			got[to] = append(got[to], subject)
		}
	}
	if e.srv.Count() != 9 || len(got) != 3 {
		t.Fatalf("%d messages to %d recipients, want 9 to 3", e.srv.Count(), len(got))
	}
	for i := 1; i <= 3; i++ {
		subjects := strings.Join(got[fmt.Sprintf("dst%d@example.com", i)], "|")
		for d := 1; d <= 3; d++ {
			if !strings.Contains(subjects, fmt.Sprintf("Tag %d für Vorname%d", d, i)) {
				t.Errorf("dst%d: subjects %q lack day %d", i, subjects, d)
			}
		}
	}
}

func headerOf(raw, name string) string {
	for _, line := range strings.Split(raw, "\r\n") {
		if line == "" {
			break
		}
		if strings.HasPrefix(strings.ToLower(line), strings.ToLower(name)+":") {
			v := strings.TrimSpace(line[len(name)+1:])
			if dec, err := new(mimeDecoder).DecodeHeader(v); err == nil {
				return dec
			}
			return v
		}
	}
	return ""
}

// TestDelayTimingAcrossDaylightSavingEnd checks delay-based timing (no
// send_time): day 1 with delay 0 at entry, the next ones at the same wall
// clock time a day later, 25 hours across the end of summer time.
func TestDelayTimingAcrossDaylightSavingEnd(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.contacts("delay", 1)
	seq := e.sequence("Kurs", "", 0, 1, 2)
	entry := berlin(2026, 10, 24, 10, 30)
	e.clock.Set(entry)
	svc := sequence.New(e.db, nil, nil, nil, nil, sequence.Options{Now: e.clock.Now})
	if _, err := svc.Enrol(ctx, e.acct, sys, seq.ID, ids, nil); err != nil {
		t.Fatal(err)
	}
	w := e.worker(e.db)
	// Inactive: held, nothing goes out.
	if r := e.tick(w); r.Claimed != 0 {
		t.Fatalf("inactive sequence sent: %+v", r)
	}
	if _, err := svc.Activate(ctx, e.acct, sys, seq.ID); err != nil {
		t.Fatal(err)
	}
	if r := e.tick(w); r.Queued != 1 {
		t.Fatalf("day 1 at entry: %+v", r)
	}
	p := e.participant(seq.ID, ids[0])
	if want := berlin(2026, 10, 25, 10, 30); p.NextSendAt == nil || !p.NextSendAt.Equal(want) || p.NextSendAt.Sub(entry) != 25*time.Hour {
		t.Fatalf("day 2 due %v, want %v (25 h later)", p.NextSendAt, want)
	}
	e.clock.Set(berlin(2026, 10, 25, 10, 30))
	e.tick(w)
	p = e.participant(seq.ID, ids[0])
	if want := berlin(2026, 10, 27, 10, 30); p.NextSendAt == nil || !p.NextSendAt.Equal(want) {
		t.Fatalf("day 3 due %v, want %v", p.NextSendAt, want)
	}
}

// TestTwoProcessesNeverQueueADayTwice runs the worker of two processes
// (separate connection pools) concurrently over 600 participants whose
// days fall due together, three times: every participant has exactly one
// recipient row per day.
func TestTwoProcessesNeverQueueADayTwice(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.contacts("race", 600)
	seq := e.sequence("Rennen", "", 0, 1, 1)
	e.clock.Set(berlin(2026, 6, 1, 12, 0))
	svc := sequence.New(e.db, nil, nil, nil, nil, sequence.Options{Now: e.clock.Now})
	if _, err := svc.Activate(ctx, e.acct, sys, seq.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Enrol(ctx, e.acct, sys, seq.ID, ids, nil); err != nil {
		t.Fatal(err)
	}
	other := dbtest.Open(t, e.url)
	workers := []*sequence.Worker{e.worker(e.db), e.worker(other), e.worker(e.db), e.worker(other)}
	for day := 0; day < 3; day++ {
		e.clock.Set(berlin(2026, 6, 1+day, 12, 0))
		var wg sync.WaitGroup
		totals := make([]int, len(workers))
		for i, w := range workers {
			wg.Go(func() {
				r, err := w.Tick(ctx)
				if err != nil {
					t.Error(err)
				}
				totals[i] = r.Queued
			})
		}
		wg.Wait()
		if sum := totals[0] + totals[1] + totals[2] + totals[3]; sum != 600 {
			t.Fatalf("day %d: queued %v = %d, want 600", day+1, totals, sum)
		}
	}
	q := e.queued(seq.ID)
	for _, id := range ids {
		if q[id] != 3 {
			t.Fatalf("contact %d has %d recipient rows, want 3", id, q[id])
		}
	}
	var dupes int
	e.scalar(&dupes, `SELECT count(*) FROM (SELECT campaign_id, contact_id FROM campaign_recipients WHERE account_id = $1
GROUP BY 1, 2 HAVING count(*) > 1) d`, e.acct)
	if dupes != 0 {
		t.Fatalf("%d duplicated (campaign, contact) rows", dupes)
	}
}

// TestTriggersAndExits enrols by list join and by tag through the outbox
// consumer (only while the sequence is active), and exits a contact that
// unsubscribes (consumer) and one deleted behind the consumer's back (the
// check at claim time).
func TestTriggersAndExits(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	listName := "Interessenten"
	l, err := e.db.CreateList(ctx, e.acct, sys, store.ListInput{Name: &listName})
	if err != nil {
		t.Fatal(err)
	}
	svc := sequence.New(e.db, nil, nil, nil, nil, sequence.Options{Now: e.clock.Now})
	byList := e.sequence("Liste", "", 0, 1)
	trig, lid := store.TriggerList, l.ID
	if _, err := svc.UpdateSequence(ctx, e.acct, sys, byList.ID, store.SequenceInput{Trigger: &trig, TriggerListID: &lid}); err != nil {
		t.Fatal(err)
	}
	byTag := e.sequence("Tag", "", 0, 1)
	trig2, tag := store.TriggerTag, "kunde"
	if _, err := svc.UpdateSequence(ctx, e.acct, sys, byTag.ID, store.SequenceInput{Trigger: &trig2, TriggerTag: &tag}); err != nil {
		t.Fatal(err)
	}
	consumer := sequence.NewTriggerConsumer(e.db, store.ConsumerOptions{})
	drain := func() {
		t.Helper()
		if _, err := consumer.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
	}
	upsert := func(email string, lists []int64, tags []string) int64 {
		t.Helper()
		r, err := e.db.UpsertContact(ctx, e.acct, sys, store.ContactInput{Email: email, ListIDs: lists, Tags: tags})
		if err != nil {
			t.Fatal(err)
		}
		return r.Contact.ID
	}
	// Before activation a join enrols nobody.
	early := upsert("early@example.com", []int64{l.ID}, []string{"kunde"})
	drain()
	for _, s := range []int64{byList.ID, byTag.ID} {
		if parts, _, _ := e.db.Participants(ctx, e.acct, s, "", store.Page{Page: 1, PerPage: 10}); len(parts) != 0 {
			t.Fatalf("enrolled while inactive: %+v", parts)
		}
	}
	e.clock.Set(time.Now())
	for _, s := range []int64{byList.ID, byTag.ID} {
		if _, err := svc.Activate(ctx, e.acct, sys, s); err != nil {
			t.Fatal(err)
		}
	}
	joiner := upsert("joiner@example.com", []int64{l.ID}, nil)
	tagged := upsert("tagged@example.com", nil, nil)
	if _, err := e.db.AddTags(ctx, e.acct, sys, tagged, []string{"kunde"}); err != nil {
		t.Fatal(err)
	}
	newWithTag := upsert("new@example.com", nil, []string{"Kunde"})
	drain()
	check := func(seqID int64, want ...int64) {
		t.Helper()
		parts, _, err := e.db.Participants(ctx, e.acct, seqID, store.ParticipantActive, store.Page{Page: 1, PerPage: 10})
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]bool{}
		for _, p := range parts {
			got[p.ContactID] = true
		}
		if len(got) != len(want) {
			t.Fatalf("sequence %d: participants %v, want %v", seqID, got, want)
		}
		for _, id := range want {
			if !got[id] {
				t.Fatalf("sequence %d: participants %v, want %v", seqID, got, want)
			}
		}
	}
	check(byList.ID, joiner)
	check(byTag.ID, tagged, newWithTag)
	_ = early

	// Exit by unsubscribe through the consumer.
	if _, err := e.db.UnsubscribeContact(ctx, e.acct, sys, tagged, store.Unsubscribe{Source: "api"}); err != nil {
		t.Fatal(err)
	}
	drain()
	check(byTag.ID, newWithTag)
	if p := e.participant(byTag.ID, tagged); p.Status != store.ParticipantExited || p.ExitReason != "unsubscribed" {
		t.Fatalf("unsubscribed participant: %+v", p)
	}
	// Exit at claim time: the contact disappears without an event.
	e.exec(`DELETE FROM contacts WHERE id = $1`, newWithTag)
	e.clock.Set(time.Now().Add(time.Minute))
	r := e.tick(e.worker(e.db))
	if r.Exited != 1 || r.Queued != 1 {
		t.Fatalf("claim: %+v (want the joiner queued and the deleted contact exited)", r)
	}
	if p := e.participant(byTag.ID, newWithTag); p.Status != store.ParticipantExited || p.ExitReason != "deleted" {
		t.Fatalf("deleted participant: %+v", p)
	}

	// With no active sequence the consumer passes an account's events, but
	// not the exits while contacts still take part: the joiner unsubscribing
	// now still leaves its paused sequence, and a tag added now enrols no one
	// when the sequence is active again.
	for _, s := range []int64{byList.ID, byTag.ID} {
		if _, err := svc.Deactivate(ctx, e.acct, sys, s); err != nil {
			t.Fatal(err)
		}
	}
	late := upsert("late@example.com", nil, []string{"kunde"})
	if _, err := e.db.UnsubscribeContact(ctx, e.acct, sys, joiner, store.Unsubscribe{Source: "api"}); err != nil {
		t.Fatal(err)
	}
	drain()
	if p := e.participant(byList.ID, joiner); p.Status != store.ParticipantExited || p.ExitReason != "unsubscribed" {
		t.Fatalf("participant unsubscribed while its sequence was paused: %+v", p)
	}
	if _, err := svc.Activate(ctx, e.acct, sys, byTag.ID); err != nil {
		t.Fatal(err)
	}
	drain()
	check(byTag.ID)
	_ = late
}

// TestDaysInFlight edits days while a participant is between them: it
// continues with the day after the one it last received, an inserted day
// before that is skipped, a deleted later day renumbers, and changed content
// of a day already sent gets a new campaign (the old keeps its content).
func TestDaysInFlight(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.contacts("flight", 1)
	seq := e.sequence("Flug", "", 0, 1, 1)
	e.clock.Set(berlin(2026, 5, 4, 9, 0))
	svc := sequence.New(e.db, nil, nil, nil, nil, sequence.Options{Now: e.clock.Now})
	if _, err := svc.Activate(ctx, e.acct, sys, seq.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Enrol(ctx, e.acct, sys, seq.ID, ids, nil); err != nil {
		t.Fatal(err)
	}
	w := e.worker(e.db)
	e.tick(w) // day 1
	days, err := e.db.SequenceDays(ctx, e.acct, seq.ID)
	if err != nil {
		t.Fatal(err)
	}
	day1Campaign := days[0].CampaignID
	// Insert a day at position 1: the participant already had (old) day 1
	// and continues with old day 2.
	subj, html, zero := "Neuer erster Tag", "<p>neu</p>", 0
	one := 1
	if _, err := svc.CreateDay(ctx, e.acct, sys, seq.ID, store.DayInput{Position: &one, DelayDays: &zero,
		Content: store.NewsletterInput{Subject: &subj, HTML: &html}}); err != nil {
		t.Fatal(err)
	}
	if p := e.participant(seq.ID, ids[0]); p.CurrentDay != 2 {
		t.Fatalf("current_day %d after inserting before it, want 2", p.CurrentDay)
	}
	// Change the content of old day 1 (sent already): new campaign.
	newSubj := "Tag 1, überarbeitet"
	d, err := svc.UpdateDay(ctx, e.acct, sys, seq.ID, days[0].ID, store.DayInput{Content: store.NewsletterInput{Subject: &newSubj}})
	if err != nil {
		t.Fatal(err)
	}
	if d.CampaignID == day1Campaign || d.Subject != newSubj || d.Position != 2 {
		t.Fatalf("revised day: %+v (old campaign %d)", d, day1Campaign)
	}
	old, err := e.db.CampaignByID(ctx, day1Campaign)
	if err != nil || old.Subject != "Tag 1 für {{vorname}}" {
		t.Fatalf("old campaign changed: %q, %v", old.Subject, err)
	}
	// Delete the last day: participant now completes after old day 2.
	if err := svc.DeleteDay(ctx, e.acct, sys, seq.ID, days[2].ID); err != nil {
		t.Fatal(err)
	}
	e.clock.Set(berlin(2026, 5, 5, 9, 0))
	e.tick(w)
	var subjects []string
	if err := e.db.SelectContext(ctx, &subjects, `SELECT c.subject FROM campaign_recipients r JOIN campaigns c ON c.id = r.campaign_id
WHERE r.contact_id = $1 ORDER BY r.id`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if strings.Join(subjects, "|") != "Tag 1 für {{vorname}}|Tag 2 für {{vorname}}" {
		t.Fatalf("received %q", subjects)
	}
	if p := e.participant(seq.ID, ids[0]); p.Status != store.ParticipantCompleted || p.CurrentDay != 3 {
		t.Fatalf("participant after the last day: %+v", p)
	}
}

type mimeDecoder = mime.WordDecoder
