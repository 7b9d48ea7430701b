package views_test

import (
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

func TestSMTPRow(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	doc := renderRows(t, views.SMTPRow(store.SMTPServer{ID: 7, Name: "Mailjet", Host: "in-v3.mailjet.com", Port: 465, Encryption: "tls",
		Username: "api", HasPassword: true, FromEmail: "news@example.com", FromName: "Shop", IsDefault: true,
		LastTestAt: &at, LastTestCode: "auth_failed"}))
	row := tid(doc, "smtp-row")
	if row.AttrOr("id", "") != "smtp-7" || row.AttrOr("data-smtp-id", "") != "7" {
		t.Errorf("row attributes %v", row.Nodes)
	}
	if got := text(tid(doc, "smtp-server").Find("code")); got != "in-v3.mailjet.com:465" {
		t.Errorf("server %q", got)
	}
	if got := text(tid(doc, "smtp-test-cell")); got != "Anmeldung fehlgeschlagen 01.03.2026, 10:30" {
		t.Errorf("last test %q", got)
	}
	form := doc.Find("form")
	if form.AttrOr("action", "") != "/smtp-servers/7/test" || form.AttrOr("hx-target", "") != "#smtp-7-test" {
		t.Errorf("test form %v", form.Nodes)
	}
	if tid(doc, "smtp-delete").AttrOr("hx-get", "") != "/smtp-servers/7/delete" {
		t.Error("delete is not confirmed inline")
	}
}

func TestSMTPTestResult(t *testing.T) {
	doc := render(t, views.SMTPTestResult(mailer.TestResult{OK: false, Code: mailer.TestTLSFailed, Message: "Das Zertifikat ist abgelaufen.",
		Detail: "x509: certificate has expired", Duration: 1234 * time.Millisecond, TestedAt: time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)}))
	res := tid(doc, "smtp-test-result")
	if res.AttrOr("role", "") != "status" || res.AttrOr("data-ok", "") != "false" || res.AttrOr("data-code", "") != "tls_failed" {
		t.Errorf("result attributes %v", res.Nodes)
	}
	if !strings.Contains(text(res), "Verschlüsselung fehlgeschlagen") || text(tid(doc, "smtp-test-detail")) != "x509: certificate has expired" ||
		!strings.Contains(text(res), "in 1234 ms") {
		t.Errorf("result %q", text(res))
	}
}

// The SMTP form has no way to show a stored password: the field is empty, and
// with a stored one it says that empty keeps it.
func TestSMTPFormPassword(t *testing.T) {
	doc := render(t, views.SMTPFormPage(shell("owner"), views.SMTPForm{Title: "x", Action: "/smtp-servers/1/edit", Edit: true, HasPassword: true,
		Name: "A", Username: "u", Errors: map[string]string{"host": "Kein gültiger Hostname."}}))
	pw := doc.Find(`input[name="password"]`)
	if pw.AttrOr("type", "") != "password" || pw.AttrOr("value", "") != "" || pw.AttrOr("autocomplete", "") != "new-password" {
		t.Errorf("password input %v", pw.Nodes)
	}
	if !strings.Contains(text(tid(doc, "field-password")), "Leer lassen") || tid(doc, "field-remove_password").Length() != 1 {
		t.Error("no keep hint / remove box for a stored password")
	}
	if text(tid(doc, "error-host")) != "Kein gültiger Hostname." || doc.Find(`#field-host[aria-invalid="true"]`).Length() != 1 {
		t.Error("host error not next to the field")
	}
	fresh := render(t, views.SMTPFormPage(shell("owner"), views.SMTPForm{Title: "x", Action: "/smtp-servers/new"}))
	if tid(fresh, "field-remove_password").Length() != 0 || fresh.Find(`select[name="encryption"] option[selected]`).AttrOr("value", "") != "starttls" {
		t.Error("new form: remove box shown or STARTTLS not preselected")
	}
}

// The picker's groups hold each of the 17 events exactly once, each with a
// German label.
func TestEventPicker(t *testing.T) {
	seen := map[string]int{}
	for _, g := range views.EventGroups() {
		if views.German().Webhooks.EventGroups[g.ID] == "" || len(g.Events) == 0 {
			t.Errorf("group %q", g.ID)
		}
		for _, e := range g.Events {
			seen[e]++
		}
	}
	for _, e := range store.EventKinds() {
		if seen[e] != 1 || views.German().Webhooks.EventLabels[e] == "" {
			t.Errorf("event %s: %d times, label %q", e, seen[e], views.German().Webhooks.EventLabels[e])
		}
	}
	doc := render(t, views.EventPicker([]string{"list.left", "email.opened"}, "Bitte mindestens ein Ereignis wählen."))
	var checked []string
	doc.Find(`input[name="events"][checked]`).Each(func(_ int, s *goquery.Selection) { checked = append(checked, s.AttrOr("value", "")) })
	if strings.Join(checked, ",") != "list.left,email.opened" {
		t.Errorf("checked %v", checked)
	}
	if text(tid(doc, "error-events")) != "Bitte mindestens ein Ereignis wählen." || tid(doc, "field-events").Find("legend").First().Text() != "Ereignisse" {
		t.Error("error or legend of the picker")
	}
	// "All events" unticks the single ones, which it includes.
	all := render(t, views.EventPicker([]string{"*"}, ""))
	if all.Find(`input[name="events"][checked]`).Length() != 1 || tid(all, "event-all").AttrOr("checked", "x") == "x" {
		t.Error("all events")
	}
}

// A user row offers the role form and removal only where the rules allow:
// never for oneself, for owners only to owners; admins are not offered "owner".
func TestUserRow(t *testing.T) {
	owner := store.User{ID: 1, Email: "chefin@example.com", Role: "owner"}
	member := store.User{ID: 2, Email: "m@example.com", Role: "member", Name: "Max"}
	for _, tc := range []struct {
		name         string
		u            store.User
		meID         int64
		myRole       string
		editable     bool
		offersOwner  bool
		wantRoleText string
	}{
		{"self", owner, 1, "owner", false, false, "Inhaber"},
		{"owner by admin", owner, 3, "admin", false, false, "Inhaber"},
		{"member by owner", member, 1, "owner", true, true, ""},
		{"member by admin", member, 3, "admin", true, false, ""},
	} {
		doc := renderRows(t, views.UserRow(tc.u, tc.meID, tc.myRole))
		form := tid(doc, "user-role-form")
		if (form.Length() == 1) != tc.editable || (tid(doc, "user-remove").Length() == 1) != tc.editable {
			t.Errorf("%s: editable %v", tc.name, form.Length() == 1)
		}
		if got := doc.Find(`option[value="owner"]`).Length() == 1; got != tc.offersOwner {
			t.Errorf("%s: offers owner %v", tc.name, got)
		}
		if tc.editable {
			sel := doc.Find("select")
			if doc.Find(`label[for="`+sel.AttrOr("id", "x")+`"]`).Length() != 1 || form.AttrOr("hx-target", "") != "#user-2" {
				t.Errorf("%s: select unlabelled or form not htmx", tc.name)
			}
		} else if got := text(tid(doc, "user-role")); got != tc.wantRoleText {
			t.Errorf("%s: role %q", tc.name, got)
		}
	}
}

func TestActivitySection(t *testing.T) {
	keyID, userID, gone := int64(5), int64(7), int64(99)
	obj := int64(42)
	at := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	l := views.ActivityList{
		Entries: []store.Activity{
			{ID: 1, ActorType: "key", ActorID: &keyID, Action: "contact.created", ObjectType: "contact", ObjectID: &obj, Details: []byte(`{"email": "a@b.de"}`), CreatedAt: at},
			{ID: 2, ActorType: "user", ActorID: &userID, Action: "webhook.paused", ObjectType: "webhook", ObjectID: &obj, Details: []byte(`{}`), CreatedAt: at},
			{ID: 3, ActorType: "user", ActorID: &gone, Action: "something.new", ObjectType: "thing", CreatedAt: at},
			{ID: 4, ActorType: "public", Action: "contact.signed_up", ObjectType: "contact", ObjectID: &obj, CreatedAt: at},
			{ID: 5, ActorType: "key", ActorID: &keyID, Action: "list.joined", ObjectType: "contact", ObjectID: &obj, Details: []byte(`{"list_id": 3, "list_name": "Kunden"}`), CreatedAt: at},
		},
		Keys:  []store.APIKey{{ID: 5, Name: "Shop"}},
		Users: []store.User{{ID: 7, Email: "anna@example.com"}},
		Pager: views.Pager{Page: 1, PerPage: 25, Total: 4, URL: func(int) string { return "/logs/activity" }},
	}
	doc := render(t, views.ActivitySection(l))
	var got []string
	tid(doc, "activity-row").Each(func(_ int, r *goquery.Selection) {
		got = append(got, text(r.Find(`[data-testid="activity-action"]`))+" | "+text(r.Find(`[data-testid="activity-object"]`))+" | "+
			text(r.Find(`[data-testid="activity-actor"]`))+" | "+text(r.Find("code")))
	})
	want := []string{
		`Kontakt angelegt | Kontakt „a@b.de“ | API-Schlüssel „Shop“ | {"email": "a@b.de"}`,
		`Webhook pausiert | Webhook #42 | anna@example.com | `,
		`something.new | thing | Benutzer #99 (entfernt) | `,
		`Über ein Formular angemeldet | Kontakt #42 | Öffentlich (Formular oder Link) | `,
		// The list a contact joined is no name of the contact: it is the sentence.
		`In Liste aufgenommen | Kontakt #42 | API-Schlüssel „Shop“ | {"list_id": 3, "list_name": "Kunden"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := text(tid(doc, "activity-row").Eq(4).Find(`[data-testid="activity-sentence"]`)); got != "Liste „Kunden“." {
		t.Errorf("list.joined sentence %q", got)
	}
	if opts := doc.Find(`select[name="object_type"] option`).Length(); opts != len(views.ActivityObjectTypes())+1 {
		t.Errorf("%d filter options", opts)
	}
}

func TestWebhookRowStatus(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	later := now.Add(3 * time.Hour)
	paused := renderRows(t, views.WebhookRow(store.Webhook{ID: 3, URL: "https://shop.example.com/h", Events: []string{"*"},
		Status: store.WebhookPaused, PauseReason: store.PauseFailures, PreviousSecretExpiresAt: &later, CreatedAt: now}, now))
	if got := text(tid(paused, "webhook-status")); got != "Pausiert nach 20 Fehlversuchen in Folge Der alte Signaturschlüssel signiert noch bis 01.03.2026, 16:00" {
		t.Errorf("paused status %q", got)
	}
	if tid(paused, "webhook-resume").Length() != 1 || tid(paused, "webhook-pause").Length() != 0 || text(tid(paused, "webhook-events")) != "Alle Ereignisse" {
		t.Error("paused row actions or events")
	}
	if f := tid(paused, "webhook-resume").Closest("form"); f.AttrOr("action", "") != "/webhooks/3/resume" || f.AttrOr("hx-target", "") != "#webhook-3" {
		t.Errorf("resume form %v", f.Nodes)
	}
	earlier := now.Add(-time.Hour)
	active := renderRows(t, views.WebhookRow(store.Webhook{ID: 4, URL: "https://x.example.com", Events: []string{"contact.created"},
		Status: store.WebhookActive, ConsecutiveFailures: 3, PreviousSecretExpiresAt: &earlier, CreatedAt: now}, now))
	if got := text(tid(active, "webhook-status")); got != "Aktiv 3 Fehlversuche in Folge" {
		t.Errorf("active status %q (an expired previous secret is not mentioned)", got)
	}
	once := renderRows(t, views.WebhookRow(store.Webhook{ID: 5, URL: "https://y.example.com", Events: []string{"*"},
		Status: store.WebhookActive, ConsecutiveFailures: 1, CreatedAt: now}, now))
	if got := text(tid(once, "webhook-status")); got != "Aktiv 1 Fehlversuch" {
		t.Errorf("status after one failure %q", got)
	}
}

func TestDeliveryRows(t *testing.T) {
	code := 502
	at := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	next := at.Add(5 * time.Minute)
	d := views.Delivery{
		WebhookDelivery: store.WebhookDelivery{ID: 9, PublicID: "whd_abc", Event: "email.opened", Status: store.DeliveryRetrying, Attempts: 2,
			NextAttemptAt: &next, LastStatusCode: &code, LastError: "Der Empfänger antwortete mit 502.", ResponseExcerpt: "<h1>Bad Gateway</h1>", CreatedAt: at},
		Log: []store.WebhookAttempt{{Attempt: 1, Error: "Zeitüberschreitung", DurationMS: 4000, AttemptedAt: at},
			{Attempt: 2, StatusCode: &code, DurationMS: 1234, AttemptedAt: at.Add(time.Minute)}},
		Pretty: "{\n  \"event\": \"email.opened\"\n}",
	}
	doc := renderRows(t, views.DeliveryRows(d))
	group := doc.Find("tbody#delivery-9")
	if group.Length() != 1 || group.Find("tr").Length() != 2 {
		t.Fatal("a delivery is one tbody with its summary and detail rows")
	}
	for id, want := range map[string]string{
		"delivery-event": "E-Mail geöffnet", "delivery-code": "502", "delivery-duration": "1.234 ms", "delivery-attempts": "2",
		"delivery-response": "<h1>Bad Gateway</h1>", "delivery-error": "Der Empfänger antwortete mit 502.",
	} {
		if got := text(tid(doc, id)); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
	if got := text(tid(doc, "delivery-status")); got != "Wird wiederholtNächster Versuch 01.03.2026, 10:35" {
		t.Errorf("status %q", got)
	}
	if got := tid(doc, "delivery-payload").Text(); got != d.Pretty {
		t.Errorf("payload %q", got)
	}
	if doc.Find("details summary").Length() != 1 || doc.Find("details[open]").Length() != 0 {
		t.Error("the body is not behind a closed <details>")
	}
	if got := text(tid(doc, "delivery-attempt-log")); got != "01.03.2026, 10:30 · keine Antwort · 4.000 ms · Zeitüberschreitung01.03.2026, 10:31 · 502 · 1.234 ms" {
		t.Errorf("attempt log %q", got)
	}
	form := doc.Find("form")
	if form.AttrOr("action", "") != "/webhook-deliveries/9/resend" || form.AttrOr("hx-target", "") != "#delivery-9" {
		t.Errorf("resend form %v", form.Nodes)
	}
}
