package views_test

import (
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/views"
)

func TestNewsletterLinkCheck(t *testing.T) {
	doc := render(t, views.NewsletterLinkCheck(mailer.LinkReport{Checked: 4, Omitted: 2, Problems: []mailer.LinkProblem{
		{URL: "https://a.example/weg", Reason: mailer.LinkStatus, Status: 404},
		{URL: "https://nirgends.example/", Reason: mailer.LinkDNS},
		{URL: "http://b.example:81/", Reason: "unbekannt"},
	}}))
	item := doc.Find(`[data-testid="check-links-answer"]`)
	if ok, _ := item.Attr("data-ok"); ok != "false" || !item.HasClass("warn") {
		t.Errorf("item: data-ok %q, class %q", ok, item.AttrOr("class", ""))
	}
	if got := strings.Join(strings.Fields(doc.Find(".checklist-title").Text()), " "); got != "Bitte prüfen: 3 von 4 Links antworten nicht:" {
		t.Errorf("title %q", got)
	}
	probs := doc.Find(`[data-testid="link-problem"]`)
	want := []string{"https://a.example/weg: Der Server antwortet mit dem Fehler 404.",
		"https://nirgends.example/: Der Hostname lässt sich nicht auflösen.",
		"http://b.example:81/: Die Verbindung ist fehlgeschlagen."}
	if probs.Length() != len(want) {
		t.Fatalf("%d problems", probs.Length())
	}
	for i, w := range want {
		if got := strings.Join(strings.Fields(probs.Eq(i).Text()), " "); got != w {
			t.Errorf("problem %d: %q, want %q", i, got, w)
		}
	}
	if got := doc.Find(`[data-testid="link-omitted"]`).Text(); !strings.Contains(got, "2 weitere Links") {
		t.Errorf("omitted %q", got)
	}

	ok := render(t, views.NewsletterLinkCheck(mailer.LinkReport{Checked: 3}))
	if d, _ := ok.Find(`[data-testid="check-links-answer"]`).Attr("data-ok"); d != "true" ||
		!strings.Contains(ok.Text(), "Alle 3 Links antworten.") || ok.Find(`[data-testid="link-problem"]`).Length() != 0 {
		t.Errorf("all answer: %q", ok.Text())
	}
	one := render(t, views.NewsletterLinkCheck(mailer.LinkReport{Checked: 1}))
	if !strings.Contains(one.Text(), "Der Link antwortet.") {
		t.Errorf("the only link answers: %q", one.Text())
	}
	oneOf := render(t, views.NewsletterLinkCheck(mailer.LinkReport{Checked: 20, Omitted: 1, Problems: []mailer.LinkProblem{
		{URL: "https://a.example/weg", Reason: mailer.LinkStatus, Status: 404}}}))
	if got := strings.Join(strings.Fields(oneOf.Find(".checklist-title").Text()), " "); got != "Bitte prüfen: 1 von 20 Links antwortet nicht:" {
		t.Errorf("title of one failure %q", got)
	}
	if got := oneOf.Find(`[data-testid="link-omitted"]`).Text(); !strings.Contains(got, "1 weiterer Link wurde nicht geprüft") {
		t.Errorf("one omitted %q", got)
	}
	none := render(t, views.NewsletterLinkCheck(mailer.LinkReport{}))
	if !strings.Contains(none.Text(), "Keine Links zum Prüfen") {
		t.Errorf("no links: %q", none.Text())
	}
}
