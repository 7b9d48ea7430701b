package views_test

import (
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

func abDetail(status string) views.ABDetail {
	b, from := "Nur heute: {{vorname}}, 20 % auf alles", "Jana von der Bäckerei"
	started := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	decide := started.Add(4 * time.Hour)
	return views.ABDetail{
		Test: store.ABTest{ID: 12, Name: "Betreff März", TestType: "combo", Mode: "split", SplitA: 60, WinnerMetric: "opens", Status: status,
			BSubject: &b, BFromName: &from, TargetSubject: "Neues aus der Backstube", TargetFromName: "Bäckerei Müller",
			StartedAt: &started, DecideAt: &decide},
		Results: store.ABResults{Metric: "opens", A: store.ABVariantResult{Sent: 600, UniqueOpens: 120, UniqueClicks: 12},
			B: store.ABVariantResult{Sent: 400, UniqueOpens: 100, UniqueClicks: 20}, Confidence: 0.9612, Leader: "B"},
	}
}

// The results page shows both variants side by side with what differs, the
// figures per variant, the confidence with its significance, the leader, and
// the winner buttons only while the test runs.
func TestABTestPage(t *testing.T) {
	doc := render(t, views.ABTestPage(shell("owner"), abDetail(store.ABRunning)))
	a, b := tid(doc, "ab-variant-A"), tid(doc, "ab-variant-B")
	if a.Length() != 1 || b.Length() != 1 || a.Parent().AttrOr("data-testid", "") != "ab-variants" || b.Parent().AttrOr("data-testid", "") != "ab-variants" {
		t.Fatal("variants are not side by side in one grid")
	}
	if got := text(a.Find(`[data-testid="ab-subject"]`)); got != "Neues aus der Backstube" {
		t.Errorf("A subject %q", got)
	}
	if got := text(b.Find(`[data-testid="ab-subject"]`)); got != "Nur heute: {{vorname}}, 20 % auf alles" {
		t.Errorf("B subject %q", got)
	}
	if got := text(b.Find(`[data-testid="ab-from-name"]`)); got != "Jana von der Bäckerei" {
		t.Errorf("B sender %q", got)
	}
	if !strings.Contains(text(a), "60 % der Empfänger") || !strings.Contains(text(b), "40 % der Empfänger") {
		t.Errorf("shares: %q / %q", text(a), text(b))
	}
	if !strings.Contains(text(b), "Vorne") || strings.Contains(text(a), "Vorne") {
		t.Error("the leader badge is not on B alone")
	}
	rows := map[string][2]string{}
	tid(doc, "ab-results-table").Find("tbody tr").Each(func(_ int, s *goquery.Selection) {
		rows[s.AttrOr("data-testid", "")] = [2]string{text(s.Find(`[data-testid="ab-a"]`)), text(s.Find(`[data-testid="ab-b"]`))}
	})
	for id, want := range map[string][2]string{"ab-row-sent": {"600", "400"}, "ab-row-opens": {"120", "100"},
		"ab-row-open-rate": {"20,0 %", "25,0 %"}, "ab-row-ctr": {"10,0 %", "20,0 %"}} {
		if rows[id] != want {
			t.Errorf("%s: %v, want %v", id, rows[id], want)
		}
	}
	conf := tid(doc, "ab-confidence")
	if conf.AttrOr("data-value", "") != "0.9612" || !strings.Contains(text(conf), "96,1 %") || !strings.Contains(text(conf), "signifikant") ||
		strings.Contains(text(conf), "noch nicht") {
		t.Errorf("confidence %q", text(conf))
	}
	if l := tid(doc, "ab-leader"); l.AttrOr("data-value", "") != "B" || text(l) != "Variante B" {
		t.Errorf("leader %q", text(l))
	}
	// A split test sends both variants to everyone: nobody waits for a winner.
	if tid(doc, "ab-choose-winner").Length() != 0 {
		t.Error("a split test offers winner buttons")
	}
	waiting := abDetail(store.ABRunning)
	waiting.Test.Mode = store.ABModeWinner
	doc = render(t, views.ABTestPage(shell("owner"), waiting))
	form := tid(doc, "ab-winner-b").Closest("form")
	if form.AttrOr("action", "") != "/ab-tests/12/winner" || form.AttrOr("method", "") != "post" ||
		tid(doc, "ab-winner-a").AttrOr("value", "") != "A" || tid(doc, "ab-winner-auto").AttrOr("value", "") != "auto" {
		t.Errorf("winner form %v", form.Nodes)
	}
	if tid(doc, "ab-results").AttrOr("hx-trigger", "") != "every 30s" {
		t.Error("running results do not refresh")
	}

	done := abDetail(store.ABCompleted)
	w := "B"
	done.Test.Winner = &w
	doc = render(t, views.ABTestPage(shell("owner"), done))
	if tid(doc, "ab-choose-winner").Length() != 0 || tid(doc, "ab-stop").Length() != 0 || tid(doc, "ab-results").AttrOr("hx-trigger", "") != "" {
		t.Error("a completed test still offers a winner, a stop or refreshes")
	}
	if text(tid(doc, "ab-winner")) != "Variante B" || !strings.Contains(text(tid(doc, "ab-variant-B")), "Gewinner") {
		t.Errorf("winner %q", text(tid(doc, "ab-winner")))
	}

	draft := abDetail(store.ABDraft)
	doc = render(t, views.ABTestPage(shell("owner"), draft))
	if tid(doc, "ab-not-running").Length() != 1 || tid(doc, "ab-results-table").Length() != 0 || tid(doc, "ab-delete").Length() != 1 {
		t.Error("a draft shows results or no delete button")
	}
}

func TestABFormErrors(t *testing.T) {
	doc := render(t, views.ABFormPage(shell("owner"), views.ABForm{
		Drafts:     []store.Campaign{{ID: 3, Name: "März"}, {ID: 4, Name: "April"}},
		CampaignID: "4", TestType: "subject", Mode: "winner", SplitA: "5",
		Errors: map[string]string{"split_a": "Der Anteil von Variante A liegt zwischen 10 und 90 Prozent.", "b_subject": "fehlt"},
	}))
	if doc.Find(`select[name="campaign_id"] option[selected]`).AttrOr("value", "") != "4" ||
		doc.Find(`select[name="mode"] option[selected]`).AttrOr("value", "") != "winner" {
		t.Error("choices not kept")
	}
	if text(tid(doc, "error-split_a")) == "" || doc.Find(`#field-split_a[aria-invalid="true"]`).Length() != 1 ||
		doc.Find(`input[name="split_a"]`).AttrOr("value", "") != "5" || text(tid(doc, "error-b_subject")) != "fehlt" {
		t.Error("errors not next to their fields")
	}
	if tid(doc, "form-alert").Length() != 1 || tid(doc, "ab-no-drafts").Length() != 0 {
		t.Error("form alert or no-drafts note wrong")
	}
}

// TestABFormVariantBEditor: variant B is written in the shared editor (with
// the prefix b), and the two variants are previewed side by side, refreshed
// by htmx from the form.
func TestABFormVariantBEditor(t *testing.T) {
	doc := render(t, views.ABFormPage(shell("owner"), views.ABForm{
		Drafts: []store.Campaign{{ID: 3, Name: "März"}}, CampaignID: "3", TestType: "content", Mode: "split",
		BFormat: views.FormatRichText, BRich: "<div>Neu</div>", Errors: map[string]string{"b_html": "fehlt"},
		PreviewA: views.NewsletterPreview{Subject: "A", HTML: "<p>alt</p>"}, PreviewB: views.NewsletterPreview{Subject: "B", HTML: "<div>Neu</div>"},
	}))
	b := tid(doc, "field-b_html")
	if b.AttrOr("data-ab-types", "") != "content design combo" || b.Find(`[data-testid="b-content-editor"]`).Length() != 1 {
		t.Fatal("variant B's content is not the shared editor")
	}
	if b.Find(`input[name="b_format"][value="richtext"][checked]`).Length() != 1 || b.Find(`input[name="b_content_rich"]`).AttrOr("value", "") != "<div>Neu</div>" {
		t.Error("variant B's format and rich text not kept")
	}
	if text(b.Find(`[data-testid="b-rich-error"]`)) != "fehlt" {
		t.Error("b_html error not at the editor")
	}
	pv := tid(doc, "ab-previews")
	if pv.AttrOr("hx-post", "") != "/ab-tests/preview" || pv.AttrOr("hx-include", "") != "closest form" {
		t.Errorf("previews: %v", pv.Nodes)
	}
	if tid(doc, "ab-preview-a").Find(`[data-testid="preview-iframe"]`).AttrOr("srcdoc", "") != "<p>alt</p>" ||
		tid(doc, "ab-preview-b").Find(`[data-testid="preview-iframe"]`).AttrOr("srcdoc", "") != "<div>Neu</div>" ||
		tid(doc, "ab-preview-a").Parent().Is(".grid") == false {
		t.Error("A and B not side by side")
	}
}
