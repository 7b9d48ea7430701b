package ai

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"github.com/rundbrief/rundbrief/store"
)

// Insights supplies what won in an account's past A/B tests of one scope (seinfeld,
// soap, newsletter, email), one finding per line, e.g. "Betreffzeilen mit Frage:
// +18 % Öffnungen". The A/B test feature implements it (GET /ab-tests/insights).
type Insights interface {
	Insights(ctx context.Context, accountID int64, scope string) ([]string, error)
}

// Config configures a Service.
type Config struct {
	Primary  Provider // Anthropic; nil: off
	Fallback Provider // OpenAI-compatible; nil: off
	// FallbackPrice is what an answer of the fallback costs; nil: the default
	// model's price.
	FallbackPrice *Price
	Insights      Insights // nil: prompts carry no A/B findings
	// AttemptTimeout bounds one provider call; default 40 s. A primary timeout plus a
	// fallback timeout stay below the HTTP server's 90 s write timeout.
	AttemptTimeout time.Duration
	// RetryDelay is the pause before the one retry of the primary after a failed
	// connection; default 300 ms.
	RetryDelay time.Duration
	Log        *slog.Logger // nil: discard
}

// Service generates text and charges the account's AI credit for it.
type Service struct {
	db  *store.DB
	cfg Config
}

// NewService returns the service over db.
func NewService(db *store.DB, cfg Config) *Service {
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = 40 * time.Second
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = 300 * time.Millisecond
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{db: db, cfg: cfg}
}

// Enabled reports whether any provider is configured.
func (s *Service) Enabled() bool { return s != nil && (s.cfg.Primary != nil || s.cfg.Fallback != nil) }

// Call is one metered completion: the building block of Generate, and of features
// with their own prompts (sequence outlining, inbox reply drafts).
type Call struct {
	Action    string // recorded in the ledger, e.g. "improve" or "sequence_outline"
	Model     string // alias ("haiku", "sonnet"); "" is DefaultModel
	System    string
	Prompt    string
	MaxTokens int    // 0: 1024
	RequestID string // recorded in the ledger
	// Accept checks and cleans the answer before anything is charged; an error means
	// the answer is unusable, and the call fails with nothing charged. nil accepts
	// any non-empty answer.
	Accept func(answer string) (string, error)
	// Respond, if set, is called last in the debit's transaction with the
	// completion as it is returned: the caller stores the request's idempotent
	// response there (store.RecordIdempotent), so that it commits with the charge.
	Respond func(ctx context.Context, tx *sqlx.Tx, c Completion) error
}

// Completion is the result of a Call.
type Completion struct {
	Text         string
	Model        string // the model that answered
	Provider     string // "anthropic" or "openai"
	FallbackUsed bool
	TokensIn     int
	TokensOut    int
	Cost         store.Money
	Remaining    store.Money // the balance after the debit
}

// HintNotConfigured is the operator hint (log only) of a generation refused
// because no provider is configured.
const HintNotConfigured = "no AI provider is configured; set RUNDBRIEF_AI_ANTHROPIC_KEY or RUNDBRIEF_AI_FALLBACK_URL"

// The messages of unavailable errors are German: they reach the client.
const (
	msgNotConfigured = "Die KI-Textgenerierung ist auf diesem Server nicht eingerichtet."
	msgUnreachable   = "Der KI-Dienst ist gerade nicht erreichbar. Bitte in einigen Minuten erneut versuchen; es wurde nichts berechnet."
	msgUnusable      = "Die Antwort der KI war nicht verwendbar. Bitte erneut versuchen; es wurde nichts berechnet."
	msgUnusableHTML  = "Die KI hat die HTML-Struktur nicht unverändert gelassen. Bitte erneut versuchen; es wurde nichts berechnet."
)

// Complete runs one metered call: it refuses an account without credit (402), calls
// the primary provider (one retry after a failed connection) and on a timeout, 5xx
// or 429 the fallback, checks the answer, and debits the cost. With no provider
// reachable the error is a *store.UnavailableError and nothing is charged. The
// context cancels the provider call.
func (s *Service) Complete(ctx context.Context, accountID int64, c Call) (Completion, error) {
	if c.Model == "" {
		c.Model = DefaultModel
	}
	model, ok := LookupModel(c.Model)
	if !ok {
		return Completion{}, store.Invalid("model", modelMessage())
	}
	if !s.Enabled() {
		return Completion{}, store.WithHint(&store.UnavailableError{Service: "ai", Message: msgNotConfigured}, HintNotConfigured)
	}
	balance, err := s.db.AIBalance(ctx, accountID)
	if err != nil {
		return Completion{}, err
	}
	if balance <= 0 {
		return Completion{}, &store.LimitError{Limit: "ai_credit_eur"}
	}

	if c.MaxTokens <= 0 {
		c.MaxTokens = 1024
	}
	req := Request{Model: model.ID, System: c.System, Prompt: c.Prompt, MaxTokens: c.MaxTokens}
	res, provider, fallback, err := s.call(ctx, req)
	if err != nil {
		return Completion{}, err
	}
	text := cleanAnswer(res.Text)
	if res.Truncated {
		err = errors.New("ai: answer cut off at max_tokens")
	} else if text == "" {
		err = errors.New("ai: empty answer")
	} else if c.Accept != nil {
		text, err = c.Accept(text)
	}
	if err != nil {
		// The provider's tokens are the operator's loss here: charging for an answer the
		// client never gets would be unfair, and the AI rate limit bounds the damage.
		s.cfg.Log.Warn("ai answer unusable", "account_id", accountID, "action", c.Action, "provider", provider.Name(),
			"model", res.Model, "tokens_in", res.TokensIn, "tokens_out", res.TokensOut, "request_id", c.RequestID, "err", err)
		msg := msgUnusable
		if errors.Is(err, ErrStructure) {
			msg = msgUnusableHTML
		}
		return Completion{}, &store.UnavailableError{Service: "ai", Message: msg, Err: err}
	}

	price := model.Price
	if fallback {
		price = s.fallbackPrice()
	}
	out := Completion{
		Text: text, Model: res.Model, Provider: provider.Name(), FallbackUsed: fallback,
		TokensIn: res.TokensIn, TokensOut: res.TokensOut, Cost: price.Cost(res.TokensIn, res.TokensOut),
	}
	// The answer exists and the provider billed it: record it even if the client has
	// gone meanwhile (an idempotent retry then replays the stored result).
	charge := store.AICharge{
		Action: c.Action, Model: out.Model, Provider: out.Provider, TokensIn: out.TokensIn, TokensOut: out.TokensOut,
		FallbackUsed: fallback, Cost: out.Cost, RequestID: c.RequestID,
	}
	if c.Respond != nil {
		charge.Respond = func(ctx context.Context, tx *sqlx.Tx, balance store.Money) error {
			done := out
			done.Remaining = balance
			return c.Respond(ctx, tx, done)
		}
	}
	out.Remaining, err = s.db.AIDebit(context.WithoutCancel(ctx), accountID, charge)
	if err != nil {
		return Completion{}, err
	}
	return out, nil
}

func (s *Service) fallbackPrice() Price {
	if s.cfg.FallbackPrice != nil {
		return *s.cfg.FallbackPrice
	}
	m, _ := LookupModel(DefaultModel)
	return m.Price
}

// call asks the primary, then the fallback. It reports which provider answered and
// whether that was the fallback.
func (s *Service) call(ctx context.Context, req Request) (Response, Provider, bool, error) {
	var errs []error
	unavailable := false
	if p := s.cfg.Primary; p != nil {
		for attempt := 1; ; attempt++ {
			res, err := s.attempt(ctx, p, req)
			if err == nil {
				return res, p, false, nil
			}
			if ctx.Err() != nil {
				return Response{}, nil, false, fmt.Errorf("ai: %s: %w", p.Name(), ctx.Err())
			}
			errs = append(errs, err)
			var pe *Error
			if !errors.As(err, &pe) || !pe.Unavailable() {
				// The provider refused the request (e.g. a wrong key): an operator's
				// problem that a fallback would only hide. It answers 500 and is logged.
				return Response{}, nil, false, err
			}
			unavailable = true
			if !pe.Retryable() || attempt == 2 {
				break
			}
			select {
			case <-time.After(s.cfg.RetryDelay):
			case <-ctx.Done():
				return Response{}, nil, false, fmt.Errorf("ai: %s: %w", p.Name(), ctx.Err())
			}
		}
		s.cfg.Log.Warn("ai primary provider unavailable", "provider", p.Name(), "err", errors.Join(errs...))
	}
	if f := s.cfg.Fallback; f != nil {
		res, err := s.attempt(ctx, f, req)
		if err == nil {
			return res, f, true, nil
		}
		if ctx.Err() != nil {
			return Response{}, nil, false, fmt.Errorf("ai: %s: %w", f.Name(), ctx.Err())
		}
		errs = append(errs, err)
		var pe *Error
		if errors.As(err, &pe) && pe.Unavailable() {
			unavailable = true
		}
	}
	err := errors.Join(errs...)
	if !unavailable {
		return Response{}, nil, false, err
	}
	return Response{}, nil, false, &store.UnavailableError{Service: "ai", Message: msgUnreachable, Err: err}
}

// attempt is one provider call bounded by AttemptTimeout.
func (s *Service) attempt(ctx context.Context, p Provider, req Request) (Response, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.AttemptTimeout)
	defer cancel()
	res, err := p.Complete(ctx, req)
	if err != nil {
		var pe *Error
		if !errors.As(err, &pe) && errors.Is(err, context.DeadlineExceeded) {
			// A provider that does not classify its errors: a timeout is still a timeout.
			err = &Error{Provider: p.Name(), Kind: KindUnavailable, Err: err}
		}
		return Response{}, err
	}
	return res, nil
}

// Input is the body of POST /ai/generate.
type Input struct {
	Action      string // see ActionNames; "" with Prompt means custom
	Prompt      string // free instruction
	Text        string // source text
	HTML        string // alternative source: an HTML fragment whose structure is kept
	Instruction string // additional wish
	Subject     string // the mail's subject, as context
	Context     string // background, at most MaxContext characters
	Scope       string // seinfeld, soap, newsletter, email: draws on A/B findings
	Model       string // haiku (default) or sonnet
}

// Input limits, in characters. The source limits keep one call within the attempt
// timeout and its cost within cents.
const (
	MaxContext     = 4000
	MaxText        = 10_000
	MaxHTML        = 30_000
	MaxInstruction = 2000
	MaxSubject     = 300
)

// Validate normalises the input (trims, fills defaults) and reports every invalid
// field with a German message. It needs no database, so the portal's form uses it too.
func (in *Input) Validate() error {
	for _, f := range []*string{&in.Action, &in.Model, &in.Scope, &in.Prompt, &in.Instruction, &in.Subject, &in.Context} {
		*f = strings.TrimSpace(*f)
	}
	if strings.TrimSpace(in.Text) == "" {
		in.Text = ""
	}
	if strings.TrimSpace(in.HTML) == "" {
		in.HTML = ""
	}
	errs := store.Errs{}
	if in.Action == "" && in.Prompt != "" {
		in.Action = ActionCustom
	}
	a, ok := lookupAction(in.Action)
	switch {
	case in.Action == "":
		errs.Add("action", "Bitte eine Aktion (action) oder eine eigene Anweisung (prompt) angeben.")
	case !ok:
		errs.Add("action", "Unbekannte Aktion. Erlaubt: "+strings.Join(ActionNames(), ", ")+".")
	case a.name == ActionCustom && in.Prompt == "":
		errs.Add("prompt", "Für custom bitte eine Anweisung (prompt) angeben.")
	case a.rewrite && in.Text == "" && in.HTML == "":
		errs.Add("text", "Bitte den Ausgangstext angeben (text oder html).")
	case a.lines > 0 && in.Text == "" && in.HTML == "" && in.Subject == "" && in.Context == "":
		errs.Add("text", "Bitte einen Text, HTML, Betreff oder Hintergrund angeben, aus dem die Vorschläge entstehen.")
	}
	if in.Text != "" && in.HTML != "" {
		errs.Add("html", "Bitte entweder text oder html angeben, nicht beides.")
	}
	if in.HTML != "" && !hasText(in.HTML) {
		errs.Add("html", "Das HTML enthält keinen Text, der bearbeitet werden könnte.")
	}
	tooLong := func(field, v string, limit int) {
		if utf8.RuneCountInString(v) > limit {
			errs.Add(field, fmt.Sprintf("Höchstens %d Zeichen.", limit))
		}
	}
	tooLong("context", in.Context, MaxContext)
	tooLong("text", in.Text, MaxText)
	tooLong("html", in.HTML, MaxHTML)
	tooLong("prompt", in.Prompt, MaxInstruction)
	tooLong("instruction", in.Instruction, MaxInstruction)
	tooLong("subject", in.Subject, MaxSubject)
	if in.Model == "" {
		in.Model = DefaultModel
	}
	if _, ok := LookupModel(in.Model); !ok {
		errs.Add("model", modelMessage())
	}
	if _, ok := scopeLabel(in.Scope); in.Scope != "" && !ok {
		errs.Add("scope", "Erlaubt sind seinfeld, soap, newsletter und email.")
	}
	return errs.Err()
}

func modelMessage() string {
	var names []string
	for _, m := range Models() {
		names = append(names, m.Alias)
	}
	return "Unbekanntes Modell. Erlaubt: " + strings.Join(names, ", ") + "."
}

// Result is a finished generation.
type Result struct {
	Action string
	Text   string   // the text; for HTML input the readable text of HTML
	HTML   *string  // the rewritten fragment; nil unless the input was HTML and the action rewrites it
	Ideas  []string // subject_ideas (8) and preheader (3)
	Completion
}

// maxInsights bounds the A/B findings a prompt carries.
const maxInsights = 10

// Generate runs one action of POST /ai/generate for the account: validate, build
// the German prompt, call a provider, check the answer (exactly the number of
// suggestions; HTML with its structure unchanged) and debit the cost. requestID is
// recorded in the ledger.
func (s *Service) Generate(ctx context.Context, accountID int64, in Input, requestID string) (Result, error) {
	if err := in.Validate(); err != nil {
		return Result{}, err
	}
	a, _ := lookupAction(in.Action)
	isHTML := in.HTML != "" && a.lines == 0
	source := in.Text
	switch {
	case isHTML:
		source = in.HTML
	case in.HTML != "":
		source = htmlText(in.HTML) // suggestions are drawn from the text, the markup is noise
	}
	insights := s.insights(ctx, accountID, in.Scope)
	p := buildPrompt(a, in, source, isHTML, insights)

	accept := func(answer string) (string, error) { return answer, nil }
	var ideas []string
	switch {
	case a.lines > 0:
		accept = func(answer string) (string, error) {
			var err error
			ideas, err = parseIdeas(answer, a.lines)
			return strings.Join(ideas, "\n"), err
		}
	case isHTML:
		accept = func(answer string) (string, error) { return answer, checkStructure(source, answer) }
	}
	result := func(c Completion) Result {
		out := Result{Action: a.name, Text: c.Text, Ideas: ideas, Completion: c}
		if isHTML {
			h := c.Text
			out.HTML = &h
			out.Text = htmlText(h)
		}
		return out
	}
	c, err := s.Complete(ctx, accountID, Call{
		Action: a.name, Model: in.Model, System: p.system, Prompt: p.user,
		MaxTokens: maxTokens(a, source), RequestID: requestID, Accept: accept,
		// The request's idempotent response commits with the charge: a retry
		// after any failure past the debit replays it instead of paying again.
		Respond: func(ctx context.Context, tx *sqlx.Tx, c Completion) error {
			return store.RecordIdempotent(ctx, tx, result(c))
		},
	})
	if err != nil {
		return Result{}, err
	}
	return result(c), nil
}

// insights returns up to maxInsights findings for scope. They only enrich the
// prompt, so a failure is logged and the generation goes on without them.
func (s *Service) insights(ctx context.Context, accountID int64, scope string) []string {
	if scope == "" || s.cfg.Insights == nil {
		return nil
	}
	lines, err := s.cfg.Insights.Insights(ctx, accountID, scope)
	if err != nil {
		s.cfg.Log.Warn("ai: a/b insights unavailable", "account_id", accountID, "scope", scope, "err", err)
		return nil
	}
	var out []string
	for _, l := range lines {
		l = strings.Join(strings.Fields(l), " ") // one line each
		if l == "" {
			continue
		}
		if r := []rune(l); len(r) > 300 {
			l = string(r[:300]) + "…"
		}
		out = append(out, l)
	}
	return out[:min(len(out), maxInsights)]
}
