package portal_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/inbox"
	"github.com/rundbrief/rundbrief/store/inbox/imaptest"
	"github.com/rundbrief/rundbrief/store/smtpserver"
)

func TestInboxPortal(t *testing.T) {
	t.Parallel()
	url0 := dbtest.URL(t)
	s := newServer(t, url0, nil, "http://rundbrief.test")
	acct := newAccount(t, s.db, "business")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	ctx := context.Background()

	r := c.get("/inbox")
	wantStatus(t, r, http.StatusOK)
	if r.find("inbox-not-connected").Length() != 1 || r.find("nav-inbox").Length() != 1 {
		t.Fatalf("unconnected inbox:\n%s", r.Body)
	}
	// Nothing to fetch yet: the empty state's "Postfach verbinden" is the way on.
	if r.find("inbox-sync").Length() != 0 {
		t.Error("an unconnected inbox offers to fetch mail")
	}

	srv := imaptest.Start(t, imaptest.Options{})
	srv.Append(t, "INBOX", imaptest.Mail("Anna <anna@example.com>", "Frage zum Kurs", "Wann beginnt der Kurs?", "Message-ID", "<k1@example.com>"))
	srv.Append(t, "INBOX", imaptest.Mail("bernd@example.org", "Re: Frage zum Kurs", "Ich auch!", "Message-ID", "<k2@example.com>", "References", "<k1@example.com>"))
	form := url.Values{"host": {srv.Host}, "port": {strconv.Itoa(srv.Port)}, "username": {srv.Username}, "password": {"falsch"},
		"encryption": {"none"}, "from_email": {"kurs@example.com"}, "signature": {"Viele Grüße\nIhre Kursleitung"}}
	r = c.post("/inbox/settings", form)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if got := text(r.find("field-password")); !strings.Contains(got, "Anmeldung fehlgeschlagen") {
		t.Errorf("login step not named: %q", got)
	}
	form.Set("password", srv.Password)
	wantRedirect(t, c.post("/inbox/settings", form), "/inbox")
	if strings.Contains(c.get("/inbox/settings").Body, srv.Password) {
		t.Error("the settings page shows the password")
	}
	r = c.post("/inbox/settings/test", nil, "HX-Request", "true")
	if r.find("inbox-test-ok").Length() != 1 {
		t.Errorf("connection test: %s", r.Body)
	}

	// Sync as any process does.
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mail := mailer.NewTransports(s.db, testBox(t), mailer.TransportOptions{})
	svc := inbox.New(s.db, inbox.Config{Box: testBox(t), Guard: smtpserver.New(s.db, smtpserver.Config{Box: testBox(t), Mail: mail, AllowPrivate: true}),
		Opener: mail, Timeout: 5 * time.Second, Log: log})
	if _, err := svc.Sync(ctx, acct.ID); err != nil {
		t.Fatal(err)
	}

	r = c.get("/inbox")
	if r.find("inbox-sync").Length() != 1 {
		t.Error("a connected inbox offers no fetch")
	}
	items := r.find("inbox-item")
	if items.Length() != 2 || r.Doc.Find(".inbox-unread").Length() != 2 {
		t.Fatalf("%d items:\n%s", items.Length(), r.Body)
	}
	msgs, _, _ := s.db.InboxMessages(ctx, acct.ID, store.InboxFilter{Status: "all", Q: "wann beginnt"}, store.Page{Page: 1, PerPage: 10})
	if len(msgs) != 1 {
		t.Fatalf("search: %d", len(msgs))
	}
	id := msgs[0].ID
	r = c.get("/inbox?id=" + strconv.FormatInt(id, 10))
	if got := text(r.find("inbox-subject")); got != "Frage zum Kurs" {
		t.Errorf("reading pane subject %q", got)
	}
	if n := r.find("inbox-thread-item").Length(); n != 2 {
		t.Errorf("thread of %d messages, want 2 (grouped by References)", n)
	}
	if !strings.Contains(text(r.find("inbox-signature")), "Ihre Kursleitung") {
		t.Error("reply box without the signature")
	}
	if fl := srv.Flags(t, "INBOX")[1]; len(fl) != 1 || fl[0] != imap.FlagSeen {
		t.Errorf("opening did not mark it seen on the server: %v", fl)
	}
	// htmx swaps the reading pane alone.
	r = c.get("/inbox/messages/"+strconv.FormatInt(id, 10), "HX-Request", "true")
	if r.find("inbox-reading").Length() != 1 || strings.Contains(r.Body, "<html") {
		t.Errorf("fragment:\n%s", r.Body)
	}

	wantRedirect(t, c.post("/inbox/messages/"+strconv.FormatInt(id, 10)+"/reply", url.Values{"text": {"Am Montag."}}), "/inbox?status=all&id="+strconv.FormatInt(id, 10))
	r = c.get("/inbox?status=all&id=" + strconv.FormatInt(id, 10))
	if r.find("inbox-reply-sent").Length() != 1 {
		t.Errorf("the sent reply is not in the thread")
	}
	var outbox int
	_ = s.db.GetContext(ctx, &outbox, `SELECT count(*) FROM dev_outbox WHERE account_id = $1`, acct.ID)
	if outbox != 1 {
		t.Errorf("%d mails in the development outbox, want the reply", outbox)
	}
	// Without AI credit a draft says so on the message.
	r = c.post("/inbox/messages/"+strconv.FormatInt(id, 10)+"/draft", url.Values{})
	if r.StatusCode != http.StatusSeeOther {
		t.Errorf("draft without provider: %d %s", r.StatusCode, r.Body)
	}

	// Labels from the reading pane become folders of the left pane.
	wantRedirect(t, c.post("/inbox/messages/"+strconv.FormatInt(id, 10)+"/labels", url.Values{"labels": {"Kurs, Wichtig"}}), "/inbox?status=all&id="+strconv.FormatInt(id, 10))
	if r := c.get("/inbox"); r.find("inbox-label").Length() != 2 {
		t.Errorf("labels in the folder pane: %d", r.find("inbox-label").Length())
	}

	// Rules and metrics.
	wantRedirect(t, c.post("/inbox/rules", url.Values{"name": {"Kurse"}, "subject_contains": {"kurs"}, "action": {"label"}, "value": {"Kurs"}}), "/inbox/rules")
	r = c.post("/inbox/rules", url.Values{"name": {"Leer"}, "action": {"reply"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	r = c.get("/inbox/rules")
	if r.find("inbox-rule").Length() != 1 {
		t.Errorf("rules page:\n%s", r.Body)
	}
	r = c.get("/inbox/metrics")
	wantStatus(t, r, http.StatusOK)
	if got := text(r.find("inbox-metric-received")); !strings.Contains(got, "2") || r.find("chart-inbox-days").Length() != 1 {
		t.Errorf("metrics: %q", got)
	}

	// Another account sees none of it; a plan without the inbox gets 402.
	other := newAccount(t, s.db, "business")
	oc := newClient(t, s)
	oc.signIn(other.Email, other.Password)
	if r := oc.get("/inbox/messages/" + strconv.FormatInt(id, 10)); r.StatusCode != http.StatusNotFound {
		t.Errorf("another account's message: %d", r.StatusCode)
	}
	small := newAccount(t, s.db, "starter")
	sc := newClient(t, s)
	sc.signIn(small.Email, small.Password)
	wantStatus(t, sc.get("/inbox"), http.StatusPaymentRequired)
}
