package portal_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/handlers"
	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/portal"
	"github.com/rundbrief/rundbrief/handlers/public"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/abtest"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/appointment"
	"github.com/rundbrief/rundbrief/store/botguard"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/imports"
	"github.com/rundbrief/rundbrief/store/inbox"
	"github.com/rundbrief/rundbrief/store/integration"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/sequence"
	"github.com/rundbrief/rundbrief/store/services"
	"github.com/rundbrief/rundbrief/store/smtpserver"
	"github.com/rundbrief/rundbrief/store/webhook"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// clock is a test clock several servers share; Advance moves it forward.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// server is one `rundbrief serve` process (API and portal) over loopback.
type server struct {
	*httptest.Server
	db       *store.DB
	apiLog   *store.APILogWriter
	webhooks *webhook.Service   // may target loopback receivers; deliver with its Worker's Process
	mail     *mailer.Transports // trusts cert; without serverOptions.Relay the dev outbox is on
	cert     *tls.Certificate   // give it to smtptest servers whose TLS the mailer must trust
}

// serverOptions change how newServerWith sets a process up.
type serverOptions struct {
	Relay *mailer.Relay // the operator relay (RUNDBRIEF_SMTP_URL); nil: development, dev outbox on
	// SMTPDenyPrivate keeps SMTP servers off loopback (RUNDBRIEF_SMTP_ALLOW_PRIVATE
	// unset, as in production); the tests' servers are on loopback, so it is off.
	SMTPDenyPrivate bool
	// WebhookDenyPrivate keeps webhooks off loopback
	// (RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE unset, as in production).
	WebhookDenyPrivate bool
	// Log receives the process's log; nil: discarded.
	Log *slog.Logger
	// ReadTimeout is the HTTP server's read timeout, as serve sets one; zero: none.
	ReadTimeout time.Duration
	// UpgradeURL is RUNDBRIEF_UPGRADE_URL; empty: none.
	UpgradeURL string
	// AI configures the AI service (the editor's assistant); nil: none.
	AI *ai.Config
}

// newServer starts a process on the database at dbURL (from dbtest.URL); several
// servers on one URL behave like several processes.
func newServer(tb testing.TB, dbURL string, clk *clock, baseURL string) *server {
	tb.Helper()
	return newServerWith(tb, dbURL, clk, baseURL, serverOptions{})
}

func newServerWith(tb testing.TB, dbURL string, clk *clock, baseURL string, opts serverOptions) *server {
	tb.Helper()
	db := dbtest.Open(tb, dbURL)
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	apiLog := store.NewAPILogWriter(db, log)
	var wg sync.WaitGroup
	wg.Go(func() { _ = apiLog.Run(ctx) })
	wg.Go(func() { _ = db.ListenNotifications(ctx, dbURL, log) })
	var now func() time.Time
	if clk != nil {
		now = clk.Now
	}
	cert, roots, err := smtptest.NewCertificate("127.0.0.1")
	if err != nil {
		tb.Fatal(err)
	}
	box := testBox(tb)
	mail := mailer.NewTransports(db, box, mailer.TransportOptions{Relay: opts.Relay, TLSConfig: &tls.Config{RootCAs: roots}, HELO: "rundbrief.test"})
	hooks := webhook.New(db, webhook.Config{Box: box, AllowPrivate: !opts.WebhookDenyPrivate, Now: now, Log: log})
	// Sending as `serve` wires it: an account's own SMTP server (tests point one
	// at mailer/smtptest), else the relay or the development outbox; a send
	// worker delivers what a send queues beyond its first batch.
	links := mailer.LinkBuilder{BaseURL: baseURL, Tokens: mustTokens(tb)}
	sendWorker := mailer.NewWorker(db, mail, mailer.WorkerOptions{Links: links, PollInterval: 20 * time.Millisecond, Log: log})
	campaigns := campaign.New(db, mail, sendWorker, campaign.Options{Links: links, Log: log})
	wg.Go(func() { _ = sendWorker.Run(ctx) })
	// The base URL's host (rundbrief.test) is this test server: test events
	// go over HTTP to the base URL, so the client dials the server for it.
	var srvAddr atomic.Value
	dialSelf := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srvAddr.Load().(string))
	}}
	integrations := integration.New(db, integration.Config{Box: box, BaseURL: baseURL, Now: now, Log: log,
		Client: &http.Client{Transport: dialSelf}})
	smtpSrv := smtpserver.New(db, smtpserver.Config{Box: box, Mail: mail, AllowPrivate: !opts.SMTPDenyPrivate})
	var aiSvc *ai.Service
	if opts.AI != nil {
		aiSvc = ai.NewService(db, *opts.AI)
	}
	p, err := portal.New(&services.Set{DB: db, AI: aiSvc, Integrations: integrations, Imports: imports.New(db), Box: box, Log: log, Mail: mail, Webhooks: hooks, Campaigns: campaigns, ABTests: abtest.New(db, sendWorker, abtest.Options{Now: now}), SMTPServers: smtpSrv,
		Appointments: appointment.New(db, appointment.Config{BaseURL: baseURL, Now: now}),
		Sequences:    sequence.New(db, nil, campaigns, mail, sendWorker, sequence.Options{Now: now}),
		Inbox:        inbox.New(db, inbox.Config{Box: box, Guard: smtpSrv, Opener: mail, Timeout: 5 * time.Second, Log: log}), Tokens: mustTokens(tb)}, portal.Config{BaseURL: baseURL, Now: now, UpgradeURL: opts.UpgradeURL})
	if err != nil {
		tb.Fatal(err)
	}
	a := api.New(&services.Set{DB: db, APILog: apiLog, Log: log, Box: box, Mail: mail, Webhooks: hooks, Campaigns: campaigns, SMTPServers: smtpserver.New(db, smtpserver.Config{Box: box, Mail: mail, AllowPrivate: !opts.SMTPDenyPrivate})}, api.Config{BaseURL: baseURL, RateLimit: 1_000_000})
	pub, err := public.New(&services.Set{DB: db, Integrations: integrations, Guard: botguard.New("portal tests secret", time.Now), Tokens: mustTokens(tb), Log: log}, public.Config{BaseURL: baseURL})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(handlers.New(a, p, pub))
	srv.Config.ReadTimeout = opts.ReadTimeout
	srv.Start()
	srvAddr.Store(srv.Listener.Addr().String())
	tb.Cleanup(func() {
		srv.Close()
		cancel()
		wg.Wait()
	})
	return &server{Server: srv, db: db, apiLog: apiLog, webhooks: hooks, mail: mail, cert: &cert}
}

func testBox(tb testing.TB) *secret.Box {
	tb.Helper()
	box, err := secret.NewBox("portal tests secret, at least 32 characters long")
	if err != nil {
		tb.Fatal(err)
	}
	return box
}

// account is a test account with its owner's credentials.
type account struct {
	ID       int64
	Name     string
	Email    string
	Password string
}

func newAccount(tb testing.TB, db *store.DB, plan string) account {
	tb.Helper()
	a := account{Name: "Bäckerei " + store.RandomString(5), Email: strings.ToLower(store.RandomString(8)) + "@example.com", Password: "correct horse battery"}
	res, err := db.CreateAccount(context.Background(), store.NewAccount{Name: a.Name, Email: a.Email, Password: a.Password, Plan: plan})
	if err != nil {
		tb.Fatal(err)
	}
	a.ID = res.Account.ID
	return a
}

// client is one browser: it keeps its session cookie and does not follow
// redirects, so that tests see them.
type client struct {
	tb     testing.TB
	base   string
	cookie *http.Cookie // the session cookie, as the browser holds it
	http   *http.Client
}

func newClient(tb testing.TB, s *server) *client {
	return &client{tb: tb, base: s.URL, http: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// on returns a client of another server holding the same session cookie (the same
// browser talking to another process behind a load balancer).
func (c *client) on(s *server) *client {
	o := newClient(c.tb, s)
	o.cookie = c.cookie
	return o
}

// response is a finished request with its parsed body.
type response struct {
	*http.Response
	Body string
	Doc  *goquery.Document
}

// rows parses a fragment of table rows (an HTML parser drops <tr> outside a table).
func (r *response) rows(tb testing.TB) *response {
	tb.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader("<table><tbody>" + r.Body + "</tbody></table>"))
	if err != nil {
		tb.Fatal(err)
	}
	return &response{Response: r.Response, Body: r.Body, Doc: doc}
}

// find returns the elements with data-testid id.
func (r *response) find(id string) *goquery.Selection {
	return r.Doc.Find(`[data-testid="` + id + `"]`)
}

func (c *client) do(method, path string, form url.Values, header ...string) *response {
	c.tb.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.tb.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if c.cookie != nil {
		req.AddCookie(c.cookie)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.tb.Fatal(err)
	}
	for _, ck := range resp.Cookies() {
		if strings.HasSuffix(ck.Name, "rundbrief_session") {
			if ck.MaxAge < 0 || ck.Value == "" {
				c.cookie = nil
			} else {
				c.cookie = &http.Cookie{Name: ck.Name, Value: ck.Value}
			}
		}
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(raw)))
	if err != nil {
		c.tb.Fatal(err)
	}
	return &response{Response: resp, Body: string(raw), Doc: doc}
}

func (c *client) get(path string, header ...string) *response {
	c.tb.Helper()
	return c.do(http.MethodGet, path, nil, header...)
}

func (c *client) post(path string, form url.Values, header ...string) *response {
	c.tb.Helper()
	if form == nil {
		form = url.Values{}
	}
	return c.do(http.MethodPost, path, form, header...)
}

// signIn signs in and fails the test unless it worked.
func (c *client) signIn(email, password string) {
	c.tb.Helper()
	r := c.post("/login", url.Values{"email": {email}, "password": {password}})
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/dashboard" || c.cookie == nil {
		c.tb.Fatalf("sign in as %s: %d %s, cookie %v\n%s", email, r.StatusCode, r.Header.Get("Location"), c.cookie, r.Body)
	}
}

// wantStatus fails the test unless the response has the status.
func wantStatus(tb testing.TB, r *response, status int) {
	tb.Helper()
	if r.StatusCode != status {
		tb.Fatalf("%s %s: status %d, want %d\n%s", r.Request.Method, r.Request.URL.Path, r.StatusCode, status, r.Body)
	}
}

// wantRedirect fails the test unless the response redirects (303) to location.
func wantRedirect(tb testing.TB, r *response, location string) {
	tb.Helper()
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != location {
		tb.Fatalf("%s %s: %d to %q, want 303 to %q\n%s", r.Request.Method, r.Request.URL.Path, r.StatusCode,
			r.Header.Get("Location"), location, r.Body)
	}
}

// meStatus calls GET /v1/me with key and returns the status.
func meStatus(tb testing.TB, s *server, key string) int {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// text is the trimmed, space-collapsed text of a selection.
func text(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

func mustTokens(tb testing.TB) *mailer.Tokens {
	tb.Helper()
	t, err := mailer.NewTokens("test secret for link tokens, at least 32 characters")
	if err != nil {
		tb.Fatal(err)
	}
	return t
}
