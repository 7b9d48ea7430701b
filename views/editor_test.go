package views_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/views"
)

// TestContentEditorRichText: the shared editor offers three formats; in rich
// text the textarea is hidden and the Trix mount carries the hidden input
// (name content_rich) with the stored HTML, the upload URL and the German
// wording of the toolbar.
func TestContentEditorRichText(t *testing.T) {
	doc := render(t, views.ContentEditorField(views.ContentEditor{Name: "content", Format: views.FormatRichText,
		Content: "<p>alt</p>", Rich: `<div>Hallo <strong>{{vorname}}</strong></div>`}))
	for _, f := range []string{"markdown", "html", "richtext"} {
		if tid(doc, "format-"+f).Length() != 1 {
			t.Errorf("no format %s", f)
		}
	}
	if _, ok := tid(doc, "format-richtext").Attr("checked"); !ok {
		t.Error("rich text not chosen")
	}
	if _, hidden := doc.Find("[data-source-editor]").Attr("hidden"); !hidden {
		t.Error("the source textarea shows in rich-text mode")
	}
	rich := tid(doc, "rich-editor")
	if _, hidden := rich.Attr("hidden"); hidden {
		t.Error("the rich-text editor is hidden")
	}
	in := rich.Find(`input[type="hidden"][name="content_rich"]`)
	if in.AttrOr("value", "") != `<div>Hallo <strong>{{vorname}}</strong></div>` || in.AttrOr("id", "") != rich.AttrOr("data-input", "-") {
		t.Errorf("hidden input %v, data-input %q", in.Nodes, rich.AttrOr("data-input", ""))
	}
	if rich.AttrOr("data-upload-url", "") != "/editor/images" {
		t.Error("no upload URL")
	}
	var lang map[string]string
	if err := json.Unmarshal([]byte(rich.AttrOr("data-trix-lang", "")), &lang); err != nil || lang["link"] != "Link" || lang["attachFiles"] != "Bild einfügen" || lang["unlink"] == "" {
		t.Errorf("trix wording %v %v", lang, err)
	}
	if tid(doc, "placeholder-picker").Length() != 1 {
		t.Error("no placeholder picker")
	}

	// Markdown: the textarea shows, rich text waits hidden; a prefix keeps
	// the ids of a second editor (A/B variant B) apart.
	doc = render(t, views.ContentEditorField(views.ContentEditor{Name: "b_content", Prefix: "b", Format: views.FormatMarkdown, Content: "# Hallo"}))
	if _, hidden := tid(doc, "b-rich-editor").Attr("hidden"); !hidden {
		t.Error("rich text shows in Markdown mode")
	}
	if doc.Find(`textarea[name="b_content"]`).AttrOr("id", "") != "field-b-b_content" || doc.Find(`input[name="b_format"][value="markdown"][checked]`).Length() != 1 {
		t.Error("variant B's fields")
	}
}

// TestAIAssistantViews: the panel's buttons post the form to /editor/ai and
// show the credit; an answer offers its ideas to take over with the cost and
// the credit left, or its error.
func TestAIAssistantViews(t *testing.T) {
	doc := render(t, views.AIAssistant(views.AIAssistantView{Enabled: true, Remaining: 4.5}))
	for _, a := range []string{"subject_ideas", "preheader", "improve", "shorten", "fix"} {
		b := tid(doc, "ai-"+a)
		if b.AttrOr("hx-post", "") != "/editor/ai" || !strings.Contains(b.AttrOr("hx-vals", ""), `"`+a+`"`) || b.AttrOr("hx-target", "") != "#ai-result" {
			t.Errorf("button %s: %v", a, b.Nodes)
		}
	}
	if got := text(tid(doc, "ai-credit")); !strings.Contains(got, "4,50") {
		t.Errorf("credit %q", got)
	}
	doc = render(t, views.AIAssistantAnswer(views.AIAssistantResult{Target: "subject", Ideas: []string{"Eins", "Zwei"}, Cost: 0.0123, Remaining: 4.49}))
	if n := doc.Find(`[data-ai-apply="subject"]`).Length(); n != 2 || doc.Find(`[data-ai-value="Zwei"]`).Length() != 1 {
		t.Errorf("%d ideas to take over", n)
	}
	if got := text(tid(doc, "ai-cost")); !strings.Contains(got, "0,01") || !strings.Contains(got, "4,49") {
		t.Errorf("cost %q", got)
	}
	doc = render(t, views.AIAssistantAnswer(views.AIAssistantResult{Target: "content", Content: "<p>Besser</p>"}))
	if tid(doc, "ai-apply-content").AttrOr("data-ai-value", "") != "<p>Besser</p>" || text(tid(doc, "ai-suggestion")) != "<p>Besser</p>" {
		t.Error("rewrite to take over")
	}
	doc = render(t, views.AIAssistantAnswer(views.AIAssistantResult{Error: "Guthaben leer"}))
	if text(tid(doc, "ai-error")) != "Guthaben leer" || tid(doc, "ai-cost").Length() != 0 {
		t.Error("error answer")
	}
}

// TestTestResultsSlot is the fragment htmx swaps after the test button.
func TestTestResultsSlot(t *testing.T) {
	doc := render(t, views.TestResultsSlot([]views.TestMailResult{{Email: "a@example.com", Sent: true}}, ""))
	if doc.Find("#test-results").Length() != 1 || tid(doc, "test-results").Length() != 1 || tid(doc, "error-to").Length() != 0 {
		t.Error("results slot")
	}
	doc = render(t, views.TestResultsSlot(nil, "Höchstens 5 Adressen."))
	if text(tid(doc, "error-to")) != "Höchstens 5 Adressen." {
		t.Error("error in the slot")
	}
}
