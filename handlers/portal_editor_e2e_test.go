package handlers_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"mime/quotedprintable"
	"net/http"
	"net/http/httptest"
	"regexp"
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
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/ai/aitest"
	"github.com/rundbrief/rundbrief/store/botguard"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/imports"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/services"
	"github.com/rundbrief/rundbrief/store/smtpserver"
)

// editorServer is the application as `serve` wires it for the editor: the
// sending side, the link tokens (signed image URLs) and the AI service over a
// local fake provider, on a base URL that is the server itself, so that the
// browser loads the uploaded images from their public URLs.
func editorServer(t *testing.T, provider *aitest.Server) (string, *store.DB, *secret.Box) {
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
	srv := httptest.NewUnstartedServer(nil)
	baseURL := "http://" + srv.Listener.Addr().String()
	tokens := testTokens(t)
	links := mailer.LinkBuilder{BaseURL: baseURL, Tokens: tokens}
	mail := mailer.NewTransports(db, box, mailer.TransportOptions{HELO: "rundbrief.test"})
	w := mailer.NewWorker(db, mail, mailer.WorkerOptions{Links: links, PollInterval: 50 * time.Millisecond, Log: log})
	campaigns := campaign.New(db, mail, w, campaign.Options{Links: links, Log: log})
	wg.Go(func() { _ = w.Run(ctx) })
	aiSvc := ai.NewService(db, ai.Config{Primary: ai.NewAnthropic(provider.URL, "sk-ant-test"), AttemptTimeout: 10 * time.Second, RetryDelay: time.Millisecond})
	p, err := portal.New(&services.Set{DB: db, Imports: imports.New(db), Box: box, Log: log, Mail: mail, Campaigns: campaigns, Tokens: tokens, AI: aiSvc,
		SMTPServers: smtpserver.New(db, smtpserver.Config{Box: box, Mail: mail, AllowPrivate: true})}, portal.Config{BaseURL: baseURL})
	if err != nil {
		t.Fatal(err)
	}
	guard := botguard.New(secretKey, time.Now)
	pub, err := public.New(&services.Set{DB: db, Guard: guard, Tokens: tokens, Log: log}, public.Config{BaseURL: baseURL})
	if err != nil {
		t.Fatal(err)
	}
	a := api.New(&services.Set{DB: db, APILog: apiLog, Log: log, Box: box, Mail: mail, Guard: guard, Campaigns: campaigns},
		api.Config{BaseURL: baseURL, RateLimit: 1_000_000})
	srv.Config.Handler = handlers.New(a, p, pub)
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		cancel()
		wg.Wait()
	})
	return srv.URL, db, box
}

// TestPortalRichTextEditorEndToEnd: write a newsletter in rich text with an
// uploaded image, preview it at mobile width, take over an AI subject idea
// (local fake provider), send it after the checklist to a real SMTP server,
// and find the image URL and the text in the mails.
func TestPortalRichTextEditorEndToEnd(t *testing.T) {
	t.Parallel()
	provider := aitest.NewAnthropic(t, "sk-ant-test", aitest.Lines(8))
	base, db, box := editorServer(t, provider)
	smtp := smtptest.Start(t, smtptest.Options{})
	bg := context.Background()
	acct, err := db.CreateAccount(bg, store.NewAccount{Name: "Bäckerei Müller", Email: "inhaber@baeckerei-mueller.de", Password: "sauerteig-seit-1923", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AITopUp(bg, acct.Account.ID, 5*store.EUR); err != nil {
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
	for _, m := range []struct{ email, first string }{{"anna@example.com", "Anna"}, {"ben@example.com", "Ben"}} {
		first := m.first
		if _, err := db.UpsertContact(bg, acct.Account.ID, sys, store.ContactInput{Email: m.email, FirstName: &first, ListIDs: []int64{list.ID}}); err != nil {
			t.Fatal(err)
		}
	}

	b := newTab(t, 1440, 1000, 150*time.Second)
	do, read, dir := b.do, b.read, b.dir
	b.signIn(base, "inhaber@baeckerei-mueller.de", "sauerteig-seit-1923")

	do("rich text",
		chromedp.Navigate(base+"/newsletters/new"),
		chromedp.WaitVisible(tid("newsletter-form")),
		chromedp.SendKeys(chromedp.CSS(`#field-name`), "Herbst reich"),
		chromedp.SendKeys(chromedp.CSS(`#field-subject`), "Herbst"),
		chromedp.SendKeys(chromedp.CSS(`#field-preheader`), "Neues aus der Backstube"),
		chromedp.Click(chromedp.CSS(`input[name="list_ids"]`)),
		chromedp.Click(tid("format-richtext")),
		chromedp.WaitVisible(tid("trix-editor")),
		until(`document.querySelector('trix-toolbar [data-trix-attribute="bold"]')?.title === 'Fett'`),
		chromedp.Click(tid("trix-editor")),
		chromedp.SendKeys(tid("trix-editor"), "Hallo "),
		chromedp.Click(tid("placeholder-vorname")),
		chromedp.SendKeys(tid("trix-editor"), ", unser Kürbisbrot ist da."),
		until(`document.querySelector('input[name="content_rich"]').value.includes('Hallo {{vorname}}, unser Kürbisbrot ist da.')`),
	)
	// An image, as a drop or paste hands it to Trix: uploaded, then shown
	// from its signed public URL.
	do("image",
		chromedp.Evaluate[chromedp.Void](`(() => {
			const bytes = Uint8Array.from(atob('`+pngBase64(t)+`'), c => c.charCodeAt(0));
			document.querySelector('trix-editor').editor.insertFile(new File([bytes], 'kuerbis-brot.png', {type: 'image/png'}));
		})()`),
		until(`/\/i\/\d+\/\d+\/[\w-]+\/kuerbis-brot\.png/.test(document.querySelector('input[name="content_rich"]').value)`),
		until(`[...document.querySelectorAll('trix-editor img')].some(i => i.complete && i.naturalWidth === 4)`),
	)
	rich := read("rich", chromedp.Value(chromedp.CSS(`input[name="content_rich"]`)))
	imgURL := regexp.MustCompile(regexp.QuoteMeta(base) + `/i/\d+/\d+/[\w-]+/kuerbis-brot\.png`).FindString(rich)
	if resp, err := http.Get(imgURL); err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("image %s: %v %v", imgURL, resp, err)
	}

	do("mobile preview",
		until(`(document.querySelector('[data-testid="preview-iframe"]')?.getAttribute('srcdoc') || '').includes('Hallo Anna, unser Kürbisbrot')`),
		until(`(document.querySelector('[data-testid="preview-iframe"]')?.getAttribute('srcdoc') || '').includes('kuerbis-brot.png')`),
		chromedp.Click(tid("preview-mobile")),
		until(`Math.round(document.querySelector('[data-testid="preview-iframe"]').getBoundingClientRect().width) === 375`),
		screenshot(t, dir, "portal-editor-richtext-mobile"),
	)

	do("ai subject",
		chromedp.Click(tid("ai-subject_ideas")),
		chromedp.WaitVisible(tid("ai-ideas")),
		chromedp.Click(tid("ai-apply-2")),
		until(`document.querySelector('#field-subject').value === 'Vorschlag 3 für {{vorname}}'`),
	)
	if got := read("cost", chromedp.Text(tid("ai-cost"))); !strings.Contains(got, "verbleibendes Guthaben") {
		t.Errorf("cost line %q", got)
	}
	do("save", chromedp.Click(tid("newsletter-save")), chromedp.WaitVisible(tid("flash")),
		chromedp.WaitVisible(tid("trix-editor")),
		until(`document.querySelector('[data-testid="format-richtext"]').checked`))

	do("checklist and send",
		chromedp.Click(tid("newsletter-send")),
		chromedp.WaitVisible(tid("send-checklist")),
		until(`document.querySelector('[data-testid="check-images"]').dataset.ok === 'true'`),
		screenshot(t, dir, "portal-editor-send-checklist"),
		chromedp.Click(tid("send-confirm-button")),
		chromedp.WaitVisible(tid("newsletter-status-panel")),
		until(`document.querySelector('[data-testid="newsletter-status-panel"]')?.dataset.status === 'sent'`),
	)
	msgs := smtp.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d mails", len(msgs))
	}
	for _, m := range msgs {
		body, _ := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(m.Data)))
		s := string(body)
		if !strings.Contains(s, `src="`+imgURL+`"`) || !strings.Contains(s, "unser Kürbisbrot ist da.") || !strings.Contains(subjectOf(t, m.Data), "Vorschlag 3 für ") {
			t.Errorf("mail to %v lacks the image, the text or the subject:\n%s", m.To, s)
		}
	}
}

// pngBase64 is a 4×3 PNG in base64.
func pngBase64(t *testing.T) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 3))
	img.Set(1, 1, color.RGBA{200, 120, 20, 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}
