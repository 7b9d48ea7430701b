package portal

import (
	"context"
	"net/http"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// maxLinkRows bounds the links the statistics page lists.
const maxLinkRows = 100

// newsletterStats shows a newsletter's statistics: the same figures as GET
// /v1/newsletters/{id}/stats (store.NewsletterStats), its days as a chart and
// its links with their clicks. Another account's id is not found.
func (p *Portal) newsletterStats(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	ctx := r.Context()
	st, err := p.db.NewsletterStats(ctx, accountID(r), id)
	if err != nil {
		return err
	}
	links, _, _, err := p.db.CampaignLinkStats(ctx, accountID(r), id, store.Page{Page: 1, PerPage: maxLinkRows})
	if err != nil {
		return err
	}
	t := views.TextFor(ctx).Stats
	c := st.Campaign
	page := views.NewsletterStats{
		ID: c.ID, Name: c.Name, Subject: c.Subject, Status: c.Status, StartedAt: c.StartedAt, FinishedAt: c.FinishedAt,
		Counts: st.Counts, Engagement: st.Engagement, Links: links,
		Timeline: timelineChart(ctx, c.Name, st.Days),
	}
	p.render(w, r, http.StatusOK, views.NewsletterStatsPage(p.shell(r, sprintf(t.Title, c.Name), views.NavNewsletters), page))
	return nil
}

// timelineChart draws a campaign's days (sent, opened, clicked) as a line
// chart, the days without activity between the first and the last filled in.
func timelineChart(ctx context.Context, name string, days []store.DayEngagement) views.Chart {
	t := views.TextFor(ctx).Stats
	c := views.Chart{ID: "timeline", Kind: views.ChartLine, Title: t.TimelineTitle, Desc: sprintf(t.TimelineDesc, name), LabelHead: t.Day}
	sent := views.ChartSeries{Name: t.Sent}
	opened := views.ChartSeries{Name: t.Opened}
	clicked := views.ChartSeries{Name: t.Clicked}
	if len(days) > 0 {
		byDay := make(map[time.Time]store.DayEngagement, len(days))
		for _, d := range days {
			byDay[d.Day] = d
		}
		for d := days[0].Day; !d.After(days[len(days)-1].Day); d = d.AddDate(0, 0, 1) {
			e := byDay[d]
			c.Labels = append(c.Labels, d.Format("02.01."))
			sent.Values = append(sent.Values, float64(e.Sent))
			opened.Values = append(opened.Values, float64(e.Opens))
			clicked.Values = append(clicked.Values, float64(e.Clicks))
		}
	}
	c.Series = []views.ChartSeries{sent, opened, clicked}
	return c
}
