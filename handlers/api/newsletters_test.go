package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/abtest"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/services"
	"github.com/rundbrief/rundbrief/store/smtpserver"
)

// sendAPIEnv is an account whose default SMTP server is a real test server,
// served by an API with the campaign service and a running send worker.
type sendAPIEnv struct {
	db       *store.DB
	acct     int64
	srv      *smtptest.Server
	serverID int64
	box      *secret.Box
	c        *apitest.Client
	v        *apitest.Validator
	h        http.Handler
}

const sendAPISecret = "api send test secret, at least 32 characters"

func newSendAPIEnv(t *testing.T, smtpOpts ...smtptest.Options) *sendAPIEnv {
	t.Helper()
	ctx := context.Background()
	db := dbtest.NewDB(t)
	res, err := db.CreateAccount(ctx, store.NewAccount{Name: "Acme GmbH", Email: "owner@acme.test", Password: "a long password", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := db.CreateKey(ctx, res.Account.ID, store.KeySettings{Name: "default"})
	if err != nil {
		t.Fatal(err)
	}
	so := smtptest.Options{}
	if len(smtpOpts) > 0 {
		so = smtpOpts[0]
	}
	e := &sendAPIEnv{db: db, acct: res.Account.ID, srv: smtptest.Start(t, so)}
	if e.box, err = secret.NewBox(sendAPISecret); err != nil {
		t.Fatal(err)
	}
	s, err := db.CreateSMTPServer(ctx, e.box, e.acct, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "Test", Host: e.srv.Host, Port: e.srv.Port, Encryption: "none", FromEmail: "news@acme.test", FromName: "Acme"}})
	if err != nil {
		t.Fatal(err)
	}
	e.serverID = s.ID
	tokens, err := mailer.NewTokens(sendAPISecret)
	if err != nil {
		t.Fatal(err)
	}
	links := mailer.LinkBuilder{BaseURL: "https://rundbrief.test", Tokens: tokens}
	mail := mailer.NewTransports(db, e.box, mailer.TransportOptions{HELO: "rundbrief.test"})
	w := mailer.NewWorker(db, mail, mailer.WorkerOptions{Links: links, PollInterval: 20 * time.Millisecond})
	campaigns := campaign.New(db, mail, w, campaign.Options{Links: links})
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Run(runCtx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := api.New(&services.Set{DB: db, APILog: store.NewAPILogWriter(db, log), Log: log, Box: e.box, Mail: mail, Campaigns: campaigns,
		ABTests: abtest.New(db, w, abtest.Options{}), SMTPServers: smtpserver.New(db, smtpserver.Config{Box: e.box, Mail: mail, AllowPrivate: false})},
		api.Config{BaseURL: "https://rundbrief.test", RateLimit: 1_000_000})
	r := chi.NewRouter()
	r.Mount("/v1", a.Handler())
	e.h = r
	e.v = apitest.NewValidator(t, api.OpenAPIDocument())
	e.c = apitest.NewClient(t, r, e.v)
	e.c.Header.Set("Authorization", "Bearer "+key)
	return e
}

// do sends a request and checks the status; the client validates the
// response against openapi.json.
func (e *sendAPIEnv) do(t *testing.T, method, path string, body any, status int) *apitest.Response {
	t.Helper()
	r := e.c.Request(method, path, body)
	if r.Status != status {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, r.Status, status, r.Body)
	}
	return r
}

// fields returns error.fields of a 422 (and checks the code).
func (e *sendAPIEnv) fields(t *testing.T, r *apitest.Response) map[string]string {
	t.Helper()
	var env struct {
		Error struct {
			Code   string            `json:"code"`
			Fields map[string]string `json:"fields"`
		} `json:"error"`
	}
	r.JSON(t, &env)
	if env.Error.Code != "validation_error" {
		t.Fatalf("code %q", env.Error.Code)
	}
	return env.Error.Fields
}

func wantFields(t *testing.T, got map[string]string, want ...string) {
	t.Helper()
	for _, f := range want {
		if got[f] == "" {
			t.Errorf("no message for %s in %v", f, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("fields %v, want %v", got, want)
	}
}

func (e *sendAPIEnv) reason(t *testing.T, r *apitest.Response) string {
	t.Helper()
	var env struct {
		Error struct {
			Code   string `json:"code"`
			Reason string `json:"reason"`
		} `json:"error"`
	}
	r.JSON(t, &env)
	return env.Error.Code + ":" + env.Error.Reason
}

// list creates a list with n subscribed contacts l<i>@example.com.
func (e *sendAPIEnv) list(t *testing.T, name string, n int) int64 {
	t.Helper()
	var l struct {
		ID int64 `json:"id"`
	}
	e.do(t, "POST", "/v1/lists", map[string]any{"name": name}, 201).Data(t, &l)
	for i := 1; i <= n; i++ {
		e.do(t, "POST", "/v1/contacts", map[string]any{"email": fmt.Sprintf("%s%d@example.com", name, i), "first_name": fmt.Sprintf("Vorname%d", i),
			"list_ids": []int64{l.ID}}, 201)
	}
	return l.ID
}

type newsletterJSON struct {
	ID          int64   `json:"id"`
	Name        string  `json:"name"`
	Subject     string  `json:"subject"`
	HTML        *string `json:"html"`
	Status      string  `json:"status"`
	StatusLabel string  `json:"status_label"`
	ListIDs     []int64 `json:"list_ids"`
	Queued      int64   `json:"queued"`
	Sent        int64   `json:"sent"`
	ScheduledAt *string `json:"scheduled_at"`
	LastError   *string `json:"last_error"`
}

type sendResultJSON struct {
	ID      int64  `json:"id"`
	Status  string `json:"status"`
	Queued  int64  `json:"queued"`
	Sent    int64  `json:"sent"`
	Failed  int64  `json:"failed"`
	Skipped int64  `json:"skipped"`
	Message string `json:"message"`
}

func (e *sendAPIEnv) waitSent(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var n newsletterJSON
		e.do(t, "GET", path, nil, 200).Data(t, &n)
		if n.Status == store.CampaignSent {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still %s", path, n.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNewsletterAPI(t *testing.T) {
	t.Parallel()
	e := newSendAPIEnv(t)
	list := e.list(t, "kunden", 3)

	var n newsletterJSON
	e.do(t, "POST", "/v1/newsletters", map[string]any{"name": "Herbst", "subject": "Hallo {{vorname}}", "preheader": "Neu",
		"html": `<p>Hallo {{vorname}}, <a href="https://shop.example.com/">zum Shop</a></p>`, "list_ids": []int64{list}}, 201).Data(t, &n)
	if n.Status != "draft" || n.StatusLabel != "Entwurf" || n.HTML == nil || len(n.ListIDs) != 1 {
		t.Fatalf("created: %+v", n)
	}
	path := fmt.Sprintf("/v1/newsletters/%d", n.ID)
	e.do(t, "PATCH", path, map[string]any{"name": "Herbstbrief"}, 200).Data(t, &n)
	if n.Name != "Herbstbrief" || n.Subject != "Hallo {{vorname}}" {
		t.Fatalf("patched: %+v", n)
	}
	var list1 []newsletterJSON
	e.do(t, "GET", "/v1/newsletters?status=draft", nil, 200).Data(t, &list1)
	if len(list1) != 1 || list1[0].HTML != nil {
		t.Fatalf("list: %+v", list1)
	}

	// Preview: personalised with the lists' first contact, no tracking.
	var pv struct {
		Subject   string `json:"subject"`
		HTML      string `json:"html"`
		ContactID *int64 `json:"contact_id"`
	}
	e.do(t, "GET", path+"/preview", nil, 200).Data(t, &pv)
	if pv.Subject != "Hallo Vorname1" || pv.ContactID == nil || !strings.Contains(pv.HTML, `href="https://shop.example.com/"`) {
		t.Errorf("preview: %+v", pv)
	}
	wantFields(t, e.fields(t, e.do(t, "GET", path+"/preview?contact_id=999999", nil, 422)), "contact_id")

	// Test mails: at most five, "[TEST]", no tracking.
	wantFields(t, e.fields(t, e.do(t, "POST", path+"/test", map[string]any{"to": []string{"a@x.test", "b@x.test", "c@x.test", "d@x.test", "e@x.test", "f@x.test"}}, 422)), "to")
	var tr struct {
		Sent    int `json:"sent"`
		Results []struct {
			Email  string `json:"email"`
			Status string `json:"status"`
		} `json:"results"`
	}
	e.do(t, "POST", path+"/test", map[string]any{"to": "tester@x.test"}, 200).Data(t, &tr)
	if tr.Sent != 1 || tr.Results[0].Status != "sent" {
		t.Fatalf("test: %+v", tr)
	}
	msgs := e.srv.Messages()
	if len(msgs) != 1 || !strings.Contains(string(msgs[0].Data), "Subject: [TEST] Hallo Vorname1") ||
		strings.Contains(string(msgs[0].Data), "https://rundbrief.test/c/") || strings.Contains(string(msgs[0].Data), "https://rundbrief.test/o/") {
		t.Fatalf("test mail:\n%s", msgs[0].Data)
	}

	// Send: 202, then 409 for a second send and for changes.
	var sr sendResultJSON
	e.do(t, "POST", path+"/send", nil, 202).Data(t, &sr)
	// The first batch (all three) goes out in the request, unless a worker
	// lane took some rows first.
	if sr.ID != n.ID || sr.Queued != 3 || sr.Sent > 3 || (sr.Status != "sent" && sr.Status != "sending") || sr.Message == "" {
		t.Fatalf("send result: %+v", sr)
	}
	e.waitSent(t, path)
	if got := e.reason(t, e.do(t, "POST", path+"/send", nil, 409)); got != "conflict:already_sent" {
		t.Errorf("second send: %s", got)
	}
	if got := e.reason(t, e.do(t, "PATCH", path, map[string]any{"subject": "x"}, 409)); got != "conflict:not_draft" {
		t.Errorf("patch after send: %s", got)
	}
	if got := e.reason(t, e.do(t, "DELETE", path, nil, 409)); got != "conflict:not_draft" {
		t.Errorf("delete after send: %s", got)
	}
	if got := e.reason(t, e.do(t, "POST", path+"/pause", nil, 409)); got != "conflict:not_sending" {
		t.Errorf("pause after send: %s", got)
	}
	if got := e.reason(t, e.do(t, "POST", path+"/resume", nil, 409)); got != "conflict:not_paused" {
		t.Errorf("resume after send: %s", got)
	}
	if got := e.reason(t, e.do(t, "POST", path+"/retry-failed", nil, 409)); got != "conflict:nothing_to_retry" {
		t.Errorf("retry without failures: %s", got)
	}
	var st struct {
		Recipients int64   `json:"recipients"`
		Sent       int64   `json:"sent"`
		OpenRate   float64 `json:"open_rate"`
	}
	e.do(t, "GET", path+"/stats", nil, 200).Data(t, &st)
	if st.Recipients != 3 || st.Sent != 3 {
		t.Errorf("stats: %+v", st)
	}

	// Duplicate, schedule, unschedule, delete.
	var cp newsletterJSON
	e.do(t, "POST", path+"/duplicate", nil, 201).Data(t, &cp)
	cpath := fmt.Sprintf("/v1/newsletters/%d", cp.ID)
	wantFields(t, e.fields(t, e.do(t, "POST", cpath+"/schedule", map[string]any{"scheduled_at": "gestern"}, 422)), "scheduled_at")
	wantFields(t, e.fields(t, e.do(t, "POST", cpath+"/schedule", map[string]any{"scheduled_at": "2020-01-01 09:00"}, 422)), "scheduled_at")
	at := time.Now().Add(48 * time.Hour).In(store.Berlin).Format("2006-01-02 15:04")
	e.do(t, "POST", cpath+"/schedule", map[string]any{"scheduled_at": at}, 200).Data(t, &cp)
	if cp.Status != "scheduled" || cp.ScheduledAt == nil || !strings.HasPrefix(*cp.ScheduledAt, strings.Replace(at, " ", "T", 1)) {
		t.Fatalf("scheduled: %+v", cp)
	}
	if got := e.reason(t, e.do(t, "PATCH", cpath, map[string]any{"subject": "x"}, 409)); got != "conflict:not_draft" {
		t.Errorf("patch scheduled: %s", got)
	}
	e.do(t, "POST", cpath+"/unschedule", nil, 200).Data(t, &cp)
	if cp.Status != "draft" || cp.ScheduledAt != nil {
		t.Fatalf("unscheduled: %+v", cp)
	}
	e.do(t, "DELETE", cpath, nil, 204)
	e.do(t, "GET", cpath, nil, 404)
}

func TestNewsletterSendChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSendAPIEnv(t)
	var n newsletterJSON
	e.do(t, "POST", "/v1/newsletters", map[string]any{"name": "Leer"}, 201).Data(t, &n)
	path := fmt.Sprintf("/v1/newsletters/%d", n.ID)
	wantFields(t, e.fields(t, e.do(t, "POST", path+"/send", nil, 422)), "subject", "html", "list_ids")

	// A chosen SMTP server that was deleted since.
	other, err := e.db.CreateSMTPServer(ctx, e.box, e.acct, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "Zweiter", Host: "127.0.0.1", Port: 2525, Encryption: "none", FromEmail: "x@acme.test"}})
	if err != nil {
		t.Fatal(err)
	}
	empty := e.list(t, "leer", 0)
	e.do(t, "PATCH", path, map[string]any{"subject": "Hallo", "text": "Hallo", "list_ids": []int64{empty}, "smtp_server_id": other.ID}, 200)
	if err := e.db.DeleteSMTPServer(ctx, e.acct, other.ID); err != nil {
		t.Fatal(err)
	}
	wantFields(t, e.fields(t, e.do(t, "POST", path+"/send", nil, 422)), "smtp_server_id")
	// The recipients: a list without subscribed contacts.
	e.do(t, "PATCH", path, map[string]any{"smtp_server_id": 0}, 200)
	wantFields(t, e.fields(t, e.do(t, "POST", path+"/send", nil, 422)), "list_ids")
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/newsletters", map[string]any{"list_ids": []int64{999999}}, 422)), "list_ids")
	e.do(t, "POST", "/v1/newsletters", map[string]any{"html": strings.Repeat("x", store.MaxHTMLBytes+1)}, 413)

	// The daily limit: 402 limit_reached, nothing queued.
	full := e.list(t, "voll", 3)
	e.do(t, "PATCH", path, map[string]any{"list_ids": []int64{full}}, 200)
	if _, err := e.db.ExecContext(ctx, `UPDATE plans SET max_sends_per_day = 2 WHERE name = 'business'`); err != nil {
		t.Fatal(err)
	}
	r := e.do(t, "POST", path+"/send", nil, 402)
	if r.ErrorCode(t) != "limit_reached" || !strings.Contains(string(r.Body), "upgrade_url") {
		t.Errorf("limit: %s", r.Body)
	}
	var got newsletterJSON
	e.do(t, "GET", path, nil, 200).Data(t, &got)
	if got.Status != "draft" || got.Queued != 0 {
		t.Errorf("after the refusal: %+v", got)
	}

	// Sending needs the scope "send".
	_, readKey, err := e.db.CreateKey(ctx, e.acct, store.KeySettings{Name: "nur lesen", Scopes: []string{"read", "write"}})
	if err != nil {
		t.Fatal(err)
	}
	c := apitest.NewClient(t, e.h, e.v)
	c.Header.Set("Authorization", "Bearer "+readKey)
	r = c.Request("POST", path+"/send", nil)
	if r.Status != 403 || !strings.Contains(string(r.Body), `"required_scope":"send"`) {
		t.Errorf("without scope send: %d %s", r.Status, r.Body)
	}
}

func TestNewsletterMarkdownAndRetryAPI(t *testing.T) {
	t.Parallel()
	e := newSendAPIEnv(t)
	list := e.list(t, "md", 2)
	var n newsletterJSON
	e.do(t, "POST", "/v1/newsletters", map[string]any{"subject": "Neu", "markdown": "## Hallo {{vorname}}\n\n*kursiv*", "list_ids": []int64{list}}, 201).Data(t, &n)
	if n.Name != "Neu" {
		t.Errorf("default name %q", n.Name)
	}
	var pv struct {
		HTML string `json:"html"`
		Text string `json:"text"`
	}
	e.do(t, "GET", fmt.Sprintf("/v1/newsletters/%d/preview", n.ID), nil, 200).Data(t, &pv)
	if !strings.Contains(pv.HTML, "<h2>Hallo Vorname1</h2>") || !strings.Contains(pv.HTML, "<em>kursiv</em>") || !strings.HasPrefix(pv.Text, "## Hallo Vorname1") {
		t.Errorf("markdown preview: %+v", pv)
	}
	path := fmt.Sprintf("/v1/newsletters/%d", n.ID)
	var sr sendResultJSON
	e.do(t, "POST", path+"/send", nil, 202).Data(t, &sr)
	e.waitSent(t, path)
	// Mark one delivery failed, as a rejection would, and retry it.
	if _, err := e.db.ExecContext(context.Background(), `UPDATE campaign_recipients SET status = 'failed', error = '550 nein' WHERE campaign_id = $1 AND email = 'md2@example.com'`, n.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ExecContext(context.Background(), `UPDATE campaigns SET sent_count = 1, failed_count = 1 WHERE id = $1`, n.ID); err != nil {
		t.Fatal(err)
	}
	e.do(t, "POST", path+"/retry-failed", nil, 202).Data(t, &sr)
	if sr.Queued != 1 || sr.Status != "sending" {
		t.Fatalf("retry: %+v", sr)
	}
	e.waitSent(t, path)
	counts := map[string]int{}
	for _, m := range e.srv.Messages() {
		counts[m.To[0]]++
	}
	if counts["md1@example.com"] != 1 || counts["md2@example.com"] != 2 {
		t.Errorf("messages: %v", counts)
	}
}
