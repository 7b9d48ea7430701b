package portal

import (
	"context"
	"encoding/csv"
	"net/http"
	"strconv"
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
	if c.StartedAt != nil {
		hours, err := p.db.CampaignHours(ctx, accountID(r), id, c.StartedAt.Truncate(time.Hour), c.StartedAt.Truncate(time.Hour).Add(firstHours*time.Hour))
		if err != nil {
			return err
		}
		page.Hours = hoursChart(ctx, *c.StartedAt, hours)
	}
	path := views.NewsletterURL(id, "stats")
	if page.Recipients, err = p.recipientsOf(r, id, path, "#recipients"); err != nil {
		return err
	}
	if isHTMX(r) { // a filter or page of the recipients
		p.render(w, r, http.StatusOK, views.RecipientSection(page.Recipients))
		return nil
	}
	p.render(w, r, http.StatusOK, views.NewsletterStatsPage(p.shell(r, sprintf(t.Title, c.Name), views.NavNewsletters), page))
	return nil
}

// firstHours is the span of the hourly curve after a send: most opens and
// clicks of a newsletter happen in its first two days.
const firstHours = 48

// hoursChart draws the first opens and clicks per hour of the first 48 hours
// after started, every hour labelled in German time.
func hoursChart(ctx context.Context, started time.Time, hours []store.HourEngagement) views.Chart {
	t := views.TextFor(ctx).Stats
	c := views.Chart{ID: "hours", Kind: views.ChartLine, Title: t.HoursTitle, Desc: t.HoursDesc, LabelHead: t.Hour}
	opened, clicked := views.ChartSeries{Name: t.Opened}, views.ChartSeries{Name: t.Clicked}
	byHour := make(map[time.Time]store.HourEngagement, len(hours))
	for _, h := range hours {
		byHour[h.Hour.UTC()] = h
	}
	first := started.UTC().Truncate(time.Hour)
	for i := range firstHours {
		h := first.Add(time.Duration(i) * time.Hour)
		e := byHour[h]
		c.Labels = append(c.Labels, h.In(store.Berlin).Format("02.01. 15 Uhr"))
		opened.Values = append(opened.Values, float64(e.Opens))
		clicked.Values = append(clicked.Values, float64(e.Clicks))
	}
	c.Series = []views.ChartSeries{opened, clicked}
	return c
}

// exportRecipients writes a campaign's recipients under the ?outcome= filter
// as CSV: who opened, who clicked, who was skipped.
func (p *Portal) exportRecipients(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	f, outcome := recipientFilter(r.URL.Query().Get("outcome"))
	started := false
	var cw *csv.Writer
	err = p.db.ExportCampaignRecipients(r.Context(), accountID(r), id, f, func(batch []store.CampaignRecipient) error {
		if !started {
			started = true
			name := "empfaenger-" + strconv.FormatInt(id, 10)
			if outcome != "" {
				name += "-" + outcome
			}
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write([]byte("\xef\xbb\xbf")) // a BOM, so that spreadsheet programs read UTF-8
			cw = csv.NewWriter(w)
			if err := cw.Write([]string{"email", "status", "sent_at", "opened_at", "clicked_at", "error"}); err != nil {
				return err
			}
		}
		for _, rc := range batch {
			errText := ""
			if rc.Error != nil {
				errText = *rc.Error
			}
			if err := cw.Write([]string{rc.Email, rc.Status, csvTime(rc.SentAt), csvTime(rc.OpenedAt), csvTime(rc.ClickedAt), errText}); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
	if err != nil {
		if started {
			p.log.Error("export recipients", "err", err)
			return nil
		}
		return err
	}
	if !started { // nobody under the filter: the header alone
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="empfaenger-`+strconv.FormatInt(id, 10)+`.csv"`)
		_, _ = w.Write([]byte("\xef\xbb\xbfemail,status,sent_at,opened_at,clicked_at,error\n"))
	}
	return nil
}

// csvTime is an export's time: RFC 3339 in German time, empty when unset.
func csvTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.In(store.Berlin).Format(time.RFC3339)
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
