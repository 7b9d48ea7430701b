package handlers_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
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
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/imports"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/services"
	"github.com/rundbrief/rundbrief/store/smtpserver"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// adminServer is the application with the admin side wired as `serve` wires it:
// mail transports (trusting the test SMTP servers' certificate), the webhook
// service allowed to reach loopback receivers (RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE)
// and its delivery worker running.
func adminServer(t *testing.T, cert tlsRoots) (*httptest.Server, *store.DB) {
	t.Helper()
	const secretKey = "admin end-to-end secret, at least 32 characters"
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
	const baseURL = "http://rundbrief.test"
	mail := mailer.NewTransports(db, box, mailer.TransportOptions{HELO: "rundbrief.test", TLSConfig: cert.config})
	hooks := webhook.New(db, webhook.Config{Box: box, AllowPrivate: true, Log: log})
	wg.Go(func() { _ = hooks.Worker(webhook.WorkerOptions{PollInterval: 50 * time.Millisecond}).Run(ctx) })
	// The test SMTP server is on loopback: RUNDBRIEF_SMTP_ALLOW_PRIVATE.
	p, err := portal.New(&services.Set{DB: db, Imports: imports.New(db), Box: box, Log: log, Mail: mail, Webhooks: hooks, SMTPServers: smtpserver.New(db, smtpserver.Config{Box: box, Mail: mail, AllowPrivate: true})}, portal.Config{BaseURL: baseURL})
	if err != nil {
		t.Fatal(err)
	}
	guard := botguard.New(secretKey, time.Now)
	pub, err := public.New(&services.Set{DB: db, Guard: guard, Tokens: testTokens(t), Log: log}, public.Config{BaseURL: baseURL})
	if err != nil {
		t.Fatal(err)
	}
	a := api.New(&services.Set{DB: db, APILog: apiLog, Log: log, Box: box, Mail: mail, Webhooks: hooks, Guard: guard, SMTPServers: smtpserver.New(db, smtpserver.Config{Box: box, Mail: mail, AllowPrivate: true})},
		api.Config{BaseURL: baseURL, RateLimit: 1_000_000})
	srv := httptest.NewServer(handlers.New(a, p, pub))
	t.Cleanup(func() {
		srv.Close()
		cancel()
		wg.Wait()
	})
	return srv, db
}

// tlsRoots is the test certificate the SMTP servers present and the mailer trusts.
type tlsRoots struct {
	cert   tls.Certificate
	config *tls.Config
}

// hookReceiver is a real HTTP endpoint that records webhook requests.
type hookReceiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []hookRequest
}

type hookRequest struct {
	header http.Header
	body   []byte
}

func (h *hookReceiver) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.got...)
}

// TestPortalAdminEndToEnd drives the admin pages in a real browser: create a
// webhook pointing at a real receiver and read its secret once, see a real event
// delivered (signed with that secret) in the delivery log and resend it; add an
// SMTP server and run its connection test against a real SMTP server with
// STARTTLS and AUTH; see all of it in the activity log.
func TestPortalAdminEndToEnd(t *testing.T) {
	t.Parallel()
	certificate, roots, err := smtptest.NewCertificate("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	srv, db := adminServer(t, tlsRoots{cert: certificate, config: &tls.Config{RootCAs: roots}})
	const smtpPassword = "postfach-geheim-2026"
	smtp := smtptest.Start(t, smtptest.Options{TLS: smtptest.STARTTLS, Username: "versand@baeckerei-mueller.de", Password: smtpPassword, Certificate: &certificate})
	rc := &hookReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, hookRequest{header: r.Header.Clone(), body: b})
		rc.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"empfangen":true}`)
	}))
	t.Cleanup(rc.Close)

	bg := context.Background()
	acct, err := db.CreateAccount(bg, store.NewAccount{Name: "Bäckerei Müller", Email: "inhaber@baeckerei-mueller.de", Password: "sauerteig-seit-1923"})
	if err != nil {
		t.Fatal(err)
	}

	b := newTab(t, 1440, 1000, 120*time.Second)
	ctx, dir, do, read := b.ctx, b.dir, b.do, b.read
	b.grantClipboard(srv.URL)
	b.signIn(srv.URL, "inhaber@baeckerei-mueller.de", "sauerteig-seit-1923")

	// Create a webhook for new contacts; its secret is shown once, with a copy button.
	do("create a webhook",
		chromedp.Click(tid("nav-webhooks")),
		chromedp.WaitVisible(tid("webhooks-empty")),
		chromedp.Click(tid("new-webhook-link")),
		chromedp.WaitVisible(tid("webhook-form")),
		chromedp.SendKeys(chromedp.CSS(`#field-url`), rc.URL+"/rundbrief"),
		chromedp.Click(tid("event-all")), // off: pick single events
		chromedp.Click(chromedp.CSS(`input[name="events"][value="contact.created"]`)),
		chromedp.Click(chromedp.CSS(`input[name="events"][value="contact.unsubscribed"]`)),
		chromedp.SendKeys(chromedp.CSS(`#field-description`), "Warenwirtschaft"),
		screenshot(t, dir, "portal-webhook-new"),
		chromedp.Click(tid("webhook-submit")),
		chromedp.WaitVisible(tid("webhook-secret")),
	)
	secretValue := read("read the secret", chromedp.Value(tid("webhook-secret")))
	if !strings.HasPrefix(secretValue, store.WebhookSecretPrefix) {
		t.Fatalf("secret on the page: %q", secretValue)
	}
	do("copy the secret",
		chromedp.Click(tid("webhook-secret-copy")),
		until(`document.querySelector('[data-testid="webhook-secret-status"]').textContent !== ""`),
		screenshot(t, dir, "portal-webhooks"),
	)
	if clip, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise)); err != nil || clip != secretValue {
		t.Errorf("clipboard holds %q (%v), want the secret", clip, err)
	}
	do("reload", chromedp.Reload(), chromedp.WaitVisible(tid("webhooks-table")))
	if again, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.body.innerHTML.includes(`+quoteJS(secretValue)+`)`)); err != nil || again {
		t.Fatalf("the secret is shown again after a reload (%v)", err)
	}

	// A real event: a new contact. The running worker delivers it to the receiver.
	if _, err := db.UpsertContact(bg, acct.Account.ID, store.Actor{Type: store.ActorUser, ID: acct.Owner.ID},
		store.ContactInput{Email: "erika.mustermann@example.com"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(rc.requests()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the receiver got no delivery")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := rc.requests()[0]; !verifySignature(got, secretValue) || !strings.Contains(string(got.body), "erika.mustermann@example.com") {
		t.Fatalf("delivery not signed with the secret read from the page, or without the contact: %s", got.body)
	}
	// The worker records the attempt right after the response (in a batch).
	hooks, _, err := db.Webhooks(bg, acct.Account.ID, store.Page{Page: 1, PerPage: 1})
	if err != nil || len(hooks) != 1 {
		t.Fatal(hooks, err)
	}
	for {
		ds, _, err := db.WebhookDeliveries(bg, acct.Account.ID, hooks[0].ID, store.DeliveryFilter{}, store.Page{Page: 1, PerPage: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 1 && ds[0].LastStatusCode != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the delivery was not recorded")
		}
		time.Sleep(50 * time.Millisecond)
	}
	do("delivery log",
		chromedp.Click(tid("webhook-deliveries")),
		chromedp.WaitVisible(tid("webhook-test")),
		chromedp.WaitVisible(tid("delivery-code")),
	)
	if got := read("status", chromedp.Text(tid("delivery-status"))); got != "Zugestellt" {
		t.Errorf("delivery status %q", got)
	}
	if got := read("code", chromedp.Text(tid("delivery-code"))); got != "200" {
		t.Errorf("response code %q", got)
	}
	do("open the delivery",
		chromedp.Click(chromedp.CSS(`[data-testid="delivery-detail"] summary`)),
		chromedp.WaitVisible(tid("delivery-payload")),
	)
	if got := read("payload", chromedp.Text(tid("delivery-payload"))); !strings.Contains(got, `"event": "contact.created"`) {
		t.Errorf("payload %q", got)
	}
	if got := read("response", chromedp.Text(tid("delivery-response"))); got != `{"empfangen":true}` {
		t.Errorf("response body %q", got)
	}
	do("screenshot deliveries", screenshot(t, dir, "portal-webhook-deliveries"))

	// Resend: htmx swaps the delivery in place, with the second attempt.
	do("resend",
		chromedp.Click(tid("delivery-resend")),
		until(`document.querySelector('[data-testid="delivery-attempts"]').textContent.trim() === "2"`),
		chromedp.WaitVisible(tid("flash")),
	)
	if reqs := rc.requests(); len(reqs) != 2 || reqs[1].header.Get("X-Service-Event-Id") != reqs[0].header.Get("X-Service-Event-Id") {
		t.Errorf("after resend the receiver has %d requests", len(reqs))
	}
	if got := read("flash", chromedp.Text(tid("flash"))); !strings.Contains(got, "Erneut gesendet") || !strings.Contains(got, "200") {
		t.Errorf("resend flash %q", got)
	}

	// An SMTP server, and its connection test against the real server.
	do("add an SMTP server",
		chromedp.Click(tid("nav-smtp-servers")),
		chromedp.WaitVisible(tid("smtp-empty")),
		chromedp.Click(tid("new-smtp-link")),
		chromedp.WaitVisible(tid("smtp-form")),
		chromedp.SendKeys(chromedp.CSS(`#field-name`), "Eigenes Postfach"),
		chromedp.SendKeys(chromedp.CSS(`#field-host`), smtp.Host),
		chromedp.SendKeys(chromedp.CSS(`#field-port`), strconv.Itoa(smtp.Port)),
		chromedp.SetValue(chromedp.CSS(`#field-encryption`), "starttls"),
		chromedp.SendKeys(chromedp.CSS(`#field-username`), "versand@baeckerei-mueller.de"),
		chromedp.SendKeys(chromedp.CSS(`#field-password`), smtpPassword),
		chromedp.SendKeys(chromedp.CSS(`#field-from_email`), "news@baeckerei-mueller.de"),
		chromedp.SendKeys(chromedp.CSS(`#field-from_name`), "Bäckerei Müller"),
		chromedp.Click(tid("smtp-submit")),
		chromedp.WaitVisible(tid("smtp-table")),
		chromedp.Click(tid("smtp-test")),
		chromedp.WaitVisible(tid("smtp-test-result")),
		screenshot(t, dir, "portal-smtp-servers"),
	)
	if got := read("test result", chromedp.Text(tid("smtp-test-message"))); got != "Verbindung, Verschlüsselung und Anmeldung erfolgreich." {
		t.Errorf("connection test says %q", got)
	}
	if smtp.Connections() == 0 {
		t.Error("the connection test did not reach the SMTP server")
	}
	do("edit form", chromedp.Click(tid("smtp-edit")), chromedp.WaitVisible(tid("smtp-form")))
	if html := read("edit html", chromedp.OuterHTML(chromedp.CSS("html"))); strings.Contains(html, smtpPassword) {
		t.Fatal("the SMTP password is in the edit page")
	}

	// The activity log names the user who did it.
	do("activity log",
		chromedp.Click(tid("nav-activity-log")),
		chromedp.WaitVisible(tid("activity-table")),
		screenshot(t, dir, "portal-activity-log"),
	)
	actions := read("actions", chromedp.Text(tid("activity-table")))
	for _, want := range []string{"Webhook angelegt", "Kontakt angelegt", "inhaber@baeckerei-mueller.de"} {
		if !strings.Contains(actions, want) {
			t.Errorf("activity log lacks %q", want)
		}
	}
	do("filter by webhooks",
		chromedp.SetValue(chromedp.CSS(`#field-object_type`), "webhook"),
		chromedp.Click(tid("activity-filter-submit")),
		until(`location.search.includes("object_type=webhook") && document.querySelectorAll('[data-testid="activity-row"]').length === 1`),
	)

	// Without an operator relay, mail is captured in the development outbox; a
	// captured mail's HTML shows in a sandboxed frame, its scripts do not run.
	if err := mailer.NewDevOutbox(db, acct.Account.ID).Send(bg, &mailer.Message{
		From: mailer.Address{Name: "Bäckerei Müller", Email: "news@baeckerei-mueller.de"}, To: mailer.Address{Email: "erika.mustermann@example.com"},
		Subject: "Willkommen in der Backstube",
		HTML: `<h1 style="font-family:sans-serif;color:#7a4b12">Hallo Erika!</h1><p style="font-family:sans-serif">Ab Montag gibt es Kürbisbrot.</p>` +
			`<script>try { parent.document.body.dataset.hacked = "1" } catch (e) {} document.body.innerHTML = "SKRIPT LIEF"</script>`,
	}); err != nil {
		t.Fatal(err)
	}
	do("dev outbox",
		chromedp.Click(tid("nav-smtp-servers")),
		chromedp.Click(tid("dev-outbox-link")),
		chromedp.WaitVisible(tid("outbox-table")),
		chromedp.Click(tid("outbox-subject")),
		chromedp.WaitVisible(tid("outbox-html-frame")),
		chromedp.Sleep(500*time.Millisecond), // the frame loads on its own
		screenshot(t, dir, "portal-dev-outbox-mail"),
	)
	if hacked, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.body.dataset.hacked === "1"`)); err != nil || hacked {
		t.Errorf("the captured mail's script reached the portal page (%v)", err)
	}
	if got := read("text part", chromedp.Text(tid("outbox-text"))); !strings.Contains(got, "Ab Montag gibt es Kürbisbrot.") {
		t.Errorf("text part %q", got)
	}
}

// verifySignature checks X-Service-Signature (t=…,v1=…: HMAC-SHA256 with the
// whole secret over "<t>.<body>") the way a Stripe library would.
func verifySignature(r hookRequest, secret string) bool {
	var ts, sig string
	for part := range strings.SplitSeq(r.header.Get("X-Service-Signature"), ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(r.body)
	return sig != "" && hmac.Equal([]byte(sig), []byte(hex.EncodeToString(mac.Sum(nil))))
}
