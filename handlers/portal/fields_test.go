package portal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestCustomFieldsPortal: fields are defined and changed on the settings
// page (German errors next to the field), the contact detail shows them by
// label with numbers and dates in German, the mail editor's placeholder
// picker offers them, and deleting one keeps the contacts' values.
func TestCustomFieldsPortal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	r := c.get("/settings/fields")
	wantStatus(t, r, http.StatusOK)
	if r.find("fields-empty").Length() != 1 {
		t.Error("no empty state without fields")
	}
	r = c.post("/settings/fields", url.Values{"key": {"Umsatz Gesamt"}, "label": {"Umsatz"}, "type": {"number"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if msg := text(r.find("error-key")); !strings.Contains(msg, "ungültig") {
		t.Errorf("key error %q", msg)
	}
	wantRedirect(t, c.post("/settings/fields", url.Values{"key": {"umsatz"}, "label": {"Umsatz"}, "type": {"number"}}), "/settings/fields")
	wantRedirect(t, c.post("/settings/fields", url.Values{"key": {"geburtstag"}, "label": {"Geburtstag"}, "type": {"date"}}), "/settings/fields")
	wantRedirect(t, c.post("/settings/fields", url.Values{"key": {"newsletter_ok"}, "type": {"boolean"}}), "/settings/fields")
	// A change: label and type, in place.
	wantRedirect(t, c.post("/settings/fields/newsletter_ok", url.Values{"label": {"Einwilligung"}, "type": {"boolean"}}), "/settings/fields")
	r = c.post("/settings/fields/umsatz", url.Values{"label": {""}, "type": {"number"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if msg := text(r.Doc.Find(`[data-key="umsatz"] [data-testid="error-label"]`)); !strings.Contains(msg, "Bezeichnung") {
		t.Errorf("label error %q", msg)
	}
	r = c.get("/settings/fields")
	if got := r.find("field-row").Length(); got != 3 {
		t.Fatalf("%d rows, want 3", got)
	}
	if v, _ := r.Doc.Find(`[data-key="newsletter_ok"] input[name="label"]`).Attr("value"); v != "Einwilligung" {
		t.Errorf("changed label %q", v)
	}

	k := mkContact(t, s.db, acct.ID, store.ContactInput{Email: "anna@example.com", CustomFields: map[string]any{
		"umsatz": json.Number("1234.5"), "geburtstag": "2026-12-24", "newsletter_ok": true, "farbe": "blau", "gross": json.Number("1000000"),
	}})
	r = c.get(fmt.Sprintf("/contacts/%d", k.ID))
	wantStatus(t, r, http.StatusOK)
	for id, want := range map[string]string{
		"custom-umsatz": "1.234,5", "custom-geburtstag": "24.12.2026", "custom-newsletter_ok": "Ja", "custom-farbe": "blau",
		"custom-label-umsatz": "Umsatz", "custom-label-farbe": "farbe",
	} {
		if got := text(r.find(id)); !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}

	// The picker: the built-in placeholders and the account's fields.
	r = c.get("/newsletters/new")
	wantStatus(t, r, http.StatusOK)
	if r.find("placeholder-vorname").Length() != 1 || r.find("placeholder-custom").Length() != 1 {
		t.Fatal("picker without built-ins or custom fields")
	}
	if v, _ := r.find("placeholder-umsatz").Attr("data-insert"); v != "{{umsatz}}" {
		t.Errorf("custom placeholder inserts %q", v)
	}
	if v, _ := r.find("placeholder-newsletter_ok").Attr("title"); v != "Einwilligung" {
		t.Errorf("custom placeholder titled %q", v)
	}

	wantRedirect(t, c.post("/settings/fields/umsatz/delete", nil), "/settings/fields")
	if _, err := s.db.ContactField(ctx, acct.ID, "umsatz"); err == nil {
		t.Error("still defined after delete")
	}
	if got, _ := s.db.Contact(ctx, acct.ID, k.ID); got.CustomFields["umsatz"] == nil {
		t.Error("delete removed the contacts' value")
	}
	wantStatus(t, c.post("/settings/fields/umsatz/delete", nil), http.StatusNotFound)
}

// TestActivityLogReadable: the log says in German what changed and links to
// objects that still exist, not to deleted ones.
func TestActivityLogReadable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	k := mkContact(t, s.db, acct.ID, store.ContactInput{Email: "anna@example.com"})
	if _, err := s.db.UpsertContact(ctx, acct.ID, apiActor, store.ContactInput{Email: "anna@example.com", FirstName: sp("Anna"), City: sp("Köln")}); err != nil {
		t.Fatal(err)
	}
	gone := mkContact(t, s.db, acct.ID, store.ContactInput{Email: "weg@example.com"})
	if err := s.db.DeleteContact(ctx, acct.ID, apiActor, gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.CreateContactField(ctx, acct.ID, apiActor, store.FieldInput{Key: sp("umsatz")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.UpdateContactField(ctx, acct.ID, apiActor, "umsatz", store.FieldInput{Label: sp("Umsatz"), Type: sp("number")}); err != nil {
		t.Fatal(err)
	}
	r := c.get("/logs/activity")
	wantStatus(t, r, http.StatusOK)
	var updated, fieldChange, deleted bool
	r.find("activity-row").Each(func(_ int, row *goquery.Selection) {
		action := text(row.Find(`[data-testid="activity-action"]`))
		sentence := text(row.Find(`[data-testid="activity-sentence"]`))
		switch action {
		case "Kontakt geändert":
			updated = true
			if sentence != "Geändert: Vorname und Ort." {
				t.Errorf("contact change: %q", sentence)
			}
			if href, _ := row.Find(`[data-testid="activity-link"]`).Attr("href"); href != fmt.Sprintf("/contacts/%d", k.ID) {
				t.Errorf("contact link %q", href)
			}
		case "Eigenes Feld geändert":
			fieldChange = true
			if sentence != "Bezeichnung: „umsatz“ → „Umsatz“; Typ: Text → Zahl." {
				t.Errorf("field change: %q", sentence)
			}
		case "Kontakt gelöscht":
			deleted = true
			if row.Find(`[data-testid="activity-link"]`).Length() != 0 || row.Find(`[data-testid="activity-gone"]`).Length() != 1 {
				t.Error("a deleted contact is linked")
			}
			if got := text(row.Find(`[data-testid="activity-object"]`)); got != "Kontakt „weg@example.com“" {
				t.Errorf("deleted contact named %q", got)
			}
		}
	})
	if !updated || !fieldChange || !deleted {
		t.Errorf("rows: contact change %v, field change %v, deletion %v", updated, fieldChange, deleted)
	}
}
