package views_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// render renders c and parses the HTML; rows wraps table rows in a table first,
// since an HTML parser drops <tr> outside one.
func render(t *testing.T, c templ.Component) *goquery.Document {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func renderRows(t *testing.T, c templ.Component) *goquery.Document {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString("<table><tbody>")
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("</tbody></table>")
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func tid(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(`[data-testid="` + id + `"]`)
}

func text(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

func shell(role string) views.Shell {
	return views.Shell{Title: "Seite", Active: views.NavAPILog, Account: "Bäckerei Müller", User: "inhaber@example.com", Role: role}
}

func TestAppLayout(t *testing.T) {
	for _, tc := range []struct {
		role     string
		wantKeys bool
	}{{"owner", true}, {"admin", true}, {"member", false}} {
		doc := render(t, views.DashboardPage(shell(tc.role), nil))
		if got := doc.Find("title").Text(); got != "Seite · Rundbrief" {
			t.Errorf("title %q", got)
		}
		if lang, _ := doc.Find("html").Attr("lang"); lang != "de" {
			t.Errorf("lang %q", lang)
		}
		// Skip link first, pointing at the focusable main area.
		skip := doc.Find("body > a").First()
		if href, _ := skip.Attr("href"); href != "#main" || doc.Find("main#main[tabindex='-1']").Length() != 1 {
			t.Errorf("skip link %q / main", href)
		}
		if nav := doc.Find("nav[aria-label]"); nav.Length() != 1 {
			t.Error("the sidebar is not a labelled navigation")
		}
		if got := tid(doc, "nav-api-keys").Length() == 1; got != tc.wantKeys {
			t.Errorf("%s sees API keys: %v", tc.role, got)
		}
		current := doc.Find(`nav a[aria-current="page"]`)
		if current.Length() != 1 || current.AttrOr("data-testid", "") != "nav-api-log" {
			t.Errorf("current entry %v", current.AttrOr("data-testid", ""))
		}
		if text(tid(doc, "account-name")) != "Bäckerei Müller" || !strings.Contains(text(tid(doc, "user-email")), "inhaber@example.com") {
			t.Error("header lacks account or user")
		}
		// Sign-out is a POST form (state changes never ride on GET).
		if form := tid(doc, "sign-out").Closest("form"); form.AttrOr("method", "") != "post" || form.AttrOr("action", "") != "/logout" {
			t.Error("sign-out is not a POST to /logout")
		}
		if tid(doc, "flash").Length() != 0 {
			t.Error("flash without a message")
		}
	}
}

// Every entry of Navigation has a unique id, a path and a label.
func TestNavigationEntries(t *testing.T) {
	seen := map[string]bool{}
	for _, it := range views.Navigation(views.German()) {
		if it.ID == "" || !strings.HasPrefix(it.Href, "/") || it.Label == "" || seen[it.ID] {
			t.Errorf("entry %+v", it)
		}
		seen[it.ID] = true
	}
}

func TestFlash(t *testing.T) {
	for kind, role := range map[string]string{"success": "status", "error": "alert", "": "status"} {
		s := shell("owner")
		s.Flash = &views.Flash{Kind: kind, Message: "Gespeichert."}
		doc := render(t, views.DashboardPage(s, nil))
		f := tid(doc, "flash")
		if text(f) != "Gespeichert." || f.AttrOr("role", "") != role {
			t.Errorf("kind %q: %q role %q", kind, text(f), f.AttrOr("role", ""))
		}
	}
	oob := render(t, views.FlashRegion(&views.Flash{Kind: "success", Message: "x"}, true))
	if v, _ := oob.Find("#flash").Attr("hx-swap-oob"); v != "true" {
		t.Error("out-of-band flash region lacks hx-swap-oob")
	}
}

func TestInputShowsErrorNextToField(t *testing.T) {
	doc := render(t, views.Input(views.Field{Name: "email", Label: "E-Mail", Type: "email", Value: "a@b", Hint: "Ihre Adresse", Error: "Ungültig.", Required: true}))
	field := tid(doc, "field-email")
	input := field.Find("input")
	label := field.Find("label")
	if label.AttrOr("for", "") != input.AttrOr("id", "x") || text(label) != "E-Mail" {
		t.Error("label not tied to the input")
	}
	if input.AttrOr("aria-invalid", "") != "true" || input.AttrOr("type", "") != "email" || input.AttrOr("value", "") != "a@b" {
		t.Errorf("input %v", input.Nodes[0].Attr)
	}
	_, required := input.Attr("required")
	if !required {
		t.Error("not required")
	}
	msg := field.Find(`[data-testid="error-email"]`)
	if text(msg) != "Ungültig." || !strings.Contains(input.AttrOr("aria-describedby", ""), msg.AttrOr("id", "?")) {
		t.Errorf("error %q not described by %q", text(msg), input.AttrOr("aria-describedby", ""))
	}
	ok := render(t, views.Input(views.Field{Name: "email", Label: "E-Mail"}))
	if _, invalid := ok.Find("input").Attr("aria-invalid"); invalid || tid(ok, "error-email").Length() != 0 {
		t.Error("a field without error is marked")
	}
}

func key(id int64, name string, revoked bool) store.APIKey {
	k := store.APIKey{ID: id, AccountID: 1, Name: name, Prefix: "rb_live_AbCd", Scopes: []string{"read", "write"},
		AllowedIPs: []string{"10.0.0.0/8"}, CreatedAt: time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)}
	if revoked {
		at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
		k.RevokedAt = &at
	}
	return k
}

func TestKeysPage(t *testing.T) {
	empty := render(t, views.KeysPage(shell("owner"), nil, nil))
	if tid(empty, "keys-empty").Length() != 1 || tid(empty, "keys-table").Length() != 0 || tid(empty, "key-reveal").Length() != 0 {
		t.Error("an empty list shows no empty state")
	}

	limit := 60
	active := key(7, "Shop", false)
	active.RateLimit = &limit
	doc := render(t, views.KeysPage(shell("owner"), []store.APIKey{active, key(3, "", true)}, &views.NewKey{Full: "rb_live_full", Name: "Shop"}))
	if v, _ := tid(doc, "new-key").Attr("value"); v != "rb_live_full" {
		t.Errorf("revealed key %q", v)
	}
	if copyBtn := tid(doc, "copy-key"); copyBtn.AttrOr("data-copy", "") != "new-key" || copyBtn.AttrOr("type", "") != "button" {
		t.Error("copy button not wired to the key")
	}
	rows := tid(doc, "key-row")
	if rows.Length() != 2 {
		t.Fatalf("%d rows", rows.Length())
	}
	first, second := rows.Eq(0), rows.Eq(1)
	if text(first.Find(`[data-testid="key-rate-limit"]`)) != "60/min" || text(first.Find(`[data-testid="key-ips"]`)) != "10.0.0.0/8" ||
		text(first.Find(`[data-testid="key-origins"]`)) != "jeder Origin" || text(first.Find(`[data-testid="key-last-used"]`)) != "nie" {
		t.Errorf("active row: %s", text(first))
	}
	if got := text(first.Find("td").Eq(3)); got != "01.03.2026, 10:30" {
		t.Errorf("created shown as %q (Europe/Berlin)", got)
	}
	revoke := first.Find(`[data-testid="key-revoke"]`)
	if revoke.AttrOr("href", "") != "/api-keys/7/revoke" || revoke.AttrOr("hx-get", "") != "/api-keys/7/revoke" || revoke.AttrOr("hx-target", "") != "closest tr" {
		t.Errorf("revoke link %v", revoke.Nodes)
	}
	if text(second.Find(`[data-testid="key-name"]`)) != "Ohne Namen" || !strings.HasPrefix(text(second.Find(`[data-testid="key-status"]`)), "Widerrufen am 02.03.2026") ||
		second.Find(`[data-testid="key-revoke"]`).Length() != 0 || second.Find(`[data-testid="key-edit"]`).Length() != 0 {
		t.Errorf("revoked row: %s", text(second))
	}
}

func TestKeyConfirmRow(t *testing.T) {
	for action, button := range map[string]string{views.KeyRevoke: "Endgültig widerrufen", views.KeyRenew: "Jetzt erneuern"} {
		doc := renderRows(t, views.KeyConfirmRow(key(7, "Shop", false), action))
		form := doc.Find("form")
		if form.AttrOr("method", "") != "post" || form.AttrOr("action", "") != "/api-keys/7/"+action || form.AttrOr("hx-post", "") != "/api-keys/7/"+action {
			t.Errorf("%s form %v", action, form.Nodes)
		}
		if got := text(tid(doc, "confirm-"+action)); got != button {
			t.Errorf("%s button %q", action, got)
		}
		if !strings.Contains(text(doc.Selection), "„Shop“") {
			t.Errorf("%s question does not name the key", action)
		}
	}
	page := render(t, views.KeyConfirmPage(shell("owner"), key(7, "Shop", false), views.KeyRevoke))
	if form := page.Find("main form"); form.AttrOr("hx-post", "") != "" || form.AttrOr("action", "") != "/api-keys/7/revoke" {
		t.Error("the page without JavaScript must post plainly")
	}
}

func TestKeyFormShowsFieldErrors(t *testing.T) {
	f := views.KeyForm{Title: "Neu", Action: "/api-keys/new", Submit: "Erstellen", Scopes: []string{"read"}, AllowedIPs: "nope",
		Errors: map[string]string{"allowed_ips": "„nope“ ist keine IP.", "rate_limit": "Zahl!"}}
	doc := render(t, views.KeyFormPage(shell("owner"), f))
	if text(tid(doc, "form-alert")) == "" {
		t.Error("no summary above the form")
	}
	for field, msg := range f.Errors {
		if got := text(tid(doc, "field-"+field).Find(`[data-testid="error-` + field + `"]`)); got != msg {
			t.Errorf("%s: %q", field, got)
		}
	}
	if n := doc.Find(`input[name="scopes"]`).Length(); n != 5 {
		t.Errorf("%d scope choices", n)
	}
	if _, checked := doc.Find(`input[name="scopes"][value="read"]`).Attr("checked"); !checked {
		t.Error("chosen scope not kept")
	}
	if doc.Find(`textarea[name="allowed_ips"]`).Text() != "nope" {
		t.Error("typed IPs not kept")
	}
}

func TestLogSection(t *testing.T) {
	pager := views.Pager{Page: 2, PerPage: 25, Total: 60, Target: "#api-log", URL: func(p int) string { return "/logs/api?page=" + string(rune('0'+p)) }}
	none := render(t, views.LogSection(views.LogList{Pager: pager}))
	if !strings.Contains(text(tid(none, "log-empty")), "Noch keine API-Anfragen") || tid(none, "pagination").Length() != 0 {
		t.Error("empty log")
	}
	filtered := render(t, views.LogSection(views.LogList{Filter: views.LogFilter{Status: "500"}, Pager: pager}))
	if !strings.Contains(text(tid(filtered, "log-empty")), "Keine passenden Einträge") || tid(filtered, "log-filter-reset").Length() != 1 {
		t.Error("empty filter result")
	}

	keyID := int64(7)
	entry := store.APILogEntry{ID: 1, KeyID: &keyID, Method: "POST", Path: "/v1/contacts", Status: 422, IP: "203.0.113.7", DurationUS: 2500,
		CreatedAt: time.Date(2026, 7, 1, 8, 0, 0, 0, time.UTC)}
	gone := int64(99)
	orphan := entry
	orphan.ID, orphan.KeyID, orphan.Status = 2, &gone, 503
	doc := render(t, views.LogSection(views.LogList{Entries: []store.APILogEntry{entry, orphan}, Keys: []store.APIKey{key(7, "Shop", false)}, Pager: pager}))
	rows := tid(doc, "log-row")
	if rows.Length() != 2 || text(rows.Eq(0).Find(`[data-testid="log-key"]`)) != "Shop" || text(rows.Eq(1).Find(`[data-testid="log-key"]`)) != "Schlüssel #99" {
		t.Errorf("rows: %s", text(rows))
	}
	if got := text(rows.Eq(0).Find("td").Eq(0)); got != "01.07.2026, 10:00" {
		t.Errorf("time %q", got)
	}
	if !rows.Eq(0).Find(".badge").HasClass("badge-warning") || !rows.Eq(1).Find(".badge").HasClass("badge-danger") {
		t.Error("status colours")
	}
	if got := text(tid(doc, "pagination-range")); got != "26–50 von 60 Einträgen · Seite 2 von 3" {
		t.Errorf("range %q", got)
	}
	for rel, page := range map[string]string{"prev": "1", "next": "3"} {
		a := tid(doc, "page-"+rel)
		if a.AttrOr("href", "") != "/logs/api?page="+page || a.AttrOr("hx-get", "") != "/logs/api?page="+page || a.AttrOr("hx-push-url", "") != "true" {
			t.Errorf("%s link %v", rel, a.Nodes)
		}
	}
	if form := tid(doc, "log-filter"); form.AttrOr("method", "") != "get" || form.AttrOr("hx-target", "") != "#api-log" {
		t.Error("filter form")
	}
}

func TestUsagePanel(t *testing.T) {
	doc := render(t, views.UsagePanel(views.PlanUsage{Plan: "pro", Features: []string{"api", "ai"}, ShowAI: true, AICreditEUR: 12.5,
		Items: []views.UsageItem{
			{ID: "contacts", Label: "Kontakte", Used: 45_000, Limit: 50_000},
			{ID: "lists", Label: "Listen", Used: 100, Limit: 100},
			{ID: "storage", Label: "Speicher", Used: 1_500_000_000, Limit: 5_000_000_000, Bytes: true},
		}}))
	contacts := tid(doc, "usage-contacts")
	if text(contacts.Find(`[data-testid="used"]`)) != "45.000" || text(contacts.Find(`[data-testid="limit"]`)) != "50.000" || !contacts.HasClass("is-near") {
		t.Errorf("contacts: %s", text(contacts))
	}
	if p := contacts.Find("progress"); p.AttrOr("value", "") != "45000" || p.AttrOr("max", "") != "50000" || p.AttrOr("aria-labelledby", "") == "" {
		t.Errorf("progress %v", p.Nodes)
	}
	if lists := tid(doc, "usage-lists"); !lists.HasClass("is-full") || !strings.Contains(text(lists), "Limit erreicht") {
		t.Errorf("lists: %s", text(lists))
	}
	if got := text(tid(doc, "usage-storage").Find(`[data-testid="used"]`)); got != "1,5 GB" {
		t.Errorf("storage %q", got)
	}
	if got := text(tid(doc, "usage-ai_credit")); !strings.Contains(got, "12,50 €") {
		t.Errorf("AI credit %q", got)
	}
	if got := strings.Join(tid(doc, "features").Find("li").Map(func(_ int, s *goquery.Selection) string { return s.Text() }), ", "); got != "API-Zugang, KI-Funktionen" {
		t.Errorf("features %q", got)
	}
}

func TestSignInPage(t *testing.T) {
	doc := render(t, views.SignInPage(views.SignInForm{Email: "a@example.com", Next: "/logs/api", Alert: "Falsch."}))
	if text(tid(doc, "form-alert")) != "Falsch." || tid(doc, "form-alert").AttrOr("role", "") != "alert" {
		t.Error("alert")
	}
	form := tid(doc, "sign-in-form")
	if form.AttrOr("method", "") != "post" || form.AttrOr("action", "") != "/login" || form.Find(`input[name="next"]`).AttrOr("value", "") != "/logs/api" {
		t.Error("form")
	}
	if form.Find(`input[name="email"]`).AttrOr("autocomplete", "") != "username" || form.Find(`input[name="password"]`).AttrOr("autocomplete", "") != "current-password" {
		t.Error("password managers need autocomplete hints")
	}
	if _, focused := form.Find(`input[name="password"]`).Attr("autofocus"); !focused {
		t.Error("with the address kept, focus belongs on the password")
	}
}

func TestErrorPage(t *testing.T) {
	s := shell("owner")
	in := render(t, views.ErrorPage(&s, "Nicht gefunden", "Weg."))
	if tid(in, "sidebar").Length() != 1 || text(tid(in, "error-title")) != "Nicht gefunden" {
		t.Error("error inside the app")
	}
	out := render(t, views.ErrorPage(nil, "Anfrage abgelehnt", "Nein."))
	if tid(out, "sidebar").Length() != 0 || text(tid(out, "error-title")) != "Anfrage abgelehnt" {
		t.Error("error outside the app")
	}
}
