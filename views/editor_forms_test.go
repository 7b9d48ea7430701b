package views_test

import (
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// TestMailFormsUseTheEditor: the single-email compose, the story email forms
// and a sequence day render the shared editor (rich text offered, the custom
// field in the picker) and the AI assistant only when it is enabled; a day's
// editor and assistant carry the day's prefix.
func TestMailFormsUseTheEditor(t *testing.T) {
	fields := []store.ContactField{{Key: "kundennummer", Label: "Kundennummer"}}
	ed := views.StoredMailEditor("", `<div class="rb-richtext"><p>Hallo</p></div>`, "")
	ed.Fields = fields
	check := func(what string, doc *goquery.Document, prefix string, ai bool) {
		t.Helper()
		p := func(s string) string {
			if prefix == "" {
				return s
			}
			return prefix + "-" + s
		}
		if _, ok := tid(doc, p("format-richtext")).Attr("checked"); !ok {
			t.Errorf("%s: rich text not offered or not chosen", what)
		}
		if tid(doc, "placeholder-kundennummer").Length() != 1 {
			t.Errorf("%s: the custom field is not in the picker", what)
		}
		if got := tid(doc, p("ai-assistant")).Length() == 1; got != ai {
			t.Errorf("%s: assistant %v, want %v", what, got, ai)
		}
	}
	on := views.AIAssistantView{Enabled: true, Name: "html"}
	for _, ai := range []bool{true, false} {
		a := views.AIAssistantView{}
		if ai {
			a = on
		}
		check("email", render(t, views.EmailFormPage(views.Shell{}, views.EmailForm{Editor: ed, AI: a, Errors: map[string]string{}})), "", ai)
		check("story", render(t, views.StoryEditPage(views.Shell{}, views.StoryEditForm{ID: 1, Editor: ed, AI: a, Errors: map[string]string{}})), "", ai)
		check("new story", render(t, views.StoryCalendarPage(views.Shell{}, views.StoryCalendar{Editor: ed, AI: a, Errors: map[string]string{}})), "", ai)
		day := store.SequenceDay{ID: 7, Position: 1, HTML: `<div class="rb-richtext"><p>Tag</p></div>`}
		check("template", render(t, views.TemplateEditorPage(views.Shell{}, views.TemplateForm{Editor: ed, Errors: map[string]string{}})), "", false)
		check("day", render(t, views.SequenceDayItem(store.Sequence{ID: 3}, day, true, true, nil, views.EditorExtras{Fields: fields, AI: a})), "day7", ai)
	}
}
