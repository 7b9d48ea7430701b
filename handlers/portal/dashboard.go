package portal

import (
	"context"
	"net/http"
	"strconv"

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
		p.senderNoticePanel,
		p.onboardingPanel,
		p.activityPanel,
		p.campaignsPanel,
		p.usagePanel,
	}
}

// onboardingPanel is the first-steps checklist of a new account, ticked from
// its data; once every step is done it disappears.
func (p *Portal) onboardingPanel(ctx context.Context, v store.Viewer) (templ.Component, error) {
	o, err := p.db.Onboarding(ctx, v.Account.ID)
	if err != nil {
		return nil, err
	}
	// The operator's relay sends for accounts without an SMTP server of their own.
	relay := p.mail != nil && !p.mail.DevOutboxEnabled()
	steps := []views.OnboardingStep{
		{ID: "sender", Href: "/settings/sender", Done: o.Sender},
		{ID: "smtp", Href: "/smtp-servers/new", Done: o.SMTPServer || relay},
		{ID: "audience", Href: "/contacts/import", Done: o.Audience},
		{ID: "newsletter", Href: "/newsletters/new", Done: o.Newsletter},
		{ID: "test", Href: "/newsletters", Done: o.Sent},
	}
	for _, st := range steps {
		if !st.Done {
			return views.OnboardingPanel(steps), nil
		}
	}
	return templ.NopComponent, nil
}

// activityDays is the period of the dashboard's activity panel.
const activityDays = 30

// recentCampaigns is the number of campaigns the dashboard shows.
const recentCampaigns = 6

// activityPanel shows the last 30 days: sends and rates (the figures of GET
// /v1/analytics/overview) and the contacts over time (GET
// /v1/analytics/timeseries).
func (p *Portal) activityPanel(ctx context.Context, v store.Viewer) (templ.Component, error) {
	now := p.now()
	period := store.Period{From: store.BerlinMidnight(now).AddDate(0, 0, -(activityDays - 1)), To: store.BerlinMidnight(now)}
	o, err := p.db.AnalyticsOverview(ctx, v.Account.ID, period)
	if err != nil {
		return nil, err
	}
	days, err := p.db.AnalyticsTimeseries(ctx, v.Account.ID, period, store.IntervalDay)
	if err != nil {
		return nil, err
	}
	t := views.TextFor(ctx).Analytics
	chart := views.Chart{ID: "contacts", Kind: views.ChartLine, Title: t.ContactsChartTitle,
		Desc: sprintf(t.ContactsChartDesc, activityDays), LabelHead: t.Day}
	series := views.ChartSeries{Name: t.Contacts}
	for _, d := range days {
		chart.Labels = append(chart.Labels, d.Day.Format("02.01."))
		series.Values = append(series.Values, float64(d.Contacts))
	}
	chart.Series = []views.ChartSeries{series}
	return views.ActivityPanel(views.ActivitySummary{Days: activityDays, Overview: o, Contacts: chart}), nil
}

// campaignsPanel shows the last sent campaigns with their open and click rates
// (the figures of GET /v1/campaigns), oldest to newest in the chart. Drafts and
// scheduled mail have no rates yet and would only show as empty bars.
func (p *Portal) campaignsPanel(ctx context.Context, v store.Viewer) (templ.Component, error) {
	list, _, err := p.db.ListCampaigns(ctx, v.Account.ID, store.CampaignFilter{Status: store.CampaignSent}, store.Page{Page: 1, PerPage: recentCampaigns})
	if err != nil {
		return nil, err
	}
	t := views.TextFor(ctx).Analytics
	chart := views.Chart{ID: "campaign-rates", Kind: views.ChartBar, Title: t.RatesChartTitle, Desc: t.RatesChartDesc,
		Percent: true, LabelHead: t.Campaign}
	opens, clicks := views.ChartSeries{Name: t.OpenRate}, views.ChartSeries{Name: t.ClickRate}
	for i := len(list) - 1; i >= 0; i-- {
		c := list[i]
		chart.Labels = append(chart.Labels, shorten(campaignName(c), 18))
		opens.Values = append(opens.Values, c.OpenRate())
		clicks.Values = append(clicks.Values, c.ClickRate())
	}
	chart.Series = []views.ChartSeries{opens, clicks}
	return views.CampaignsPanel(views.RecentCampaigns{Campaigns: list, Rates: chart}), nil
}

func campaignName(c store.CampaignSummary) string {
	if c.Name != "" {
		return c.Name
	}
	if c.Subject != "" {
		return c.Subject
	}
	return "#" + strconv.FormatInt(c.ID, 10)
}

// shorten cuts s to at most n characters with an ellipsis (axis labels; the
// table below the chart has the whole name).
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
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

// usagePanel shows the plan's limits and what the account uses of them, with
// a link to the plan page.
func (p *Portal) usagePanel(ctx context.Context, v store.Viewer) (templ.Component, error) {
	u, err := p.planUsage(ctx, v)
	if err != nil {
		return nil, err
	}
	u.UpgradeURL = PlanPath
	return views.UsagePanel(u), nil
}
