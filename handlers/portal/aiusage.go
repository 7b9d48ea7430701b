package portal

import (
	"net/http"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/views"
)

// aiLedgerPerPage is the number of ledger rows per page.
const aiLedgerPerPage = 50

// aiUsage shows the AI credit and the ledger: the figures of GET /v1/ai/credit
// and GET /v1/ai/usage.
func (p *Portal) aiUsage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	credit, err := p.db.AICredit(ctx, accountID(r), p.now())
	if err != nil {
		return err
	}
	page := queryPage(r)
	entries, total, err := p.db.AILedger(ctx, accountID(r), store.AILedgerFilter{}, store.Page{Page: page, PerPage: aiLedgerPerPage})
	if err != nil {
		return err
	}
	u := views.AIUsage{Credit: credit, Entries: entries, ActionLabel: ai.ActionLabel,
		Pager: views.Pager{Page: page, PerPage: aiLedgerPerPage, Total: total, Target: "#ai-ledger",
			URL: func(n int) string { return pageURL("/ai/usage", nil, n) }}}
	s := p.shell(r, views.TextFor(ctx).AIUsage.Title, views.NavAIUsage)
	p.page(w, r, http.StatusOK, views.AIUsagePage(s, u), views.AIUsageSection(u))
	return nil
}

// needFeature serves h only to accounts whose plan has feature; others get a
// page that names it and points to the plan page (402, as the API answers).
func (p *Portal) needFeature(feature string, h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return p.handle(func(w http.ResponseWriter, r *http.Request) error {
		if err := viewer(r).Plan.Require(feature); err != nil {
			t := views.TextFor(r.Context())
			p.errorPage(w, r, http.StatusPaymentRequired, t.Plan.FeatureTitle,
				sprintf(t.Plan.FeatureBody, views.FeatureLabel(t, feature)))
			return nil
		}
		return h(w, r)
	})
}
