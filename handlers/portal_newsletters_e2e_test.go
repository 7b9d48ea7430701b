package handlers_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime"
	"net/http/httptest"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rundbrief/rundbrief/handlers"
	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/portal"
	"github.com/rundbrief/rundbrief/handlers/public"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/botguard"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/imports"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/services"
	"github.com/rundbrief/rundbrief/store/smtpserver"
)

// sendingServer is the application with the sending side wired as `serve` wires
// it: transports, the campaign service and a running send worker.
func sendingServer(t *testing.T) (*httptest.Server, *store.DB, *secret.Box) {
	t.Helper()
	const secretKey = "end-to-end secret, at least 32 characters long"
	dbURL := dbtest.URL(t)
	db := dbtest.Open(t, dbURL)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	apiLog := store.NewAPILogWriter(db, log)
	wg.Go(func() { _ = apiLog.Run(ctx) })
	box, err := secret.NewBox(secretKey)
	if err != nil {
		t.Fatal(err)
	}
	tokens := testTokens(t)
	const baseURL = "http://rundbrief.test"
	links := mailer.LinkBuilder{BaseURL: baseURL, Tokens: tokens}
	mail := mailer.NewTransports(db, box, mailer.TransportOptions{HELO: "rundbrief.test"})
	w := mailer.NewWorker(db, mail, mailer.WorkerOptions{Links: links, PollInterval: 50 * time.Millisecond, Log: log})
	campaigns := campaign.New(db, mail, w, campaign.Options{Links: links, Log: log})
	wg.Go(func() { _ = w.Run(ctx) })
	p, err := portal.New(&services.Set{DB: db, Imports: imports.New(db), Box: box, Log: log, Mail: mail, Campaigns: campaigns, SMTPServers: smtpserver.New(db, smtpserver.Config{Box: box, Mail: mail, AllowPrivate: true})}, portal.Config{BaseURL: baseURL})
	if err != nil {
		t.Fatal(err)
	}
	guard := botguard.New(secretKey, time.Now)
	pub, err := public.New(&services.Set{DB: db, Guard: guard, Tokens: tokens, Log: log}, public.Config{BaseURL: baseURL})
	if err != nil {
		t.Fatal(err)
	}
	a := api.New(&services.Set{DB: db, APILog: apiLog, Log: log, Box: box, Mail: mail, Guard: guard, Campaigns: campaigns, SMTPServers: smtpserver.New(db, smtpserver.Config{Box: box, Mail: mail, AllowPrivate: true})},
		api.Config{BaseURL: baseURL, RateLimit: 1_000_000})
	srv := httptest.NewServer(handlers.New(a, p, pub))
	t.Cleanup(func() {
		srv.Close()
		cancel()
		wg.Wait()
	})
	return srv, db, box
}

// TestPortalNewslettersEndToEnd drives the newsletter pages in a real browser:
// write a newsletter with the placeholder picker, watch the live preview, send a
// test mail to a real SMTP server, send it to a list after the confirmation,
// see it reach "Versendet" with every mail arrived, open its stats link; then
// create a sign-up form and copy its embed code.
func TestPortalNewslettersEndToEnd(t *testing.T) {
	t.Parallel()
	srv, db, box := sendingServer(t)
	smtp := smtptest.Start(t, smtptest.Options{})
	bg := context.Background()
	acct, err := db.CreateAccount(bg, store.NewAccount{Name: "Bäckerei Müller", Email: "inhaber@baeckerei-mueller.de", Password: "sauerteig-seit-1923", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	sys := store.Actor{Type: store.ActorSystem}
	if _, err := db.CreateSMTPServer(bg, box, acct.Account.ID, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "Versand", Host: smtp.Host, Port: smtp.Port, Encryption: "none", FromEmail: "news@baeckerei-mueller.de", FromName: "Bäckerei Müller"}}); err != nil {
		t.Fatal(err)
	}
	listName := "Stammkunden"
	list, err := db.CreateList(bg, acct.Account.ID, sys, store.ListInput{Name: &listName})
	if err != nil {
		t.Fatal(err)
	}
	members := []struct{ email, first string }{{"anna@example.com", "Anna"}, {"ben@example.com", "Ben"}, {"clara@example.com", "Clara"}}
	for _, m := range members {
		first := m.first
		if _, err := db.UpsertContact(bg, acct.Account.ID, sys, store.ContactInput{Email: m.email, FirstName: &first, ListIDs: []int64{list.ID}}); err != nil {
			t.Fatal(err)
		}
	}

	b := newTab(t, 1440, 1000, 120*time.Second)
	ctx, dir, do, read := b.ctx, b.dir, b.do, b.read
	attr := func(step, testID, name string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.AttributeValue(tid(testID), name))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return v.Value
	}
	b.grantClipboard(srv.URL)
	b.signIn(srv.URL, "inhaber@baeckerei-mueller.de", "sauerteig-seit-1923")

	// Write a newsletter; the picker puts {{vorname}} where the cursor is.
	do("new newsletter",
		chromedp.Click(tid("nav-newsletters")),
		chromedp.WaitVisible(tid("newsletters-empty")),
		chromedp.Click(tid("new-newsletter-link")),
		chromedp.WaitVisible(tid("newsletter-form")),
		chromedp.SendKeys(chromedp.CSS(`#field-name`), "Herbstbrief"),
		chromedp.SendKeys(chromedp.CSS(`#field-subject`), "Frische Brötchen für "),
		chromedp.Click(tid("placeholder-vorname")),
		chromedp.SendKeys(chromedp.CSS(`#field-preheader`), "Neues aus der Backstube"),
		chromedp.SendKeys(chromedp.CSS(`#field-content`), "# Herbst in der Backstube\n\nHallo "),
		chromedp.Click(tid("placeholder-vorname")),
		chromedp.SendKeys(chromedp.CSS(`#field-content`), ", ab Montag gibt es **Kürbisbrot**.\n\n[Zum Sortiment](https://baeckerei-mueller.de/sortiment)"),
		chromedp.Click(chromedp.CSS(`input[name="list_ids"]`)),
	)
	do("format hint",
		chromedp.Click(tid("format-html")),
		until(`document.getElementById('field-content-hint').textContent.startsWith('Vollständiges HTML')`),
		chromedp.Click(tid("format-markdown")),
		until(`document.getElementById('field-content-hint').textContent.startsWith('Markdown')`),
	)
	if got := read("subject", chromedp.Value(chromedp.CSS(`#field-subject`))); got != "Frische Brötchen für {{vorname}}" {
		t.Fatalf("subject after the picker: %q", got)
	}
	// The live preview follows the typing (htmx, debounced), personalised for the
	// list's first member.
	do("live preview",
		until(`(document.querySelector('[data-testid="preview-iframe"]')?.getAttribute('srcdoc') || '').includes('Hallo Anna, ab Montag')`),
	)
	// Read in one script: htmx may swap the preview (a later debounced
	// request) between finding the node and reading it.
	if got := read("preview subject", chromedp.Evaluate[string](`(document.querySelector('[data-testid="preview-subject"]')?.textContent || '').trim()`)); got != "Frische Brötchen für Anna" {
		t.Errorf("preview subject %q", got)
	}
	do("save", chromedp.Click(tid("newsletter-save")), chromedp.WaitVisible(tid("flash")))
	loc := read("location", chromedp.Location())
	id := loc[strings.LastIndex(loc, "/")+1:]
	if !strings.HasSuffix(loc, "/newsletters/"+id) {
		t.Fatalf("after saving at %s", loc)
	}

	do("preview contact",
		chromedp.SendKeys(chromedp.CSS(`#field-preview_email`), "clara@example.com"),
		until(`(document.querySelector('[data-testid="preview-for"]')?.textContent || '').includes('clara@example.com')`),
	)
	if got := read("preview subject", chromedp.Evaluate[string](`(document.querySelector('[data-testid="preview-subject"]')?.textContent || '').trim()`)); got != "Frische Brötchen für Clara" {
		t.Errorf("preview for Clara: subject %q", got)
	}
	do("editor screenshot", chromedp.ScrollIntoView(tid("preview-panel")), screenshot(t, dir, "portal-newsletter-editor"))

	// The newsletter's own HTML cannot script the portal: the preview is a
	// sandboxed srcdoc frame.
	do("script in the content",
		chromedp.SendKeys(chromedp.CSS(`#field-content`), "\n\n<script>parent.document.title = 'gekapert'; top.location = 'https://example.com/';</script>"),
		until(`(document.querySelector('[data-testid="preview-iframe"]')?.getAttribute('srcdoc') || '').includes('gekapert')`),
		chromedp.Sleep(300*time.Millisecond),
	)
	if title := read("title", chromedp.Title()); strings.Contains(title, "gekapert") || !strings.Contains(read("location", chromedp.Location()), srv.URL) {
		t.Fatalf("the newsletter's script ran in the portal: title %q", title)
	}
	// A test mail (saving first, without the script) reaches the real SMTP server.
	do("test mail",
		chromedp.SetValue(chromedp.CSS(`#field-content`), "# Herbst in der Backstube\n\nHallo {{vorname}}, ab Montag gibt es **Kürbisbrot**."),
		chromedp.SendKeys(chromedp.CSS(`#field-test_to`), "pruefung@baeckerei-mueller.de"),
		chromedp.Click(tid("newsletter-test")),
		chromedp.WaitVisible(tid("test-results")),
	)
	if got := read("test results", chromedp.Text(tid("test-results"))); !strings.Contains(got, "1 von 1 Test-E-Mail verschickt") {
		t.Fatalf("test results %q", got)
	}
	msgs := smtp.Messages()
	if len(msgs) != 1 || msgs[0].To[0] != "pruefung@baeckerei-mueller.de" || subjectOf(t, msgs[0].Data) != "[TEST] Frische Brötchen für Anna" {
		t.Fatalf("test mails at the SMTP server: %d, first to %v with subject %q", len(msgs), msgs[0].To, subjectOf(t, msgs[0].Data))
	}

	// Send it to the list after the confirmation with the recipient count.
	do("send confirmation",
		chromedp.Click(tid("newsletter-send")),
		chromedp.WaitVisible(tid("send-confirm")),
		screenshot(t, dir, "portal-newsletter-send-confirm"),
	)
	if got := attr("count", "send-count", "data-count"); got != "3" {
		t.Fatalf("confirmation shows %s recipients", got)
	}
	do("send",
		chromedp.Click(tid("send-confirm-button")),
		chromedp.WaitVisible(tid("newsletter-status-panel")),
		until(`document.querySelector('[data-testid="newsletter-status-panel"]').dataset.status === 'sent'`),
		screenshot(t, dir, "portal-newsletter-sent"),
	)
	if got := read("progress", chromedp.Text(tid("progress-text"))); got != "3 von 3 E-Mails verschickt" {
		t.Errorf("progress %q", got)
	}
	if got := read("status", chromedp.Text(tid("status-badge"))); got != "Versendet" {
		t.Errorf("status label %q", got)
	}
	got := map[string]string{}
	for _, m := range smtp.Messages()[1:] {
		got[m.To[0]] = subjectOf(t, m.Data)
	}
	for _, m := range members {
		if want := "Frische Brötchen für " + m.first; got[m.email] != want {
			t.Errorf("newsletter for %s: subject %q, want %q", m.email, got[m.email], want)
		}
	}
	if n := len(smtp.Messages()); n != 4 {
		t.Errorf("%d mails at the SMTP server, want 1 test + 3", n)
	}
	// The stats page (handlers/portal/stats.go) is linked from here.
	stats := attr("stats link", "stats-link", "href")
	if stats != "/newsletters/"+id+"/stats" {
		t.Fatalf("stats link %q", stats)
	}
	do("list", chromedp.Click(tid("nav-newsletters")), chromedp.WaitVisible(tid("newsletters-table")),
		screenshot(t, dir, "portal-newsletters"))
	if got := read("list status", chromedp.Text(tid("newsletter-status"))); got != "Versendet" {
		t.Errorf("list shows status %q", got)
	}
	do("stats", chromedp.Click(tid("newsletter-stats")), chromedp.WaitVisible(tid("stats-meta")),
		screenshot(t, dir, "portal-newsletter-stats"))
	if loc := read("stats location", chromedp.Location()); !strings.HasSuffix(loc, stats) {
		t.Errorf("stats link led to %s", loc)
	}
	if got := read("stats sent", chromedp.Text(chromedp.CSS(`[data-testid="stat-sent"] [data-testid="value"]`))); got != "3" {
		t.Errorf("stats page: %s sent, want 3", got)
	}
	if got := read("stats status", chromedp.Text(tid("stats-status"))); got != "Versendet" {
		t.Errorf("stats page status %q", got)
	}

	// A sign-up form with its embed code, copied, and the hosted page previewed.
	do("new form",
		chromedp.Navigate(srv.URL+"/forms"),
		chromedp.WaitVisible(tid("forms-empty")),
		chromedp.Click(tid("new-form-link")),
		chromedp.WaitVisible(tid("signup-form-editor")),
		chromedp.SendKeys(chromedp.CSS(`#field-name`), "Fußzeile"),
		chromedp.Click(chromedp.CSS(`input[name="list_ids"]`)),
		chromedp.Click(chromedp.CSS(`input[name="fields"][value="last_name"]`)),
		chromedp.Click(tid("form-submit")),
		chromedp.WaitVisible(tid("embed-code")),
	)
	do("form preview",
		until(`(() => { const f = document.querySelector('[data-testid="form-preview"]'); return !!(f && f.contentDocument && f.contentDocument.querySelector('input[name="email"]')); })()`),
		chromedp.Click(tid("copy-embed")),
		until(`document.querySelector('[data-testid="copy-status"]').textContent !== ''`),
		screenshot(t, dir, "portal-forms-embed"),
	)
	snippet := read("snippet", chromedp.Value(tid("embed-code")))
	if !strings.Contains(snippet, "/v1/subscribe/") || !strings.Contains(snippet, `name="last_name"`) {
		t.Errorf("snippet %q", snippet)
	}
	if clip, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise)); err != nil || clip != snippet {
		t.Errorf("clipboard holds %q (%v), want the snippet", clip, err)
	}
	do("forms list", chromedp.Click(tid("nav-forms")), chromedp.WaitVisible(tid("forms-table")), screenshot(t, dir, "portal-forms"))
}

// subjectOf is the decoded subject of a message as the SMTP server received it.
func subjectOf(t *testing.T, data []byte) string {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("read message: %v", err)
	}
	s, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if err != nil {
		t.Fatalf("decode subject: %v", err)
	}
	return s
}
