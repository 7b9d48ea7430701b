package mailer_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/secret"
)

// systemMailEnv is an account on a fresh database with queued system mail.
type systemMailEnv struct {
	db   *store.DB
	url  string
	box  *secret.Box
	acct int64
}

func newSystemMailEnv(t *testing.T) systemMailEnv {
	t.Helper()
	url := dbtest.URL(t)
	db := dbtest.Open(t, url)
	res, err := db.CreateAccount(context.Background(), store.NewAccount{Name: "Acme", Email: "inhaber@acme.test", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.NewBox("system-mail-tests-0123456789abcdefgh")
	if err != nil {
		t.Fatal(err)
	}
	return systemMailEnv{db: db, url: url, box: box, acct: res.Account.ID}
}

// queue inserts a system mail as the features queue them (a confirmation with
// a link placeholder), created at created.
func (e systemMailEnv) queue(t *testing.T, to string, created time.Time) int64 {
	t.Helper()
	var id int64
	err := e.db.GetContext(context.Background(), &id, `INSERT INTO system_mails (account_id, kind, to_email, subject, body_text, body_html, link_path, created_at)
VALUES ($1, 'doi_confirmation', $2, 'Bitte bestätigen Sie Ihre Anmeldung', 'Link: {{confirm_url}}', '<a href="{{confirm_url}}">Bestätigen</a>', '/confirm/abc', $3)
RETURNING id`, e.acct, to, created)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

type mailState struct {
	Attempts  int        `db:"attempts"`
	LastError string     `db:"last_error"`
	SentAt    *time.Time `db:"sent_at"`
}

func (e systemMailEnv) state(t *testing.T, id int64) mailState {
	t.Helper()
	var s mailState
	if err := e.db.GetContext(context.Background(), &s, `SELECT attempts, last_error, sent_at FROM system_mails WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	return s
}

func relayTo(t *testing.T, addr string) *mailer.Relay {
	t.Helper()
	r, err := mailer.ParseRelayURL("smtp://"+addr+"?from=noreply@rundbrief.test&from_name=Rundbrief", mailer.Address{})
	if err != nil {
		t.Fatal(err)
	}
	return &r
}

func TestSystemMailIsSentThroughTheRelay(t *testing.T) {
	ctx := context.Background()
	e := newSystemMailEnv(t)
	srv := smtptest.Start(t, smtptest.Options{})
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	id := e.queue(t, "erika@example.com", now.Add(-time.Minute))
	tr := mailer.NewTransports(e.db, e.box, mailer.TransportOptions{Relay: relayTo(t, srv.Addr()), HELO: "rundbrief.test"})
	w := mailer.NewSystemMailWorker(e.db, tr, mailer.SystemMailOptions{BaseURL: "https://rundbrief.test/", Now: func() time.Time { return now }})
	if n, err := w.SendDue(ctx); err != nil || n != 1 {
		t.Fatalf("SendDue: %d, %v", n, err)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 || msgs[0].From != "noreply@rundbrief.test" || msgs[0].To[0] != "erika@example.com" {
		t.Fatalf("smtp got %+v", msgs)
	}
	raw := string(msgs[0].Data)
	for _, part := range []string{"Auto-Submitted: auto-generated", "https://rundbrief.test/confirm/abc"} {
		if !strings.Contains(strings.ReplaceAll(raw, "=\r\n", ""), part) {
			t.Errorf("message lacks %q", part)
		}
	}
	if s := e.state(t, id); s.SentAt == nil || !s.SentAt.Equal(now) || s.Attempts != 1 {
		t.Errorf("after sending: %+v", s)
	}
	if n, _ := w.SendDue(ctx); n != 0 || srv.Count() != 1 {
		t.Error("sent twice")
	}
}

func TestSystemMailRetriesWithBackoffAndStopsOnRejection(t *testing.T) {
	ctx := context.Background()
	e := newSystemMailEnv(t)
	// A relay that is down: a port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := ln.Addr().String()
	_ = ln.Close()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := now
	id := e.queue(t, "erika@example.com", now)
	dead := mailer.NewTransports(e.db, e.box, mailer.TransportOptions{Relay: relayTo(t, deadAddr), Timeout: 2 * time.Second})
	w := mailer.NewSystemMailWorker(e.db, dead, mailer.SystemMailOptions{Now: func() time.Time { return clock }})
	if n, err := w.SendDue(ctx); err != nil || n != 1 {
		t.Fatalf("first try: %d %v", n, err)
	}
	if s := e.state(t, id); s.Attempts != 1 || s.SentAt != nil || !strings.Contains(s.LastError, "connect") {
		t.Fatalf("after a failure: %+v", s)
	}
	// Attempt 2 is due 1 minute after creation, attempt 3 after 3 minutes.
	for _, c := range []struct {
		at   time.Duration
		want int
	}{{59 * time.Second, 0}, {time.Minute, 1}, {2 * time.Minute, 0}, {3 * time.Minute, 1}} {
		clock = now.Add(c.at)
		if n, err := w.SendDue(ctx); err != nil || n != c.want {
			t.Fatalf("at +%v: %d tries, want %d (%v)", c.at, n, c.want, err)
		}
	}
	// Once the relay works, the mail goes out.
	srv := smtptest.Start(t, smtptest.Options{Reject: map[string]int{"gone@example.com": 550}})
	up := mailer.NewTransports(e.db, e.box, mailer.TransportOptions{Relay: relayTo(t, srv.Addr())})
	w = mailer.NewSystemMailWorker(e.db, up, mailer.SystemMailOptions{Now: func() time.Time { return clock }})
	clock = now.Add(7 * time.Minute)
	if n, _ := w.SendDue(ctx); n != 1 || srv.Count() != 1 || e.state(t, id).SentAt == nil {
		t.Fatalf("after the relay came back: %+v", e.state(t, id))
	}
	// A permanent refusal is not tried again.
	rejected := e.queue(t, "gone@example.com", clock)
	if n, _ := w.SendDue(ctx); n != 1 {
		t.Fatal("rejected mail not tried")
	}
	s := e.state(t, rejected)
	if s.SentAt != nil || s.Attempts != store.SystemMailMaxAttempts || !strings.Contains(s.LastError, "550") {
		t.Fatalf("rejected mail: %+v", s)
	}
	clock = clock.Add(30 * 24 * time.Hour)
	if n, _ := w.SendDue(ctx); n != 0 {
		t.Error("a rejected mail was tried again")
	}
}

func TestSystemMailWorkersOfTwoProcessesSendEachOnce(t *testing.T) {
	ctx := context.Background()
	e := newSystemMailEnv(t)
	srv := smtptest.Start(t, smtptest.Options{})
	const n = 40
	for i := range n {
		e.queue(t, "leser"+string(rune('a'+i%26))+"@example.com", time.Now().Add(-time.Minute))
	}
	var wg sync.WaitGroup
	total := 0
	var mu sync.Mutex
	for range 2 {
		db := dbtest.Open(t, e.url)
		tr := mailer.NewTransports(db, e.box, mailer.TransportOptions{Relay: relayTo(t, srv.Addr())})
		w := mailer.NewSystemMailWorker(db, tr, mailer.SystemMailOptions{})
		for range 2 {
			wg.Go(func() {
				k, err := w.SendDue(ctx)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				total += k
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if total != n || srv.Count() != n {
		t.Fatalf("%d sends, %d messages at the server; want %d", total, srv.Count(), n)
	}
}

func TestSystemMailWithoutRelayLandsInTheDevOutbox(t *testing.T) {
	ctx := context.Background()
	e := newSystemMailEnv(t)
	e.queue(t, "erika@example.com", time.Now().Add(-time.Second))
	tr := mailer.NewTransports(e.db, e.box, mailer.TransportOptions{DefaultFrom: mailer.Address{Name: "Rundbrief", Email: "noreply@localhost"}})
	w := mailer.NewSystemMailWorker(e.db, tr, mailer.SystemMailOptions{BaseURL: "http://127.0.0.1:8080"})
	if n, err := w.SendDue(ctx); err != nil || n != 1 {
		t.Fatalf("SendDue %d %v", n, err)
	}
	list, total, err := e.db.DevOutbox(ctx, e.acct, store.Page{Page: 1, PerPage: 5})
	if err != nil || total != 1 || list[0].ToEmail != "erika@example.com" || list[0].FromEmail != "noreply@localhost" {
		t.Fatalf("dev outbox %+v %d %v", list, total, err)
	}
}
