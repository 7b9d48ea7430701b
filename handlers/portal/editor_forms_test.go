package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// richPost is a rich-text post of the shared editor (field "html") with a
// script, an event handler and a javascript: link the store must drop.
const richPost = `<div>Hallo {{vorname}}<script>alert(1)</script> <a href="javascript:alert(2)">x</a><img src="https://cdn.test/a.png" alt="A" onerror="alert(3)"></div>`

// wantSanitised fails unless html is stored rich text without the script.
func wantSanitised(t *testing.T, what, html string) {
	t.Helper()
	if !store.IsRichText(html) || strings.Contains(html, "script") || strings.Contains(html, "javascript:") ||
		strings.Contains(html, "onerror") || !strings.Contains(html, "Hallo {{vorname}}") || !strings.Contains(html, `src="https://cdn.test/a.png"`) {
		t.Errorf("%s stored %q", what, html)
	}
}

// wantEditor fails unless the page's form at testid has the shared editor
// with the rich-text choice and the custom field in the picker, and the AI
// assistant exactly when ai is true.
func wantEditor(t *testing.T, r *response, what string, ai bool) {
	t.Helper()
	if r.find("format-richtext").Length() < 1 || r.find("placeholder-kundennummer").Length() < 1 {
		t.Errorf("%s: no rich text or no custom field in the picker", what)
	}
	if got := r.Doc.Find(`[data-testid$="ai-assistant"]`).Length() > 0; got != ai {
		t.Errorf("%s: AI assistant shown %v, want %v", what, got, ai)
	}
}

// TestMailFormsRichText: single emails, story emails and sequence days write
// in the shared editor; rich text is stored sanitised through the store's
// content path; the picker offers the account's custom fields; the AI
// assistant shows on a plan with ai only.
func TestMailFormsRichText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "business")
	starter := newAccount(t, s.db, "starter")
	for _, a := range []int64{acct.ID, starter.ID} {
		if _, err := s.db.CreateContactField(ctx, a, apiActor, store.FieldInput{Key: sp("kundennummer"), Label: sp("Kundennummer")}); err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	c2 := newClient(t, s)
	c2.signIn(starter.Email, starter.Password)
	smtp := smtptest.Start(t, smtptest.Options{})
	if _, err := s.db.CreateSMTPServer(ctx, testBox(t), acct.ID, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "Test", Host: smtp.Host, Port: smtp.Port, Encryption: "none", FromEmail: "info@baeckerei.test"}}); err != nil {
		t.Fatal(err)
	}

	// Single email.
	wantEditor(t, c.get("/emails/new"), "email", true)
	wantEditor(t, c2.get("/emails/new"), "email (starter)", false)
	r := c.post("/emails/new", url.Values{"to": {"kunde@example.com"}, "subject": {"Reich"}, "type": {store.TypeFollowUp},
		"format": {"richtext"}, "html": {""}, "html_rich": {richPost}})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("send: %d\n%s", r.StatusCode, r.Body)
	}
	emails, _, err := s.db.Emails(ctx, acct.ID, "", store.Page{Page: 1, PerPage: 10})
	if err != nil || len(emails) != 1 {
		t.Fatalf("emails %v %v", emails, err)
	}
	full, err := s.db.Email(ctx, acct.ID, emails[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	wantSanitised(t, "email", full.HTML)
	// Markdown stays Markdown.
	r = c.post("/emails/new", url.Values{"to": {"kunde@example.com"}, "subject": {"Md"}, "type": {store.TypeFollowUp},
		"format": {"markdown"}, "html": {"**Hallo**"}})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("send markdown: %d\n%s", r.StatusCode, r.Body)
	}
	if emails, _, err = s.db.Emails(ctx, acct.ID, "", store.Page{Page: 1, PerPage: 10}); err != nil || len(emails) != 2 {
		t.Fatalf("emails %v %v", emails, err)
	}
	for _, e := range emails {
		if e, err = s.db.Email(ctx, acct.ID, e.ID); err != nil {
			t.Fatal(err)
		}
		if e.Subject == "Md" && e.Markdown != "**Hallo**" {
			t.Errorf("markdown email stored %q / %q", e.Markdown, e.HTML)
		}
	}

	// Story email: created and edited in rich text, opens in rich text again.
	wantEditor(t, c.get("/story-emails"), "story calendar", true)
	wantEditor(t, c2.get("/story-emails"), "story calendar (starter)", false)
	wantRedirect(t, c.post("/story-emails/new", url.Values{"subject": {"Geschichte"}, "format": {"richtext"}, "html_rich": {richPost}}), "/story-emails")
	stories, _, err := s.db.StoryEmails(ctx, acct.ID, "", store.Page{Page: 1, PerPage: 10})
	if err != nil || len(stories) != 1 {
		t.Fatalf("stories %v %v", stories, err)
	}
	story, err := s.db.StoryEmail(ctx, acct.ID, stories[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	wantSanitised(t, "story email", story.HTML)
	path := fmt.Sprintf("/story-emails/%d", stories[0].ID)
	page := c.get(path)
	wantEditor(t, page, "story edit", true)
	if _, ok := page.find("format-richtext").Attr("checked"); !ok {
		t.Error("the story email does not open in rich-text mode")
	}
	wantRedirect(t, c.post(path, url.Values{"subject": {"Geschichte 2"}, "format": {"richtext"}, "html_rich": {strings.Replace(richPost, "Hallo", "Hallo {{kundennummer}} und", 1)}}), path+"?saved=1")
	got, err := s.db.StoryEmail(ctx, acct.ID, stories[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	wantSanitised(t, "edited story email", strings.Replace(got.HTML, "{{kundennummer}} und ", "", 1))
	pv := c.post(path+"/preview", url.Values{"subject": {"V"}, "format": {"richtext"}, "html_rich": {richPost}})
	if body := pv.Body; strings.Contains(body, "alert(1)") {
		t.Errorf("story preview shows the script")
	}

	// Sequence day: added and edited inline in rich text.
	r = c.post("/sequences/new", url.Values{"name": {"Willkommen"}})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sequence: %d\n%s", r.StatusCode, r.Body)
	}
	seq := r.Header.Get("Location")
	var seqID int64
	if _, err := fmt.Sscanf(seq, "/sequences/%d", &seqID); err != nil {
		t.Fatal(err)
	}
	wantRedirect(t, c.post(seq+"/days/new", url.Values{"subject": {"Tag 1"}, "delay_days": {"0"}, "format": {"richtext"}, "html_rich": {richPost}}), seq)
	days, err := s.db.SequenceDays(ctx, acct.ID, seqID)
	if err != nil || len(days) != 1 {
		t.Fatalf("days %v %v", days, err)
	}
	wantSanitised(t, "new day", days[0].HTML)
	page = c.get(seq)
	wantEditor(t, page, "sequence builder", true)
	prefix := fmt.Sprintf("day%d", days[0].ID)
	if _, ok := page.find(prefix + "-format-richtext").Attr("checked"); !ok {
		t.Errorf("the day does not open in rich-text mode")
	}
	if page.find(prefix+"-ai-assistant").Length() != 1 || page.Doc.Find(fmt.Sprintf(`[data-testid=%q]`, prefix+"-ai-assistant")).Find(`[hx-vals*='"ai_prefix":"`+prefix+`"']`).Length() == 0 {
		t.Errorf("the day's assistant does not post its prefix")
	}
	r = c.post(fmt.Sprintf("%s/days/%d/edit", seq, days[0].ID), url.Values{"subject": {"Tag 1"}, "delay_days": {"0"},
		prefix + "_format": {"richtext"}, "html": {""}, "html_rich": {strings.Replace(richPost, "Hallo", "Hallo neu,", 1)}}, "HX-Request", "true")
	wantStatus(t, r, http.StatusOK)
	if days, err = s.db.SequenceDays(ctx, acct.ID, seqID); err != nil {
		t.Fatal(err)
	}
	wantSanitised(t, "edited day", strings.Replace(days[0].HTML, "Hallo neu,", "Hallo", 1))

	// Template: rich text sanitised by the store, Markdown stored as HTML;
	// the picker offers the custom field; no assistant (a template is no mail).
	wantEditor(t, c.get("/templates/new"), "template", false)
	r = c.post("/templates/new", url.Values{"name": {"Reich"}, "key": {"reich"}, "format": {"richtext"}, "html_rich": {richPost}})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("template: %d\n%s", r.StatusCode, r.Body)
	}
	var tplID int64
	if _, err := fmt.Sscanf(r.Header.Get("Location"), "/templates/%d", &tplID); err != nil {
		t.Fatal(err)
	}
	tp, err := s.db.Template(ctx, acct.ID, tplID)
	if err != nil {
		t.Fatal(err)
	}
	wantSanitised(t, "template", tp.HTML)
	if _, ok := c.get(r.Header.Get("Location")).find("format-richtext").Attr("checked"); !ok {
		t.Error("the template does not open in rich-text mode")
	}
	r = c.post("/templates/new", url.Values{"name": {"Md"}, "key": {"md"}, "format": {"markdown"}, "html": {"**Hallo** {{inhalt}}"}})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("markdown template: %d\n%s", r.StatusCode, r.Body)
	}
	if _, err := fmt.Sscanf(r.Header.Get("Location"), "/templates/%d", &tplID); err != nil {
		t.Fatal(err)
	}
	if tp, err = s.db.Template(ctx, acct.ID, tplID); err != nil || !strings.Contains(tp.HTML, "<strong>Hallo</strong>") {
		t.Errorf("markdown template stored %q %v", tp.HTML, err)
	}
}
