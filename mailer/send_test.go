package mailer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestNewsletterReachesEveryContactOnce sends a newsletter to 2,000 contacts
// through the real pipeline (inline first batch, then the worker's lanes) and
// checks that every subscribed, unblocked contact got exactly one message and
// the blocked ones none: one blocked before the send (skipped when queued),
// one blocked after queueing (skipped by the worker's check right before
// sending). Counters, events and activities match what was sent.
func TestNewsletterReachesEveryContactOnce(t *testing.T) {
	const n = 2000
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{Discard: false})
	list := e.seedList("news", n)
	// Blocked without the contact being unsubscribed (an import of blocked
	// addresses does that), so the queue's own check is what keeps it out.
	e.exec(`INSERT INTO blocked_addresses (account_id, email, source) VALUES ($1, $2, 'import')`, e.acct, userEmail("news", 7))
	// An unsubscribed contact is no recipient at all.
	e.exec(`UPDATE contacts SET status = 'unsubscribed' WHERE account_id = $1 AND email = $2`, e.acct, userEmail("news", 8))
	nl := e.newsletter(list)

	w := e.worker(e.db, e.transports, mailer.WorkerOptions{})
	svc := campaign.New(e.db, e.transports, w, campaign.Options{Links: e.links, InlineBatch: 20})
	res, err := svc.SendNewsletter(ctx, e.acct, systemActor, nl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Queued != n-2 || res.Skipped != 1 || res.Sent != 20 || res.Campaign.Status != store.CampaignSending {
		t.Fatalf("send result: %+v", res)
	}
	// Blocked after queueing: the worker must check right before sending.
	e.exec(`INSERT INTO blocked_addresses (account_id, email, source) VALUES ($1, $2, 'link')`, e.acct, userEmail("news", 1999))
	stop := running(w.Run)
	c := e.waitStatus(nl.ID, store.CampaignSent)
	stop()

	counts := rcptCounts(e.srv.Messages())
	for i := 1; i <= n; i++ {
		addr, want := userEmail("news", i), 1
		if i == 7 || i == 8 || i == 1999 {
			want = 0
		}
		if counts[addr] != want {
			t.Errorf("%s got %d messages, want %d", addr, counts[addr], want)
		}
	}
	if len(counts) != n-3 || e.srv.Count() != n-3 {
		t.Errorf("%d recipients, %d messages; want %d each", len(counts), e.srv.Count(), n-3)
	}
	if c.RecipientsCount != n-2 || c.SentCount != n-3 || c.SkippedCount != 2 || c.FailedCount != 0 || c.FinishedAt == nil {
		t.Errorf("campaign counters: queued %d sent %d skipped %d failed %d", c.RecipientsCount, c.SentCount, c.SkippedCount, c.FailedCount)
	}
	var sentEvents, newsletterSent, activities int
	e.scalar(&sentEvents, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'email.sent'`, e.acct)
	e.scalar(&newsletterSent, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'newsletter.sent'
  AND payload @> jsonb_build_object('newsletter', jsonb_build_object('id', $2::bigint, 'queued', $3::int, 'sent', $4::int, 'failed', 0))`,
		e.acct, nl.ID, n-2, n-3)
	e.scalar(&activities, `SELECT count(*) FROM activity_log WHERE account_id = $1 AND action = 'email.sent' AND object_type = 'contact'`, e.acct)
	if sentEvents != n-3 || newsletterSent != 1 || activities != n-3 {
		t.Errorf("email.sent events %d, newsletter.sent %d, activities %d; want %d, 1, %d", sentEvents, newsletterSent, activities, n-3, n-3)
	}
	var payloadOK bool
	e.scalar(&payloadOK, `SELECT payload ?& array['campaign_id', 'contact_id', 'email', 'message_id'] AND payload->>'email' = $2
FROM events WHERE account_id = $1 AND name = 'email.sent' AND payload->>'email' = $2`, e.acct, userEmail("news", 1))
	if !payloadOK {
		t.Error("email.sent lacks campaign_id, contact_id, email or message_id")
	}
}

// scalar reads one value or fails the test.
func (e *sendEnv) scalar(dst any, q string, args ...any) {
	e.tb.Helper()
	if err := e.db.GetContext(context.Background(), dst, q, args...); err != nil {
		e.tb.Fatalf("%s: %v", q, err)
	}
}

// TestCrashLosesAndDuplicatesNothing stops a worker at a random point of a
// send (its context cancelled, as at a shutdown or a crash of its process),
// lets the leases of the rows it left behind run out and sends the rest with
// a new worker on new connections. Exactly the documented window may be sent
// twice: rows the first worker left in 'sending' (at most one per lane: the
// message in flight) that the server had already received. Everything else
// arrives exactly once.
func TestCrashLosesAndDuplicatesNothing(t *testing.T) {
	const n, lanes = 3000, 4
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{})
	nl := e.newsletter(e.seedList("crash", n))
	svc := campaign.New(e.db, e.transports, nil, campaign.Options{Links: e.links})
	if _, err := svc.SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}

	first := e.worker(e.db, e.transports, mailer.WorkerOptions{Concurrency: lanes, BatchSize: 50, FlushEvery: 10})
	stop := running(first.Run)
	crashAt := 200 + rand.IntN(n-600)
	for e.srv.Count() < crashAt {
		time.Sleep(time.Millisecond)
	}
	stop()
	received := e.quiescentCounts()

	var inFlight []string
	e.selectStrings(&inFlight, `SELECT email FROM campaign_recipients WHERE campaign_id = $1 AND status = 'sending'`, nl.ID)
	if len(inFlight) > lanes {
		t.Fatalf("%d rows left in flight by %d lanes: %v", len(inFlight), lanes, inFlight)
	}
	var queuedButReceived int
	e.scalar(&queuedButReceived, `SELECT count(*) FROM campaign_recipients WHERE campaign_id = $1 AND status = 'queued' AND email = ANY($2)`,
		nl.ID, keys(received))
	if queuedButReceived != 0 {
		t.Fatalf("%d received messages are not recorded as sent or in flight", queuedButReceived)
	}
	dups := map[string]bool{}
	for _, addr := range inFlight {
		if received[addr] > 0 {
			dups[addr] = true
		}
	}
	// The leases of the dead worker run out.
	e.exec(`UPDATE campaign_recipients SET claimed_until = now() - interval '1 second' WHERE campaign_id = $1 AND status = 'sending'`, nl.ID)

	db2 := dbtest.Open(t, e.url)
	second := e.worker(db2, e.newTransports(db2, nil), mailer.WorkerOptions{Concurrency: lanes})
	stop = running(second.Run)
	c := e.waitStatus(nl.ID, store.CampaignSent)
	stop()

	counts := rcptCounts(e.srv.Messages())
	for i := 1; i <= n; i++ {
		addr, want := userEmail("crash", i), 1
		if dups[addr] {
			want = 2
		}
		if counts[addr] != want {
			t.Errorf("%s got %d messages, want %d (crash after %d, in flight %v)", addr, counts[addr], want, crashAt, inFlight)
		}
	}
	if c.SentCount != n {
		t.Errorf("sent_count %d, want %d", c.SentCount, n)
	}
	var events int
	e.scalar(&events, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'email.sent'`, e.acct)
	if events != n {
		t.Errorf("%d email.sent events, want %d", events, n)
	}
	t.Logf("crash after %d messages; %d in flight, %d of them duplicated", crashAt, len(inFlight), len(dups))
}

// quiescentCounts waits until the test server has received nothing new for a
// moment (the last message of a stopped worker may still be on its way) and
// returns the messages per recipient.
func (e *sendEnv) quiescentCounts() map[string]int {
	last := -1
	for e.srv.Count() != last {
		last = e.srv.Count()
		time.Sleep(150 * time.Millisecond)
	}
	return rcptCounts(e.srv.Messages())
}

func (e *sendEnv) selectStrings(dst *[]string, q string, args ...any) {
	e.tb.Helper()
	if err := e.db.SelectContext(context.Background(), dst, q, args...); err != nil {
		e.tb.Fatalf("%s: %v", q, err)
	}
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// countingOpener counts the messages sent through the Senders it opens.
type countingOpener struct {
	mailer.Opener
	sent atomic.Int64
}

func (o *countingOpener) Open(ctx context.Context, accountID, serverID int64) (mailer.Sender, mailer.Route, error) {
	s, r, err := o.Opener.Open(ctx, accountID, serverID)
	if err != nil {
		return nil, r, err
	}
	return &countingSender{Sender: s, n: &o.sent}, r, nil
}

type countingSender struct {
	mailer.Sender
	n *atomic.Int64
}

func (s *countingSender) Send(ctx context.Context, m *mailer.Message) error {
	err := s.Sender.Send(ctx, m)
	if err == nil {
		s.n.Add(1)
	}
	return err
}

// TestTwoProcessesShareTheWork runs two workers on two connection pools, as
// two serve processes would: together they send every message once, and both
// take part.
func TestTwoProcessesShareTheWork(t *testing.T) {
	const n = 3000
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{})
	nl := e.newsletter(e.seedList("two", n))
	svc := campaign.New(e.db, e.transports, nil, campaign.Options{Links: e.links})
	if _, err := svc.SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}
	var openers [2]*countingOpener
	var stops [2]func()
	for i := range openers {
		db := dbtest.Open(t, e.url)
		openers[i] = &countingOpener{Opener: e.newTransports(db, nil)}
		stops[i] = running(e.worker(db, openers[i], mailer.WorkerOptions{}).Run)
	}
	e.waitStatus(nl.ID, store.CampaignSent)
	for _, stop := range stops {
		stop()
	}
	counts := rcptCounts(e.srv.Messages())
	for i := 1; i <= n; i++ {
		if c := counts[userEmail("two", i)]; c != 1 {
			t.Errorf("%s got %d messages", userEmail("two", i), c)
		}
	}
	a, b := openers[0].sent.Load(), openers[1].sent.Load()
	if a+b != n || a == 0 || b == 0 {
		t.Errorf("the processes sent %d and %d messages; want %d together, both some", a, b, n)
	}
}

// parsedMail is a received message, MIME-decoded.
type parsedMail struct {
	header     mail.Header
	subject    string
	text, html string
}

func parseMail(t *testing.T, data []byte) parsedMail {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not an RFC 5322 message: %v", err)
	}
	var dec mime.WordDecoder
	p := parsedMail{header: m.Header}
	if p.subject, err = dec.DecodeHeader(m.Header.Get("Subject")); err != nil {
		t.Fatalf("subject: %v", err)
	}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil {
		t.Fatalf("content type: %v", err)
	}
	readPart := func(ct, cte string, r io.Reader) {
		if strings.EqualFold(cte, "quoted-printable") {
			r = quotedprintable.NewReader(r)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("read part: %v", err)
		}
		b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
		pt, _, _ := mime.ParseMediaType(ct)
		switch pt {
		case "text/plain":
			p.text = string(b)
		case "text/html":
			p.html = string(b)
		default:
			t.Fatalf("unexpected part %s", ct)
		}
	}
	if !strings.HasPrefix(mt, "multipart/") {
		readPart(m.Header.Get("Content-Type"), m.Header.Get("Content-Transfer-Encoding"), m.Body)
		return p
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		part, err := mr.NextPart() // decodes quoted-printable itself
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("multipart: %v", err)
		}
		readPart(part.Header.Get("Content-Type"), part.Header.Get("Content-Transfer-Encoding"), part)
	}
	return p
}

// messageTo returns the one message the server got for addr.
func (e *sendEnv) messageTo(t *testing.T, addr string) parsedMail {
	t.Helper()
	var found []smtptest.Message
	for _, m := range e.srv.Messages() {
		for _, to := range m.To {
			if to == addr {
				found = append(found, m)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d messages to %s, want 1", len(found), addr)
	}
	return parseMail(t, found[0].Data)
}

func (e *sendEnv) recipientID(t *testing.T, campaignID int64, addr string) int64 {
	t.Helper()
	var id int64
	e.scalar(&id, `SELECT id FROM campaign_recipients WHERE campaign_id = $1 AND email = $2`, campaignID, addr)
	return id
}

var (
	hrefRe  = regexp.MustCompile(`href=["']([^"']+)["']`)
	pixelRe = regexp.MustCompile(`<img src="(https://rb\.test/o/[^"]+)"`)
)

// TestMessagesCarryTrackingAndUnsubscribe parses a sent newsletter: sender,
// personalised subject, List-Unsubscribe (one-click), a text and an HTML
// part, the hidden preheader, the open pixel, rewritten links whose tokens
// name the recipient and the stored link (a personalised link carries its
// rendered address, covered by the signature), and the unsubscribe line.
func TestMessagesCarryTrackingAndUnsubscribe(t *testing.T) {
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{})
	list := e.seedList("mime", 3)
	nl := e.newsletter(list)
	pre, from, reply := "Vorschau für {{vorname}} & Co", "Acme Team", "antwort@acme.test"
	if _, err := e.db.UpdateNewsletter(ctx, e.acct, systemActor, nl.ID, store.NewsletterInput{Preheader: &pre, FromName: &from, ReplyTo: &reply}); err != nil {
		t.Fatal(err)
	}
	w := e.worker(e.db, e.transports, mailer.WorkerOptions{})
	if _, err := e.campaigns(w).SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(nl.ID, store.CampaignSent)

	addr := userEmail("mime", 1)
	rid := e.recipientID(t, nl.ID, addr)
	m := e.messageTo(t, addr)
	if got := m.header.Get("From"); got != `"Acme Team" <news@acme.test>` {
		t.Errorf("From %q", got)
	}
	if got := m.header.Get("Reply-To"); !strings.Contains(got, "antwort@acme.test") {
		t.Errorf("Reply-To %q", got)
	}
	if m.subject != "Neuigkeiten für Vorname1" {
		t.Errorf("subject %q", m.subject)
	}
	if got := m.header.Get("X-Rundbrief-Campaign"); got != fmt.Sprint(nl.ID) {
		t.Errorf("X-Rundbrief-Campaign %q", got)
	}
	unsub := m.header.Get("List-Unsubscribe")
	if !strings.HasPrefix(unsub, "<https://rb.test/unsubscribe/") || m.header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Fatalf("List-Unsubscribe %q, -Post %q", unsub, m.header.Get("List-Unsubscribe-Post"))
	}
	unsubURL := strings.Trim(unsub, "<>")
	tok, err := e.tokens.Verify(mailer.TokenUnsubscribe, strings.TrimPrefix(unsubURL, "https://rb.test/unsubscribe/"))
	if err != nil || tok.RecipientID != rid {
		t.Fatalf("unsubscribe token names %+v (%v), want recipient %d", tok, err, rid)
	}
	for _, want := range []string{"Hallo Vorname1 Nachname1,", "Stadt1", "K-1", unsubURL, "Vorschau für Vorname1 &amp; Co"} {
		if !strings.Contains(m.html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	for _, want := range []string{"Hallo Vorname1 Nachname1,", "Abmelden: " + unsubURL} {
		if !strings.Contains(m.text, want) {
			t.Errorf("text part lacks %q:\n%s", want, m.text)
		}
	}
	if strings.Contains(m.text, "Vorschau für") {
		t.Error("the hidden preheader must not be in the text part")
	}
	px := pixelRe.FindStringSubmatch(m.html)
	if px == nil {
		t.Fatal("no open pixel")
	}
	if tok, err := e.tokens.Verify(mailer.TokenOpen, strings.TrimPrefix(px[1], "https://rb.test/o/")); err != nil || tok.RecipientID != rid {
		t.Errorf("open token %+v (%v)", tok, err)
	}

	links, err := e.db.CampaignLinks(ctx, nl.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantLinks := []string{"https://shop.example.com/angebote?utm_source=newsletter&utm_medium=email", "https://blog.example.com/artikel/1",
		"https://example.com/konto?email={{email}}", "https://www.example.com/impressum"}
	if len(links) != len(wantLinks) {
		t.Fatalf("stored links %+v", links)
	}
	byID := map[int64]store.CampaignLink{}
	for i, l := range links {
		if l.URL != wantLinks[i] || l.Personalized != (i == 2) || l.Position != i {
			t.Errorf("link %d: %+v", i, l)
		}
		byID[l.ID] = l
	}
	var clicks []string
	for _, h := range hrefRe.FindAllStringSubmatch(m.html, -1) {
		if strings.HasPrefix(h[1], "https://rb.test/c/") {
			clicks = append(clicks, strings.ReplaceAll(h[1], "&amp;", "&"))
		}
	}
	if len(clicks) != 4 || !strings.Contains(m.html, `href="mailto:info@example.com"`) {
		t.Fatalf("tracked links %v", clicks)
	}
	for i, c := range clicks {
		u, err := url.Parse(c)
		if err != nil {
			t.Fatal(err)
		}
		rendered := u.Query().Get(mailer.ClickURLParam)
		tok, err := e.tokens.VerifyClick(strings.TrimPrefix(u.Path, "/c/"), rendered)
		if err != nil || tok.RecipientID != rid || byID[tok.LinkID].Position != i {
			t.Fatalf("click token of %s: %+v (%v)", c, tok, err)
		}
		if i == 2 {
			if rendered != "https://example.com/konto?email=mime-user1%40example.com" || !tok.Personalized {
				t.Errorf("personalised link rendered as %q", rendered)
			}
			if _, err := e.tokens.VerifyClick(strings.TrimPrefix(u.Path, "/c/"), "https://evil.example/"); err == nil {
				t.Error("a changed address must not verify")
			}
		}
	}
	if !strings.Contains(m.text, "https://rb.test/c/") {
		t.Error("the text part's links are not tracked")
	}
}

// TestBlockedAddressesByEmailType: a transactional email goes to a blocked
// address too (and has no unsubscribe header), a follow-up skips it and
// reports it. A recipient that is a known contact gets the contact's
// fields; request placeholders fill every recipient alike.
func TestBlockedAddressesByEmailType(t *testing.T) {
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{})
	e.exec(`INSERT INTO blocked_addresses (account_id, email, source) VALUES ($1, 'blocked@example.net', 'manual')`, e.acct)
	first := "Erika"
	if _, err := e.db.UpsertContact(ctx, e.acct, systemActor, store.ContactInput{Email: "erika@example.net", FirstName: &first}); err != nil {
		t.Fatal(err)
	}
	w := e.worker(e.db, e.transports, mailer.WorkerOptions{})
	svc := e.campaigns(w)
	send := func(typ string, to ...string) campaign.SendResult {
		t.Helper()
		res, err := svc.SendEmail(ctx, e.acct, systemActor, store.EmailInput{
			To: to, Type: typ, Subject: "Ihre Bestellung", HTML: "<p>Hallo {{vorname|Kunde}}, Ihr Code: {{gutschein}}</p>",
			Placeholders: map[string]string{"gutschein": "ABC-123"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	res := send(store.TypeTransactional, "blocked@example.net", "erika@example.net")
	if res.Queued != 2 || res.Skipped != 0 || res.Sent != 2 || res.Campaign.Status != store.CampaignSent {
		t.Fatalf("transactional: %+v", res)
	}
	m := e.messageTo(t, "erika@example.net")
	if !strings.Contains(m.html, "Hallo Erika, Ihr Code: ABC-123") || m.header.Get("List-Unsubscribe") != "" || strings.Contains(m.html, "abmelden") {
		t.Errorf("transactional mail: List-Unsubscribe %q\n%s", m.header.Get("List-Unsubscribe"), m.html)
	}
	if m := e.messageTo(t, "blocked@example.net"); !strings.Contains(m.html, "Hallo Kunde, Ihr Code: ABC-123") {
		t.Errorf("transactional mail to a blocked address: %s", m.html)
	}

	res = send(store.TypeFollowUp, "blocked@example.net", "new@example.net")
	if res.Queued != 1 || res.Skipped != 1 || res.Campaign.Status != store.CampaignSent {
		t.Fatalf("follow-up: %+v", res)
	}
	counts := rcptCounts(e.srv.Messages())
	if counts["blocked@example.net"] != 1 || counts["new@example.net"] != 1 {
		t.Errorf("messages per address: %v", counts)
	}
	if m := e.messageTo(t, "new@example.net"); !strings.HasPrefix(m.header.Get("List-Unsubscribe"), "<https://rb.test/unsubscribe/") {
		t.Error("a follow-up needs List-Unsubscribe")
	}
	var status string
	e.scalar(&status, `SELECT status || ':' || error FROM campaign_recipients WHERE campaign_id = $1 AND email = 'blocked@example.net'`, res.Campaign.ID)
	if status != "skipped:blocked" {
		t.Errorf("blocked follow-up recipient recorded as %q", status)
	}
	var contacts int
	e.scalar(&contacts, `SELECT count(*) FROM contacts WHERE account_id = $1`, e.acct)
	if contacts != 1 {
		t.Errorf("single emails must not create contacts: %d contacts", contacts)
	}

	// Everyone blocked: nothing to send, but the request is accepted and reports it.
	res = send(store.TypeFollowUp, "blocked@example.net")
	if res.Queued != 0 || res.Skipped != 1 || res.Campaign.Status != store.CampaignSent {
		t.Errorf("all-blocked follow-up: %+v", res)
	}
}

// TestRetryFailedSendsOnlyFailed: permanent rejections fail their recipients
// with email.bounced; after the cause is fixed (here: another server),
// retry-failed sends to exactly those recipients again. The rejections are
// the server's policy (554 5.7.1), not unknown mailboxes: a hard bounce would
// put the address on the blocked list, and a retry skips it
// (TestHardBounceBlocksAddress in handlers/api).
func TestRetryFailedSendsOnlyFailed(t *testing.T) {
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{Reject: map[string]int{userEmail("retry", 3): 554, userEmail("retry", 5): 554}})
	nl := e.newsletter(e.seedList("retry", 10))
	w := e.worker(e.db, e.transports, mailer.WorkerOptions{})
	svc := e.campaigns(w)
	if _, err := svc.SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}
	stop := running(w.Run)
	c := e.waitStatus(nl.ID, store.CampaignSent)
	stop()
	if c.SentCount != 8 || c.FailedCount != 2 {
		t.Fatalf("sent %d failed %d", c.SentCount, c.FailedCount)
	}
	var bounces, bounceActs int
	e.scalar(&bounces, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'email.bounced' AND (payload->>'code')::int = 554
  AND payload->>'reason' LIKE '554%' AND (payload->>'campaign_id')::bigint = $2`, e.acct, nl.ID)
	e.scalar(&bounceActs, `SELECT count(*) FROM activity_log WHERE account_id = $1 AND action = 'email.bounced'`, e.acct)
	if bounces != 2 || bounceActs != 2 {
		t.Errorf("%d email.bounced events, %d activities; want 2 each", bounces, bounceActs)
	}

	fixed := smtptest.Start(t, smtptest.Options{})
	box := e.box
	if _, err := e.db.UpdateSMTPServer(ctx, box, e.acct, e.serverID, store.SMTPServerPatch{Port: &fixed.Port}); err != nil {
		t.Fatal(err)
	}
	w2 := e.worker(e.db, e.newTransports(e.db, box), mailer.WorkerOptions{})
	svc2 := campaign.New(e.db, e.transports, w2, campaign.Options{Links: e.links})
	res, err := svc2.RetryFailed(ctx, e.acct, systemActor, nl.ID)
	if err != nil || res.Queued != 2 || res.Campaign.Status != store.CampaignSending {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	stop = running(w2.Run)
	c = e.waitStatus(nl.ID, store.CampaignSent)
	stop()
	got := rcptCounts(fixed.Messages())
	if len(got) != 2 || got[userEmail("retry", 3)] != 1 || got[userEmail("retry", 5)] != 1 {
		t.Errorf("retry sent to %v, want exactly the two failed recipients", got)
	}
	if c.SentCount != 10 || c.FailedCount != 0 {
		t.Errorf("after retry: sent %d failed %d", c.SentCount, c.FailedCount)
	}
	_, err = svc2.RetryFailed(ctx, e.acct, systemActor, nl.ID)
	var ce *store.ConflictError
	if !errors.As(err, &ce) || ce.Reason != "nothing_to_retry" {
		t.Errorf("second retry: %v", err)
	}
}

// TestTransientErrorsRetryThenFail: a 4xx is retried with backoff and fails
// the recipient only after MaxAttempts, without a bounce event.
func TestTransientErrorsRetryThenFail(t *testing.T) {
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{Reject: map[string]int{userEmail("soft", 2): 451}})
	nl := e.newsletter(e.seedList("soft", 4))
	w := e.worker(e.db, e.transports, mailer.WorkerOptions{MaxAttempts: 3, Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	if _, err := e.campaigns(w).SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}
	stop := running(w.Run)
	c := e.waitStatus(nl.ID, store.CampaignSent)
	stop()
	var attempts int
	var errText string
	e.scalar(&attempts, `SELECT attempts FROM campaign_recipients WHERE campaign_id = $1 AND email = $2 AND status = 'failed'`, nl.ID, userEmail("soft", 2))
	e.scalar(&errText, `SELECT error FROM campaign_recipients WHERE campaign_id = $1 AND email = $2`, nl.ID, userEmail("soft", 2))
	if attempts != 3 || !strings.HasPrefix(errText, "451") || c.SentCount != 3 || c.FailedCount != 1 {
		t.Errorf("attempts %d, error %q, sent %d, failed %d", attempts, errText, c.SentCount, c.FailedCount)
	}
	var bounces int
	e.scalar(&bounces, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'email.bounced'`, e.acct)
	if bounces != 0 {
		t.Errorf("%d bounce events for a transient failure", bounces)
	}
}

// TestPauseAndResume: a paused newsletter sends nothing more (also one
// paused mid-send, once the lanes noticed), and resumes where it stopped.
func TestPauseAndResume(t *testing.T) {
	const n = 300
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{})
	e.exec(`UPDATE smtp_servers SET rate_per_second = 100 WHERE id = $1`, e.serverID)
	nl := e.newsletter(e.seedList("pause", n))
	w := e.worker(e.db, e.transports, mailer.WorkerOptions{})
	svc := campaign.New(e.db, e.transports, nil, campaign.Options{Links: e.links})
	if _, err := svc.SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}
	stop := running(w.Run)
	for e.srv.Count() < 30 {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := e.db.PauseNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}
	// The lanes notice at their next write; then nothing more goes out.
	settled := -1
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		before := e.srv.Count()
		time.Sleep(400 * time.Millisecond)
		if e.srv.Count() == before {
			settled = before
			break
		}
	}
	time.Sleep(300 * time.Millisecond)
	if settled < 0 || e.srv.Count() != settled || settled >= n {
		t.Fatalf("still sending after the pause: %d then %d of %d", settled, e.srv.Count(), n)
	}
	if c, _ := e.db.CampaignByID(ctx, nl.ID); c.Status != store.CampaignPaused {
		t.Fatalf("status %s", c.Status)
	}
	_, err := e.db.PauseNewsletter(ctx, e.acct, systemActor, nl.ID)
	var ce *store.ConflictError
	if !errors.As(err, &ce) || ce.Reason != "not_sending" {
		t.Errorf("pausing twice: %v", err)
	}
	if _, err := campaign.New(e.db, e.transports, w, campaign.Options{Links: e.links}).ResumeNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(nl.ID, store.CampaignSent)
	stop()
	counts := rcptCounts(e.srv.Messages())
	for i := 1; i <= n; i++ {
		if counts[userEmail("pause", i)] != 1 {
			t.Errorf("%s got %d messages", userEmail("pause", i), counts[userEmail("pause", i)])
		}
	}
}

// TestRateLimitOfTheSMTPServer: the server's messages-per-second setting
// spaces the sends of all lanes.
func TestRateLimitOfTheSMTPServer(t *testing.T) {
	const n, rate = 25, 20
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{Discard: true})
	e.exec(`UPDATE smtp_servers SET rate_per_second = $2 WHERE id = $1`, e.serverID, rate)
	nl := e.newsletter(e.seedList("rate", n))
	w := e.worker(e.db, e.transports, mailer.WorkerOptions{})
	if _, err := campaign.New(e.db, e.transports, nil, campaign.Options{Links: e.links}).SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}
	stop := running(w.Run)
	e.waitStatus(nl.ID, store.CampaignSent)
	stop()
	var span float64
	e.scalar(&span, `SELECT extract(epoch FROM max(sent_at) - min(sent_at)) FROM campaign_recipients WHERE campaign_id = $1`, nl.ID)
	// n sends at most rate per second: the last starts (n-1)/rate seconds after
	// the first; the first one's own duration may overlap that.
	if min := float64(n-1)/rate - 0.1; span < min {
		t.Errorf("%d messages went out within %.2f s; at %d/s that takes at least %.2f s", n, span, rate, min)
	}
}

// TestMarkdownNewsletter: Markdown becomes HTML (placeholders intact in link
// targets) and is the text part itself.
func TestMarkdownNewsletter(t *testing.T) {
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{})
	list := e.seedList("md", 1)
	name, subject := "Markdown", "Hallo"
	md := "# Hallo {{vorname}}\n\nText mit **fett** und [Ihr Konto](https://example.com/konto?e={{email}}).\n"
	nl, err := e.db.CreateNewsletter(ctx, e.acct, systemActor, store.NewsletterInput{Name: &name, Subject: &subject, Markdown: &md, ListIDs: &[]int64{list}})
	if err != nil {
		t.Fatal(err)
	}
	w := e.worker(e.db, e.transports, mailer.WorkerOptions{})
	if _, err := e.campaigns(w).SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(nl.ID, store.CampaignSent)
	m := e.messageTo(t, userEmail("md", 1))
	for _, want := range []string{"<h1>Hallo Vorname1</h1>", "<strong>fett</strong>", "?u=https%3A%2F%2Fexample.com%2Fkonto%3Fe%3Dmd-user1%2540example.com"} {
		if !strings.Contains(m.html, want) {
			t.Errorf("HTML lacks %q:\n%s", want, m.html)
		}
	}
	if !strings.HasPrefix(m.text, "# Hallo Vorname1\n\nText mit **fett** und [Ihr Konto](https://example.com/konto?e=md-user1@example.com).") ||
		!strings.Contains(m.text, "Abmelden: https://rb.test/unsubscribe/") {
		t.Errorf("text part:\n%s", m.text)
	}
}

// TestScheduledSendStartsOnceAcrossSchedulers: two schedulers (two
// processes) with one injected clock start a due newsletter exactly once;
// before its time neither does. A scheduled email that the daily limit
// refuses at its time fails with the reason.
func TestScheduledSendStartsOnceAcrossSchedulers(t *testing.T) {
	const n = 500
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{})
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	}
	setClock := func(t time.Time) {
		mu.Lock()
		clock = t
		mu.Unlock()
	}
	nl := e.newsletter(e.seedList("sched", n))
	at := clock.Add(time.Hour)
	svc := campaign.New(e.db, e.transports, nil, campaign.Options{Links: e.links, Now: now})
	if c, err := svc.ScheduleNewsletter(ctx, e.acct, systemActor, nl.ID, at); err != nil || c.Status != store.CampaignScheduled {
		t.Fatalf("schedule: %+v %v", c, err)
	}
	var scheds [2]*campaign.Scheduler
	for i := range scheds {
		db := dbtest.Open(t, e.url)
		scheds[i] = campaign.NewScheduler(db, campaign.New(db, e.newTransports(db, nil), nil, campaign.Options{Links: e.links, Now: now}),
			campaign.SchedulerOptions{Now: now})
	}
	setClock(at.Add(-time.Second))
	for _, s := range scheds {
		if n, err := s.StartDue(ctx); err != nil || n != 0 {
			t.Fatalf("before its time: started %d (%v)", n, err)
		}
	}
	setClock(at.Add(time.Second))
	var started atomic.Int64
	var wg sync.WaitGroup
	for _, s := range scheds {
		wg.Go(func() {
			n, err := s.StartDue(ctx)
			if err != nil {
				t.Error(err)
			}
			started.Add(int64(n))
		})
	}
	wg.Wait()
	var rows int
	e.scalar(&rows, `SELECT count(*) FROM campaign_recipients WHERE campaign_id = $1`, nl.ID)
	if started.Load() != 1 || rows != n {
		t.Fatalf("started %d times, %d recipient rows; want once, %d", started.Load(), rows, n)
	}
	w := e.worker(e.db, e.transports, mailer.WorkerOptions{})
	stop := running(w.Run)
	e.waitStatus(nl.ID, store.CampaignSent)
	stop()
	counts := rcptCounts(e.srv.Messages())
	for i := 1; i <= n; i++ {
		if counts[userEmail("sched", i)] != 1 {
			t.Fatalf("%s got %d messages", userEmail("sched", i), counts[userEmail("sched", i)])
		}
	}

	// A scheduled email over the daily limit at its time: failed, reason kept.
	later := at.Add(time.Hour)
	res, err := svc.SendEmail(ctx, e.acct, systemActor, store.EmailInput{To: []string{"a@example.net", "b@example.net"},
		Subject: "Später", Text: "Hallo", ScheduledAt: &later})
	if err != nil || res.Campaign.Status != store.CampaignScheduled {
		t.Fatalf("scheduled email: %+v %v", res, err)
	}
	e.exec(`UPDATE plans SET max_sends_per_day = 1 WHERE name = 'business'`)
	setClock(later.Add(time.Second))
	if got, err := scheds[0].StartDue(ctx); err != nil || got != 1 {
		t.Fatalf("due email: %d, %v", got, err)
	}
	c, err := e.db.Email(ctx, e.acct, res.Campaign.ID)
	if err != nil || c.Status != store.CampaignFailed || !strings.Contains(c.LastError, "Tageslimit") {
		t.Errorf("over the limit at its time: %+v %v", c, err)
	}
}

// TestSendWithoutSMTPServerGoesToDevOutbox: an account without an SMTP server
// of its own, on a service without the operator relay, sends into the
// development outbox.
func TestSendWithoutSMTPServerGoesToDevOutbox(t *testing.T) {
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{})
	if err := e.db.DeleteSMTPServer(ctx, e.acct, e.serverID); err != nil {
		t.Fatal(err)
	}
	w := e.worker(e.db, e.transports, mailer.WorkerOptions{})
	res, err := e.campaigns(w).SendEmail(ctx, e.acct, systemActor, store.EmailInput{To: []string{"dev@example.net"}, Subject: "Dev", Text: "Hallo"})
	if err != nil || res.Sent != 1 {
		t.Fatalf("send: %+v %v", res, err)
	}
	var n int
	e.scalar(&n, `SELECT count(*) FROM dev_outbox WHERE account_id = $1 AND to_email = 'dev@example.net' AND subject = 'Dev'`, e.acct)
	if n != 1 || e.srv.Count() != 0 {
		t.Errorf("dev outbox %d, SMTP server %d", n, e.srv.Count())
	}
}

// crashingOpener's Senders deliver the victim's message and then stop the
// worker, as a crash right after the SMTP server took it would: the outcome
// is never recorded.
type crashingOpener struct {
	mailer.Opener
	victim string
	crash  context.CancelFunc
}

func (o *crashingOpener) Open(ctx context.Context, accountID, serverID int64) (mailer.Sender, mailer.Route, error) {
	s, r, err := o.Opener.Open(ctx, accountID, serverID)
	if err != nil {
		return nil, r, err
	}
	return &crashingSender{Sender: s, o: o}, r, nil
}

type crashingSender struct {
	mailer.Sender
	o *crashingOpener
}

func (s *crashingSender) Send(ctx context.Context, m *mailer.Message) error {
	if err := s.Sender.Send(ctx, m); err != nil || m.To.Email != s.o.victim {
		return err
	}
	s.o.crash()
	return ctx.Err()
}

// TestRepeatAfterACrashKeepsTheMessageID: a message that reached the SMTP
// server but whose outcome was never recorded is sent again after its lease,
// by another worker, with the same Message-ID, so that the receiver can drop
// the repeat. Every recipient's Message-ID is its own.
func TestRepeatAfterACrashKeepsTheMessageID(t *testing.T) {
	const n = 20
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{})
	nl := e.newsletter(e.seedList("repeat", n))
	if _, err := campaign.New(e.db, e.transports, nil, campaign.Options{Links: e.links}).SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}
	victim := userEmail("repeat", 7)
	runCtx, crash := context.WithCancel(ctx)
	defer crash()
	first := e.worker(e.db, &crashingOpener{Opener: e.transports, victim: victim, crash: crash}, mailer.WorkerOptions{Concurrency: 1})
	_ = first.Run(runCtx)
	var left []string
	e.selectStrings(&left, `SELECT email FROM campaign_recipients WHERE campaign_id = $1 AND status = 'sending'`, nl.ID)
	if len(left) != 1 || left[0] != victim {
		t.Fatalf("rows left in flight: %v, want %s", left, victim)
	}
	e.exec(`UPDATE campaign_recipients SET claimed_until = now() - interval '1 second' WHERE campaign_id = $1 AND status = 'sending'`, nl.ID)

	db2 := dbtest.Open(t, e.url)
	stop := running(e.worker(db2, e.newTransports(db2, nil), mailer.WorkerOptions{}).Run)
	e.waitStatus(nl.ID, store.CampaignSent)
	stop()

	byRecipient := map[string][]string{}
	for _, m := range e.srv.Messages() {
		byRecipient[m.To[0]] = append(byRecipient[m.To[0]], parseMail(t, m.Data).header.Get("Message-Id"))
	}
	if got := byRecipient[victim]; len(got) != 2 || got[0] != got[1] || got[0] == "" {
		t.Errorf("%s got the Message-IDs %v; want the same one twice", victim, got)
	}
	var recorded string
	e.scalar(&recorded, `SELECT message_id FROM campaign_recipients WHERE campaign_id = $1 AND email = $2`, nl.ID, victim)
	if want := "<" + recorded + ">"; byRecipient[victim][0] != want {
		t.Errorf("recorded Message-ID %s, sent %s", want, byRecipient[victim][0])
	}
	seen := map[string]string{}
	for addr, got := range byRecipient {
		if other, ok := seen[got[0]]; ok {
			t.Errorf("%s and %s got the same Message-ID %s", addr, other, got[0])
		}
		seen[got[0]] = addr
	}
	if len(byRecipient) != n {
		t.Errorf("%d recipients got mail, want %d", len(byRecipient), n)
	}
}
