package api

import (
	"net/http"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
)

// aiLimited counts a request against the account's AI budget (store.HitAI,
// shared with the portal's editor assistant) before h runs: 429 with
// Retry-After once the budget of the minute is spent. It comes on top of the
// key's own limit. Every attempt counts, also one that fails validation, as
// with the key's limit.
func (a *API) aiLimited(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		now := a.cfg.Now()
		res, err := a.db.HitAI(r.Context(), accountID(r), now)
		if err != nil {
			return err
		}
		if !res.Allowed {
			return errRateLimited(res, now)
		}
		return h(w, r)
	}
}

// aiGenerateRequest is the body of POST /ai/generate (optional as a whole).
type aiGenerateRequest struct {
	Action      string `json:"action"`
	Prompt      string `json:"prompt"`
	Text        string `json:"text"`
	HTML        string `json:"html"`
	Instruction string `json:"instruction"`
	Subject     string `json:"subject"`
	Context     string `json:"context"`
	Scope       string `json:"scope"`
	Model       string `json:"model"`
}

type aiGenerateData struct {
	Ideas []string `json:"ideas,omitempty"`
}

// aiGenerateResponse is the "AI generation result" of the description.
type aiGenerateResponse struct {
	Action       string         `json:"action"`
	Text         string         `json:"text"`
	HTML         *string        `json:"html"`
	Data         aiGenerateData `json:"data"`
	CostEUR      float64        `json:"cost_eur"`
	RemainingEUR float64        `json:"remaining_eur"`
	Model        string         `json:"model"`
	Provider     string         `json:"provider"`
	FallbackUsed bool           `json:"fallback_used"`
	TokensIn     int            `json:"tokens_in"`
	TokensOut    int            `json:"tokens_out"`
}

func (a *API) generateAI(w http.ResponseWriter, r *http.Request) error {
	var body aiGenerateRequest
	if err := decode(r, &body); err != nil {
		return err
	}
	in := ai.Input{
		Action: body.Action, Prompt: body.Prompt, Text: body.Text, HTML: body.HTML, Instruction: body.Instruction,
		Subject: body.Subject, Context: body.Context, Scope: body.Scope, Model: body.Model,
	}
	if err := in.Validate(); err != nil {
		return err
	}
	if a.ai == nil {
		return store.WithHint(errUnavailable, ai.HintNotConfigured)
	}
	respondInTx(a, w, r, http.StatusOK, newAIGenerateResponse)
	res, err := a.ai.Generate(r.Context(), accountID(r), in, requestID(r.Context()))
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newAIGenerateResponse(res))
}

func newAIGenerateResponse(res ai.Result) any {
	return aiGenerateResponse{
		Action: res.Action, Text: res.Text, HTML: res.HTML, Data: aiGenerateData{Ideas: res.Ideas},
		CostEUR: res.Cost.Float(), RemainingEUR: res.Remaining.Float(),
		Model: res.Model, Provider: res.Provider, FallbackUsed: res.FallbackUsed,
		TokensIn: res.TokensIn, TokensOut: res.TokensOut,
	}
}

// aiUsageEntry is one ledger row in GET /ai/usage.
type aiUsageEntry struct {
	ID           int64   `json:"id"`
	Kind         string  `json:"kind"`
	Action       string  `json:"action"`
	Model        string  `json:"model"`
	Provider     string  `json:"provider"`
	TokensIn     int     `json:"tokens_in"`
	TokensOut    int     `json:"tokens_out"`
	CostEUR      float64 `json:"cost_eur"`
	AmountEUR    float64 `json:"amount_eur"`
	FallbackUsed bool    `json:"fallback_used"`
	RequestID    string  `json:"request_id"`
	CreatedAt    Time    `json:"created_at"`
}

func (a *API) listAIUsage(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	entries, total, err := a.db.AILedger(r.Context(), accountID(r), store.AILedgerFilter{Kind: r.URL.Query().Get("kind")}, page)
	if err != nil {
		return err
	}
	out := make([]aiUsageEntry, len(entries))
	for i, e := range entries {
		cost := store.Money(0)
		if e.Kind == "debit" {
			cost = -e.Amount
		}
		out[i] = aiUsageEntry{
			ID: e.ID, Kind: e.Kind, Action: e.Action, Model: e.Model, Provider: e.Provider,
			TokensIn: e.TokensIn, TokensOut: e.TokensOut, CostEUR: cost.Float(), AmountEUR: e.Amount.Float(),
			FallbackUsed: e.FallbackUsed, RequestID: e.RequestID, CreatedAt: Time(e.CreatedAt),
		}
	}
	return writeList(w, r, out, page, total)
}

type aiModelPrice struct {
	Alias            string  `json:"alias"`
	Model            string  `json:"model"`
	InputEURPerMTok  float64 `json:"input_eur_per_mtok"`
	OutputEURPerMTok float64 `json:"output_eur_per_mtok"`
}

// aiCreditResponse is GET /ai/credit: the balance, this month's spending and the
// price list the costs are computed from.
type aiCreditResponse struct {
	BalanceEUR     float64        `json:"balance_eur"`
	SpentMonthEUR  float64        `json:"spent_month_eur"`
	RequestsMonth  int64          `json:"requests_month"`
	TopUpsTotalEUR float64        `json:"topups_total_eur"`
	MonthStart     Time           `json:"month_start"`
	Enabled        bool           `json:"enabled"`
	Models         []aiModelPrice `json:"models"`
}

func (a *API) getAICredit(w http.ResponseWriter, r *http.Request) error {
	c, err := a.db.AICredit(r.Context(), accountID(r), a.cfg.Now())
	if err != nil {
		return err
	}
	var models []aiModelPrice
	for _, m := range ai.Models() {
		models = append(models, aiModelPrice{Alias: m.Alias, Model: m.ID,
			InputEURPerMTok: m.Price.Input.Float(), OutputEURPerMTok: m.Price.Output.Float()})
	}
	return writeData(w, r, http.StatusOK, aiCreditResponse{
		BalanceEUR: c.Balance.Float(), SpentMonthEUR: c.SpentMonth.Float(), RequestsMonth: c.RequestsMonth,
		TopUpsTotalEUR: c.TopUpsTotal.Float(), MonthStart: Time(c.MonthStart), Enabled: a.ai.Enabled(), Models: models,
	})
}
