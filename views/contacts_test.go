package views_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

func contactShell() views.Shell {
	return views.Shell{Title: "Kontakte", Active: views.NavContacts, Account: "Bäckerei Müller", User: "inhaber@example.com", Role: "member"}
}

func sampleContact() store.Contact {
	at := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
	return store.Contact{
		ID: 7, Email: "anna@example.com", FirstName: "Anna", LastName: "Schmidt", City: "Köln", Status: store.StatusPending,
		Source: store.SourceImport, Tags: []string{"vip", "kunde"}, CreatedAt: at, UpdatedAt: at,
		CustomFields: store.CustomFields{"kundennummer": "K-1", "punkte": json.Number("12.5"), "aktiv": true},
		Lists:        store.ListRefs{{ID: 3, Name: "Kunden", Color: "#0a7f3f"}, {ID: 4, Name: "Böse", Color: "red;background:url(x)"}},
	}
}

func TestContactsPageStates(t *testing.T) {
	empty := render(t, views.ContactsPage(contactShell(), views.ContactList{}))
	if e := tid(empty, "contacts-empty"); e.Length() != 1 || !strings.Contains(text(e), "Noch keine Kontakte") ||
		e.Find(`a[href="/contacts/import"]`).Length() != 1 {
		t.Errorf("empty state %q", text(e))
	}
	if tid(empty, "nav-contacts").AttrOr("aria-current", "") != "page" {
		t.Error("sidebar does not mark contacts")
	}
	nomatch := render(t, views.ContactsPage(contactShell(), views.ContactList{Filter: views.ContactFilter{Q: "x"}}))
	if !strings.Contains(text(tid(nomatch, "contacts-empty")), "Keine passenden") || tid(nomatch, "contact-filter-reset").Length() != 1 {
		t.Error("no-match state without reset")
	}

	f := views.ContactFilter{Q: "anna", Tag: "vip", Status: "pending"}
	l := views.ContactList{Contacts: []store.Contact{sampleContact()}, Filter: f,
		Lists: []store.List{{ID: 3, Name: "Kunden"}},
		Pager: views.Pager{Page: 1, PerPage: 1, Total: 3, Target: "#contacts", URL: func(n int) string { return f.URL("/contacts", n) }}}
	doc := render(t, views.ContactSection(l))
	form := tid(doc, "contact-filter")
	if form.AttrOr("hx-target", "") != "#contacts" || form.AttrOr("action", "") != "/contacts" || form.AttrOr("method", "") != "get" {
		t.Error("filter form neither works without JavaScript nor swaps the section")
	}
	for _, name := range []string{"q", "list_id", "tag", "status"} {
		if doc.Find(`label[for="field-`+name+`"]`).Length() != 1 {
			t.Errorf("filter %s has no label", name)
		}
	}
	next := tid(doc, "page-next")
	if href := next.AttrOr("href", ""); href != "/contacts?page=2&q=anna&status=pending&tag=vip" || next.AttrOr("hx-get", "") != href ||
		next.AttrOr("hx-target", "") != "#contacts" || next.AttrOr("hx-push-url", "") != "true" {
		t.Errorf("next link %q", href)
	}
	if got := tid(doc, "export-link").AttrOr("href", ""); got != "/contacts/export?q=anna&status=pending&tag=vip" {
		t.Errorf("export link %q", got)
	}
	big := render(t, views.Pagination(views.Pager{Page: 1234, PerPage: 25, Total: 100_000, URL: func(int) string { return "/" }}))
	if got := text(tid(big, "pagination-range")); got != "30.826–30.850 von 100.000 Einträgen · Seite 1.234 von 4.000" {
		t.Errorf("large numbers: %q", got)
	}
	row := tid(doc, "contact-row")
	if text(row.Find(`[data-testid="contact-status"]`)) != "Unbestätigt" || text(row.Find(`[data-testid="contact-name"]`)) != "Anna Schmidt" {
		t.Errorf("row %q", text(row))
	}
	swatches := row.Find(".swatch")
	if swatches.Eq(0).AttrOr("style", "") != "background:#0a7f3f;" || swatches.Eq(1).AttrOr("style", "") != "background:#4f46e5;" {
		t.Errorf("swatches %q %q (a bad colour must fall back)", swatches.Eq(0).AttrOr("style", ""), swatches.Eq(1).AttrOr("style", ""))
	}
	if swatches.Eq(0).AttrOr("aria-hidden", "") != "true" {
		t.Error("swatch is not hidden from screen readers")
	}
}

func TestContactPage(t *testing.T) {
	c := sampleContact()
	details := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	d := views.ContactDetail{Contact: c, Lists: []store.List{{ID: 3, Name: "Kunden"}, {ID: 5, Name: "Presse"}}, ActivityTotal: 40,
		Activities: []store.Activity{
			{Action: "list.joined", ActorType: store.ActorUser, Details: details(map[string]any{"list_name": "Kunden"})},
			{Action: "contact.updated", ActorType: store.ActorKey, Details: details(map[string]any{"changed": []string{"first_name", "city"}})},
			{Action: "contact.created", ActorType: store.ActorPublic, Details: details(map[string]any{"source": "form"})},
		}}
	doc := render(t, views.ContactPage(contactShell(), d))
	if got := text(tid(doc, "page-title")); got != "anna@example.com" {
		t.Errorf("title %q", got)
	}
	for id, want := range map[string]string{"custom-kundennummer": "K-1", "custom-punkte": "12.5", "custom-aktiv": "true",
		"detail-status": "Unbestätigt", "detail-source": "Import", "detail-address": "–"} {
		if got := text(tid(doc, id)); got != want {
			t.Errorf("%s = %q, want %q", id, got, want)
		}
	}
	acts := tid(doc, "activity")
	for i, want := range []string{"In Liste aufgenommen: Kunden", "Geändert: Vorname, Ort", "Angelegt (Anmeldeformular)"} {
		if got := text(acts.Eq(i).Find("strong")); got != want {
			t.Errorf("activity %d: %q, want %q", i, got, want)
		}
	}
	if !strings.Contains(text(doc.Find(".timeline + p")), "37 ältere") {
		t.Error("no note on older entries")
	}
	// Tags and lists: every remove button names what it removes; only lists
	// the contact is not in are offered.
	if got := tid(doc, "tag-remove").First().AttrOr("aria-label", ""); got != "Schlagwort „vip“ entfernen" {
		t.Errorf("remove label %q", got)
	}
	if opts := doc.Find(`select[name="list_id"] option`); opts.Length() != 1 || opts.AttrOr("value", "") != "5" {
		t.Errorf("joinable lists: %d", opts.Length())
	}
	tagForm := tid(doc, "tag-form")
	if tagForm.AttrOr("method", "") != "post" || tagForm.AttrOr("hx-target", "") != "#contact-tags" {
		t.Error("tag form")
	}
	// Errors of the inline forms sit at their fields.
	d.TagError, d.ListError = "Zu lang.", "Diese Liste gibt es nicht."
	doc = render(t, views.ContactTags(d))
	if tid(doc, "error-tags").Text() != "Zu lang." || doc.Find(`#field-tags[aria-invalid="true"]`).Length() != 1 {
		t.Error("tag error not at the field")
	}
	doc = render(t, views.ContactLists(d))
	if tid(doc, "error-list_id").Text() != "Diese Liste gibt es nicht." {
		t.Error("list error not at the field")
	}
}

func TestContactFormErrors(t *testing.T) {
	f := views.ContactForm{Title: "Neu", Action: "/contacts/new", Submit: "Anlegen", Cancel: "/contacts", New: true,
		Email: "x", Lists: []store.List{{ID: 1, Name: "A"}, {ID: 2, Name: "B"}}, ListIDs: []string{"2"},
		Custom: []views.CustomFieldRow{{Key: "vorname", Value: "x"}, {}},
		Errors: map[string]string{"email": "Bitte eine gültige E-Mail-Adresse angeben.", "custom_fields.vorname": "eingebaut"}}
	doc := render(t, views.ContactFormPage(contactShell(), f))
	email := doc.Find("#field-email")
	if email.AttrOr("aria-invalid", "") != "true" || email.AttrOr("aria-describedby", "") != "field-email-error" ||
		tid(doc, "field-email").Find(`[data-testid="error-email"]`).Length() != 1 {
		t.Error("email error not tied to the field")
	}
	if tid(doc, "form-alert").Length() != 1 {
		t.Error("no alert above the form")
	}
	key := doc.Find(`input[name="cf_key_0"]`)
	if key.AttrOr("aria-invalid", "") != "true" || doc.Find("#"+key.AttrOr("aria-describedby", "-")).Text() != "eingebaut" {
		t.Error("custom field error not tied to its row")
	}
	if doc.Find(`input[name="list_ids"][checked]`).AttrOr("value", "") != "2" {
		t.Error("checked list lost")
	}
	if doc.Find("[autofocus]").Length() != 1 || doc.Find("#field-email[autofocus]").Length() != 1 {
		t.Error("the focus is not on the field with the error")
	}
	f.Errors = map[string]string{"zip": "Höchstens 20 Zeichen."}
	if doc := render(t, views.ContactFormPage(contactShell(), f)); doc.Find("[autofocus]").Length() != 1 || doc.Find("#field-zip[autofocus]").Length() != 1 {
		t.Error("the focus is not on the first field with an error")
	}
	for _, in := range []string{"first_name", "last_name", "zip", "city", "phone", "tags"} {
		if doc.Find(`label[for="field-`+in+`"]`).Length() != 1 {
			t.Errorf("%s has no label", in)
		}
	}
}

func TestListViews(t *testing.T) {
	empty := render(t, views.ListsPage(contactShell(), views.ListTable{}))
	if tid(empty, "lists-empty").Find(`a[href="/lists/new"]`).Length() != 1 {
		t.Error("list empty state without action")
	}
	f := views.ListForm{Title: "Neu", Action: "/lists/new", Submit: "Anlegen", Color: "#4f46e5", DoubleOptIn: true,
		Errors: map[string]string{"name": "Bitte einen Namen angeben.", "color": "Bitte eine Farbe im Format #rrggbb angeben."}}
	doc := render(t, views.ListFormPage(contactShell(), f))
	if doc.Find(`input#field-color[type="color"][value="#4f46e5"]`).Length() != 1 || tid(doc, "error-color").Length() != 1 ||
		tid(doc, "error-name").Length() != 1 || doc.Find(`input[name="double_opt_in"][checked]`).Length() != 1 {
		t.Error("list form")
	}
	m := views.ListMembers{List: store.List{ID: 3, Name: "Kunden", MemberCount: 1234}, Errors: map[string]string{}}
	doc = render(t, views.ListMembersPage(contactShell(), m))
	if tid(doc, "members-empty").Length() != 1 || !strings.Contains(doc.Find(".lead").Text(), "1.234 Kontakte") {
		t.Error("members page empty state or count")
	}
	if doc.Find(`label[for="field-emails"]`).Length() != 1 {
		t.Error("add form without label")
	}
}

func TestImportViews(t *testing.T) {
	j := store.ImportJob{ID: 9, Filename: "kunden.csv", Status: store.ImportRunning, TotalRows: 2000, ProcessedRows: 500,
		Delimiter: ";", Header: []string{"E-Mail", "Farbe"}, Preview: [][]string{{"a@example.com", "blau"}}}
	doc := render(t, views.ImportProgress(j))
	p := tid(doc, "import-progress")
	if p.AttrOr("hx-get", "") != "/contacts/import/9" || p.AttrOr("hx-trigger", "") != "every 1s" ||
		tid(doc, "import-bar").AttrOr("max", "") != "2000" || tid(doc, "import-bar").AttrOr("value", "") != "500" ||
		text(tid(doc, "import-count")) != "500 von 2.000 Zeilen verarbeitet" {
		t.Errorf("progress: %q", text(p))
	}
	// (An HTML parser with scripting on reads <noscript> as text.)
	if !strings.Contains(doc.Find("noscript").Text(), `href="/contacts/import/9"`) {
		t.Error("no way to refresh without JavaScript")
	}

	j.Status, j.ProcessedRows, j.Created, j.Updated, j.Failed = store.ImportDone, 2000, 1500, 400, 100
	j.Errors = []store.ImportRowError{{Row: 12, Email: "x", Message: "ungültig"}}
	doc = render(t, views.ImportProgress(j))
	sum := tid(doc, "import-summary")
	if sum.Length() != 1 || sum.AttrOr("hx-trigger", "") != "" || text(tid(doc, "import-created")) != "1.500" ||
		tid(doc, "import-error").Length() != 1 || !strings.Contains(text(sum), "99 weitere Fehler") {
		t.Errorf("summary: %q", text(sum))
	}

	j.Status = store.ImportUploaded
	m := views.ImportMap{Job: j, Targets: []string{"email", "custom"}, CustomKeys: []string{"", "farbe"},
		Errors: map[string]string{"mapping.1": "Ungültig."}}
	doc = render(t, views.ImportMapPage(contactShell(), m))
	if doc.Find(`select[name="map_0"] option[selected]`).AttrOr("value", "") != "email" ||
		doc.Find(`input[name="custom_1"]`).AttrOr("value", "") != "farbe" {
		t.Error("mapping not shown")
	}
	sel := doc.Find(`select[name="map_1"]`)
	if sel.AttrOr("aria-invalid", "") != "true" || doc.Find("#"+sel.AttrOr("aria-describedby", "-")).Text() != "Ungültig." {
		t.Error("column error not tied to its select")
	}
	if !strings.Contains(text(doc.Find(".lead")), "Semikolon") || !strings.Contains(text(tid(doc, "mapping-row").Eq(1)), "blau") {
		t.Error("delimiter or samples missing")
	}
}
