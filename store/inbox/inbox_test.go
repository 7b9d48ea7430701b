package inbox_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/ai/aitest"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/inbox"
	"github.com/rundbrief/rundbrief/store/inbox/imaptest"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/smtpserver"
)

func TestMain(m *testing.M) {
	if n := os.Getenv(benchServerEnv); n != "" {
		serveBenchMailbox(n) // a child process of BenchmarkInboxFirstSync10000
		return
	}
	dbtest.Main(m)
}

// fixture is one account connected to a real IMAP server in this process,
// replying through a real SMTP server.
type fixture struct {
	db    *store.DB
	url   string
	acct  int64
	box   *secret.Box
	imap  *imaptest.Server
	smtp  *smtptest.Server
	svc   *inbox.Service
	aiSrv *aitest.Server
}

func newFixture(t testing.TB, opts imaptest.Options) *fixture {
	t.Helper()
	url := dbtest.URL(t)
	f := &fixture{db: dbtest.Open(t, url), url: url}
	res, err := f.db.CreateAccount(context.Background(), store.NewAccount{Name: "Acme GmbH", Email: "owner@acme.test", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	f.acct = res.Account.ID
	f.box, err = secret.NewBox("inbox-test-secret-0123456789-abcdefghijklmn")
	if err != nil {
		t.Fatal(err)
	}
	f.imap = imaptest.Start(t, opts)
	f.smtp = smtptest.Start(t, smtptest.Options{})
	f.aiSrv = aitest.NewAnthropic(t, "sk-ant-test", func(c aitest.Call) aitest.Reply {
		return aitest.Reply{Text: "Vielen Dank für Ihre Nachricht, wir melden uns morgen.", TokensIn: 1000, TokensOut: 200}
	})
	f.svc = f.service(f.db)
	return f
}

// service builds the inbox service of one process over db.
func (f *fixture) service(db *store.DB) *inbox.Service {
	relay := mailer.Relay{Server: mailer.ServerConfig{Host: f.smtp.Host, Port: f.smtp.Port, Encryption: mailer.EncryptionNone},
		From: mailer.Address{Name: "Acme", Email: "team@acme.test"}}
	mail := mailer.NewTransports(db, f.box, mailer.TransportOptions{Relay: &relay, HELO: "rundbrief.test"})
	guard := smtpserver.New(db, smtpserver.Config{Box: f.box, Mail: mail, AllowPrivate: true})
	var roots *tls.Config
	if f.imap.RootCAs() != nil {
		roots = &tls.Config{RootCAs: f.imap.RootCAs()}
	}
	aiSvc := ai.NewService(db, ai.Config{Primary: ai.NewAnthropic(f.aiSrv.URL, "sk-ant-test"), AttemptTimeout: 2 * time.Second})
	return inbox.New(db, inbox.Config{Box: f.box, Guard: guard, Opener: mail, AI: aiSvc, TLSConfig: roots, Timeout: 5 * time.Second,
		Batch: 50, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

func (f *fixture) settings() store.InboxSettingsInput {
	pw := f.imap.Password
	enc := store.EncryptionNone
	if f.imap.RootCAs() != nil {
		enc = store.EncryptionTLS
	}
	return store.InboxSettingsInput{Host: f.imap.Host, Port: f.imap.Port, Username: f.imap.Username, Password: &pw, Encryption: enc,
		FromEmail: "team@acme.test", FromName: "Acme Team", Signature: "Viele Grüße\nIhr Acme-Team"}
}

func (f *fixture) connect(t *testing.T) {
	t.Helper()
	if _, err := f.svc.SaveSettings(context.Background(), f.acct, f.settings()); err != nil {
		t.Fatalf("save settings: %v", err)
	}
}

func (f *fixture) sync(t *testing.T) inbox.SyncResult {
	t.Helper()
	res, err := f.svc.Sync(context.Background(), f.acct)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return res
}

func (f *fixture) messages(t *testing.T, status string) []store.InboxMessage {
	t.Helper()
	msgs, _, err := f.db.InboxMessages(context.Background(), f.acct, store.InboxFilter{Status: status}, store.Page{Page: 1, PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func (f *fixture) events(t *testing.T, name string) []map[string]any {
	t.Helper()
	var rows []json.RawMessage
	if err := f.db.SelectContext(context.Background(), &rows, `SELECT payload FROM events WHERE account_id = $1 AND name = $2 ORDER BY id`, f.acct, name); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, r := range rows {
		var m map[string]any
		if err := json.Unmarshal(r, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func TestSyncStoresParsesAndNeverMarksSeen(t *testing.T) {
	f := newFixture(t, imaptest.Options{})
	ctx := context.Background()
	if _, err := f.db.ExecContext(ctx, `INSERT INTO contacts (account_id, email, first_name) VALUES ($1, 'anna@example.com', 'Anna')`, f.acct); err != nil {
		t.Fatal(err)
	}
	f.imap.Append(t, "INBOX", imaptest.Mail("Anna <Anna@EXAMPLE.com>", "Frage zum Angebot", "Hallo, was kostet das?", "Message-ID", "<a1@example.com>"))
	latin := "From: =?ISO-8859-1?Q?J=FCrgen?= <juergen@example.org>\r\nTo: inbox@example.com\r\nSubject: =?ISO-8859-1?Q?Gr=FC=DFe?=\r\nMessage-ID: <l1@example.org>\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n--XX\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nSch=F6ne Gr=FC=DFe aus M=FCnchen\r\n" +
		"--XX\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p onclick=\"x()\">Hallo<script>alert(1)</script></p>\r\n" +
		"--XX\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"rechnung.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--XX--\r\n"
	f.imap.Append(t, "INBOX", []byte(latin))
	f.imap.Append(t, "INBOX", imaptest.Mail("bob@example.net", "Schon gelesen", "x"), imap.FlagSeen)
	f.connect(t)

	res := f.sync(t)
	if res.Fetched != 3 || res.New != 3 {
		t.Fatalf("sync = %+v, want 3 fetched, 3 new", res)
	}
	msgs := f.messages(t, store.InboxStatusAll)
	if len(msgs) != 3 {
		t.Fatalf("%d messages", len(msgs))
	}
	by := map[string]store.InboxMessage{}
	for _, m := range msgs {
		full, err := f.db.InboxMessage(ctx, f.acct, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		by[m.FromEmail] = full
	}
	anna := by["anna@example.com"]
	if anna.ContactID == nil || anna.Subject != "Frage zum Angebot" || !strings.Contains(anna.Text, "was kostet") || anna.Read || anna.MessageID.String != "a1@example.com" {
		t.Errorf("anna = %+v", anna)
	}
	j := by["juergen@example.org"]
	if j.FromName != "Jürgen" || j.Subject != "Grüße" || !strings.Contains(j.Text, "Schöne Grüße aus München") {
		t.Errorf("charset decoding: %q %q %q", j.FromName, j.Subject, j.Text)
	}
	if strings.Contains(j.HTML, "script") || strings.Contains(j.HTML, "onclick") || !strings.Contains(j.HTML, "Hallo") {
		t.Errorf("html not sanitised: %q", j.HTML)
	}
	if att := j.Attachments(); len(att) != 1 || att[0].Filename != "rechnung.pdf" || att[0].ContentType != "application/pdf" || att[0].Size == 0 {
		t.Errorf("attachments = %+v", att)
	}
	if !by["bob@example.net"].Read {
		t.Error("a message seen on the server is read")
	}
	// BODY.PEEK: the server still has the first two unseen.
	for uid, flags := range f.imap.Flags(t, "INBOX") {
		seen := false
		for _, fl := range flags {
			seen = seen || fl == imap.FlagSeen
		}
		if seen != (uid == 3) {
			t.Errorf("uid %d flags %v after sync", uid, flags)
		}
	}
	if ev := f.events(t, store.EventInboxReceived); len(ev) != 3 {
		t.Errorf("%d inbox.received events, want 3", len(ev))
	}

	// A re-sync finds nothing new; a new message is found incrementally.
	if res := f.sync(t); res.Fetched != 0 || res.New != 0 {
		t.Errorf("re-sync = %+v", res)
	}
	f.imap.Append(t, "INBOX", imaptest.Mail("carl@example.com", "Neu", "neu"))
	if res := f.sync(t); res.Fetched != 1 || res.New != 1 {
		t.Errorf("incremental sync = %+v", res)
	}
	// Starting over from UID 0 (e.g. a new UIDVALIDITY) stores nothing twice.
	if _, err := f.db.ExecContext(ctx, `UPDATE inbox_settings SET last_uid = 0, uidvalidity = 0 WHERE account_id = $1`, f.acct); err != nil {
		t.Fatal(err)
	}
	if res := f.sync(t); res.Fetched != 4 || res.New != 0 {
		t.Errorf("full re-sync = %+v, want 4 fetched, 0 new", res)
	}
	if n := len(f.messages(t, store.InboxStatusAll)); n != 4 {
		t.Errorf("%d messages after re-sync, want 4", n)
	}
	if ev := f.events(t, store.EventInboxReceived); len(ev) != 4 {
		t.Errorf("%d inbox.received events after re-sync, want 4", len(ev))
	}
}

func TestSeenWriteBack(t *testing.T) {
	f := newFixture(t, imaptest.Options{})
	f.imap.Append(t, "INBOX", imaptest.Mail("anna@example.com", "Eins", "x"))
	f.connect(t)
	f.sync(t)
	m := f.messages(t, store.InboxStatusUnread)[0]
	yes, no := true, false
	got, err := f.svc.Patch(context.Background(), f.acct, m.ID, store.InboxPatch{Read: &yes})
	if err != nil || !got.Read || !got.SeenSynced {
		t.Fatalf("patch = %+v, %v", got, err)
	}
	if fl := f.imap.Flags(t, "INBOX")[1]; len(fl) != 1 || fl[0] != imap.FlagSeen {
		t.Fatalf("flags after read = %v", fl)
	}
	if _, err := f.svc.Patch(context.Background(), f.acct, m.ID, store.InboxPatch{Read: &no}); err != nil {
		t.Fatal(err)
	}
	if fl := f.imap.Flags(t, "INBOX")[1]; len(fl) != 0 {
		t.Fatalf("flags after unread = %v", fl)
	}
}

func TestTwoProcessesEmitEachReceivedOnce(t *testing.T) {
	f := newFixture(t, imaptest.Options{})
	for i := range 120 {
		f.imap.Append(t, "INBOX", imaptest.Mail(fmt.Sprintf("p%d@example.com", i), fmt.Sprintf("Nachricht %d", i), "x",
			"Message-ID", fmt.Sprintf("<m%d@example.com>", i)))
	}
	f.connect(t)
	other := f.service(dbtest.Open(t, f.url)) // a second serve process
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for round := range 5 {
		for _, svc := range []*inbox.Service{f.svc, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := svc.Sync(ctx, f.acct); err != nil {
					errs <- err
				}
			}()
		}
		// Between rounds, pretend the lease ran out and the position was
		// lost: both processes then race over the same messages.
		wg.Wait()
		if round%2 == 0 {
			if _, err := f.db.ExecContext(ctx, `UPDATE inbox_settings SET last_uid = 0, sync_lease_until = NULL WHERE account_id = $1`, f.acct); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Unconditionally concurrent: the store's uniqueness, not the lease, decides.
	var wg2 sync.WaitGroup
	for _, svc := range []*inbox.Service{f.svc, other} {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			_, _ = svc.Sync(ctx, f.acct)
		}()
	}
	wg2.Wait()
	ev := f.events(t, store.EventInboxReceived)
	if len(ev) != 120 {
		t.Fatalf("%d inbox.received events, want 120", len(ev))
	}
	seen := map[float64]bool{}
	for _, e := range ev {
		id := e["message"].(map[string]any)["id"].(float64)
		if seen[id] {
			t.Fatalf("message %v announced twice", id)
		}
		seen[id] = true
	}
	if n := len(f.messages(t, store.InboxStatusAll)); n != 100 { // one page
		t.Errorf("page of %d", n)
	}
}

func TestConcurrentBatchesBypassingLease(t *testing.T) {
	// Two processes that both believe they own the sync (a lease that ran
	// out mid-batch) store the same messages: each is stored and announced once.
	f := newFixture(t, imaptest.Options{})
	f.connect(t)
	ctx := context.Background()
	msgs := make([]store.NewInboxMessage, 30)
	for i := range msgs {
		msgs[i] = store.NewInboxMessage{UID: int64(i + 1), MessageID: fmt.Sprintf("c%d@example.com", i), From: store.InboxAddress{Email: "x@example.com"},
			Subject: "s", ReceivedAt: time.Now()}
	}
	var wg sync.WaitGroup
	var total int
	var mu sync.Mutex
	for _, owner := range []string{"a", "b", "a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.db.ExecContext(ctx, `UPDATE inbox_settings SET sync_lease_owner = $2 WHERE account_id = $1`, f.acct, owner); err != nil {
				t.Error(err)
			}
			ids, err := f.db.StoreInboxMessages(ctx, f.acct, owner, "INBOX", 1, 30, time.Minute, msgs)
			if err != nil && !errors.Is(err, store.ErrLeaseLost) {
				t.Error(err)
			}
			mu.Lock()
			total += len(ids)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != 30 || len(f.events(t, store.EventInboxReceived)) != 30 {
		t.Errorf("stored %d, events %d, want 30 each", total, len(f.events(t, store.EventInboxReceived)))
	}
}

// TestInboxSearchByUnicodeDomain: a sender's domain typed in Unicode finds
// the messages from its stored ASCII form.
func TestInboxSearchByUnicodeDomain(t *testing.T) {
	f := newFixture(t, imaptest.Options{})
	f.connect(t)
	ctx := context.Background()
	if _, err := f.db.ExecContext(ctx, `UPDATE inbox_settings SET sync_lease_owner = 'a' WHERE account_id = $1`, f.acct); err != nil {
		t.Fatal(err)
	}
	var msgs []store.NewInboxMessage
	for i, from := range []string{"info@müller.de", "anna@example.org"} {
		msgs = append(msgs, store.NewInboxMessage{UID: int64(i + 1), MessageID: fmt.Sprintf("u%d@example.com", i),
			From: store.InboxAddress{Email: store.NormalizeEmail(from)}, Subject: "Frage", ReceivedAt: time.Now()})
	}
	if _, err := f.db.StoreInboxMessages(ctx, f.acct, "a", "INBOX", 1, 2, time.Minute, msgs); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int{"müller.de": 1, "xn--mller-kva": 1, "frage": 2, "bäcker.de": 0} {
		got, total, err := f.db.InboxMessages(ctx, f.acct, store.InboxFilter{Status: store.InboxStatusAll, Q: q}, store.Page{Page: 1, PerPage: 10})
		if err != nil || total != want || len(got) != want {
			t.Errorf("search %q: %d (%d on the page), want %d: %v", q, total, len(got), want, err)
		}
	}
}

func TestReplyThreadedDeliveredAndAppendedToSent(t *testing.T) {
	f := newFixture(t, imaptest.Options{Folders: []string{"Sent"}})
	f.imap.Append(t, "INBOX", imaptest.Mail("Anna <anna@example.com>", "Frage", "Hallo?", "Message-ID", "<q2@example.com>", "References", "<q0@example.com> <q1@example.com>"))
	f.connect(t)
	f.sync(t)
	m := f.messages(t, store.InboxStatusAll)[0]
	r, err := f.svc.Reply(context.Background(), f.acct, m.ID, inbox.ReplyInput{Text: "Gern, hier die Antwort."})
	if err != nil {
		t.Fatal(err)
	}
	if r.Source != store.ReplySourceUser || r.ToEmail != "anna@example.com" || r.Subject != "Re: Frage" {
		t.Errorf("reply = %+v", r)
	}
	sent := f.smtp.Messages()
	if len(sent) != 1 || sent[0].To[0] != "anna@example.com" {
		t.Fatalf("smtp got %+v", sent)
	}
	data := string(sent[0].Data)
	for _, want := range []string{"In-Reply-To: <q2@example.com>", "References: <q0@example.com> <q1@example.com> <q2@example.com>", "Gern, hier die Antwort.", "Ihr Acme-Team", "From: \"Acme Team\" <team@acme.test>"} {
		if !strings.Contains(data, want) {
			t.Errorf("reply lacks %q:\n%s", want, data)
		}
	}
	if got := f.imap.Messages(t, "Sent"); len(got) != 1 || !strings.Contains(string(got[0]), "In-Reply-To: <q2@example.com>") {
		t.Errorf("sent folder holds %d messages", len(got))
	}
	full, _ := f.db.InboxMessage(context.Background(), f.acct, m.ID)
	if full.RepliedAt == nil {
		t.Error("replied_at not set")
	}
	ev := f.events(t, store.EventInboxReplied)
	if len(ev) != 1 || ev[0]["source"] != "user" || ev[0]["to"] != "anna@example.com" || ev[0]["message_id"].(float64) != float64(m.ID) {
		t.Errorf("inbox.replied = %v", ev)
	}
}

func TestRulesAndAutoReplyLoopGuard(t *testing.T) {
	f := newFixture(t, imaptest.Options{})
	ctx := context.Background()
	f.connect(t)
	for _, r := range []store.NewInboxRule{
		{Name: "Rechnungen", SubjectContains: "rechnung", Action: store.RuleLabel, Value: "Buchhaltung"},
		{Name: "Newsletter weg", FromContains: "news@", Action: store.RuleArchive},
		{Name: "Danke", BodyContains: "termin", Action: store.RuleReply, Text: "Danke, wir melden uns."},
		{Name: "Gelesen", SubjectContains: "rechnung", BodyContains: "bezahlt", Action: store.RuleMarkRead},
	} {
		if _, err := f.db.CreateInboxRule(ctx, f.acct, r); err != nil {
			t.Fatal(err)
		}
	}
	f.imap.Append(t, "INBOX", imaptest.Mail("buchhaltung@kunde.de", "Rechnung 42", "ist bezahlt"))
	f.imap.Append(t, "INBOX", imaptest.Mail("news@shop.de", "Angebote", "x"))
	f.imap.Append(t, "INBOX", imaptest.Mail("anna@example.com", "Frage", "Haben Sie einen Termin frei?"))
	f.imap.Append(t, "INBOX", imaptest.Mail("anna@example.com", "Noch eine", "Und noch ein Termin?"))
	f.imap.Append(t, "INBOX", imaptest.Mail("noreply@shop.de", "Bestellung", "Ihr Termin"))
	f.imap.Append(t, "INBOX", imaptest.Mail("MAILER-DAEMON@mx.example.com", "Undelivered", "termin"))
	f.imap.Append(t, "INBOX", imaptest.Mail("bot@example.com", "Abwesend", "termin", "Auto-Submitted", "auto-replied"))
	f.imap.Append(t, "INBOX", imaptest.Mail("list@example.com", "Liste", "termin", "List-Id", "<list.example.com>"))
	f.imap.Append(t, "INBOX", imaptest.Mail("bulk@example.com", "Massen", "termin", "Precedence", "bulk"))
	f.sync(t)

	all := f.messages(t, store.InboxStatusAll)
	by := map[string]store.InboxMessage{}
	for _, m := range all {
		by[m.Subject] = m
	}
	if r := by["Rechnung 42"]; len(r.Labels) != 1 || r.Labels[0] != "Buchhaltung" || !r.Read {
		t.Errorf("label and mark_read: %+v", r)
	}
	if fl := f.imap.Flags(t, "INBOX")[1]; len(fl) != 1 {
		t.Errorf("mark_read not written back: %v", fl)
	}
	if !by["Angebote"].Archived {
		t.Error("archive rule")
	}
	sent := f.smtp.Messages()
	if len(sent) != 1 || sent[0].To[0] != "anna@example.com" {
		var to []string
		for _, s := range sent {
			to = append(to, s.To...)
		}
		t.Fatalf("auto replies went to %v, want only one to anna", to)
	}
	if !strings.Contains(string(sent[0].Data), "Auto-Submitted: auto-replied") {
		t.Error("an auto reply carries Auto-Submitted")
	}
	ev := f.events(t, store.EventInboxReplied)
	if len(ev) != 1 || ev[0]["source"] != "rule" {
		t.Errorf("inbox.replied = %v", ev)
	}
	// The guard holds across syncs (and processes): a third mail the same day
	// gets no reply.
	f.imap.Append(t, "INBOX", imaptest.Mail("anna@example.com", "Dritte", "Termin?"))
	f.service(dbtest.Open(t, f.url)).Sync(ctx, f.acct)
	if n := len(f.smtp.Messages()); n != 1 {
		t.Errorf("%d auto replies after the third mail, want 1", n)
	}
}

func TestMayAutoReply(t *testing.T) {
	for addr, want := range map[string]bool{
		"anna@example.com": true, "noreply@x.de": false, "no-reply@x.de": false, "mailer-daemon@x.de": false,
		"postmaster@x.de": false, "newsletter-noreply@x.de": false, "bounces+123@x.de": false, "team@acme.test": false,
	} {
		if got := inbox.MayAutoReply(store.InboxMessage{FromEmail: addr}, "team@acme.test"); got != want {
			t.Errorf("%s: %v, want %v", addr, got, want)
		}
	}
	if inbox.MayAutoReply(store.InboxMessage{FromEmail: "anna@example.com", Automated: true}, "") {
		t.Error("automated mail")
	}
}

func TestDraftApproveDiscardAndAutoDraft(t *testing.T) {
	f := newFixture(t, imaptest.Options{})
	ctx := context.Background()
	if _, err := f.db.AITopUp(ctx, f.acct, 10*store.EUR); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.ExecContext(ctx, `INSERT INTO contacts (account_id, email, first_name, last_name) VALUES ($1, 'anna@example.com', 'Anna', 'Berg')`, f.acct); err != nil {
		t.Fatal(err)
	}
	f.imap.Append(t, "INBOX", imaptest.Mail("anna@example.com", "Frage", "Wann liefern Sie?", "Message-ID", "<d1@example.com>"))
	f.connect(t)
	f.sync(t)
	m := f.messages(t, store.InboxStatusAll)[0]
	d, err := f.svc.Draft(ctx, f.acct, m.ID, inbox.DraftInput{Instruction: "kurz"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != store.DraftPending || d.Cost <= 0 || !strings.Contains(d.Text, "Vielen Dank") {
		t.Errorf("draft = %+v", d)
	}
	calls := f.aiSrv.Calls()
	p := calls[len(calls)-1].User
	for _, want := range []string{"Wann liefern Sie?", "Vorname \"Anna\"", "Ihr Acme-Team", "Anweisung: kurz"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	edited := "Morgen. Danke!"
	got, r, err := f.svc.Approve(ctx, f.acct, d.ID, &edited)
	if err != nil || got.Status != store.DraftApproved || r.Source != store.ReplySourceAI {
		t.Fatalf("approve = %+v %+v %v", got, r, err)
	}
	if _, _, err := f.svc.Approve(ctx, f.acct, d.ID, nil); err == nil {
		t.Error("a second approval sends again")
	}
	if sent := f.smtp.Messages(); len(sent) != 1 || !strings.Contains(string(sent[0].Data), "Morgen. Danke!") {
		t.Errorf("approved draft not sent as edited: %d", len(sent))
	}
	d2, err := f.svc.Draft(ctx, f.acct, m.ID, inbox.DraftInput{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Discard(ctx, f.acct, d2.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Discard(ctx, f.acct, d2.ID); err == nil {
		t.Error("discarding twice")
	}

	// auto_draft: a new message that no rule answered gets a draft.
	in := f.settings()
	in.AutoDraft = true
	if _, err := f.svc.SaveSettings(ctx, f.acct, in); err != nil {
		t.Fatal(err)
	}
	f.imap.Append(t, "INBOX", imaptest.Mail("bernd@example.com", "Neu", "Bitte um Rückruf"))
	f.sync(t)
	drafts, _, err := f.db.InboxDrafts(ctx, f.acct, store.DraftPending, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(drafts) != 1 || drafts[0].MessageID == m.ID {
		t.Errorf("auto drafts = %+v, %v", drafts, err)
	}

	// The rule action ai_draft drafts a matching message even with
	// auto_draft off, and only that one.
	in.AutoDraft = false
	if _, err := f.svc.SaveSettings(ctx, f.acct, in); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.CreateInboxRule(ctx, f.acct, store.NewInboxRule{Name: "Angebote", SubjectContains: "angebot", Action: store.RuleAIDraft}); err != nil {
		t.Fatal(err)
	}
	f.imap.Append(t, "INBOX", imaptest.Mail("carla@example.com", "Angebot gewünscht", "Was kostet die Torte?"))
	f.imap.Append(t, "INBOX", imaptest.Mail("dora@example.com", "Gruß", "Schöne Grüße"))
	f.sync(t)
	drafts, _, err = f.db.InboxDrafts(ctx, f.acct, store.DraftPending, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(drafts) != 2 {
		t.Fatalf("after the ai_draft rule: %d pending drafts (%v), want 2", len(drafts), err)
	}
	byRule := 0
	for _, dr := range drafts {
		if msg, err := f.db.InboxMessage(ctx, f.acct, dr.MessageID); err == nil && msg.FromEmail == "carla@example.com" {
			byRule++
		}
	}
	if byRule != 1 {
		t.Errorf("the ai_draft rule drafted %d replies to the matching message, want 1", byRule)
	}

	met, err := f.db.InboxMetrics(ctx, f.acct, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if met.Received != 4 || met.Replied != 1 || met.AIDrafts != 4 || met.AIDraftsApproved != 1 || met.AvgFirstResponseMinutes == nil || met.Unread != 4 {
		t.Errorf("metrics = %+v", met)
	}
}

func TestConnectionTestFailsByStep(t *testing.T) {
	f := newFixture(t, imaptest.Options{TLS: true})
	ctx := context.Background()
	step := func(in store.InboxSettingsInput, field, word string) {
		t.Helper()
		_, err := f.svc.SaveSettings(ctx, f.acct, in)
		var ve *store.ValidationError
		if !errors.As(err, &ve) || !strings.Contains(ve.Fields[field], word) {
			t.Errorf("error = %v, want %s on %s", err, word, field)
		}
	}
	closed := f.settings()
	closed.Port = 1
	step(closed, "host", "Verbindung")
	plain := f.settings()
	plain.Encryption = store.EncryptionSTARTTLS // the server speaks TLS from the first byte
	step(plain, "encryption", "TLS")
	bad := f.settings()
	wrong := "falsch"
	bad.Password = &wrong
	step(bad, "password", "Anmeldung")
	folder := f.settings()
	folder.Folder = "Gibtsnicht"
	step(folder, "folder", "Ordner")
	if _, err := f.db.InboxSettings(ctx, f.acct); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("failed tests stored settings: %v", err)
	}
	f.connect(t)
	st, err := f.db.InboxSettings(ctx, f.acct)
	if err != nil || !st.HasPassword || st.Encryption != "tls" {
		t.Fatalf("settings = %+v, %v", st, err)
	}
	pw, _ := f.db.InboxPassword(ctx, f.box, f.acct)
	var raw string
	_ = f.db.GetContext(ctx, &raw, `SELECT password_sealed FROM inbox_settings WHERE account_id = $1`, f.acct)
	if pw != f.imap.Password || strings.Contains(raw, f.imap.Password) {
		t.Error("password not sealed")
	}
	// Without RUNDBRIEF_SMTP_ALLOW_PRIVATE the loopback host is refused without connecting.
	mail := mailer.NewTransports(f.db, f.box, mailer.TransportOptions{})
	strict := inbox.New(f.db, inbox.Config{Box: f.box, Guard: smtpserver.New(f.db, smtpserver.Config{Box: f.box, Mail: mail}), Opener: mail})
	before := f.imap.Connections()
	_, err = strict.SaveSettings(ctx, f.acct, f.settings())
	var ve *store.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(ve.Fields["host"], "nicht") || f.imap.Connections() != before {
		t.Errorf("private host: %v, %d connections", err, f.imap.Connections()-before)
	}
	// The sync dials through the guard too.
	if _, err := strict.Sync(ctx, f.acct); err == nil {
		t.Error("a sync to a private address")
	}
	if f.imap.Connections() != before {
		t.Error("the sync connected to a private address")
	}
}

func TestWorkersOfTwoProcessesSyncOnce(t *testing.T) {
	f := newFixture(t, imaptest.Options{})
	for i := range 40 {
		f.imap.Append(t, "INBOX", imaptest.Mail(fmt.Sprintf("w%d@example.com", i), "Hallo", "x"))
	}
	f.connect(t)
	other := f.service(dbtest.Open(t, f.url))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, svc := range []*inbox.Service{f.svc, other} {
		wg.Go(func() { _ = svc.Worker(inbox.WorkerOptions{Poll: 20 * time.Millisecond}).Run(ctx) })
	}
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(f.events(t, store.EventInboxReceived)) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d events, want %d", len(f.events(t, store.EventInboxReceived)), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor(40)
	// The lease is released (last_sync_at) right after the last batch commits.
	var st store.InboxSettings
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, err = f.db.InboxSettings(context.Background(), f.acct); err != nil || st.LastSyncAt != nil {
			break
		}
	}
	if err != nil || st.LastSyncAt == nil || st.LastError != "" {
		t.Fatalf("settings after the worker's sync: %+v %v", st, err)
	}
	var next time.Time
	_ = f.db.GetContext(context.Background(), &next, `SELECT next_sync_at FROM inbox_settings WHERE account_id = $1`, f.acct)
	if d := time.Until(next); d < 4*time.Minute || d > 6*time.Minute {
		t.Errorf("next sync in %v, want about 5 minutes", d)
	}
	// Not due: new mail waits for the interval or a request (POST /inbox/sync).
	f.imap.Append(t, "INBOX", imaptest.Mail("late@example.com", "Später", "x"))
	time.Sleep(200 * time.Millisecond)
	if n := len(f.events(t, store.EventInboxReceived)); n != 40 {
		t.Errorf("synced before due: %d", n)
	}
	if err := other.RequestSync(context.Background(), f.acct); err != nil {
		t.Fatal(err)
	}
	waitFor(41)
	time.Sleep(200 * time.Millisecond)
	cancel()
	wg.Wait()
	if n := len(f.events(t, store.EventInboxReceived)); n != 41 {
		t.Errorf("%d inbox.received, want 41", n)
	}
	// A plan without the inbox is not synced.
	if _, err := f.db.ExecContext(context.Background(), `UPDATE accounts SET plan = 'starter' WHERE id = $1`, f.acct); err != nil {
		t.Fatal(err)
	}
	_ = f.db.RequestInboxSync(context.Background(), f.acct)
	if _, ok, err := f.db.ClaimDueInbox(context.Background(), "x", time.Minute); err != nil || ok {
		t.Errorf("claimed an account without the inbox: %v %v", ok, err)
	}
}
