package api_test

import (
	"context"
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
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/ai/aitest"
	"github.com/rundbrief/rundbrief/store/services"
)

// aiEnv is an account with a key, served by an API whose AI service talks to fake
// providers that speak Anthropic's and the OpenAI wire format.
type aiEnv struct {
	*env
	primary  *aitest.Server
	fallback *aitest.Server
	clock    *clock
}

// clock is the API's clock: 30 s into the current real minute, so that rate-limit
// windows are fixed while the ledger's timestamps (the database's clock) fall in
// the same month; tests move it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newAIEnv(t *testing.T, plan string, credit store.Money, primary, fallback func(aitest.Call) aitest.Reply) *aiEnv {
	t.Helper()
	e := &aiEnv{env: newEnv(t, plan), clock: &clock{t: time.Now().Truncate(time.Minute).Add(30 * time.Second)}}
	cfg := ai.Config{AttemptTimeout: 500 * time.Millisecond, RetryDelay: time.Millisecond}
	if primary != nil {
		e.primary = aitest.NewAnthropic(t, "sk-ant-test", primary)
		cfg.Primary = ai.NewAnthropic(e.primary.URL, "sk-ant-test")
	}
	if fallback != nil {
		e.fallback = aitest.NewOpenAI(t, "", fallback)
		cfg.Fallback = ai.NewOpenAI(e.fallback.URL, "", "llama3.1:8b")
	}
	if credit > 0 {
		if _, err := e.db.AITopUp(context.Background(), e.acct, credit); err != nil {
			t.Fatal(err)
		}
	}
	e.h = e.aiApp(t, e.db, ai.NewService(e.db, cfg))
	e.c = e.client(t, e.h, e.key)
	return e
}

// aiApp builds the /v1 API of one process with the AI service svc (nil: none).
func (e *aiEnv) aiApp(t *testing.T, db *store.DB, svc *ai.Service) http.Handler {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := api.New(&services.Set{DB: db, APILog: store.NewAPILogWriter(db, log), Log: log, AI: svc},
		api.Config{BaseURL: "https://rundbrief.test", Now: e.clock.now})
	r := chi.NewRouter()
	r.Mount("/v1", a.Handler())
	return r
}

func (e *aiEnv) balance(t *testing.T) store.Money {
	t.Helper()
	b, err := e.db.AIBalance(context.Background(), e.acct)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func providerCalls(s *aitest.Server) int {
	if s == nil {
		return 0
	}
	return len(s.Calls())
}

type generateResult struct {
	Action       string         `json:"action"`
	Text         string         `json:"text"`
	HTML         *string        `json:"html"`
	Data         map[string]any `json:"data"`
	CostEUR      float64        `json:"cost_eur"`
	RemainingEUR float64        `json:"remaining_eur"`
	Model        string         `json:"model"`
	Provider     string         `json:"provider"`
	FallbackUsed bool           `json:"fallback_used"`
}

func fixedTokens(respond func(aitest.Call) aitest.Reply) func(aitest.Call) aitest.Reply {
	return func(c aitest.Call) aitest.Reply {
		r := respond(c)
		r.TokensIn, r.TokensOut = 1000, 500
		return r
	}
}

func TestAIGenerateChargesOnceAndReplays(t *testing.T) {
	t.Parallel()
	e := newAIEnv(t, "pro", 10*store.EUR, fixedTokens(aitest.Rewrite), nil)
	idem := hdr("Idempotency-Key", "gen-1")
	body := map[string]any{"action": "improve", "text": "Hallo Welt", "subject": "Sommer", "instruction": "locker", "scope": "newsletter"}

	first := e.c.Request(http.MethodPost, "/v1/ai/generate", body, idem)
	if first.Status != 200 {
		t.Fatalf("generate: %d %s", first.Status, first.Body)
	}
	var res generateResult
	first.Data(t, &res)
	// 1000 input and 500 output tokens of haiku: 0.003325 EUR, rounded up.
	if res.Action != "improve" || res.Text != "Neu: Hallo Welt" || res.HTML != nil || len(res.Data) != 0 || res.CostEUR != 0.0034 ||
		res.RemainingEUR != 9.9966 || res.Model != "claude-haiku-4-5" || res.Provider != "anthropic" || res.FallbackUsed {
		t.Errorf("result %+v", res)
	}
	if !strings.Contains(string(first.Body), `"html":null`) || !strings.Contains(string(first.Body), `"data":{}`) {
		t.Errorf("html and data must be present: %s", first.Body)
	}

	again := e.c.Request(http.MethodPost, "/v1/ai/generate", body, idem)
	if again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
		t.Fatalf("replay: %d %v %s", again.Status, again.Header, again.Body)
	}
	if providerCalls(e.primary) != 1 || e.balance(t) != 10*store.EUR-34 {
		t.Errorf("replay ran again: %d provider calls, balance %s", providerCalls(e.primary), e.balance(t))
	}

	// The ledger: the debit (newest) and the top-up, with the request's id.
	usage := e.c.Request(http.MethodGet, "/v1/ai/usage", nil)
	var rows []map[string]any
	usage.Data(t, &rows)
	if usage.Status != 200 || len(rows) != 2 {
		t.Fatalf("usage: %d %s", usage.Status, usage.Body)
	}
	d := rows[0]
	if d["kind"] != "debit" || d["action"] != "improve" || d["model"] != "claude-haiku-4-5" || d["provider"] != "anthropic" ||
		d["tokens_in"] != float64(1000) || d["tokens_out"] != float64(500) || d["cost_eur"] != 0.0034 || d["amount_eur"] != -0.0034 ||
		d["fallback_used"] != false || d["request_id"] != first.Header.Get("X-Request-Id") {
		t.Errorf("debit row %v", d)
	}
	if rows[1]["kind"] != "topup" || rows[1]["amount_eur"] != float64(10) || rows[1]["cost_eur"] != float64(0) {
		t.Errorf("top-up row %v", rows[1])
	}
	debits := e.c.Request(http.MethodGet, "/v1/ai/usage?kind=debit&per_page=1", nil)
	var meta struct {
		Meta struct {
			Pagination struct{ Total, Pages int }
		}
	}
	debits.JSON(t, &meta)
	if meta.Meta.Pagination.Total != 1 {
		t.Errorf("debits only: %s", debits.Body)
	}
	wantError(t, e.c.Request(http.MethodGet, "/v1/ai/usage?kind=refund", nil), 422, "validation_error")

	credit := e.c.Request(http.MethodGet, "/v1/ai/credit", nil)
	var c struct {
		BalanceEUR    float64 `json:"balance_eur"`
		SpentMonthEUR float64 `json:"spent_month_eur"`
		RequestsMonth int     `json:"requests_month"`
		TopUpsEUR     float64 `json:"topups_total_eur"`
		Enabled       bool    `json:"enabled"`
		Models        []struct {
			Alias  string  `json:"alias"`
			Model  string  `json:"model"`
			Input  float64 `json:"input_eur_per_mtok"`
			Output float64 `json:"output_eur_per_mtok"`
		} `json:"models"`
	}
	credit.Data(t, &c)
	if c.BalanceEUR != 9.9966 || c.SpentMonthEUR != 0.0034 || c.RequestsMonth != 1 || c.TopUpsEUR != 10 || !c.Enabled ||
		len(c.Models) != 2 || c.Models[0].Model != "claude-haiku-4-5" || c.Models[0].Input != 0.95 || c.Models[1].Output != 14.25 {
		t.Errorf("credit %+v", c)
	}
	var limits struct {
		AICreditEUR float64 `json:"ai_credit_eur"`
	}
	e.c.Request(http.MethodGet, "/v1/plan/limits", nil).Data(t, &limits)
	if limits.AICreditEUR != 9.9966 {
		t.Errorf("plan limits ai_credit_eur %v", limits.AICreditEUR)
	}
}

func TestAIGenerateResults(t *testing.T) {
	t.Parallel()
	e := newAIEnv(t, "business", 10*store.EUR, func(c aitest.Call) aitest.Reply {
		if strings.Contains(c.System, "genau 8 Zeilen") {
			return aitest.Lines(8)(c)
		}
		return aitest.Rewrite(c)
	}, nil)

	r := e.c.Request(http.MethodPost, "/v1/ai/generate", map[string]any{"action": "subject_ideas", "subject": "Sommer-Sale", "context": "Schuhladen"})
	var ideas generateResult
	r.Data(t, &ideas)
	list, _ := ideas.Data["ideas"].([]any)
	if r.Status != 200 || len(list) != 8 || list[7] != "Vorschlag 8 für {{vorname}}" || ideas.HTML != nil {
		t.Errorf("subject_ideas: %d %s", r.Status, r.Body)
	}

	html := `<p style="margin:0">Hallo <strong>{{vorname}}</strong>,</p><p><a href="https://shop.example/?utm=rb">Zum Shop</a></p>`
	r = e.c.Request(http.MethodPost, "/v1/ai/generate", map[string]any{"action": "emotional", "html": html, "model": "sonnet"})
	var rewritten generateResult
	r.Data(t, &rewritten)
	want := aitest.RewriteHTML(html, func(s string) string { return "Neu: " + s })
	if r.Status != 200 || rewritten.HTML == nil || *rewritten.HTML != want || !strings.HasSuffix(rewritten.Text, "\n\nNeu: Zum Shop") ||
		strings.ContainsAny(rewritten.Text, "<>") || rewritten.Model != "claude-sonnet-4-5" {
		t.Errorf("html: %d %s", r.Status, r.Body)
	}
	if sent := e.primary.Calls()[1]; sent.Source() != html || sent.Model != "claude-sonnet-4-5" {
		t.Errorf("html request: %q %q", sent.Source(), sent.Model)
	}

	// A model that breaks the markup: 503, not charged, not stored for replay.
	e.primary.SetRespond(aitest.Fixed(aitest.Reply{Text: strings.Replace(want, "<strong>", "", 1)}))
	before := e.balance(t)
	got := wantError(t, e.c.Request(http.MethodPost, "/v1/ai/generate", map[string]any{"action": "fix", "html": html}, hdr("Idempotency-Key", "broken")), 503, "service_unavailable")
	if !strings.Contains(got["message"].(string), "HTML-Struktur") || e.balance(t) != before {
		t.Errorf("broken html: %v, balance %s → %s", got, before, e.balance(t))
	}
	e.primary.SetRespond(aitest.Rewrite)
	if r := e.c.Request(http.MethodPost, "/v1/ai/generate", map[string]any{"action": "fix", "html": html}, hdr("Idempotency-Key", "broken")); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("retry after a 503 with the same key: %d replayed=%q", r.Status, r.Header.Get("Idempotent-Replayed"))
	}
}

func TestAIFallbackAndUnavailable(t *testing.T) {
	t.Parallel()
	e := newAIEnv(t, "pro", 10*store.EUR, aitest.Fixed(aitest.Reply{Status: 529}), fixedTokens(aitest.Rewrite))
	r := e.c.Request(http.MethodPost, "/v1/ai/generate", map[string]any{"prompt": "Schreib einen Gruß.", "text": "Hallo"})
	var res generateResult
	r.Data(t, &res)
	if r.Status != 200 || !res.FallbackUsed || res.Provider != "openai" || res.Model != "llama3.1:8b" || res.Action != "custom" || res.CostEUR != 0.0034 {
		t.Errorf("fallback: %d %s", r.Status, r.Body)
	}
	if sent := e.fallback.Calls()[0]; sent.Path != "/v1/chat/completions" || sent.Header.Get("Authorization") != "" || !strings.Contains(sent.User, "Schreib einen Gruß.") {
		t.Errorf("fallback request %+v", sent)
	}

	// Neither reachable: 503, nothing charged; with the same Idempotency-Key a retry
	// runs again (5xx is not stored) and is charged once it succeeds.
	e.fallback.SetRespond(aitest.Fixed(aitest.Reply{Status: 500}))
	before := e.balance(t)
	idem := hdr("Idempotency-Key", "retry-me")
	body := map[string]any{"action": "shorten", "text": "Ein langer Text."}
	wantError(t, e.c.Request(http.MethodPost, "/v1/ai/generate", body, idem), 503, "service_unavailable")
	if e.balance(t) != before {
		t.Errorf("503 charged: %s → %s", before, e.balance(t))
	}
	e.primary.SetRespond(fixedTokens(aitest.Rewrite))
	if r := e.c.Request(http.MethodPost, "/v1/ai/generate", body, idem); r.Status != 200 || e.balance(t) != before-34 {
		t.Errorf("retry: %d, balance %s", r.Status, e.balance(t))
	}

	// A provider that refuses our key is the operator's problem: 500, nothing charged.
	e.primary.SetRespond(aitest.Fixed(aitest.Reply{Status: 401}))
	wantError(t, e.c.Request(http.MethodPost, "/v1/ai/generate", body), 500, "server_error")

	// No provider configured, or no AI service at all: 503.
	for _, svc := range []*ai.Service{ai.NewService(e.db, ai.Config{}), nil} {
		c := e.client(t, e.aiApp(t, e.db, svc), e.key)
		got := wantError(t, c.Request(http.MethodPost, "/v1/ai/generate", body), 503, "service_unavailable")
		if svc != nil && !strings.Contains(got["message"].(string), "nicht eingerichtet") {
			t.Errorf("not configured: %v", got)
		}
		var credit struct {
			Enabled bool `json:"enabled"`
		}
		c.Request(http.MethodGet, "/v1/ai/credit", nil).Data(t, &credit)
		if credit.Enabled {
			t.Error("credit says enabled without a provider")
		}
	}
}

func TestAIGenerateRefusals(t *testing.T) {
	t.Parallel()
	e := newAIEnv(t, "pro", 0, aitest.Rewrite, nil)

	for _, c := range []struct {
		body  any
		field string
	}{
		{nil, "action"},
		{map[string]any{"action": "rewrite", "text": "x"}, "action"},
		{map[string]any{"action": "improve", "text": "x", "model": "gpt-4"}, "model"},
		{map[string]any{"action": "improve", "text": "x", "context": strings.Repeat("ü", 4001)}, "context"},
		{map[string]any{"action": "improve", "text": "x", "scope": "webinar"}, "scope"},
		{map[string]any{"action": "improve", "text": 5}, "text"},
		{map[string]any{"action": "custom", "text": "x"}, "prompt"},
	} {
		got := wantError(t, e.c.Request(http.MethodPost, "/v1/ai/generate", c.body), 422, "validation_error")
		if fields, _ := got["fields"].(map[string]any); fields[c.field] == nil {
			t.Errorf("%v: fields %v lack %s", c.body, got["fields"], c.field)
		}
	}
	// 4000 characters of context are allowed; the empty balance is the next refusal.
	got := wantError(t, e.c.Request(http.MethodPost, "/v1/ai/generate", map[string]any{"action": "improve", "text": "x", "context": strings.Repeat("ü", 4000)}), 402, "limit_reached")
	if got["upgrade_url"] == "" || providerCalls(e.primary) != 0 {
		t.Errorf("empty balance: %v, %d provider calls", got, providerCalls(e.primary))
	}

	// Scopes: generating needs ai, reading the ledger needs read.
	_, readOnly := e.newKey(t, store.KeySettings{Scopes: []string{"read"}})
	got = wantError(t, e.client(t, e.h, readOnly).Request(http.MethodPost, "/v1/ai/generate", map[string]any{"prompt": "x"}), 403, "forbidden")
	if got["required_scope"] != "ai" {
		t.Errorf("read key: %v", got)
	}
	_, aiOnly := e.newKey(t, store.KeySettings{Scopes: []string{"ai"}})
	if got := wantError(t, e.client(t, e.h, aiOnly).Request(http.MethodGet, "/v1/ai/usage", nil), 403, "forbidden"); got["required_scope"] != "read" {
		t.Errorf("ai key reading usage: %v", got)
	}

	// A plan without the ai feature.
	starter := newAIEnv(t, "starter", 10*store.EUR, aitest.Rewrite, nil)
	for _, r := range []*apitest.Response{
		starter.c.Request(http.MethodPost, "/v1/ai/generate", map[string]any{"prompt": "x"}),
		starter.c.Request(http.MethodGet, "/v1/ai/credit", nil),
	} {
		if got := wantError(t, r, 402, "plan_required"); got["feature"] != "ai" {
			t.Errorf("starter plan: %v", got)
		}
	}
}

func TestAIRateLimit(t *testing.T) {
	t.Parallel()
	e := newAIEnv(t, "pro", 10*store.EUR, fixedTokens(aitest.Rewrite), nil)
	_, second := e.newKey(t, store.KeySettings{Name: "second"})
	keys := []*apitest.Client{e.c, e.client(t, e.h, second)}
	body := map[string]any{"action": "fix", "text": "Hallo"}
	for i := range 30 {
		if r := keys[i%2].Request(http.MethodPost, "/v1/ai/generate", body); r.Status != 200 {
			t.Fatalf("request %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	// The account's 31st AI request in this minute, whichever key sends it.
	for _, c := range keys {
		r := c.Request(http.MethodPost, "/v1/ai/generate", body)
		got := wantError(t, r, 429, "rate_limited")
		if r.Header.Get("Retry-After") != "30" || got["retry_after"] != float64(30) {
			t.Errorf("429: Retry-After %q, error %v", r.Header.Get("Retry-After"), got)
		}
		if r.Header.Get("X-RateLimit-Limit") != "120" { // the key's own limit is another budget
			t.Errorf("X-RateLimit-Limit %q", r.Header.Get("X-RateLimit-Limit"))
		}
	}
	if n := providerCalls(e.primary); n != 30 || e.balance(t) != 10*store.EUR-30*34 {
		t.Errorf("%d provider calls, balance %s", n, e.balance(t))
	}
	// Reading the ledger is not an AI call; another account has its own budget.
	if r := e.c.Request(http.MethodGet, "/v1/ai/credit", nil); r.Status != 200 {
		t.Errorf("credit during the AI limit: %d", r.Status)
	}
	other := newAIEnv(t, "pro", store.EUR, aitest.Rewrite, nil)
	if r := other.c.Request(http.MethodPost, "/v1/ai/generate", body); r.Status != 200 {
		t.Errorf("other account: %d", r.Status)
	}
	// The next minute opens a new budget.
	e.clock.add(time.Minute)
	if r := e.c.Request(http.MethodPost, "/v1/ai/generate", body); r.Status != 200 {
		t.Errorf("next minute: %d %s", r.Status, r.Body)
	}
}
