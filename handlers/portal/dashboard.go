package portal

import (
	"context"
	"net/http"

	"github.com/a-h/templ"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// dashboardPanel builds one part of the dashboard for the signed-in user: it loads
// its own data (filtered on v.Account.ID) and returns a self-contained component.
type dashboardPanel func(ctx context.Context, v store.Viewer) (templ.Component, error)

// dashboardPanels are the parts of the dashboard, top to bottom. A feature adds its
// panel here (contacts over time, recent campaigns …).
func (p *Portal) dashboardPanels() []dashboardPanel {
	return []dashboardPanel{
		p.usagePanel,
	}
}

func (p *Portal) dashboard(w http.ResponseWriter, r *http.Request) error {
	v := viewer(r)
	var panels []templ.Component
	for _, build := range p.dashboardPanels() {
		c, err := build(r.Context(), v)
		if err != nil {
			return err
		}
		panels = append(panels, c)
	}
	s := p.shell(r, views.TextFor(r.Context()).Dashboard.Title, views.NavDashboard)
	p.render(w, r, http.StatusOK, views.DashboardPage(s, panels))
	return nil
}

// usagePanel shows the plan's limits and what the account uses of them.
func (p *Portal) usagePanel(ctx context.Context, v store.Viewer) (templ.Component, error) {
	u, err := p.db.Usage(ctx, v.Account.ID, p.now())
	if err != nil {
		return nil, err
	}
	t := views.TextFor(ctx).Dashboard
	pl := v.Plan
	return views.UsagePanel(views.PlanUsage{
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
		UpgradeURL:  pl.UpgradeURL,
	}), nil
}
