package views_test

import (
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

func TestNewsletterRowStatusLabels(t *testing.T) {
	started := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		status, label string
		stats, edit   bool
	}{
		{store.CampaignDraft, "Entwurf", false, true},
		{store.CampaignScheduled, "Geplant", false, false},
		{store.CampaignSending, "Wird versendet", true, false},
		{store.CampaignPaused, "Pausiert", true, false},
		{store.CampaignSent, "Versendet", true, false},
		{store.CampaignFailed, "Fehlgeschlagen", true, false},
	} {
		c := store.Campaign{ID: 7, Name: "Herbst", Subject: "Hallo", Status: tc.status, RecipientsCount: 1200, SentCount: 1000}
		if tc.stats {
			c.StartedAt = &started
		}
		doc := renderRows(t, views.NewsletterRow(store.CampaignSummary{Campaign: c, Engagement: store.Engagement{Sent: c.SentCount, Opens: 400, Clicks: 125}}))
		wantOpen, wantClick := "–", "–"
		if tc.stats {
			wantOpen, wantClick = "40 %", "12,5 %"
		}
		if got := text(tid(doc, "newsletter-open-rate")); got != wantOpen {
			t.Errorf("%s: open rate %q, want %q", tc.status, got, wantOpen)
		}
		if got := text(tid(doc, "newsletter-click-rate")); got != wantClick {
			t.Errorf("%s: click rate %q, want %q", tc.status, got, wantClick)
		}
		if got := text(tid(doc, "newsletter-status")); got != tc.label {
			t.Errorf("%s: label %q, want %q", tc.status, got, tc.label)
		}
		if got := tid(doc, "newsletter-stats").Length() == 1; got != tc.stats {
			t.Errorf("%s: stats link %v", tc.status, got)
		}
		if tc.stats && tid(doc, "newsletter-stats").AttrOr("href", "") != "/newsletters/7/stats" {
			t.Errorf("%s: stats href %q", tc.status, tid(doc, "newsletter-stats").AttrOr("href", ""))
		}
		if got := tid(doc, "newsletter-edit").Length() == 1; got != tc.edit {
			t.Errorf("%s: edit link %v", tc.status, got)
		}
		if got := tid(doc, "newsletter-delete").Length() == 1; got != tc.edit {
			t.Errorf("%s: delete link %v (only drafts are deleted)", tc.status, got)
		}
		if tc.stats && text(tid(doc, "newsletter-count")) != "1.000 von 1.200 E-Mails verschickt" {
			t.Errorf("%s: count %q", tc.status, text(tid(doc, "newsletter-count")))
		}
	}
}

func TestNewsletterSectionEmptyStates(t *testing.T) {
	doc := render(t, views.NewsletterSection(views.NewsletterList{Pager: views.Pager{Page: 1, PerPage: 25}}))
	if tid(doc, "newsletters-empty").Length() != 1 || tid(doc, "newsletter-filter").Length() != 0 {
		t.Error("an account without newsletters needs the empty state and no filter")
	}
	doc = render(t, views.NewsletterSection(views.NewsletterList{Status: "sent", Pager: views.Pager{Page: 1, PerPage: 25}}))
	if tid(doc, "newsletters-no-match").Length() != 1 || tid(doc, "newsletter-filter").Length() != 1 {
		t.Error("a filter without matches needs its own empty state and the filter")
	}
	if got := doc.Find(`select[name="status"] option[selected]`).Text(); got != "Versendet" {
		t.Errorf("selected status %q", got)
	}
}

func TestNewsletterEditor(t *testing.T) {
	f := views.NewsletterForm{
		ID: 3, Title: "„Herbst“ bearbeiten", Action: "/newsletters/3", Name: "Herbst", Subject: "Hallo {{vorname}}",
		Format: views.FormatHTML, Content: "<p>Hi</p>", ListIDs: []int64{2}, SMTPServerID: 9, TrackClicks: true,
		Lists:   []store.List{{ID: 1, Name: "Presse", MemberCount: 10}, {ID: 2, Name: "Kunden", MemberCount: 1500}},
		Servers: []store.SMTPServer{{ID: 9, Name: "Eigener", FromEmail: "news@example.com"}},
		Errors:  map[string]string{"subject": "Bitte einen Betreff angeben.", "to": "Höchstens 5 Adressen für eine Test-E-Mail."},
		CanSend: true,
		Preview: views.NewsletterPreview{Subject: "Hallo Anna", HTML: `<p>Hi</p><script>alert(1)</script>`, Text: "Hi", For: "anna@example.com"},
	}
	doc := render(t, views.NewsletterEditorPage(shell("owner"), f))

	// Field errors sit next to their fields.
	if got := text(doc.Find(`[data-testid="field-subject"] [data-testid="error-subject"]`)); got != "Bitte einen Betreff angeben." {
		t.Errorf("subject error %q", got)
	}
	if doc.Find("#field-subject").AttrOr("aria-describedby", "") != "field-subject-hint field-subject-error" {
		t.Errorf("subject describedby %q", doc.Find("#field-subject").AttrOr("aria-describedby", ""))
	}
	if text(doc.Find(`[data-testid="field-test_to"] [data-testid="error-test_to"]`)) == "" {
		t.Error("no error next to the test addresses (the service's field \"to\")")
	}
	if tid(doc, "form-alert").Length() != 1 {
		t.Error("no alert above the form")
	}
	// The choices as stored.
	if doc.Find(`input[name="format"][value="html"]`).AttrOr("checked", "no") == "no" {
		t.Error("HTML format not checked")
	}
	if doc.Find(`input[name="list_ids"][value="2"]`).AttrOr("checked", "no") == "no" || doc.Find(`input[name="list_ids"][value="1"]`).AttrOr("checked", "no") != "no" {
		t.Error("list choice")
	}
	if got := doc.Find(`#field-smtp_server_id option[selected]`).AttrOr("value", ""); got != "9" {
		t.Errorf("selected SMTP server %q", got)
	}
	if doc.Find(`input[name="tracking"][value="clicks"]`).AttrOr("checked", "no") == "no" || doc.Find(`input[name="tracking"][value="opens"]`).AttrOr("checked", "no") != "no" {
		t.Error("tracking choices")
	}
	// The actions are buttons of the editor form (inside it, or in the sticky
	// side column with form="newsletter-form"), so the draft is saved first.
	if b := doc.Find(`#newsletter-form button[name="action"][value="save"]`); b.Length() != 1 {
		t.Error("no save button in the editor form")
	}
	for _, action := range []string{"test", "schedule", "send"} {
		b := doc.Find(`[data-testid="editor-side"] [data-testid="newsletter-actions"] button[name="action"][value="` + action + `"][form="newsletter-form"]`)
		if b.Length() != 1 {
			t.Errorf("no %s button of the editor form in the side panel", action)
		}
	}
	for _, name := range []string{"test_to", "scheduled_at"} {
		if doc.Find(`[data-testid="editor-side"] [name="`+name+`"]`).AttrOr("form", "") != "newsletter-form" {
			t.Errorf("%s is not a field of the editor form", name)
		}
	}
	// The test mail's outcome comes back next to its button.
	tb := tid(doc, "newsletter-test")
	if tb.AttrOr("hx-post", "") != "/newsletters/3" || tb.AttrOr("hx-target", "") != "#test-results" || tb.AttrOr("hx-include", "") != "#newsletter-form" {
		t.Errorf("test button: %v", tb.Nodes[0].Attr)
	}
	if tid(doc, "editor-side").Find("#test-results").Length() != 1 {
		t.Error("no test result slot in the side panel")
	}
	if doc.Find(`input[name="scheduled_at"]`).AttrOr("type", "") != "datetime-local" {
		t.Error("no datetime-local picker")
	}
	// The preview: debounced htmx post of the form, a sandboxed srcdoc frame.
	p := doc.Find("#preview")
	if p.AttrOr("hx-post", "") != "/newsletters/preview" || p.AttrOr("hx-include", "") != "#newsletter-form" ||
		!strings.Contains(p.AttrOr("hx-trigger", ""), "delay:500ms") {
		t.Errorf("preview attributes %v", p.Nodes[0].Attr)
	}
	frame := tid(doc, "preview-iframe")
	if v, ok := frame.Attr("sandbox"); !ok || v != "" {
		t.Errorf("preview frame sandbox %q %v: it must allow nothing", v, ok)
	}
	if frame.AttrOr("srcdoc", "") != `<p>Hi</p><script>alert(1)</script>` {
		t.Errorf("srcdoc %q", frame.AttrOr("srcdoc", ""))
	}
	for _, s := range doc.Find("script").EachIter() {
		if src, _ := s.Attr("src"); src == "" && strings.Contains(s.Text(), "alert(1)") {
			t.Error("the newsletter's script is part of the portal page")
		}
	}
	if doc.Find(`script[src="/static/editor.js"]`).Length() != 1 {
		t.Error("editor.js not loaded")
	}
	if got := text(tid(doc, "preview-for")); got != "Personalisiert für anna@example.com" {
		t.Errorf("preview for %q", got)
	}
	// The picker: one button per placeholder, readable as code without JavaScript.
	picker := tid(doc, "placeholder-picker")
	if got := picker.Find(`[data-insert="{{abmelde_link}}"] code`).Text(); got != "{{abmelde_link}}" {
		t.Errorf("picker entry %q", got)
	}
	if doc.Find(`[data-placeholder-target]`).Length() != 3 {
		t.Error("subject, preheader and content take placeholders")
	}
	if tid(doc, "newsletter-delete").AttrOr("href", "") != "/newsletters/3/delete" {
		t.Error("no delete link on a draft")
	}
}

func TestNewsletterEditorNew(t *testing.T) {
	doc := render(t, views.NewsletterEditorPage(shell("member"), views.NewsletterForm{Title: "Neuer Newsletter", Action: "/newsletters/new",
		Errors: map[string]string{"list_ids": "Bitte mindestens eine Liste angeben."}, Preview: views.NewsletterPreview{Empty: true}}))
	if tid(doc, "newsletter-actions").Length() != 0 || tid(doc, "newsletter-delete").Length() != 0 {
		t.Error("a new draft offers sending or deleting")
	}
	if text(tid(doc, "error-list_ids")) != "Bitte mindestens eine Liste angeben." {
		t.Error("list error without lists to choose")
	}
	if doc.Find(`input[name="format"][value="markdown"]`).AttrOr("checked", "no") == "no" {
		t.Error("markdown is the default format")
	}
	if tid(doc, "preview-empty").Length() != 1 {
		t.Error("no empty preview")
	}
}

func TestNewsletterStatusPanel(t *testing.T) {
	start := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	sending := store.Campaign{ID: 4, Status: store.CampaignSending, StartedAt: &start, RecipientsCount: 5000, SentCount: 1234, FailedCount: 6}
	doc := render(t, views.NewsletterStatusPanel(views.NewsletterView{Newsletter: sending, CanSend: true}))
	panel := tid(doc, "newsletter-status-panel")
	if panel.AttrOr("hx-get", "") != "/newsletters/4/progress" || panel.AttrOr("hx-trigger", "") != "every 2s" {
		t.Error("a sending newsletter does not poll its progress")
	}
	if doc.Find("progress").AttrOr("max", "") != "5000" || doc.Find("progress").AttrOr("value", "") != "1240" {
		t.Errorf("progress %v", doc.Find("progress").Nodes[0].Attr)
	}
	if text(tid(doc, "progress-text")) != "1.234 von 5.000 E-Mails verschickt" || tid(doc, "newsletter-pause").Length() != 1 {
		t.Error("progress text or pause button")
	}

	paused := sending
	paused.Status = store.CampaignPaused
	doc = render(t, views.NewsletterStatusPanel(views.NewsletterView{Newsletter: paused, CanSend: true}))
	if tid(doc, "newsletter-status-panel").AttrOr("hx-trigger", "") != "" || tid(doc, "newsletter-resume").Length() != 1 {
		t.Error("a paused newsletter polls or cannot be resumed")
	}

	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	scheduled := store.Campaign{ID: 4, Status: store.CampaignScheduled, ScheduledAt: &at}
	doc = render(t, views.NewsletterStatusPanel(views.NewsletterView{Newsletter: scheduled, CanSend: true}))
	if got := text(tid(doc, "scheduled-for")); got != "Geplant für 01.12.2026, 09:00" {
		t.Errorf("scheduled for %q (Europe/Berlin)", got)
	}
	if tid(doc, "newsletter-unschedule").Length() != 1 || tid(doc, "stats-link").Length() != 0 {
		t.Error("a scheduled newsletter: unschedule, no stats")
	}
}

func TestNewsletterSendPage(t *testing.T) {
	c := store.Campaign{ID: 8, Name: "Herbst", Subject: "Hallo"}
	doc := render(t, views.NewsletterSendPage(shell("owner"), views.NewsletterSend{Newsletter: c, Queued: 33334, Skipped: 2,
		Lists: []store.List{{ID: 1, Name: "Kunden"}}, Server: "Standard des Kontos"}))
	if got := text(tid(doc, "send-count")); got != "33.334 Empfänger" || tid(doc, "send-count").AttrOr("data-count", "") != "33334" {
		t.Errorf("count %q", got)
	}
	if !strings.Contains(text(tid(doc, "send-skipped")), "2 gesperrte Adressen") {
		t.Error("skipped addresses not shown")
	}
	form := doc.Find(`form[action="/newsletters/8/send"]`)
	if form.AttrOr("method", "") != "post" || form.Find(`[data-testid="send-confirm-button"]`).Length() != 1 {
		t.Error("no confirmation form")
	}
	if tid(doc, "send-count-note").Length() != 0 {
		t.Error("an exact count is noted as capped")
	}

	// A count stopped at its cap says "more than", never the cap as the number.
	doc = render(t, views.NewsletterSendPage(shell("owner"), views.NewsletterSend{Newsletter: c, Queued: 10000, QueuedAtLeast: true,
		Skipped: 10000, SkippedAtLeast: true, Lists: []store.List{{ID: 1, Name: "Kunden"}}, Server: "Standard des Kontos"}))
	if got := text(tid(doc, "send-count")); got != "Mehr als 10.000 Empfänger" {
		t.Errorf("capped count %q", got)
	}
	if !strings.Contains(text(tid(doc, "send-skipped")), "Mehr als 10.000 gesperrte") || tid(doc, "send-count-note").Length() != 1 {
		t.Error("capped skipped count or its note not shown")
	}

	doc = render(t, views.NewsletterSendPage(shell("owner"), views.NewsletterSend{Newsletter: c,
		Problems: map[string]string{"subject": "Bitte einen Betreff angeben."}}))
	if tid(doc, "send-confirm-button").Length() != 0 || !strings.Contains(text(tid(doc, "send-problems")), "Bitte einen Betreff angeben.") {
		t.Error("an unready newsletter can be confirmed")
	}
}

func TestFormViews(t *testing.T) {
	f := store.Form{ID: 5, Name: "Fußzeile", Token: "tok123", ListIDs: []int64{2, 1}, DoubleOptIn: true, ProofOfWork: true,
		MinFillSeconds: 3, Submissions: 1234, Fields: []string{"first_name"}}
	lists := []store.List{{ID: 1, Name: "Presse"}, {ID: 2, Name: "Kunden"}}
	doc := renderRows(t, views.FormRow(f, lists))
	if got := text(tid(doc, "form-lists")); got != "Kunden, Presse" {
		t.Errorf("lists %q", got)
	}
	if got := text(tid(doc, "form-protection")); got != "Rechenaufgabe, Mindestzeit 3 s" {
		t.Errorf("protection %q", got)
	}
	if text(tid(doc, "form-submissions")) != "1.234" || text(tid(doc, "form-doi")) != "an" {
		t.Error("submissions or double opt-in")
	}

	doc = render(t, views.FormsPage(shell("member"), views.FormList{Pager: views.Pager{Page: 1, PerPage: 25}}))
	if tid(doc, "forms-empty").Length() != 1 {
		t.Error("no empty state")
	}

	doc = render(t, views.FormEditorPage(shell("owner"), views.SignUpFormForm{ID: 5, Title: "x", Action: "/forms/5/edit", Submit: "Speichern",
		ListIDs: []int64{2}, Lists: lists, Fields: []string{"city"}, ProofOfWork: true, MinFillSeconds: "3",
		Errors: map[string]string{"success_redirect": "Bitte eine vollständige http(s)-Adresse angeben."}}))
	if text(doc.Find(`[data-testid="field-success_redirect"] [data-testid="error-success_redirect"]`)) == "" {
		t.Error("redirect error not next to its field")
	}
	if doc.Find(`input[name="fields"][value="city"]`).AttrOr("checked", "no") == "no" || doc.Find(`input[name="proof_of_work"]`).AttrOr("checked", "no") == "no" {
		t.Error("fields or proof of work not checked")
	}
	if doc.Find(`input[name="double_opt_in"]`).AttrOr("checked", "no") != "no" {
		t.Error("double opt-in checked though off")
	}

	sf := views.NewSignUpEmbed("https://rundbrief.example/", f, "")
	if sf.Action != "https://rundbrief.example/v1/subscribe/tok123" || sf.ScriptURL != "https://rundbrief.example/static/signup.js" {
		t.Errorf("embed %+v", sf)
	}
	f.ProofOfWork, f.MinFillSeconds = false, 0
	if views.NewSignUpEmbed("https://rundbrief.example", f, "").ScriptURL != "" {
		t.Error("a form without stamp and proof of work needs no script")
	}
	doc = render(t, views.FormEmbedPage(shell("owner"), views.FormEmbed{Form: f, Snippet: `<form action="x"></form>`,
		HostedURL: "https://rundbrief.example/subscribe/tok123", PreviewURL: "/subscribe/tok123"}))
	if tid(doc, "embed-code").Text() != `<form action="x"></form>` || doc.Find("form[action=x]").Length() != 0 {
		t.Error("the snippet must be text in the textarea, not markup of the page")
	}
	if tid(doc, "copy-embed").AttrOr("data-copy", "") != "embed-code" || tid(doc, "form-preview").AttrOr("src", "") != "/subscribe/tok123" {
		t.Error("copy button or preview frame")
	}
}
