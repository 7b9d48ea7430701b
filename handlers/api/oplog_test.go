package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/services"
	"github.com/rundbrief/rundbrief/store/smtpserver"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// logEntry is one captured log record, its attributes as text.
type logEntry struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

// logRecorder is a slog.Handler that keeps every record, for tests that check
// what is logged at which level.
type logRecorder struct {
	mu      *sync.Mutex
	entries *[]logEntry
	attrs   []slog.Attr
}

func newLogRecorder() *logRecorder {
	return &logRecorder{mu: &sync.Mutex{}, entries: &[]logEntry{}}
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	e := logEntry{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		e.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		e.Attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.entries = append(*h.entries, e)
	return nil
}

func (h *logRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logRecorder{mu: h.mu, entries: h.entries, attrs: append(slices.Clip(h.attrs), attrs...)}
}

func (h *logRecorder) WithGroup(string) slog.Handler { return h }

// take returns the records so far and forgets them.
func (h *logRecorder) take() []logEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := *h.entries
	*h.entries = nil
	return out
}

// opsEnv is an account on the business plan served by an API whose webhooks and
// SMTP servers keep to public addresses (the production settings), whose AI
// service has no provider, and whose log is recorded.
type opsEnv struct {
	c    *apitest.Client
	logs *logRecorder
}

func newOpsEnv(t *testing.T, aiSvc func(db *store.DB) *ai.Service) *opsEnv {
	t.Helper()
	ctx := context.Background()
	db := dbtest.NewDB(t)
	res, err := db.CreateAccount(ctx, store.NewAccount{Name: "Acme GmbH", Email: "owner@acme.test", Password: "a long password", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AITopUp(ctx, res.Account.ID, 10*store.EUR); err != nil {
		t.Fatal(err)
	}
	_, key, err := db.CreateKey(ctx, res.Account.ID, store.KeySettings{Name: "default"})
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.NewBox("api-test-secret-0123456789-abcdefghijklmn")
	if err != nil {
		t.Fatal(err)
	}
	logs := newLogRecorder()
	log := slog.New(logs)
	mail := mailer.NewTransports(db, box, mailer.TransportOptions{HELO: "rundbrief.test"})
	a := api.New(&services.Set{DB: db, APILog: store.NewAPILogWriter(db, log), Log: log, Box: box, Mail: mail,
		SMTPServers: smtpserver.New(db, smtpserver.Config{Box: box, Mail: mail}),
		Webhooks:    webhook.New(db, webhook.Config{Box: box, Log: log}),
		AI:          aiSvc(db),
	}, api.Config{BaseURL: "https://rundbrief.test"})
	r := chi.NewRouter()
	r.Mount("/v1", a.Handler())
	c := apitest.NewClient(t, r, apitest.NewValidator(t, api.OpenAPIDocument()))
	c.Header.Set("Authorization", "Bearer "+key)
	logs.take() // what setting up logged
	return &opsEnv{c: c, logs: logs}
}

// TestOperatorHintsInLog: a refusal that an operator setting would lift names
// the setting in the log line, at INFO (4xx) or WARN (503), never at ERROR, and
// never in the answer to the client; plain client errors log nothing.
func TestOperatorHintsInLog(t *testing.T) {
	t.Parallel()
	noProvider := func(db *store.DB) *ai.Service { return ai.NewService(db, ai.Config{}) }
	noService := func(*store.DB) *ai.Service { return nil }
	cases := []struct {
		name         string
		ai           func(db *store.DB) *ai.Service
		method, path string
		body         any
		status       int
		code         string
		level        slog.Level
		msg          string
		settings     []string
	}{
		{name: "loopback webhook", ai: noProvider, method: http.MethodPost, path: "/v1/webhooks",
			body:   map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"*"}},
			status: http.StatusUnprocessableEntity, code: "validation_error", level: slog.LevelInfo, msg: "request refused",
			settings: []string{"RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE"}},
		{name: "private SMTP host", ai: noProvider, method: http.MethodPost, path: "/v1/smtp-servers",
			body:   map[string]any{"name": "intern", "host": "10.1.2.3", "port": 25, "encryption": "none", "from_email": "news@example.com"},
			status: http.StatusUnprocessableEntity, code: "validation_error", level: slog.LevelInfo, msg: "request refused",
			settings: []string{"RUNDBRIEF_SMTP_ALLOW_PRIVATE"}},
		{name: "AI without a provider", ai: noProvider, method: http.MethodPost, path: "/v1/ai/generate",
			body:   map[string]any{"action": "improve", "text": "Hallo Welt"},
			status: http.StatusServiceUnavailable, code: "service_unavailable", level: slog.LevelWarn, msg: "service unavailable",
			settings: []string{"RUNDBRIEF_AI_ANTHROPIC_KEY", "RUNDBRIEF_AI_FALLBACK_URL"}},
		{name: "AI without a service", ai: noService, method: http.MethodPost, path: "/v1/ai/generate",
			body:   map[string]any{"action": "improve", "text": "Hallo Welt"},
			status: http.StatusServiceUnavailable, code: "service_unavailable", level: slog.LevelWarn, msg: "service unavailable",
			settings: []string{"RUNDBRIEF_AI_ANTHROPIC_KEY", "RUNDBRIEF_AI_FALLBACK_URL"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newOpsEnv(t, c.ai)
			r := e.c.Request(c.method, c.path, c.body)
			apiErr := wantError(t, r, c.status, c.code)
			if strings.Contains(string(r.Body), "RUNDBRIEF_") {
				t.Errorf("the client's answer names a server setting: %s", r.Body)
			}
			logs := e.logs.take()
			var found bool
			for _, l := range logs {
				if l.Level >= slog.LevelError {
					t.Errorf("logged at %s: %s %v", l.Level, l.Msg, l.Attrs)
				}
				if l.Msg != c.msg {
					continue
				}
				found = true
				if l.Level != c.level || l.Attrs["request_id"] != apiErr["request_id"] || l.Attrs["status"] != fmt.Sprint(c.status) {
					t.Errorf("log line %s %q %v, want level %s with the request id %v", l.Level, l.Msg, l.Attrs, c.level, apiErr["request_id"])
				}
				for _, s := range c.settings {
					if !strings.Contains(l.Attrs["hint"], s) {
						t.Errorf("hint %q does not name %s", l.Attrs["hint"], s)
					}
				}
			}
			if !found {
				t.Errorf("no log line %q: %v", c.msg, logs)
			}
		})
	}

	// Expected client errors without a setting behind them stay out of the log.
	e := newOpsEnv(t, noProvider)
	wantError(t, e.c.Request(http.MethodGet, "/v1/webhooks/999999", nil), http.StatusNotFound, "not_found")
	wantError(t, e.c.Request(http.MethodPost, "/v1/webhooks", map[string]any{"url": "ftp://x", "events": []string{"*"}}), http.StatusUnprocessableEntity, "validation_error")
	if logs := e.logs.take(); len(logs) != 0 {
		t.Errorf("plain 4xx answers logged: %v", logs)
	}
}
