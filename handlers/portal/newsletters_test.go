package portal_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// newsletterEnv is a signed-in owner whose account sends through a real test
// SMTP server, with a list of subscribed contacts.
type newsletterEnv struct {
	s      *server
	acct   account
	c      *client
	smtp   *smtptest.Server
	listID int64
	emails []string
}

func newNewsletterEnv(t *testing.T, members int) *newsletterEnv {
	t.Helper()
	s := newServer(t, dbtest.URL(t), nil, base)
	e := &newsletterEnv{s: s, acct: newAccount(t, s.db, "business"), smtp: smtptest.Start(t, smtptest.Options{})}
	ctx := context.Background()
	if _, err := s.db.CreateSMTPServer(ctx, testBox(t), e.acct.ID, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "Versand", Host: e.smtp.Host, Port: e.smtp.Port, Encryption: "none", FromEmail: "news@baeckerei.test", FromName: "Bäckerei"}}); err != nil {
		t.Fatal(err)
	}
	e.listID, e.emails = makeList(t, s.db, e.acct.ID, "Stammkunden", members)
	e.c = newClient(t, s)
	e.c.signIn(e.acct.Email, e.acct.Password)
	return e
}

// makeList creates a list with n subscribed contacts k<i>@<list>.test whose
// first name is Kundin<i>.
func makeList(t *testing.T, db *store.DB, accountID int64, name string, n int) (int64, []string) {
	t.Helper()
	ctx := context.Background()
	l, err := db.CreateList(ctx, accountID, store.Actor{Type: store.ActorSystem}, store.ListInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	var emails []string
	for i := 1; i <= n; i++ {
		first := fmt.Sprintf("Kundin%d", i)
		email := fmt.Sprintf("k%d@%s.test", i, strings.ToLower(name))
		if _, err := db.UpsertContact(ctx, accountID, store.Actor{Type: store.ActorSystem}, store.ContactInput{
			Email: email, FirstName: &first, ListIDs: []int64{l.ID}}); err != nil {
			t.Fatal(err)
		}
		emails = append(emails, email)
	}
	return l.ID, emails
}

// draftForm is a complete editor post.
func draftForm(listID int64, subject, content string) url.Values {
	return url.Values{
		"name": {"Herbstbrief"}, "subject": {subject}, "preheader": {"Neues aus der Backstube"},
		"format": {"markdown"}, "content": {content}, "list_ids": {strconv.FormatInt(listID, 10)},
		"smtp_server_id": {"0"}, "from_name": {"Bäckerei Müller"}, "reply_to": {""},
		"tracking": {"opens", "clicks"}, "action": {"save"},
	}
}

var newsletterPath = regexp.MustCompile(`^/newsletters/(\d+)$`)

// createDraft creates a draft through the editor and returns its id.
func (e *newsletterEnv) createDraft(t *testing.T, form url.Values) int64 {
	t.Helper()
	r := e.c.post("/newsletters/new", form)
	m := newsletterPath.FindStringSubmatch(r.Header.Get("Location"))
	if r.StatusCode != http.StatusSeeOther || m == nil {
		t.Fatalf("create draft: %d %q\n%s", r.StatusCode, r.Header.Get("Location"), r.Body)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	return id
}

func (e *newsletterEnv) newsletter(t *testing.T, id int64) store.Campaign {
	t.Helper()
	c, err := e.s.db.Newsletter(context.Background(), e.acct.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewsletterListAndEditor(t *testing.T) {
	t.Parallel()
	e := newNewsletterEnv(t, 3)

	r := e.c.get("/newsletters")
	wantStatus(t, r, http.StatusOK)
	if r.find("newsletters-empty").Length() != 1 {
		t.Fatalf("no empty state:\n%s", r.Body)
	}
	if r.find("nav-newsletters").AttrOr("aria-current", "") != "page" {
		t.Error("sidebar does not mark the newsletters")
	}

	// A field error comes back next to its field, with what was typed.
	bad := draftForm(e.listID, "Hallo {{vorname}}", "# Herbst\n\nHallo {{vorname|Kundin}}!")
	bad.Set("reply_to", "keine-adresse")
	r = e.c.post("/newsletters/new", bad)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if r.find("error-reply_to").Length() != 1 || r.find("form-alert").Length() != 1 {
		t.Fatalf("no field error for reply_to:\n%s", r.Body)
	}
	if got := r.Doc.Find("#field-reply_to").AttrOr("aria-invalid", ""); got != "true" {
		t.Errorf("reply_to aria-invalid %q", got)
	}
	if got := r.Doc.Find("#field-content").Text(); got != "# Herbst\n\nHallo {{vorname|Kundin}}!" {
		t.Errorf("content not kept: %q", got)
	}

	id := e.createDraft(t, draftForm(e.listID, "Hallo {{vorname}}", "# Herbst\n\nHallo {{vorname|Kundin}}!"))
	c := e.newsletter(t, id)
	if c.Status != store.CampaignDraft || c.Markdown != "# Herbst\n\nHallo {{vorname|Kundin}}!" || c.HTML != "" ||
		len(c.ListIDs) != 1 || c.ListIDs[0] != e.listID || !c.TrackOpens || !c.TrackClicks || c.FromName != "Bäckerei Müller" {
		t.Fatalf("stored draft %+v", c)
	}

	// The editor shows the draft and its preview, rendered for the first list member.
	r = e.c.get(fmt.Sprintf("/newsletters/%d", id))
	wantStatus(t, r, http.StatusOK)
	if got := r.Doc.Find("#field-subject").AttrOr("value", ""); got != "Hallo {{vorname}}" {
		t.Errorf("subject field %q", got)
	}
	if r.Doc.Find(`input[name="format"][value="markdown"]`).AttrOr("checked", "no") == "no" {
		t.Error("markdown format not checked")
	}
	if got := text(r.find("preview-subject")); got != "Hallo Kundin1" {
		t.Errorf("preview subject %q", got)
	}
	frame := r.find("preview-iframe")
	if frame.AttrOr("sandbox", "missing") != "" || !strings.Contains(frame.AttrOr("srcdoc", ""), "<h1>Herbst</h1>") ||
		!strings.Contains(frame.AttrOr("srcdoc", ""), "Hallo Kundin1!") {
		t.Errorf("preview iframe sandbox=%q srcdoc=%q", frame.AttrOr("sandbox", "missing"), frame.AttrOr("srcdoc", ""))
	}
	if n := r.find("placeholder-picker").Find("[data-insert]").Length(); n != 11 {
		t.Errorf("placeholder picker offers %d placeholders", n)
	}
	// The plan has A/B tests: the saved draft links to a new test of it.
	if got := r.find("newsletter-ab-test").AttrOr("href", ""); got != fmt.Sprintf("/ab-tests/new?newsletter=%d", id) {
		t.Errorf("A/B test link %q", got)
	}

	// The list shows it with its German status.
	r = e.c.get("/newsletters")
	row := r.find("newsletter-row")
	if row.Length() != 1 || text(row.Find(`[data-testid="newsletter-status"]`)) != "Entwurf" {
		t.Fatalf("list row: %q", text(row))
	}

	// Saving HTML content replaces the markdown.
	form := draftForm(e.listID, "Neu", "<p>Guten Tag {{vorname}}</p>")
	form.Set("format", "html")
	form.Del("tracking")
	wantRedirect(t, e.c.post(fmt.Sprintf("/newsletters/%d", id), form), fmt.Sprintf("/newsletters/%d", id))
	c = e.newsletter(t, id)
	if c.HTML != "<p>Guten Tag {{vorname}}</p>" || c.Markdown != "" || c.TrackOpens || c.TrackClicks || c.Subject != "Neu" {
		t.Fatalf("after saving HTML: %+v", c)
	}
	r = e.c.get(fmt.Sprintf("/newsletters/%d", id))
	if text(r.find("flash")) != "Der Entwurf „Herbstbrief“ wurde gespeichert." {
		t.Errorf("flash %q", text(r.find("flash")))
	}
	// The name is optional: left empty, a saved draft keeps its name.
	form.Set("name", "")
	wantRedirect(t, e.c.post(fmt.Sprintf("/newsletters/%d", id), form), fmt.Sprintf("/newsletters/%d", id))
	if got := e.newsletter(t, id).Name; got != "Herbstbrief" {
		t.Errorf("name after saving it empty: %q", got)
	}
}

func TestNewsletterLivePreview(t *testing.T) {
	t.Parallel()
	e := newNewsletterEnv(t, 2)
	form := draftForm(e.listID, "Für {{vorname}}", "**Fett** für {{vorname}} <script>alert(1)</script>")
	form.Set("preview_email", e.emails[1])
	r := e.c.post("/newsletters/preview", form, "HX-Request", "true")
	wantStatus(t, r, http.StatusOK)
	if strings.Contains(r.Body, "<html") {
		t.Fatal("the live preview sent a whole page")
	}
	if got := text(r.find("preview-for")); got != "Personalisiert für "+e.emails[1] {
		t.Errorf("preview for %q", got)
	}
	if got := text(r.find("preview-subject")); got != "Für Kundin2" {
		t.Errorf("subject %q", got)
	}
	// The newsletter's HTML is only inside the sandboxed frame's srcdoc: no script
	// element reaches the portal's page.
	if r.Doc.Find("script").Length() != 0 {
		t.Error("newsletter script in the portal page")
	}
	srcdoc := r.find("preview-iframe").AttrOr("srcdoc", "")
	if !strings.Contains(srcdoc, "<strong>Fett</strong> für Kundin2") || !strings.Contains(srcdoc, "<script>") {
		t.Errorf("srcdoc %q", srcdoc)
	}

	// An unknown contact is said so; no content shows the empty preview.
	form.Set("preview_email", "niemand@example.com")
	if got := text(e.c.post("/newsletters/preview", form, "HX-Request", "true").find("preview-error")); !strings.Contains(got, "niemand@example.com") {
		t.Errorf("unknown contact: %q", got)
	}
	form.Set("content", "")
	if e.c.post("/newsletters/preview", form, "HX-Request", "true").find("preview-empty").Length() != 1 {
		t.Error("no empty preview")
	}

	// Without JavaScript the preview button re-renders the editor with the
	// typed content, without saving.
	id := e.createDraft(t, draftForm(e.listID, "Alt", "Alt"))
	form = draftForm(e.listID, "Neu {{vorname}}", "Neu")
	form.Set("action", "preview")
	r = e.c.post(fmt.Sprintf("/newsletters/%d", id), form)
	wantStatus(t, r, http.StatusOK)
	if got := text(r.find("preview-subject")); got != "Neu Kundin1" {
		t.Errorf("preview button: subject %q", got)
	}
	if e.newsletter(t, id).Subject != "Alt" {
		t.Error("the preview button saved the draft")
	}
}

func TestNewsletterTestSendAndSend(t *testing.T) {
	t.Parallel()
	e := newNewsletterEnv(t, 4)
	id := e.createDraft(t, draftForm(e.listID, "Hallo {{vorname}}", "Hallo {{vorname|du}}, [Brötchen](https://baeckerei.test/)"))
	path := fmt.Sprintf("/newsletters/%d", id)

	// Six addresses are too many: the error is next to the field, nothing is sent.
	form := draftForm(e.listID, "Hallo {{vorname}}", "Hallo {{vorname|du}}, [Brötchen](https://baeckerei.test/)")
	form.Set("action", "test")
	form.Set("test_to", "a@x.test, b@x.test, c@x.test, d@x.test, e@x.test, f@x.test")
	r := e.c.post(path, form)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(text(r.find("error-test_to")), "Höchstens 5") {
		t.Fatalf("no error for six test addresses:\n%s", r.find("field-test_to").Text())
	}
	form.Set("test_to", "pruefer@baeckerei.test\n"+e.emails[2])
	r = e.c.post(path, form)
	wantStatus(t, r, http.StatusOK)
	if got := text(r.find("test-results")); !strings.HasPrefix(got, "2 von 2 Test-E-Mails verschickt.") {
		t.Fatalf("test results %q", got)
	}
	msgs := e.smtp.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d test mails arrived", len(msgs))
	}
	for _, m := range msgs {
		if !strings.Contains(string(m.Data), "Subject: [TEST] Hallo") {
			t.Errorf("test mail without [TEST] subject:\n%s", m.Data)
		}
	}

	// The confirmation shows the number of recipients the send queues.
	r = e.c.get(path + "/send")
	wantStatus(t, r, http.StatusOK)
	if got := r.find("send-count").AttrOr("data-count", ""); got != "4" {
		t.Fatalf("confirmation count %q:\n%s", got, text(r.find("send-confirm")))
	}
	if !strings.Contains(text(r.find("send-confirm")), "Standard des Kontos: Versand (news@baeckerei.test)") {
		t.Errorf("confirmation does not name the SMTP route: %q", text(r.find("send-confirm")))
	}
	// The pre-send checklist: this draft passes every check (the failures are
	// mailer.TestCheckContent's).
	checks := map[string]string{}
	r.find("send-checklist").Find("li").Each(func(_ int, li *goquery.Selection) {
		checks[li.AttrOr("data-testid", "")] = li.AttrOr("data-ok", "")
	})
	want := map[string]string{"check-subject": "true", "check-preheader": "true", "check-sender": "true",
		"check-unsubscribe": "true", "check-links": "true", "check-images": "true", "check-words": "true"}
	if !maps.Equal(checks, want) {
		t.Errorf("pre-send checklist %v, want %v", checks, want)
	}
	r = e.c.post(path+"/send", nil)
	wantRedirect(t, r, path)
	c := waitStatus(t, e, id, store.CampaignSent)
	if c.RecipientsCount != 4 || c.SentCount != 4 {
		t.Errorf("sent %d of %d", c.SentCount, c.RecipientsCount)
	}
	if n := len(e.smtp.Messages()); n != 6 {
		t.Errorf("%d mails arrived, want 2 tests + 4", n)
	}

	// The status page: no editor any more, the progress and the stats link.
	r = e.c.get(path)
	wantStatus(t, r, http.StatusOK)
	if r.find("newsletter-form").Length() != 0 {
		t.Error("a sent newsletter shows the editor")
	}
	if got := text(r.find("progress-text")); got != "4 von 4 E-Mails verschickt" {
		t.Errorf("progress %q", got)
	}
	if r.find("stats-link").AttrOr("href", "") != path+"/stats" {
		t.Errorf("stats link %q", r.find("stats-link").AttrOr("href", ""))
	}
	if r.find("newsletter-status-panel").AttrOr("hx-trigger", "") != "" {
		t.Error("a sent newsletter still polls")
	}

	// Only drafts are editable: the service refuses, the page says why.
	form.Set("action", "save")
	form.Set("subject", "Geändert")
	wantRedirect(t, e.c.post(path, form), path)
	if got := e.newsletter(t, id).Subject; got != "Hallo {{vorname}}" {
		t.Errorf("a sent newsletter was changed: subject %q", got)
	}
	if got := text(e.c.get(path).find("flash")); !strings.Contains(got, "Nur Entwürfe können geändert werden") {
		t.Errorf("flash %q", got)
	}
	wantRedirect(t, e.c.post(path+"/delete", nil), path)
	e.newsletter(t, id) // still there
	if got := e.c.post(path+"/send", nil); got.StatusCode != http.StatusSeeOther {
		t.Errorf("second send: %d", got.StatusCode)
	}
	if n := len(e.smtp.Messages()); n != 6 {
		t.Errorf("a second send delivered again: %d mails", n)
	}
}

// waitStatus waits until the newsletter reaches status.
func waitStatus(t *testing.T, e *newsletterEnv, id int64, status string) store.Campaign {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c := e.newsletter(t, id)
		if c.Status == status {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("newsletter %d is %s, want %s", id, c.Status, status)
		}
		time.Sleep(30 * time.Millisecond)
	}
}

func TestNewsletterSendNotReady(t *testing.T) {
	t.Parallel()
	e := newNewsletterEnv(t, 1)
	id := e.createDraft(t, draftForm(e.listID, "", ""))
	r := e.c.get(fmt.Sprintf("/newsletters/%d/send", id))
	wantStatus(t, r, http.StatusOK)
	got := text(r.find("send-problems"))
	if !strings.Contains(got, "Betreff") || !strings.Contains(got, "Inhalt") || r.find("send-confirm-button").Length() != 0 {
		t.Fatalf("problems %q", got)
	}
	r = e.c.post(fmt.Sprintf("/newsletters/%d/send", id), nil)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if e.newsletter(t, id).Status != store.CampaignDraft || len(e.smtp.Messages()) != 0 {
		t.Error("an unready newsletter was sent")
	}
}

func TestNewsletterScheduleAndStatusActions(t *testing.T) {
	t.Parallel()
	e := newNewsletterEnv(t, 1)
	form := draftForm(e.listID, "Planbar", "Inhalt")
	id := e.createDraft(t, form)
	path := fmt.Sprintf("/newsletters/%d", id)

	form.Set("action", "schedule")
	form.Set("scheduled_at", "2020-01-01T09:00")
	r := e.c.post(path, form)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(text(r.find("error-scheduled_at")), "Zukunft") {
		t.Fatalf("past time: %q", text(r.find("error-scheduled_at")))
	}
	form.Set("scheduled_at", "")
	if text(e.c.post(path, form).find("error-scheduled_at")) == "" {
		t.Error("no error for an empty time")
	}
	at := time.Now().In(store.Berlin).Add(48 * time.Hour).Truncate(time.Minute)
	form.Set("scheduled_at", at.Format("2006-01-02T15:04"))
	wantRedirect(t, e.c.post(path, form), path)
	c := e.newsletter(t, id)
	if c.Status != store.CampaignScheduled || c.ScheduledAt == nil || !c.ScheduledAt.Equal(at) {
		t.Fatalf("scheduled %s at %v, want %v", c.Status, c.ScheduledAt, at)
	}
	r = e.c.get(path)
	if got := text(r.find("scheduled-for")); got != "Geplant für "+at.Format("02.01.2006, 15:04") {
		t.Errorf("scheduled for %q", got)
	}
	if text(e.c.get("/newsletters?status=scheduled").find("newsletter-status")) == "" {
		t.Error("the status filter hides the scheduled newsletter")
	}
	if e.c.get("/newsletters?status=sent").find("newsletters-no-match").Length() != 1 {
		t.Error("no empty state for a filter without matches")
	}

	wantRedirect(t, e.c.post(path+"/unschedule", nil), path)
	if c := e.newsletter(t, id); c.Status != store.CampaignDraft || c.ScheduledAt != nil {
		t.Fatalf("after unscheduling: %s %v", c.Status, c.ScheduledAt)
	}

	// Pause and resume a sending newsletter; the progress panel polls meanwhile.
	// A queued recipient due in an hour (queued before the status changes) keeps
	// the send workers from finishing it.
	if _, err := e.s.db.ExecContext(context.Background(), `INSERT INTO campaign_recipients (account_id, campaign_id, email, status, next_attempt_at)
VALUES ($1, $2, 'spaeter@example.com', 'queued', now() + interval '1 hour')`, e.acct.ID, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.db.ExecContext(context.Background(), `UPDATE campaigns SET status = 'sending', started_at = now(), recipients_count = 10, sent_count = 3 WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	r = e.c.get(path+"/progress", "HX-Request", "true")
	wantStatus(t, r, http.StatusOK)
	panel := r.find("newsletter-status-panel")
	if panel.AttrOr("hx-trigger", "") != "every 2s" || r.find("progress").AttrOr("data-sent", "") != "3" || r.find("progress").AttrOr("data-total", "") != "10" {
		t.Fatalf("progress fragment:\n%s", r.Body)
	}
	wantRedirect(t, e.c.post(path+"/pause", nil), path)
	if got := e.newsletter(t, id).Status; got != store.CampaignPaused {
		t.Fatalf("after pause: %s", got)
	}
	wantRedirect(t, e.c.post(path+"/pause", nil), path)
	if got := text(e.c.get(path).find("flash")); !strings.Contains(got, "Nur ein Newsletter im Versand kann pausiert werden") {
		t.Errorf("second pause: flash %q", got)
	}
	wantRedirect(t, e.c.post(path+"/resume", nil), path)
	if got := e.newsletter(t, id).Status; got != store.CampaignSending {
		t.Fatalf("after resume: %s", got)
	}
}

func TestNewsletterDuplicateDeleteAndPaging(t *testing.T) {
	t.Parallel()
	e := newNewsletterEnv(t, 0)
	id := e.createDraft(t, draftForm(e.listID, "Original", "Text"))
	r := e.c.post(fmt.Sprintf("/newsletters/%d/duplicate", id), nil)
	m := newsletterPath.FindStringSubmatch(r.Header.Get("Location"))
	if r.StatusCode != http.StatusSeeOther || m == nil || m[1] == strconv.FormatInt(id, 10) {
		t.Fatalf("duplicate: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	cp, _ := strconv.ParseInt(m[1], 10, 64)
	if got := e.newsletter(t, cp); got.Name != "Herbstbrief (Kopie)" || got.Subject != "Original" || got.Status != store.CampaignDraft {
		t.Errorf("copy %+v", got)
	}

	r = e.c.get(fmt.Sprintf("/newsletters/%d/delete", cp))
	wantStatus(t, r, http.StatusOK)
	if r.find("confirm-delete").Length() != 1 {
		t.Fatal("no delete confirmation")
	}
	wantRedirect(t, e.c.post(fmt.Sprintf("/newsletters/%d/delete", cp), nil), "/newsletters")
	if _, err := e.s.db.Newsletter(context.Background(), e.acct.ID, cp); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted draft: %v", err)
	}

	for i := range 25 {
		e.createDraft(t, draftForm(e.listID, fmt.Sprintf("Nr. %d", i), ""))
	}
	r = e.c.get("/newsletters")
	if n := r.find("newsletter-row").Length(); n != 25 {
		t.Errorf("page 1 has %d rows", n)
	}
	next := r.find("page-next").AttrOr("href", "")
	if next != "/newsletters?page=2" {
		t.Fatalf("next page link %q", next)
	}
	r = e.c.get(next, "HX-Request", "true")
	if n := r.rows(t).find("newsletter-row").Length(); n != 1 || strings.Contains(r.Body, "<html") {
		t.Errorf("page 2 (htmx) has %d rows", n)
	}
}

// TestNewsletterOtherAccount: another account's newsletter is not found on
// every page and action, and never listed.
func TestNewsletterOtherAccount(t *testing.T) {
	t.Parallel()
	e := newNewsletterEnv(t, 1)
	other := newAccount(t, e.s.db, "business")
	foreignList, _ := makeList(t, e.s.db, other.ID, "Fremde", 2)
	subject := "Geheim"
	theirs, err := e.s.db.CreateNewsletter(context.Background(), other.ID, store.Actor{Type: store.ActorSystem}, store.NewsletterInput{
		Subject: &subject, Markdown: &subject, ListIDs: &[]int64{foreignList}})
	if err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/newsletters/%d", theirs.ID)
	for _, tc := range []struct {
		method, path string
		form         url.Values
	}{
		{"GET", path, nil},
		{"POST", path, draftForm(e.listID, "Übernommen", "x")},
		{"GET", path + "/send", nil},
		{"POST", path + "/send", url.Values{}},
		{"GET", path + "/progress", nil},
		{"POST", path + "/duplicate", url.Values{}},
		{"GET", path + "/delete", nil},
		{"POST", path + "/delete", url.Values{}},
		{"POST", path + "/pause", url.Values{}},
		{"POST", path + "/resume", url.Values{}},
		{"POST", path + "/unschedule", url.Values{}},
	} {
		r := e.c.do(tc.method, tc.path, tc.form)
		if r.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s: %d, want 404", tc.method, tc.path, r.StatusCode)
		}
		if strings.Contains(r.Body, "Geheim") {
			t.Errorf("%s %s shows the other account's newsletter", tc.method, tc.path)
		}
	}
	if got := e.newsletter(t, e.createDraft(t, draftForm(e.listID, "x", "x"))); got.AccountID != e.acct.ID {
		t.Fatal("draft in the wrong account")
	}
	if strings.Contains(e.c.get("/newsletters").Body, "Geheim") {
		t.Error("the list shows the other account's newsletter")
	}
	// Another account's list cannot be chosen either.
	r := e.c.post("/newsletters/new", draftForm(foreignList, "x", "x"))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if text(r.find("error-list_ids")) == "" {
		t.Error("no error for another account's list")
	}
	c, err := e.s.db.Newsletter(context.Background(), other.ID, theirs.ID)
	if err != nil || c.Subject != "Geheim" || c.Status != store.CampaignDraft {
		t.Errorf("the other account's newsletter changed: %+v %v", c, err)
	}
}
