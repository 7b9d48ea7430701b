package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/ai/aitest"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestNewsletterRichTextFlow: a draft written in rich text is stored
// sanitised, opens again in rich-text mode, previews without the script, and
// its test mail answers htmx with the result fragment only.
func TestNewsletterRichTextFlow(t *testing.T) {
	t.Parallel()
	e := newNewsletterEnv(t, 2)
	form := draftForm(e.listID, "Reich", "")
	form.Set("format", "richtext")
	form.Set("content_rich", `<div>Hallo {{vorname}}<script>alert(1)</script> <a href="javascript:alert(2)">x</a><img src="https://cdn.test/a.png" alt="A" onerror="alert(3)"></div>`)
	id := e.createDraft(t, form)
	c := e.newsletter(t, id)
	if !store.IsRichText(c.HTML) || strings.Contains(c.HTML, "script") || strings.Contains(c.HTML, "javascript:") || strings.Contains(c.HTML, "onerror") ||
		!strings.Contains(c.HTML, `src="https://cdn.test/a.png"`) || c.Markdown != "" {
		t.Fatalf("stored %q / markdown %q", c.HTML, c.Markdown)
	}
	path := fmt.Sprintf("/newsletters/%d", id)
	r := e.c.get(path)
	if _, ok := r.find("format-richtext").Attr("checked"); !ok {
		t.Error("the draft does not open in rich-text mode")
	}
	if v := r.Doc.Find(`input[name="content_rich"]`).AttrOr("value", ""); !strings.Contains(v, "Hallo {{vorname}}") || strings.Contains(v, "rb-richtext") {
		t.Errorf("rich input %q", v)
	}
	pv := e.c.post("/newsletters/preview", form, "HX-Request", "true")
	if srcdoc := pv.find("preview-iframe").AttrOr("srcdoc", ""); !strings.Contains(srcdoc, "Kundin") || strings.Contains(srcdoc, "<script") {
		t.Errorf("preview %q", srcdoc)
	}

	// The test mail through htmx: the fragment alone, next to the button.
	form.Set("action", "test")
	form.Set("test_to", "pruefer@baeckerei.test")
	r = e.c.post(path, form, "HX-Request", "true")
	wantStatus(t, r, http.StatusOK)
	if r.find("test-results-slot").Length() != 1 || r.find("newsletter-form").Length() != 0 ||
		!strings.HasPrefix(text(r.find("test-results")), "1 von 1 Test-E-Mail verschickt.") {
		t.Fatalf("htmx test answer:\n%s", r.Body)
	}
	form.Set("test_to", "a@x.test, b@x.test, c@x.test, d@x.test, e@x.test, f@x.test")
	r = e.c.post(path, form, "HX-Request", "true")
	if r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(text(r.find("error-to")), "Höchstens 5") {
		t.Errorf("htmx test error: %d %s", r.StatusCode, r.Body)
	}
	if n := len(e.smtp.Messages()); n != 1 {
		t.Errorf("%d test mails", n)
	}
}

// TestEditorAIAssistant: on a plan with ai the editor shows the assistant
// with the credit; its actions go through the AI service (a local fake
// provider), answer ideas or a rewrite with the cost and the credit left, and
// are charged; without the feature the assistant is not shown and its
// endpoint is refused.
func TestEditorAIAssistant(t *testing.T) {
	t.Parallel()
	fake := aitest.NewAnthropic(t, "sk-ant-test", aitest.Lines(8))
	s := newServerWith(t, dbtest.URL(t), nil, base, serverOptions{AI: &ai.Config{
		Primary: ai.NewAnthropic(fake.URL, "sk-ant-test"), AttemptTimeout: 5 * time.Second, RetryDelay: time.Millisecond}})
	acct := newAccount(t, s.db, "business")
	ctx := context.Background()
	if _, err := s.db.AITopUp(ctx, acct.ID, 5*store.EUR); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	r := c.get("/newsletters/new")
	if r.find("ai-assistant").Length() != 1 || !strings.Contains(text(r.find("ai-credit")), "5,00") {
		t.Fatalf("assistant: %q", text(r.find("ai-assistant")))
	}
	form := draftForm(0, "Herbst", "Unsere neuen Brötchen sind da.")
	form.Set("ai_action", "subject_ideas")
	r = c.post("/editor/ai", form, "HX-Request", "true")
	wantStatus(t, r, http.StatusOK)
	ideas := r.find("ai-idea")
	if ideas.Length() != 8 || text(ideas.First()) != "Vorschlag 1 für {{vorname}}" || r.find("ai-apply-0").AttrOr("data-ai-apply", "") != "subject" {
		t.Fatalf("ideas: %s", r.Body)
	}
	cost := text(r.find("ai-cost"))
	bal, err := s.db.AIBalance(ctx, acct.ID)
	if err != nil || bal >= 5*store.EUR || !strings.Contains(cost, "verbleibendes Guthaben") {
		t.Errorf("charge: balance %v, %q", bal, cost)
	}

	// A rewrite of rich text keeps its HTML.
	fake.SetRespond(aitest.Rewrite)
	form.Set("ai_action", "improve")
	form.Set("format", "richtext")
	form.Set("content_rich", "<div>Hallo <strong>Welt</strong></div>")
	r = c.post("/editor/ai", form, "HX-Request", "true")
	if got := r.find("ai-apply-content").AttrOr("data-ai-value", ""); got != "<div>Neu: Hallo <strong>Neu: Welt</strong></div>" {
		t.Errorf("rewrite %q: %s", got, r.Body)
	}
	// Nothing to work on: a German error, nothing charged.
	before, _ := s.db.AIBalance(ctx, acct.ID)
	form.Set("content_rich", "")
	r = c.post("/editor/ai", form, "HX-Request", "true")
	after, _ := s.db.AIBalance(ctx, acct.ID)
	if r.StatusCode != http.StatusUnprocessableEntity || text(r.find("ai-error")) == "" || after != before {
		t.Errorf("empty content: %d %q", r.StatusCode, text(r.find("ai-error")))
	}
	form.Set("ai_action", "translate_everything")
	if r = c.post("/editor/ai", form, "HX-Request", "true"); r.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown action: %d", r.StatusCode)
	}

	// A plan without ai: no assistant, and the endpoint says so.
	starter := newAccount(t, s.db, "starter")
	c2 := newClient(t, s)
	c2.signIn(starter.Email, starter.Password)
	if r := c2.get("/newsletters/new"); r.find("ai-assistant").Length() != 0 {
		t.Error("assistant shown without the feature ai")
	}
	form.Set("ai_action", "subject_ideas")
	if r := c2.post("/editor/ai", form); r.StatusCode != http.StatusPaymentRequired {
		t.Errorf("starter: %d", r.StatusCode)
	}
}
