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
