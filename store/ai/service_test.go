package ai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/ai/aitest"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

const (
	anthropicKey  = "sk-ant-test"
	fallbackKey   = "sk-local"
	fallbackModel = "llama3.1:8b"
)

// fixture is an account with 10 EUR of AI credit and a service whose providers are
// fake servers speaking the real wire formats.
type fixture struct {
	db       *store.DB
	acct     int64
	primary  *aitest.Server
	fallback *aitest.Server
	svc      *ai.Service
}

type option func(*ai.Config)

func newFixture(t *testing.T, primary, fallback func(aitest.Call) aitest.Reply, opts ...option) *fixture {
	t.Helper()
	f := &fixture{db: dbtest.NewDB(t)}
	f.acct = newAccount(t, f.db)
	if _, err := f.db.AITopUp(context.Background(), f.acct, 10*store.EUR); err != nil {
		t.Fatal(err)
	}
	cfg := ai.Config{AttemptTimeout: 500 * time.Millisecond, RetryDelay: time.Millisecond}
	if primary != nil {
		f.primary = aitest.NewAnthropic(t, anthropicKey, primary)
		cfg.Primary = ai.NewAnthropic(f.primary.URL, anthropicKey)
	}
	if fallback != nil {
		f.fallback = aitest.NewOpenAI(t, fallbackKey, fallback)
		// Configured the way an Ollama user writes it: with /v1, which must not double.
		cfg.Fallback = ai.NewOpenAI(f.fallback.URL+"/v1", fallbackKey, fallbackModel)
	}
	for _, o := range opts {
		o(&cfg)
	}
	f.svc = ai.NewService(f.db, cfg)
	return f
}

func newAccount(t *testing.T, db *store.DB) int64 {
	t.Helper()
	res, err := db.CreateAccount(context.Background(), store.NewAccount{
		Name: "Acme", Email: store.RandomString(8) + "@acme.test", Plan: "pro",
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.Account.ID
}

func (f *fixture) balance(t *testing.T) store.Money {
	t.Helper()
	b, err := f.db.AIBalance(context.Background(), f.acct)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (f *fixture) debits(t *testing.T) []store.AILedgerEntry {
	t.Helper()
	rows, _, err := f.db.AILedger(context.Background(), f.acct, store.AILedgerFilter{Kind: "debit"}, store.Page{Page: 1, PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func calls(s *aitest.Server) int {
	if s == nil {
		return 0
	}
	return len(s.Calls())
}

// withTokens answers like respond with fixed token counts, so that costs are exact.
func withTokens(respond func(aitest.Call) aitest.Reply) func(aitest.Call) aitest.Reply {
	return func(c aitest.Call) aitest.Reply {
		r := respond(c)
		r.TokensIn, r.TokensOut = 1000, 500
		return r
	}
}

// haikuCost is 1000 input and 500 output tokens at haiku prices:
// 0.00095 + 0.002375 = 0.003325, rounded up to 0.0034 EUR.
const haikuCost = store.Money(34)

func TestEveryActionRequest(t *testing.T) {
	f := newFixture(t, withTokens(func(c aitest.Call) aitest.Reply {
		switch {
		case strings.Contains(c.System, "genau 8 Zeilen"):
			return aitest.Lines(8)(c)
		case strings.Contains(c.System, "genau 3 Zeilen"):
			return aitest.Lines(3)(c)
		}
		return aitest.Rewrite(c)
	}), nil)
	source := "Unser Sommer-Sale startet morgen, {{vorname}}. Alle Sandalen 20 % günstiger."
	cases := []struct {
		in     ai.Input
		action string
		task   []string // phrases of the action's system prompt
		model  string
		ideas  int
	}{
		{in: ai.Input{Action: "improve", Text: source}, task: []string{"klarer, flüssiger und überzeugender"}},
		{in: ai.Input{Action: "shorten", Text: source}, task: []string{"auf etwa die Hälfte"}},
		{in: ai.Input{Action: "expand", Text: source}, task: []string{"auf etwa das Doppelte"}},
		{in: ai.Input{Action: "subject_ideas", Text: source}, task: []string{"genau 8 unterschiedliche Betreffzeilen", "Gib genau 8 Zeilen aus"}, ideas: 8},
		{in: ai.Input{Action: "preheader", Subject: "Sommer-Sale", Context: "Sandalen-Aktion"}, task: []string{"genau 3 Vorschläge für den Preheader", "Gib genau 3 Zeilen aus"}, ideas: 3},
		{in: ai.Input{Action: "urgency", Text: source}, task: []string{"mehr Dringlichkeit", "keine künstliche Verknappung"}},
		{in: ai.Input{Action: "story", Text: source}, task: []string{"persönliche Geschichte"}},
		{in: ai.Input{Action: "emotional", Text: source}, task: []string{"emotionaler"}},
		{in: ai.Input{Action: "fix", Text: source}, task: []string{"ausschließlich Rechtschreibung"}},
		{in: ai.Input{Action: "translate_en", Text: source}, task: []string{"ins Englische", "Antworte ausschließlich auf Englisch"}},
		{in: ai.Input{Action: "custom", Prompt: "Schreibe es als Gedicht.", Text: source}, task: []string{"Führe die Anweisung des Nutzers aus"}},
		{in: ai.Input{Prompt: "Schreibe einen Absatz über Sandalen."}, action: "custom", task: []string{"Führe die Anweisung des Nutzers aus"}},
		{in: ai.Input{Action: "improve", Text: source, Model: "sonnet"}, task: []string{"klarer"}, model: "claude-sonnet-4-5"},
	}
	want := f.balance(t)
	for i, c := range cases {
		name := c.in.Action
		if name == "" {
			name = "prompt only"
		}
		t.Run(fmt.Sprintf("%02d %s", i, name), func(t *testing.T) {
			if c.in.Subject == "" {
				c.in.Subject = "Sommer-Sale ab morgen"
			}
			c.in.Instruction = "Bitte locker formulieren."
			if c.in.Context == "" {
				c.in.Context = "Wir sind ein kleiner Schuhladen in Köln."
			}
			res, err := f.svc.Generate(context.Background(), f.acct, c.in, fmt.Sprintf("req_%d", i))
			if err != nil {
				t.Fatal(err)
			}
			sent := f.primary.Calls()[len(f.primary.Calls())-1]

			// What went over the wire.
			model := c.model
			if model == "" {
				model = "claude-haiku-4-5"
			}
			if sent.Model != model || sent.Header.Get("x-api-key") != anthropicKey || sent.Header.Get("anthropic-version") != "2023-06-01" {
				t.Errorf("model %q, x-api-key %q, anthropic-version %q", sent.Model, sent.Header.Get("x-api-key"), sent.Header.Get("anthropic-version"))
			}
			if !strings.HasPrefix(sent.System, "Du bist ein erfahrener Texter für E-Mail-Marketing") || !strings.Contains(sent.System, "{{vorname}}") {
				t.Errorf("system prompt lacks the role and the placeholder rule:\n%s", sent.System)
			}
			for _, p := range c.task {
				if !strings.Contains(sent.System, p) {
					t.Errorf("system prompt lacks %q:\n%s", p, sent.System)
				}
			}
			for _, p := range []string{"Betreff der E-Mail: " + c.in.Subject, "Zusätzlicher Wunsch:\nBitte locker formulieren.", "Hintergrund:\n" + c.in.Context} {
				if !strings.Contains(sent.User, p) {
					t.Errorf("user message lacks %q:\n%s", p, sent.User)
				}
			}
			if c.in.Prompt != "" && !strings.Contains(sent.User, "Anweisung:\n"+c.in.Prompt) {
				t.Errorf("user message lacks the prompt:\n%s", sent.User)
			}
			if c.in.Text != "" && sent.Source() != source {
				t.Errorf("source between the markers: %q", sent.Source())
			}
			if strings.Contains(sent.System, "HTML-Fragment") {
				t.Error("HTML rules in a text request")
			}
			if sent.MaxTokens < 300 || sent.MaxTokens > 8192 {
				t.Errorf("max_tokens %d", sent.MaxTokens)
			}

			// What came back.
			wantAction := c.action
			if wantAction == "" {
				wantAction = c.in.Action
			}
			if res.Action != wantAction || res.Provider != "anthropic" || res.Model != model || res.FallbackUsed || res.HTML != nil {
				t.Errorf("result %+v", res)
			}
			if c.ideas > 0 {
				if len(res.Ideas) != c.ideas || res.Ideas[0] != "Vorschlag 1 für {{vorname}}" || res.Text != strings.Join(res.Ideas, "\n") {
					t.Errorf("ideas %q, text %q", res.Ideas, res.Text)
				}
			} else if res.Ideas != nil || !strings.HasPrefix(res.Text, "Neu: ") {
				t.Errorf("text %q, ideas %q", res.Text, res.Ideas)
			}
			cost := haikuCost
			if model == "claude-sonnet-4-5" {
				cost = 100 // 0.00285 + 0.007125 = 0.009975 → 0.0100
			}
			want -= cost
			if res.Cost != cost || res.Remaining != want || f.balance(t) != want || res.TokensIn != 1000 || res.TokensOut != 500 {
				t.Errorf("cost %s remaining %s balance %s, want %s and %s", res.Cost, res.Remaining, f.balance(t), cost, want)
			}
			d := f.debits(t)[0]
			if d.Action != wantAction || d.Model != model || d.Provider != "anthropic" || d.TokensIn != 1000 || d.TokensOut != 500 ||
				d.Amount != -cost || d.FallbackUsed || d.RequestID != fmt.Sprintf("req_%d", i) {
				t.Errorf("ledger row %+v", d)
			}
		})
	}
	if n := len(f.debits(t)); n != len(cases) {
		t.Errorf("%d debits for %d generations", n, len(cases))
	}
}

const mail = `<!--[if mso]><table><tr><td><![endif]--><div style="font-family:Arial"><h1 class="t">Hallo {{vorname}},</h1>` +
	`<p>Unser <strong>Sommer-Sale</strong> startet morgen.</p><p><a href="https://shop.example/sale?a=1&amp;b=2" title="Zum Sale">Jetzt ansehen</a>` +
	`<br><img src="https://cdn.example/b.png" alt="Banner"></p><style>p { color: #333 }</style></div><!--[if mso]></td></tr></table><![endif]-->`

func TestHTMLRoundTrip(t *testing.T) {
	f := newFixture(t, withTokens(aitest.Rewrite), nil)
	res, err := f.svc.Generate(context.Background(), f.acct, ai.Input{Action: "improve", HTML: mail}, "req_html")
	if err != nil {
		t.Fatal(err)
	}
	sent := f.primary.Calls()[0]
	if sent.Source() != mail || !strings.Contains(sent.System, "HTML-Fragment") || !strings.Contains(sent.System, "Alle Attribute") {
		t.Errorf("HTML request: source %q\nsystem %s", sent.Source(), sent.System)
	}
	want := aitest.RewriteHTML(mail, func(s string) string { return "Neu: " + s })
	if res.HTML == nil || *res.HTML != want {
		t.Fatalf("html\n got %v\nwant %s", res.HTML, want)
	}
	for _, s := range []string{"Neu: Hallo {{vorname}},", "Neu: Sommer-Sale", "Neu: Jetzt ansehen"} {
		if !strings.Contains(res.Text, s) {
			t.Errorf("text lacks %q: %q", s, res.Text)
		}
	}
	if strings.ContainsAny(res.Text, "<>") || res.Cost != haikuCost {
		t.Errorf("text %q cost %s", res.Text, res.Cost)
	}

	// Suggestions drawn from HTML read its text and answer no HTML.
	f.primary.SetRespond(aitest.Lines(8))
	ideas, err := f.svc.Generate(context.Background(), f.acct, ai.Input{Action: "subject_ideas", HTML: mail}, "")
	if err != nil {
		t.Fatal(err)
	}
	if src := f.primary.Calls()[1].Source(); strings.Contains(src, "<") || !strings.Contains(src, "Sommer-Sale") || ideas.HTML != nil || len(ideas.Ideas) != 8 {
		t.Errorf("ideas from HTML: source %q html %v ideas %d", src, ideas.HTML, len(ideas.Ideas))
	}

	// A model that breaks the structure: an error, and nothing is charged.
	broken := map[string]string{
		"tag dropped":          strings.NewReplacer("<strong>", "", "</strong>", "").Replace(want),
		"tag added":            strings.Replace(want, "startet", "<em>startet</em>", 1),
		"link changed":         strings.Replace(want, "sale?a=1", "sale?a=9", 1),
		"comment dropped":      strings.Replace(want, "<!--[if mso]><table><tr><td><![endif]-->", "", 1),
		"wrapped in html/body": "<html><body>" + want + "</body></html>",
		"plain text":           "Neu: Hallo {{vorname}}, unser Sommer-Sale startet morgen.",
	}
	before, debits := f.balance(t), len(f.debits(t))
	for name, answer := range broken {
		f.primary.SetRespond(aitest.Fixed(aitest.Reply{Text: answer}))
		_, err := f.svc.Generate(context.Background(), f.acct, ai.Input{Action: "shorten", HTML: mail}, "")
		var unavailable *store.UnavailableError
		if !errors.As(err, &unavailable) || !errors.Is(err, ai.ErrStructure) || !strings.Contains(unavailable.Message, "HTML-Struktur") {
			t.Errorf("%s: %v, want an unavailable error with ErrStructure", name, err)
		}
	}
	if f.balance(t) != before || len(f.debits(t)) != debits {
		t.Errorf("broken answers were charged: balance %s → %s", before, f.balance(t))
	}

	// A code fence around the answer is removed; alt text may change with the prose.
	f.primary.SetRespond(aitest.Fixed(aitest.Reply{Text: "```html\n" + strings.Replace(want, `alt="Banner"`, `alt="Sommer-Banner"`, 1) + "\n```"}))
	res, err = f.svc.Generate(context.Background(), f.acct, ai.Input{Action: "fix", HTML: mail}, "")
	if err != nil || res.HTML == nil || !strings.HasPrefix(*res.HTML, "<!--[if mso]>") || !strings.Contains(*res.HTML, "Sommer-Banner") {
		t.Errorf("fenced answer: %v %v", res.HTML, err)
	}
}

func TestFallback(t *testing.T) {
	cases := []struct {
		name            string
		primary         aitest.Reply
		primaryAttempts int
	}{
		{"500", aitest.Reply{Status: 500}, 1},
		{"503", aitest.Reply{Status: 503}, 1},
		{"529 overloaded", aitest.Reply{Status: 529, ErrMessage: "Overloaded"}, 1},
		{"429", aitest.Reply{Status: 429, Header: http.Header{"Retry-After": {"20"}}}, 1},
		{"timeout", aitest.Reply{Delay: 5 * time.Second, Text: "zu spät"}, 1},
		{"connection dropped", aitest.Reply{Hangup: true}, 2}, // one retry, then the fallback
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, aitest.Fixed(c.primary), withTokens(aitest.Rewrite))
			res, err := f.svc.Generate(context.Background(), f.acct, ai.Input{Action: "improve", Text: "Hallo Welt", Model: "sonnet"}, "req_fb")
			if err != nil {
				t.Fatal(err)
			}
			if n := calls(f.primary); n != c.primaryAttempts {
				t.Errorf("%d attempts at the primary, want %d", n, c.primaryAttempts)
			}
			if n := calls(f.fallback); n != 1 {
				t.Fatalf("%d calls of the fallback", n)
			}
			sent := f.fallback.Calls()[0]
			if sent.Path != "/v1/chat/completions" || sent.Header.Get("Authorization") != "Bearer "+fallbackKey || sent.Model != fallbackModel ||
				!strings.Contains(sent.System, "klarer, flüssiger") || sent.Source() != "Hallo Welt" || sent.MaxTokens < 1024 {
				t.Errorf("fallback request: %s %v %q max_tokens %d", sent.Path, sent.Header.Get("Authorization"), sent.Model, sent.MaxTokens)
			}
			// The fallback is priced like haiku unless configured, whatever model was asked for.
			if !res.FallbackUsed || res.Provider != "openai" || res.Model != fallbackModel || res.Text != "Neu: Hallo Welt" || res.Cost != haikuCost {
				t.Errorf("result %+v", res)
			}
			if d := f.debits(t); len(d) != 1 || !d[0].FallbackUsed || d[0].Provider != "openai" || d[0].Model != fallbackModel || d[0].Amount != -haikuCost {
				t.Errorf("ledger %+v", d)
			}
		})
	}
}

func TestFallbackPriceAndEstimatedTokens(t *testing.T) {
	free := ai.Price{}
	f := newFixture(t, aitest.Fixed(aitest.Reply{Status: 500}), aitest.Fixed(aitest.Reply{Text: "Antwort ohne Zählung", NoUsage: true}),
		func(c *ai.Config) { c.FallbackPrice = &free })
	res, err := f.svc.Generate(context.Background(), f.acct, ai.Input{Action: "fix", Text: "Hallo Welt"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Cost != 0 || res.Remaining != 10*store.EUR || res.TokensIn == 0 || res.TokensOut == 0 {
		t.Errorf("free fallback without usage: %+v", res)
	}
	if d := f.debits(t); len(d) != 1 || d[0].TokensIn != res.TokensIn {
		t.Errorf("a free call is still in the ledger: %+v", d)
	}

	// Without usage from a priced provider the estimate is charged.
	g := newFixture(t, aitest.Fixed(aitest.Reply{Text: strings.Repeat("Wort ", 400), NoUsage: true}), nil)
	res, err = g.svc.Generate(context.Background(), g.acct, ai.Input{Action: "expand", Text: "Hallo Welt"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.TokensOut != 500 || res.Cost == 0 {
		t.Errorf("estimated tokens %d/%d, cost %s", res.TokensIn, res.TokensOut, res.Cost)
	}
}

func TestNoProviderReachable(t *testing.T) {
	cases := []struct {
		name              string
		primary, fallback func(aitest.Call) aitest.Reply
		message           string
	}{
		{"both fail", aitest.Fixed(aitest.Reply{Status: 500}), aitest.Fixed(aitest.Reply{Status: 502}), "nicht erreichbar"},
		{"primary times out, fallback down", aitest.Fixed(aitest.Reply{Delay: 5 * time.Second}), aitest.Fixed(aitest.Reply{Hangup: true}), "nicht erreichbar"},
		{"primary only, overloaded", aitest.Fixed(aitest.Reply{Status: 529}), nil, "nicht erreichbar"},
		{"fallback only, rate limited", nil, aitest.Fixed(aitest.Reply{Status: 429}), "nicht erreichbar"},
		{"none configured", nil, nil, "nicht eingerichtet"},
		{"answer cut off", aitest.Fixed(aitest.Reply{Text: "Ein halber", Truncated: true}), nil, "nicht verwendbar"},
		{"empty answer", aitest.Fixed(aitest.Reply{Text: "  "}), nil, "nicht verwendbar"},
		{"two of eight ideas", aitest.Lines(2), nil, "nicht verwendbar"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, c.primary, c.fallback)
			in := ai.Input{Action: "improve", Text: "Hallo Welt"}
			if c.name == "two of eight ideas" {
				in = ai.Input{Action: "subject_ideas", Text: "Hallo Welt"}
			}
			_, err := f.svc.Generate(context.Background(), f.acct, in, "")
			var unavailable *store.UnavailableError
			if !errors.As(err, &unavailable) || !strings.Contains(unavailable.Message, c.message) || !strings.Contains(unavailable.Message, "nicht") {
				t.Fatalf("%v, want an unavailable error saying %q", err, c.message)
			}
			if f.balance(t) != 10*store.EUR || len(f.debits(t)) != 0 {
				t.Errorf("charged although nothing was delivered: balance %s", f.balance(t))
			}
		})
	}
}

func TestPrimaryRejectionIsNotHiddenByTheFallback(t *testing.T) {
	f := newFixture(t, aitest.Rewrite, aitest.Rewrite)
	f.svc = ai.NewService(f.db, ai.Config{
		Primary:  ai.NewAnthropic(f.primary.URL, "sk-wrong"),
		Fallback: ai.NewOpenAI(f.fallback.URL, fallbackKey, fallbackModel),
	})
	_, err := f.svc.Generate(context.Background(), f.acct, ai.Input{Action: "improve", Text: "Hallo"}, "")
	var pe *ai.Error
	var unavailable *store.UnavailableError
	if !errors.As(err, &pe) || pe.Status != 401 || pe.Kind != ai.KindRejected || errors.As(err, &unavailable) {
		t.Fatalf("%v, want the provider's 401 as a rejected error", err)
	}
	if calls(f.fallback) != 0 || len(f.debits(t)) != 0 {
		t.Errorf("fallback called %d times", calls(f.fallback))
	}
}

func TestRedirectToAnotherHostIsNotFollowed(t *testing.T) {
	elsewhere := aitest.NewAnthropic(t, anthropicKey, aitest.Rewrite)
	f := newFixture(t, aitest.Fixed(aitest.Reply{Status: 307, Header: http.Header{"Location": {elsewhere.URL + "/v1/messages"}}}), nil)
	_, err := f.svc.Generate(context.Background(), f.acct, ai.Input{Action: "improve", Text: "Hallo"}, "")
	if err == nil || calls(elsewhere) != 0 {
		t.Fatalf("redirect followed: %v, %d calls elsewhere", err, calls(elsewhere))
	}
}

func TestCreditIsChecked(t *testing.T) {
	f := newFixture(t, withTokens(aitest.Rewrite), nil)
	acct := newAccount(t, f.db) // no credit at all
	_, err := f.svc.Generate(context.Background(), acct, ai.Input{Action: "improve", Text: "Hallo"}, "")
	var limit *store.LimitError
	if !errors.As(err, &limit) || limit.Limit != "ai_credit_eur" || calls(f.primary) != 0 {
		t.Fatalf("empty balance: %v, %d provider calls", err, calls(f.primary))
	}
	// Any positive balance allows one call; its full cost is debited, and the
	// balance may end slightly below zero. Then the account is refused.
	if _, err := f.db.AITopUp(context.Background(), acct, 1); err != nil {
		t.Fatal(err)
	}
	res, err := f.svc.Generate(context.Background(), acct, ai.Input{Action: "improve", Text: "Hallo"}, "")
	if err != nil || res.Remaining != 1-haikuCost {
		t.Fatalf("last call: %+v %v", res, err)
	}
	if _, err := f.svc.Generate(context.Background(), acct, ai.Input{Action: "improve", Text: "Hallo"}, ""); !errors.As(err, &limit) {
		t.Errorf("negative balance: %v", err)
	}
	if calls(f.primary) != 1 {
		t.Errorf("%d provider calls, want 1", calls(f.primary))
	}
}

func TestRequestContextCancelsTheProviderCall(t *testing.T) {
	f := newFixture(t, aitest.Fixed(aitest.Reply{Delay: time.Minute, Text: "nie"}), aitest.Rewrite,
		func(c *ai.Config) { c.AttemptTimeout = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.svc.Generate(ctx, f.acct, ai.Input{Action: "improve", Text: "Hallo"}, "")
		done <- err
	}()
	waitFor(t, "the provider call", func() bool { return calls(f.primary) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want context.Canceled", err)
	}
	waitFor(t, "the upstream request to end", func() bool { return f.primary.Canceled() == 1 })
	if calls(f.fallback) != 0 || len(f.debits(t)) != 0 {
		t.Errorf("after the client left: %d fallback calls, %d debits", calls(f.fallback), len(f.debits(t)))
	}
}

// waitFor polls cond until it holds; a condition that never comes fails after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}

type insights struct {
	lines []string
	err   error
	asked []string
}

func (i *insights) Insights(_ context.Context, _ int64, scope string) ([]string, error) {
	i.asked = append(i.asked, scope)
	return i.lines, i.err
}

func TestInsightsReachThePrompt(t *testing.T) {
	src := &insights{lines: []string{"Betreffzeilen mit Frage: +18 % Öffnungen", "Persönliche Anrede\nmit {{vorname}}: +9 % Klicks", "", strings.Repeat("lang ", 100)}}
	for i := range 10 {
		src.lines = append(src.lines, fmt.Sprintf("Befund %d", i))
	}
	f := newFixture(t, aitest.Lines(8), nil, func(c *ai.Config) { c.Insights = src })
	if _, err := f.svc.Generate(context.Background(), f.acct, ai.Input{Action: "subject_ideas", Subject: "Sommer", Scope: "newsletter"}, ""); err != nil {
		t.Fatal(err)
	}
	user := f.primary.Calls()[0].User
	for _, want := range []string{"Erkenntnisse aus früheren A/B-Tests (Newsletter)", "- Betreffzeilen mit Frage: +18 % Öffnungen\n",
		"- Persönliche Anrede mit {{vorname}}: +9 % Klicks\n", "- Befund 6\n"} {
		if !strings.Contains(user, want) {
			t.Errorf("prompt lacks %q:\n%s", want, user)
		}
	}
	if strings.Contains(user, "Befund 7") || strings.Contains(user, strings.Repeat("lang ", 70)) {
		t.Errorf("insights not bounded to 10 lines of 300 characters:\n%s", user)
	}
	// Without a scope nothing is asked; a failing source does not stop the generation.
	if _, err := f.svc.Generate(context.Background(), f.acct, ai.Input{Action: "subject_ideas", Subject: "Sommer"}, ""); err != nil {
		t.Fatal(err)
	}
	src.err = errors.New("a/b store down")
	if _, err := f.svc.Generate(context.Background(), f.acct, ai.Input{Action: "subject_ideas", Subject: "Sommer", Scope: "soap"}, ""); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(src.asked, []string{"newsletter", "soap"}) || strings.Contains(f.primary.Calls()[1].User, "A/B-Tests") {
		t.Errorf("asked %v", src.asked)
	}

	// With no Insights configured the prompt has no findings section.
	g := newFixture(t, aitest.Lines(8), nil)
	if _, err := g.svc.Generate(context.Background(), g.acct, ai.Input{Action: "subject_ideas", Subject: "Sommer", Scope: "email"}, ""); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(g.primary.Calls()[0].User, "A/B-Tests") {
		t.Error("findings section without a source")
	}
}

func TestValidate(t *testing.T) {
	long := func(n int) string { return strings.Repeat("ä", n) }
	cases := []struct {
		in    ai.Input
		field string // "" = valid
	}{
		{ai.Input{Action: "improve", Text: "x"}, ""},
		{ai.Input{Prompt: "Schreib was"}, ""},
		{ai.Input{Action: "subject_ideas", Subject: "Sommer"}, ""},
		{ai.Input{Action: "preheader", Context: "Sale"}, ""},
		{ai.Input{Action: "improve", Text: "x", Context: long(ai.MaxContext)}, ""},
		{ai.Input{Action: "improve", Text: "x", Model: "sonnet", Scope: "seinfeld"}, ""},
		{ai.Input{}, "action"},
		{ai.Input{Action: "rewrite", Text: "x"}, "action"},
		{ai.Input{Action: "custom", Text: "x"}, "prompt"},
		{ai.Input{Action: "improve"}, "text"},
		{ai.Input{Action: "improve", Text: "   "}, "text"},
		{ai.Input{Action: "subject_ideas"}, "text"},
		{ai.Input{Action: "improve", Text: "x", HTML: "<p>x</p>"}, "html"},
		{ai.Input{Action: "improve", HTML: `<img src="a.png">`}, "html"},
		{ai.Input{Action: "improve", Text: "x", Context: long(ai.MaxContext + 1)}, "context"},
		{ai.Input{Action: "improve", Text: long(ai.MaxText + 1)}, "text"},
		{ai.Input{Action: "improve", Text: "x", Model: "opus"}, "model"},
		{ai.Input{Action: "improve", Text: "x", Model: "claude-haiku-4-5"}, "model"},
		{ai.Input{Action: "improve", Text: "x", Scope: "webinar"}, "scope"},
		{ai.Input{Action: "improve", Text: "x", Instruction: long(ai.MaxInstruction + 1)}, "instruction"},
	}
	for i, c := range cases {
		err := c.in.Validate()
		var ve *store.ValidationError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%d %+v: %v", i, c.in, err)
		case c.field != "" && (!errors.As(err, &ve) || ve.Fields[c.field] == ""):
			t.Errorf("%d %+v: %v, want a message for %s", i, c.in, err, c.field)
		}
	}
	in := ai.Input{Prompt: " Schreib was "}
	if err := in.Validate(); err != nil || in.Action != "custom" || in.Model != "haiku" || in.Prompt != "Schreib was" {
		t.Errorf("normalised %+v %v", in, err)
	}
}
