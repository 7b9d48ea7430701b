package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/ai/aitest"
	"github.com/rundbrief/rundbrief/store/inbox"
	"github.com/rundbrief/rundbrief/store/inbox/imaptest"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/services"
	"github.com/rundbrief/rundbrief/store/smtpserver"
)

// inboxEnv is an account with a key, served by an API whose inbox talks to a
// real IMAP server and replies through a real SMTP server.
type inboxEnv struct {
	*env
	imap  *imaptest.Server
	smtp  *smtptest.Server
	inbox *inbox.Service
	aiSrv *aitest.Server
}

func newInboxEnv(t *testing.T, plan string) *inboxEnv {
	t.Helper()
	e := &inboxEnv{env: newEnv(t, plan)}
	e.imap = imaptest.Start(t, imaptest.Options{Folders: []string{"Sent"}})
	e.smtp = smtptest.Start(t, smtptest.Options{})
	e.aiSrv = aitest.NewAnthropic(t, "sk-ant-test", func(aitest.Call) aitest.Reply {
		return aitest.Reply{Text: "Danke für Ihre Nachricht!", TokensIn: 800, TokensOut: 100}
	})
	box, err := secret.NewBox("api-test-secret-0123456789-abcdefghijklmn")
	if err != nil {
		t.Fatal(err)
	}
	relay := mailer.Relay{Server: mailer.ServerConfig{Host: e.smtp.Host, Port: e.smtp.Port, Encryption: mailer.EncryptionNone},
		From: mailer.Address{Email: "team@acme.test"}}
	mail := mailer.NewTransports(e.db, box, mailer.TransportOptions{Relay: &relay, HELO: "rundbrief.test"})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	smtpSrv := smtpserver.New(e.db, smtpserver.Config{Box: box, Mail: mail, AllowPrivate: true})
	aiSvc := ai.NewService(e.db, ai.Config{Primary: ai.NewAnthropic(e.aiSrv.URL, "sk-ant-test"), AttemptTimeout: 2 * time.Second})
	e.inbox = inbox.New(e.db, inbox.Config{Box: box, Guard: smtpSrv, Opener: mail, AI: aiSvc, Timeout: 5 * time.Second, Log: log})
	a := api.New(&services.Set{DB: e.db, APILog: store.NewAPILogWriter(e.db, log), Log: log, Box: box, Mail: mail, SMTPServers: smtpSrv,
		AI: aiSvc, Inbox: e.inbox}, api.Config{BaseURL: "https://rundbrief.test"})
	r := chi.NewRouter()
	r.Mount("/v1", a.Handler())
	e.h = r
	e.c = e.client(t, r, e.key)
	return e
}

func (e *inboxEnv) settingsBody(password string) map[string]any {
	return map[string]any{"host": e.imap.Host, "port": e.imap.Port, "username": e.imap.Username, "password": password,
		"encryption": "none", "signature": "Viele Gruesse, Acme", "from_email": "team@acme.test"}
}

func (e *inboxEnv) connectAndSync(t *testing.T) {
	t.Helper()
	if r := e.c.Request(http.MethodPut, "/v1/inbox/settings", e.settingsBody(e.imap.Password)); r.Status != 200 {
		t.Fatalf("PUT settings: %d %s", r.Status, r.Body)
	}
	if r := e.c.Request(http.MethodPost, "/v1/inbox/sync", nil); r.Status != 202 {
		t.Fatalf("POST sync: %d %s", r.Status, r.Body)
	}
	if _, err := e.inbox.Sync(context.Background(), e.acct); err != nil {
		t.Fatal(err)
	}
}

type apiInboxMessage struct {
	ID        int64    `json:"id"`
	MessageID *string  `json:"message_id"`
	Subject   string   `json:"subject"`
	Text      *string  `json:"text"`
	Read      bool     `json:"read"`
	Archived  bool     `json:"archived"`
	Labels    []string `json:"labels"`
	ContactID *int64   `json:"contact_id"`
	RepliedAt *string  `json:"replied_at"`
	From      struct {
		Email string `json:"email"`
		Name  string `json:"name"`
	} `json:"from"`
}

func (e *inboxEnv) list(t *testing.T, query string) []apiInboxMessage {
	t.Helper()
	var out []apiInboxMessage
	r := e.c.Request(http.MethodGet, "/v1/inbox/messages"+query, nil)
	if r.Status != 200 {
		t.Fatalf("list %s: %d %s", query, r.Status, r.Body)
	}
	r.Data(t, &out)
	return out
}

func TestInboxSettingsAPI(t *testing.T) {
	t.Parallel()
	e := newInboxEnv(t, "business")
	wantError(t, e.c.Request(http.MethodGet, "/v1/inbox/settings", nil), 404, "not_found")
	wrong := e.settingsBody("falsch")
	f := wantError(t, e.c.Request(http.MethodPut, "/v1/inbox/settings", wrong), 422, "validation_error")
	if msg := fmt.Sprint(f["fields"].(map[string]any)["password"]); !strings.HasPrefix(msg, "Anmeldung") {
		t.Errorf("login failure: %v", f)
	}
	folder := e.settingsBody(e.imap.Password)
	folder["folder"] = "Archiv"
	f = wantError(t, e.c.Request(http.MethodPut, "/v1/inbox/settings", folder), 422, "validation_error")
	if msg := fmt.Sprint(f["fields"].(map[string]any)["folder"]); !strings.Contains(msg, "Ordner") {
		t.Errorf("folder failure: %v", f)
	}
	closed := e.settingsBody(e.imap.Password)
	closed["port"] = 1
	f = wantError(t, e.c.Request(http.MethodPut, "/v1/inbox/settings", closed), 422, "validation_error")
	if msg := fmt.Sprint(f["fields"].(map[string]any)["host"]); !strings.HasPrefix(msg, "Verbindung") {
		t.Errorf("connect failure: %v", f)
	}
	wantError(t, e.c.Request(http.MethodPut, "/v1/inbox/settings", map[string]any{"host": "x"}), 422, "validation_error")

	r := e.c.Request(http.MethodPut, "/v1/inbox/settings", e.settingsBody(e.imap.Password))
	var s map[string]any
	r.Data(t, &s)
	if r.Status != 200 || s["has_password"] != true || s["folder"] != "INBOX" || strings.Contains(string(r.Body), e.imap.Password) {
		t.Fatalf("PUT: %d %s", r.Status, r.Body)
	}
	// Without a password the stored one stays (and the test uses it).
	body := e.settingsBody("")
	delete(body, "password")
	body["signature"] = "Neu"
	if r := e.c.Request(http.MethodPut, "/v1/inbox/settings", body); r.Status != 200 {
		t.Fatalf("PUT without password: %d %s", r.Status, r.Body)
	}
	r = e.c.Request(http.MethodGet, "/v1/inbox/settings", nil)
	r.Data(t, &s)
	if s["signature"] != "Neu" || s["has_password"] != true || strings.Contains(string(r.Body), e.imap.Password) {
		t.Errorf("GET: %s", r.Body)
	}
}

func TestInboxNeedsPlanFeature(t *testing.T) {
	t.Parallel()
	e := newInboxEnv(t, "starter")
	wantError(t, e.c.Request(http.MethodGet, "/v1/inbox/messages", nil), 402, "plan_required")
	wantError(t, e.c.Request(http.MethodPut, "/v1/inbox/settings", e.settingsBody("x")), 402, "plan_required")
}

func TestInboxMessagesAPI(t *testing.T) {
	t.Parallel()
	e := newInboxEnv(t, "business")
	ctx := context.Background()
	if _, err := e.db.ExecContext(ctx, `INSERT INTO contacts (account_id, email) VALUES ($1, 'anna@example.com')`, e.acct); err != nil {
		t.Fatal(err)
	}
	e.imap.Append(t, "INBOX", imaptest.Mail("Anna <anna@example.com>", "Angebot Gartenhaus", "Was kostet das Gartenhaus?", "Message-ID", "<g1@example.com>"))
	e.imap.Append(t, "INBOX", imaptest.Mail("bernd@example.org", "Rechnung", "Anbei die Rechnung"))
	e.imap.Append(t, "INBOX", imaptest.Mail("carla@example.net", "Gelesen", "x"), imap.FlagSeen)
	e.connectAndSync(t)

	all := e.list(t, "?status=all")
	if len(all) != 3 || all[0].Text != nil {
		t.Fatalf("all = %+v", all)
	}
	if got := e.list(t, "?status=unread"); len(got) != 2 {
		t.Errorf("unread = %d", len(got))
	}
	hits := e.list(t, "?q=gartenh")
	if len(hits) != 1 || hits[0].From.Email != "anna@example.com" || hits[0].ContactID == nil {
		t.Fatalf("q=gartenh: %+v", hits)
	}
	if got := e.list(t, "?q=BERND%40example"); len(got) != 1 {
		t.Errorf("q by sender: %d", len(got))
	}
	if got := e.list(t, "?q=die+rechnung"); len(got) != 1 {
		t.Errorf("q in body: %d", len(got))
	}
	wantError(t, e.c.Request(http.MethodGet, "/v1/inbox/messages?status=weird", nil), 422, "validation_error")

	id := hits[0].ID
	var m apiInboxMessage
	e.c.Request(http.MethodGet, fmt.Sprintf("/v1/inbox/messages/%d", id), nil).Data(t, &m)
	if m.Text == nil || !strings.Contains(*m.Text, "Gartenhaus") || *m.MessageID != "g1@example.com" {
		t.Errorf("GET message: %+v", m)
	}
	r := e.c.Request(http.MethodPatch, fmt.Sprintf("/v1/inbox/messages/%d", id), map[string]any{"read": true, "labels": []string{"Anfrage", "Anfrage", "Garten"}})
	r.Data(t, &m)
	if r.Status != 200 || !m.Read || len(m.Labels) != 2 {
		t.Fatalf("PATCH: %d %s", r.Status, r.Body)
	}
	var seen bool
	for uid, flags := range e.imap.Flags(t, "INBOX") {
		if uid == 1 {
			seen = len(flags) == 1 && flags[0] == imap.FlagSeen
		}
	}
	if !seen {
		t.Error(`read was not written back as \Seen`)
	}
	if got := e.list(t, "?label=Garten&status=all"); len(got) != 1 || got[0].ID != id {
		t.Errorf("label filter: %+v", got)
	}
	e.c.Request(http.MethodPatch, fmt.Sprintf("/v1/inbox/messages/%d", id), map[string]any{"archived": true})
	if got := e.list(t, "?status=archived"); len(got) != 1 {
		t.Errorf("archived = %d", len(got))
	}
	if got := e.list(t, ""); len(got) != 2 {
		t.Errorf("open (default) = %d", len(got))
	}

	// Reply: delivered threaded to the real SMTP server.
	r = e.c.Request(http.MethodPost, fmt.Sprintf("/v1/inbox/messages/%d/reply", id), map[string]any{"text": "Es kostet 999 Euro."})
	if r.Status != 201 {
		t.Fatalf("reply: %d %s", r.Status, r.Body)
	}
	sent := e.smtp.Messages()
	if len(sent) != 1 || !strings.Contains(string(sent[0].Data), "In-Reply-To: <g1@example.com>") || !strings.Contains(string(sent[0].Data), "Viele Gruesse, Acme") {
		t.Fatalf("smtp: %d messages", len(sent))
	}
	wantError(t, e.c.Request(http.MethodPost, fmt.Sprintf("/v1/inbox/messages/%d/reply", id), map[string]any{}), 422, "validation_error")

	// Another account's messages are not found.
	other, err := e.db.CreateAccount(ctx, store.NewAccount{Name: "Other", Email: "o@other.test", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := e.db.CreateKey(ctx, other.Account.ID, store.KeySettings{Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	oc := e.client(t, e.h, key)
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, fmt.Sprintf("/v1/inbox/messages/%d", id)},
		{http.MethodPatch, fmt.Sprintf("/v1/inbox/messages/%d", id)},
		{http.MethodPost, fmt.Sprintf("/v1/inbox/messages/%d/reply", id)},
	} {
		wantError(t, oc.Request(req.method, req.path, map[string]any{"read": true, "text": "x"}), 404, "not_found")
	}
	var otherList []apiInboxMessage
	oc.Request(http.MethodGet, "/v1/inbox/messages?status=all", nil).Data(t, &otherList)
	if len(otherList) != 0 {
		t.Errorf("another account sees %d messages", len(otherList))
	}
}

func TestInboxDraftsRulesMetricsAPI(t *testing.T) {
	t.Parallel()
	e := newInboxEnv(t, "business")
	ctx := context.Background()
	if _, err := e.db.AITopUp(ctx, e.acct, 5*store.EUR); err != nil {
		t.Fatal(err)
	}
	e.imap.Append(t, "INBOX", imaptest.Mail("anna@example.com", "Lieferzeit", "Wann kommt meine Bestellung?", "Message-ID", "<l1@example.com>"))
	e.connectAndSync(t)
	id := e.list(t, "")[0].ID

	var d struct {
		ID      int64   `json:"id"`
		Status  string  `json:"status"`
		Text    string  `json:"text"`
		CostEUR float64 `json:"cost_eur"`
	}
	r := e.c.Request(http.MethodPost, fmt.Sprintf("/v1/inbox/messages/%d/draft", id), map[string]any{"instruction": "freundlich"})
	r.Data(t, &d)
	if r.Status != 201 || d.Status != "pending" || d.CostEUR <= 0 || d.Text == "" {
		t.Fatalf("draft: %d %s", r.Status, r.Body)
	}
	var drafts []map[string]any
	e.c.Request(http.MethodGet, "/v1/inbox/drafts?status=pending", nil).Data(t, &drafts)
	if len(drafts) != 1 {
		t.Fatalf("drafts = %v", drafts)
	}
	r = e.c.Request(http.MethodPost, fmt.Sprintf("/v1/inbox/drafts/%d/approve", d.ID), map[string]any{"text": "Morgen!"})
	if r.Status != 200 {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	wantError(t, e.c.Request(http.MethodPost, fmt.Sprintf("/v1/inbox/drafts/%d/approve", d.ID), nil), 409, "conflict")
	wantError(t, e.c.Request(http.MethodDelete, fmt.Sprintf("/v1/inbox/drafts/%d", d.ID), nil), 409, "conflict")
	if sent := e.smtp.Messages(); len(sent) != 1 || !strings.Contains(string(sent[0].Data), "Morgen!") {
		t.Errorf("approved draft not sent")
	}
	r = e.c.Request(http.MethodPost, fmt.Sprintf("/v1/inbox/messages/%d/draft", id), map[string]any{})
	r.Data(t, &d)
	if r := e.c.Request(http.MethodDelete, fmt.Sprintf("/v1/inbox/drafts/%d", d.ID), nil); r.Status != 204 {
		t.Errorf("discard: %d %s", r.Status, r.Body)
	}
	wantError(t, e.c.Request(http.MethodDelete, "/v1/inbox/drafts/999999", nil), 404, "not_found")

	// A key without the scope ai may not draft.
	_, readOnly := e.newKey(t, store.KeySettings{Name: "ro", Scopes: []string{"read", "write"}})
	wantError(t, e.client(t, e.h, readOnly).Request(http.MethodPost, fmt.Sprintf("/v1/inbox/messages/%d/draft", id), map[string]any{}), 403, "forbidden")

	// Rules.
	r = e.c.Request(http.MethodPost, "/v1/inbox/rules", map[string]any{"name": "Rechnungen", "match": map[string]any{"subject_contains": "Rechnung"}, "action": "label", "value": "Buchhaltung"})
	if r.Status != 201 {
		t.Fatalf("rule: %d %s", r.Status, r.Body)
	}
	var rule struct {
		ID int64 `json:"id"`
	}
	r.Data(t, &rule)
	e.c.Request(http.MethodPost, "/v1/inbox/rules", map[string]any{"name": "Erst", "match": map[string]any{"from_contains": "x"}, "action": "archive", "position": 1})
	var rules []struct {
		Name     string `json:"name"`
		Position int    `json:"position"`
	}
	e.c.Request(http.MethodGet, "/v1/inbox/rules", nil).Data(t, &rules)
	if len(rules) != 2 || rules[0].Name != "Erst" || rules[1].Position != 2 {
		t.Errorf("rules = %+v", rules)
	}
	wantError(t, e.c.Request(http.MethodPost, "/v1/inbox/rules", map[string]any{"name": "x", "action": "explode"}), 422, "validation_error")
	wantError(t, e.c.Request(http.MethodPost, "/v1/inbox/rules", map[string]any{"name": "x", "action": "reply"}), 422, "validation_error")
	e.imap.Append(t, "INBOX", imaptest.Mail("bernd@example.org", "Rechnung 7", "x"))
	if _, err := e.inbox.Sync(ctx, e.acct); err != nil {
		t.Fatal(err)
	}
	if got := e.list(t, "?label=Buchhaltung&status=all"); len(got) != 1 || !got[0].Archived {
		t.Errorf("rule label: %+v", got)
	}
	if r := e.c.Request(http.MethodDelete, fmt.Sprintf("/v1/inbox/rules/%d", rule.ID), nil); r.Status != 204 {
		t.Errorf("delete rule: %d", r.Status)
	}

	// Metrics.
	var m struct {
		Received         int      `json:"received"`
		Unread           int      `json:"unread"`
		Replied          int      `json:"replied"`
		AvgFirstResponse *float64 `json:"avg_first_response_minutes"`
		AIDrafts         int      `json:"ai_drafts"`
		AIDraftsApproved int      `json:"ai_drafts_approved"`
	}
	today := time.Now().In(store.Berlin).Format("2006-01-02")
	r = e.c.Request(http.MethodGet, "/v1/inbox/metrics?from="+today+"&to="+today, nil)
	r.Data(t, &m)
	if r.Status != 200 || m.Received != 2 || m.Replied != 1 || m.AIDrafts != 2 || m.AIDraftsApproved != 1 || m.AvgFirstResponse == nil || m.Unread != 1 {
		t.Errorf("metrics: %d %s", r.Status, r.Body)
	}
	wantError(t, e.c.Request(http.MethodGet, "/v1/inbox/metrics?from=gestern", nil), 422, "validation_error")
}
