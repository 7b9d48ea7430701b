package views_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

func attrFloat(t *testing.T, v string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("not a number: %q", v)
	}
	return f
}

// cells is a table row's cells, each with its text normalised, joined by |.
func cells(row *goquery.Selection) string {
	return strings.Join(row.Children().Map(func(_ int, c *goquery.Selection) string { return text(c) }), "|")
}

func TestLineChart(t *testing.T) {
	c := views.Chart{ID: "verlauf", Kind: views.ChartLine, Title: "Verlauf", Desc: "Öffnungen und Klicks pro Tag.", LabelHead: "Tag",
		Labels: []string{"01.11.", "02.11.", "03.11."},
		Series: []views.ChartSeries{{Name: "Geöffnet", Values: []float64{4, 10, 2}}, {Name: "Geklickt", Values: []float64{1, 3, 0}}}}
	doc := render(t, views.ChartFigure(c))
	fig := tid(doc, "chart-verlauf")
	svg := fig.Find("svg")
	if svg.AttrOr("role", "") != "img" {
		t.Fatalf("svg role %q", svg.AttrOr("role", ""))
	}
	// The image is named by its title and described by its desc.
	ids := strings.Fields(svg.AttrOr("aria-labelledby", ""))
	if len(ids) != 2 || text(doc.Find("#"+ids[0])) != "Verlauf" || text(doc.Find("#"+ids[1])) != "Öffnungen und Klicks pro Tag." ||
		goquery.NodeName(doc.Find("#"+ids[0])) != "title" || goquery.NodeName(doc.Find("#"+ids[1])) != "desc" {
		t.Errorf("aria-labelledby %v", ids)
	}
	if n := fig.Find(`[data-testid="chart-line"]`).Length(); n != 2 {
		t.Errorf("%d lines, want 2", n)
	}
	// One point per value; the highest (10) is at the top of the plot, 0 at the baseline.
	dots := fig.Find("circle")
	if dots.Length() != 6 {
		t.Fatalf("%d points", dots.Length())
	}
	top := attrFloat(t, dots.Eq(1).AttrOr("cy", ""))
	base := attrFloat(t, dots.Eq(5).AttrOr("cy", ""))
	if !(top < base) || text(dots.Eq(1).Find("title")) != "02.11., Geöffnet: 10" {
		t.Errorf("points: top %v base %v, title %q", top, base, text(dots.Eq(1).Find("title")))
	}
	// Linear scale: 4 is 40 % of the way from the baseline to 10's point.
	four := attrFloat(t, dots.Eq(0).AttrOr("cy", ""))
	if got := (base - four) / (base - top); got < 0.39 || got > 0.41 {
		t.Errorf("scale: 4 sits at %.2f of 10", got)
	}
	if n := tid(doc, "chart-legend").Find("li").Length(); n != 2 {
		t.Errorf("legend entries %d", n)
	}
	// The data table has every value.
	table := tid(doc, "chart-table")
	if text(table.Find("caption")) != "Verlauf" || table.Find("tbody tr").Length() != 3 ||
		text(table.Find("thead th").Eq(1)) != "Geöffnet" || cells(table.Find("tbody tr").Eq(1)) != "02.11.|10|3" {
		t.Errorf("table: %s", text(table))
	}
	if table.Closest("details").Length() != 1 {
		t.Error("the table is not folded into details")
	}
}

func TestBarChartOfRates(t *testing.T) {
	c := views.Chart{ID: "raten", Kind: views.ChartBar, Title: "Raten", Desc: "Öffnungs- und Klickrate je Kampagne.", Percent: true,
		LabelHead: "Kampagne", Labels: []string{"Herbst", "Winter"},
		Series: []views.ChartSeries{{Name: "Öffnungsrate", Values: []float64{0.4, 0.2}}, {Name: "Klickrate", Values: []float64{0.2, 0.125}}}}
	doc := render(t, views.ChartFigure(c))
	bars := doc.Find(`[data-testid="chart-bar"]`)
	if bars.Length() != 4 {
		t.Fatalf("%d bars, want 4", bars.Length())
	}
	h := func(i int) float64 { return attrFloat(t, bars.Eq(i).AttrOr("height", "")) }
	// Bars in series order: Herbst's open rate (0.4) is twice its click rate (0.2).
	if r := h(0) / h(2); r < 1.95 || r > 2.05 {
		t.Errorf("heights %v and %v", h(0), h(2))
	}
	if got := text(bars.Eq(0).Find("title")); got != "Herbst, Öffnungsrate: 40 %" {
		t.Errorf("bar title %q", got)
	}
	rows := tid(doc, "chart-table").Find("tbody tr")
	if got := cells(rows.Eq(1)); got != "Winter|20 %|12,5 %" {
		t.Errorf("table row %q", got)
	}
	// Percent axes end at a round share (here 40 %), not at 100 %.
	if got := text(doc.Find(".chart-ylabel").Last()); got != "40 %" {
		t.Errorf("top tick %q", got)
	}
}

func TestEmptyChart(t *testing.T) {
	c := views.Chart{ID: "leer", Kind: views.ChartLine, Title: "Kontakte", Desc: "…", LabelHead: "Tag",
		Labels: []string{"01.11.", "02.11."}, Series: []views.ChartSeries{{Name: "Kontakte", Values: []float64{0, 0}}}}
	doc := render(t, views.ChartFigure(c))
	if doc.Find("svg").Length() != 0 || tid(doc, "chart-empty").Length() != 1 {
		t.Error("an empty chart draws axes instead of saying there is no data")
	}
	if tid(doc, "chart-table").Find("tbody tr").Length() != 2 {
		t.Error("the table of an empty chart lacks its rows")
	}
}

func TestNewsletterStatsPage(t *testing.T) {
	started := time.Date(2026, 11, 2, 9, 0, 0, 0, store.Berlin)
	s := views.NewsletterStats{ID: 7, Name: "Herbst", Subject: "Hallo", Status: "sent", StartedAt: &started, FinishedAt: &started,
		Counts:     store.RecipientCounts{Total: 12, Sent: 10, Failed: 1, Skipped: 1},
		Engagement: store.Engagement{Sent: 10, Failed: 1, Bounces: 1, Opens: 4, Clicks: 2, TotalClicks: 3, Unsubscribes: 1},
		Timeline: views.Chart{ID: "timeline", Kind: views.ChartLine, Title: "Verlauf pro Tag", LabelHead: "Tag", Labels: []string{"02.11."},
			Series: []views.ChartSeries{{Name: "Versendet", Values: []float64{10}}}},
		Links: []store.LinkStats{{ID: 1, URL: "https://shop.example.com/a", UniqueClicks: 2, Clicks: 3}},
	}
	doc := render(t, views.NewsletterStatsPage(shell("owner"), s))
	if got := text(tid(doc, "page-title")); got != "Statistik: Herbst" {
		t.Errorf("title %q", got)
	}
	want := map[string][2]string{
		"sent":         {"10", ""},
		"opened":       {"4", "40 % der versendeten E-Mails"},
		"clicked":      {"2", "20 % der versendeten E-Mails · 50 % der Öffnenden"},
		"unsubscribed": {"1", "10 % der versendeten E-Mails"},
		"bounced":      {"1", "9,1 % der Zustellversuche"},
		"skipped":      {"1", ""},
	}
	for id, w := range want {
		card := tid(doc, "stat-"+id)
		if got := text(card.Find(`[data-testid="value"]`)); got != w[0] {
			t.Errorf("%s: value %q, want %q", id, got, w[0])
		}
		if got := text(card.Find(`[data-testid="note"]`)); got != w[1] {
			t.Errorf("%s: note %q, want %q", id, got, w[1])
		}
	}
	if tid(doc, "stat-waiting").Length() != 0 {
		t.Error("a finished send shows waiting recipients")
	}
	if text(tid(doc, "stats-status")) != "Versendet" || tid(doc, "chart-timeline").Length() != 1 {
		t.Errorf("status %q, chart %d", text(tid(doc, "stats-status")), tid(doc, "chart-timeline").Length())
	}
	link := tid(doc, "stats-link")
	if link.Length() != 1 || cells(link) != "https://shop.example.com/a|2|3|20 %" {
		t.Errorf("link row %q", cells(link))
	}

	// A draft has nothing to show yet.
	draft := render(t, views.NewsletterStatsPage(shell("owner"), views.NewsletterStats{ID: 8, Name: "Entwurf", Status: "draft"}))
	if tid(draft, "stats-not-sent").Length() != 1 || tid(draft, "stat-sent").Length() != 0 {
		t.Error("a draft's statistics page shows figures")
	}
}

func TestCampaignsPanel(t *testing.T) {
	nl := store.CampaignSummary{Campaign: store.Campaign{ID: 5, Kind: store.KindNewsletter, Name: "Herbst", Status: "sent"},
		Engagement: store.Engagement{Sent: 10, Opens: 4, Clicks: 2}}
	mail := store.CampaignSummary{Campaign: store.Campaign{ID: 6, Kind: store.KindEmail, Subject: "Rechnung", Status: "sent"},
		Engagement: store.Engagement{Sent: 1}}
	doc := render(t, views.CampaignsPanel(views.RecentCampaigns{Campaigns: []store.CampaignSummary{mail, nl},
		Rates: views.Chart{ID: "campaign-rates", Kind: views.ChartBar, Percent: true, Labels: []string{"Herbst", "Rechnung"},
			Series: []views.ChartSeries{{Name: "Öffnungsrate", Values: []float64{0.4, 0}}}}}))
	row := tid(doc, "campaign-5")
	if a := row.Find("a"); a.AttrOr("href", "") != "/newsletters/5/stats" || text(a) != "Herbst" {
		t.Errorf("newsletter link %q %q", a.AttrOr("href", ""), text(a))
	}
	if text(row.Find(`[data-testid="open-rate"]`)) != "40 %" || text(row.Find(`[data-testid="click-rate"]`)) != "20 %" {
		t.Errorf("rates: %s", cells(row))
	}
	if tid(doc, "campaign-6").Find("a").Length() != 0 || !strings.Contains(text(tid(doc, "campaign-6")), "Rechnung") {
		t.Errorf("single email row: %s", text(tid(doc, "campaign-6")))
	}
	empty := render(t, views.CampaignsPanel(views.RecentCampaigns{}))
	if tid(empty, "campaigns-empty").Length() != 1 {
		t.Error("no empty state without campaigns")
	}
}
