package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestSequenceBuilder drives the builder as a browser: a sequence is created,
// days added (the timeline shows their delays), one edited in place through
// htmx (the fragment comes back), moved down, contacts enrolled, the sequence
// activated; the funnel and the participants show. A plan without sequences
// gets 402.
func TestSequenceBuilder(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "pro")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	ctx := context.Background()

	wantStatus(t, c.get("/sequences"), http.StatusOK)
	r := c.post("/sequences/new", url.Values{"name": {"Willkommen"}, "send_time": {"09:00"}})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("create: %d\n%s", r.StatusCode, r.Body)
	}
	path := r.Header.Get("Location")
	var id int64
	if _, err := fmt.Sscanf(path, "/sequences/%d", &id); err != nil {
		t.Fatalf("location %q", path)
	}
	// Activating without days is refused on the page.
	r = c.post(path+"/activate", url.Values{})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	for i, subject := range []string{"Hallo", "Geschichte", "Angebot"} {
		r = c.post(path+"/days/new", url.Values{"subject": {subject}, "preheader": {"Vorschau " + subject}, "html": {"<p>" + subject + "</p>"},
			"delay_days": {fmt.Sprint(min(i, 1) * 2)}})
		wantRedirect(t, r, path)
	}
	page := c.get(path)
	wantStatus(t, page, http.StatusOK)
	days := page.find("sequence-day")
	if days.Length() != 3 {
		t.Fatalf("%d days in the timeline", days.Length())
	}
	if got := text(page.find("sequence-day-delay").First()); !strings.Contains(got, "Beim Eintritt") || !strings.Contains(got, "09:00") {
		t.Errorf("first delay %q", got)
	}
	if got := text(page.find("sequence-day-delay").Eq(1)); !strings.Contains(got, "2 Tage später") {
		t.Errorf("second delay %q", got)
	}
	if page.find("sequence-add-day").Find(`input[name=preheader]`).Length() != 1 {
		t.Errorf("the form to add a day has no preheader field")
	}
	list, err := s.db.SequenceDays(ctx, acct.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if list[0].Preheader != "Vorschau Hallo" {
		t.Errorf("a new day's preheader is %q, want the one typed", list[0].Preheader)
	}
	// Inline edit through htmx: the day's fragment comes back.
	r = c.post(fmt.Sprintf("%s/days/%d/edit", path, list[1].ID), url.Values{"subject": {"Die Geschichte"}, "html": {"<p>neu</p>"},
		"delay_days": {"3"}}, "HX-Request", "true")
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(r.Body, "Die Geschichte") || !strings.Contains(r.Body, "3 Tage später") || strings.Contains(r.Body, "<html") {
		t.Fatalf("fragment:\n%s", r.Body)
	}
	// A bad delay shows next to the field.
	r = c.post(fmt.Sprintf("%s/days/%d/edit", path, list[1].ID), url.Values{"delay_days": {"999"}}, "HX-Request", "true")
	wantStatus(t, r, http.StatusUnprocessableEntity)
	// Live preview of the editor's content.
	r = c.post(fmt.Sprintf("%s/days/%d/preview", path, list[1].ID), url.Values{"subject": {"Vorschau"}, "html": {"<p>Hallo {{vorname}}</p>"}}, "HX-Request", "true")
	wantStatus(t, r, http.StatusOK)
	if r.find("preview").Length() != 1 {
		t.Fatalf("preview:\n%s", r.Body)
	}
	// Move the first day down.
	wantRedirect(t, c.post(fmt.Sprintf("%s/days/%d/move?to=2", path, list[0].ID), url.Values{}), path)
	list, _ = s.db.SequenceDays(ctx, acct.ID, id)
	if list[0].Subject != "Die Geschichte" || list[1].Subject != "Hallo" {
		t.Fatalf("after move: %q, %q", list[0].Subject, list[1].Subject)
	}
	// Enrol and activate.
	if _, err := s.db.UpsertContact(ctx, acct.ID, store.Actor{Type: store.ActorSystem}, store.ContactInput{Email: "anna@example.com"}); err != nil {
		t.Fatal(err)
	}
	wantRedirect(t, c.post(path+"/participants", url.Values{"emails": {"anna@example.com\nniemand@example.com"}}), path)
	wantRedirect(t, c.post(path+"/activate", url.Values{}), path)
	page = c.get(path)
	if page.find("participant-row").Length() != 1 || page.find("funnel-day").Length() != 3 || page.find("sequence-deactivate").Length() != 1 {
		t.Fatalf("builder after activation:\n%s", page.Body)
	}
	if !strings.Contains(text(page.Doc.Selection), "1 aufgenommen, 1 übersprungen") {
		t.Errorf("no enrolment flash")
	}
	wantRedirect(t, c.post(fmt.Sprintf("%s/days/%d/delete", path, list[2].ID), url.Values{}), path)
	if n := c.get(path).find("sequence-day").Length(); n != 2 {
		t.Fatalf("%d days after delete", n)
	}
	// The outline needs an AI provider: without one the page says so.
	r = c.post(path+"/outline", url.Values{"topic": {"Brot"}, "days": {"3"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)

	starter := newAccount(t, s.db, "starter")
	c2 := newClient(t, s)
	c2.signIn(starter.Email, starter.Password)
	wantStatus(t, c2.get("/sequences"), http.StatusPaymentRequired)
	wantStatus(t, c2.get(path), http.StatusPaymentRequired)
	// Another account's sequence is not found.
	other := newAccount(t, s.db, "business")
	c3 := newClient(t, s)
	c3.signIn(other.Email, other.Password)
	wantStatus(t, c3.get(path), http.StatusNotFound)
}

// TestStoryCalendar saves the story settings, creates a draft and schedules
// it on the next free day: the calendar shows it on that day, the other
// allowed days as gaps.
func TestStoryCalendar(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "starter")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	name := "Story"
	l, err := s.db.CreateList(context.Background(), acct.ID, store.Actor{Type: store.ActorSystem}, store.ListInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	r := c.post("/story-emails/settings", url.Values{"send_time": {"25:00"}, "weekdays": {"1"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if r.find("field-send_time").Find(".field-error").Length() == 0 && !strings.Contains(r.Body, "HH:MM") {
		t.Errorf("no error next to send_time:\n%s", r.Body)
	}
	wantRedirect(t, c.post("/story-emails/settings", url.Values{"send_time": {"06:45"}, "weekdays": {"1", "2", "3", "4", "5", "6", "7"},
		"list_ids": {fmt.Sprint(l.ID)}, "from_name": {"Anna"}}), "/story-emails/settings?saved=1")
	wantRedirect(t, c.post("/story-emails/new", url.Values{"subject": {"Heute"}, "preheader": {"Was heute geschah"}, "html": {"<p>Hallo</p>"}}),
		"/story-emails")
	page := c.get("/story-emails")
	wantStatus(t, page, http.StatusOK)
	if page.find("story-form").Find(`input[name=preheader]`).Length() != 1 {
		t.Errorf("the form for a new story email has no preheader field")
	}
	if page.find("story-draft").Length() != 1 || page.find("story-day").Length() != 28 {
		t.Fatalf("calendar:\n%s", page.Body)
	}
	stories, _, err := s.db.StoryEmails(context.Background(), acct.ID, "", store.Page{Page: 1, PerPage: 10})
	if err != nil || len(stories) != 1 {
		t.Fatalf("stories: %v %v", stories, err)
	}
	if stories[0].Preheader != "Was heute geschah" {
		t.Errorf("the new story email's preheader is %q, want the one typed", stories[0].Preheader)
	}
	wantRedirect(t, c.post(fmt.Sprintf("/story-emails/%d/schedule", stories[0].ID), url.Values{}), "/story-emails")
	page = c.get("/story-emails")
	if page.find("story-entry").Length() != 1 || page.find("story-draft").Length() != 0 {
		t.Fatalf("scheduled story not in the calendar:\n%s", page.Body)
	}
	entry := page.find("story-entry").Closest("tr")
	st, _ := s.db.StoryEmail(context.Background(), acct.ID, stories[0].ID)
	if d, _ := entry.Attr("data-date"); st.ScheduledAt == nil || d != st.ScheduledAt.In(store.Berlin).Format("2006-01-02") ||
		st.ScheduledAt.In(store.Berlin).Format("15:04") != "06:45" {
		t.Fatalf("entry on %q, scheduled %v", d, st.ScheduledAt)
	}
	if page.find("story-day").Length()-1 != page.Doc.Find("tr.is-gap").Length() {
		t.Errorf("gaps: %d", page.Doc.Find("tr.is-gap").Length())
	}
}

// TestStorySettingsRouteAndTemplate: the settings page offers the SMTP
// server and the template the API's settings have, and saves them through
// the service.
func TestStorySettingsRouteAndTemplate(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "starter")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	ctx := context.Background()
	srv, err := s.db.CreateSMTPServer(ctx, testBox(t), acct.ID, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "Story-Server", Host: "127.0.0.1", Port: 2525, Encryption: "none", FromEmail: "story@baeckerei.test"}})
	if err != nil {
		t.Fatal(err)
	}
	key, name, html := "story-rahmen", "Story-Rahmen", "<div>{{content}}</div>"
	if _, err := s.db.CreateTemplate(ctx, acct.ID, store.Actor{Type: store.ActorSystem}, store.TemplateInput{Key: &key, Name: &name, HTML: &html}); err != nil {
		t.Fatal(err)
	}
	page := c.get("/story-emails/settings")
	wantStatus(t, page, http.StatusOK)
	if page.Doc.Find(fmt.Sprintf(`select[name=smtp_server_id] option[value="%d"]`, srv.ID)).Length() != 1 ||
		page.Doc.Find(`select[name=template_key] option[value="story-rahmen"]`).Length() != 1 {
		t.Fatalf("no server or template choice:\n%s", page.Body)
	}
	wantRedirect(t, c.post("/story-emails/settings", url.Values{"send_time": {"07:00"}, "weekdays": {"1"},
		"smtp_server_id": {fmt.Sprint(srv.ID)}, "template_key": {key}}), "/story-emails/settings?saved=1")
	got, err := s.db.StorySettingsOf(ctx, acct.ID)
	if err != nil || got.SMTPServerID == nil || *got.SMTPServerID != srv.ID || got.TemplateKey != key {
		t.Fatalf("saved: %+v %v", got, err)
	}
	page = c.get("/story-emails/settings")
	if v, _ := page.Doc.Find(`select[name=smtp_server_id] option[selected]`).Attr("value"); v != fmt.Sprint(srv.ID) {
		t.Errorf("server not selected: %q", v)
	}
	if v, _ := page.Doc.Find(`select[name=template_key] option[selected]`).Attr("value"); v != key {
		t.Errorf("template not selected: %q", v)
	}
	// Back to the default route and no template.
	wantRedirect(t, c.post("/story-emails/settings", url.Values{"send_time": {"07:00"}, "weekdays": {"1"},
		"smtp_server_id": {"0"}, "template_key": {""}}), "/story-emails/settings?saved=1")
	if got, _ = s.db.StorySettingsOf(ctx, acct.ID); got.SMTPServerID != nil || got.TemplateKey != "" {
		t.Fatalf("cleared: %+v", got)
	}
}

// TestStoryEmailEdit: a draft or scheduled story email is edited (subject,
// preheader, content) and previewed through the service the API uses; a
// sent one shows no form and refuses a change with the conflict's message.
func TestStoryEmailEdit(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "starter")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	ctx := context.Background()
	wantRedirect(t, c.post("/story-emails/new", url.Values{"subject": {"Erster Entwurf"}, "html": {"<p>Alt</p>"}}), "/story-emails")
	stories, _, err := s.db.StoryEmails(ctx, acct.ID, "", store.Page{Page: 1, PerPage: 10})
	if err != nil || len(stories) != 1 {
		t.Fatalf("stories: %v %v", stories, err)
	}
	id := stories[0].ID
	path := fmt.Sprintf("/story-emails/%d", id)
	if href, _ := c.get("/story-emails").find("story-edit").Attr("href"); href != path {
		t.Fatalf("no edit link to %s: %q", path, href)
	}
	page := c.get(path)
	wantStatus(t, page, http.StatusOK)
	if v, _ := page.find("story-edit-form").Find(`input[name=subject]`).Attr("value"); v != "Erster Entwurf" {
		t.Fatalf("edit form subject %q:\n%s", v, page.Body)
	}
	r := c.post(path, url.Values{"subject": {strings.Repeat("x", 300)}, "preheader": {"Kurz"}, "html": {"<p>Neu</p>"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if r.find("field-subject").Find(".field-error").Length() == 0 {
		t.Errorf("no error next to subject:\n%s", r.Body)
	}
	wantRedirect(t, c.post(path, url.Values{"subject": {"Neuer Betreff"}, "preheader": {"Vorschau heute"}, "html": {"<p>Neuer Inhalt</p>"}}), path+"?saved=1")
	got, err := s.db.StoryEmail(ctx, acct.ID, id)
	if err != nil || got.Subject != "Neuer Betreff" || got.Preheader != "Vorschau heute" || !strings.Contains(got.HTML, "Neuer Inhalt") {
		t.Fatalf("saved: %+v %v", got, err)
	}
	pv := c.post(path+"/preview", url.Values{"subject": {"Vorschau-Betreff"}, "html": {"<p>Ungespeicherter Text</p>"}})
	wantStatus(t, pv, http.StatusOK)
	if !strings.Contains(pv.Body, "Vorschau-Betreff") || !strings.Contains(pv.Body, "Ungespeicherter Text") {
		t.Fatalf("preview:\n%s", pv.Body)
	}
	name := "Story"
	l, err := s.db.CreateList(ctx, acct.ID, store.Actor{Type: store.ActorSystem}, store.ListInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	wantRedirect(t, c.post("/story-emails/settings", url.Values{"send_time": {"06:45"}, "weekdays": {"1", "2", "3", "4", "5", "6", "7"},
		"list_ids": {fmt.Sprint(l.ID)}}), "/story-emails/settings?saved=1")
	wantRedirect(t, c.post(path+"/schedule", url.Values{}), "/story-emails")
	if href, _ := c.get("/story-emails").find("story-entry-edit").Attr("href"); href != path {
		t.Errorf("no edit link on the scheduled entry: %q", href)
	}
	wantRedirect(t, c.post(path, url.Values{"subject": {"Geplant geändert"}, "html": {"<p>Neuer Inhalt</p>"}}), path+"?saved=1")
	if got, _ = s.db.StoryEmail(ctx, acct.ID, id); got.Status != store.CampaignScheduled || got.Subject != "Geplant geändert" {
		t.Fatalf("scheduled edit: %s %q", got.Status, got.Subject)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE campaigns SET status = 'sent', started_at = now() WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	page = c.get(path)
	wantStatus(t, page, http.StatusOK)
	if page.find("story-edit-form").Length() != 0 || page.find("story-locked").Length() != 1 {
		t.Fatalf("sent story still editable:\n%s", page.Body)
	}
	r = c.post(path, url.Values{"subject": {"Zu spät"}, "html": {"<p>x</p>"}})
	wantStatus(t, r, http.StatusConflict)
	if !strings.Contains(r.Body, "bereits") {
		t.Errorf("conflict message missing:\n%s", r.Body)
	}
	c404 := c.get("/story-emails/999999")
	wantStatus(t, c404, http.StatusNotFound)
}
