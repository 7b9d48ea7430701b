package portal

import (
	"context"
	"net/http"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// needPlan serves h only to accounts whose plan has feature; others get the
// page texts words, with status 402 as the API answers. Every page of a plan
// feature goes through it.
func (p *Portal) needPlan(feature string, texts func(views.Text) (title, body string), h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return p.handle(func(w http.ResponseWriter, r *http.Request) error {
		if err := viewer(r).Plan.Require(feature); err != nil {
			title, body := texts(views.TextFor(r.Context()))
			p.errorPage(w, r, http.StatusPaymentRequired, title, body)
			return nil
		}
		return h(w, r)
	})
}

// needFeature is needPlan with the general page, which names the feature and
// points to the plan page: for features without texts of their own.
func (p *Portal) needFeature(feature string, h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return p.needPlan(feature, func(t views.Text) (string, string) {
		return t.Plan.FeatureTitle, sprintf(t.Plan.FeatureBody, views.FeatureLabel(t, feature))
	}, h)
}

// PlanPath is the portal's plan page. The API's upgrade_url of a 402 points
// here (BaseURL + PlanPath), so it must stay a page every signed-in user sees.
const PlanPath = "/settings/plan"

// planPage shows the account's plan: its features, its limits with what the
// account uses of them, and how to change the plan (RUNDBRIEF_UPGRADE_URL, or
// else the operator, who runs `rundbrief account set-plan`).
func (p *Portal) planPage(w http.ResponseWriter, r *http.Request) error {
	v := viewer(r)
	u, err := p.planUsage(r.Context(), v)
	if err != nil {
		return err
	}
	s := p.shell(r, views.TextFor(r.Context()).Plan.Title, views.NavPlan)
	p.render(w, r, http.StatusOK, views.PlanPage(s, views.PlanChange{
		Usage: u, AccountID: v.Account.ID, ChangeURL: p.upgradeURL,
	}))
	return nil
}

// planUsage is the plan with its features and each limit with its usage, as
// the dashboard's panel and the plan page show them.
func (p *Portal) planUsage(ctx context.Context, v store.Viewer) (views.PlanUsage, error) {
	u, err := p.db.Usage(ctx, v.Account.ID, p.now())
	if err != nil {
		return views.PlanUsage{}, err
	}
	t := views.TextFor(ctx).Dashboard
	pl := v.Plan
	return views.PlanUsage{
		Plan:     pl.Name,
		Features: pl.Features,
		Items: []views.UsageItem{
			{ID: "contacts", Label: t.Contacts, Used: u.Contacts, Limit: pl.MaxContacts},
			{ID: "lists", Label: t.Lists, Used: u.Lists, Limit: pl.MaxLists},
			{ID: "sends_today", Label: t.SendsToday, Used: u.SendsToday, Limit: pl.MaxSendsPerDay},
			{ID: "storage", Label: t.Storage, Used: u.StorageBytes, Limit: pl.MaxStorageBytes, Bytes: true},
			{ID: "webhooks", Label: t.Webhooks, Used: u.Webhooks, Limit: pl.MaxWebhooks},
			{ID: "api_keys", Label: t.APIKeys, Used: u.APIKeys, Limit: pl.MaxAPIKeys},
		},
		AICreditEUR: u.AICreditEUR,
		ShowAI:      pl.Has("ai"),
	}, nil
}
