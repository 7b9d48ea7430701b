package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestContactFieldsFromContactWrites: the consumer "fields" adds the keys of
// created and updated contacts, typed by their first value, once; the user's
// label and type are never overwritten; other accounts see nothing.
func TestContactFieldsFromContactWrites(t *testing.T) {
	db := dbtest.NewDB(t)
	ctx := context.Background()
	acct, other := newAccount(t, db, "business"), newAccount(t, db, "business")
	if _, err := db.CreateContactField(ctx, acct, apiActor, store.FieldInput{Key: str("punkte"), Label: str("Treuepunkte"), Type: str(store.FieldNumber)}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpsertContact(ctx, acct, apiActor, store.ContactInput{Email: "a@example.com", CustomFields: map[string]any{
		"punkte": "viele", "geburtstag": "1990-05-17", "kunde_seit": json.Number("2019"), "vip": true, "notiz_intern": "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpsertContact(ctx, acct, apiActor, store.ContactInput{Email: "b@example.com"}); err != nil {
		t.Fatal(err)
	}
	// An update that brings a new key.
	if _, err := db.UpsertContact(ctx, acct, apiActor, store.ContactInput{Email: "b@example.com", CustomFields: map[string]any{"region": "Nord"}}); err != nil {
		t.Fatal(err)
	}
	c := db.NewFieldConsumer(store.ConsumerOptions{})
	if _, err := c.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	fields, err := db.ContactFields(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range fields {
		got[f.Key] = f.Label + "/" + f.Type
	}
	want := map[string]string{"punkte": "Treuepunkte/number", "geburtstag": "geburtstag/date", "kunde_seit": "kunde_seit/number",
		"vip": "vip/boolean", "notiz_intern": "notiz_intern/text", "region": "region/text"}
	if len(got) != len(want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("field %s: %q, want %q", k, got[k], v)
		}
	}
	var order []string
	for _, f := range fields {
		order = append(order, f.Key)
	}
	if want := "geburtstag kunde_seit notiz_intern region punkte vip"; strings.Join(order, " ") != want { // by label
		t.Errorf("order %v, want %s", order, want)
	}
	if theirs, err := db.ContactFields(ctx, other); err != nil || len(theirs) != 0 {
		t.Errorf("other account: %v, %v", theirs, err)
	}
	// For the contact detail: only the asked keys.
	defs, err := db.ContactFieldsFor(ctx, acct, []string{"region", "fehlt"})
	if err != nil || len(defs) != 1 || defs["region"].Type != store.FieldText {
		t.Errorf("ContactFieldsFor: %v, %v", defs, err)
	}
	// Nothing new: a second run adds nothing.
	if n, err := c.CatchUp(ctx); err != nil || n != 0 {
		t.Errorf("second catch-up: %d events, %v", n, err)
	}
}

// TestContactFieldsCRUD: create, update (old → new in the activity log),
// delete, and the German validation errors.
func TestContactFieldsCRUD(t *testing.T) {
	db := dbtest.NewDB(t)
	ctx := context.Background()
	acct := newAccount(t, db, "business")
	f, err := db.CreateContactField(ctx, acct, apiActor, store.FieldInput{Key: str("kundennummer")})
	if err != nil || f.Label != "kundennummer" || f.Type != store.FieldText {
		t.Fatalf("create: %+v, %v", f, err)
	}
	for name, in := range map[string]store.FieldInput{
		"key":   {Key: str("Kunden Nummer")},
		"key ":  {Key: str("vorname")}, // built-in
		"key  ": {Key: str("kundennummer")},
		"type":  {Key: str("x"), Type: str("farbe")},
		"label": {Key: str("y"), Label: str("   ")},
	} {
		_, err := db.CreateContactField(ctx, acct, apiActor, in)
		var ve *store.ValidationError
		if !errors.As(err, &ve) || ve.Fields[trim(name)] == "" {
			t.Errorf("%+v: %v, want a message on %s", in, err, trim(name))
		}
	}
	if _, err := db.UpdateContactField(ctx, acct, apiActor, "kundennummer", store.FieldInput{Key: str("neu")}); err == nil {
		t.Error("renaming the key: no error")
	}
	f, err = db.UpdateContactField(ctx, acct, apiActor, "kundennummer", store.FieldInput{Label: str("Kundennummer"), Type: str(store.FieldNumber)})
	if err != nil || f.Label != "Kundennummer" || f.Type != store.FieldNumber {
		t.Fatalf("update: %+v, %v", f, err)
	}
	acts, _, err := db.ActivityLog(ctx, acct, store.ActivityFilter{ObjectType: store.ObjectField}, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(acts) != 2 || acts[0].Action != "field.updated" {
		t.Fatalf("activity: %v, %v", acts, err)
	}
	var d struct {
		Key     string                       `json:"key"`
		Changes map[string]store.FieldChange `json:"changes"`
	}
	if err := json.Unmarshal(acts[0].Details, &d); err != nil || d.Key != "kundennummer" ||
		d.Changes["label"].From != "kundennummer" || d.Changes["label"].To != "Kundennummer" || d.Changes["type"].To != "number" {
		t.Errorf("details %s (%v)", acts[0].Details, err)
	}
	if _, err := db.UpdateContactField(ctx, acct, apiActor, "fehlt", store.FieldInput{Label: str("X")}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("update missing: %v", err)
	}
	if err := db.DeleteContactField(ctx, acct, apiActor, "kundennummer"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ContactField(ctx, acct, "kundennummer"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
	if err := db.DeleteContactField(ctx, acct, apiActor, "kundennummer"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}
}

// TestExistingObjects: the activity log links an object only while it exists,
// and only the account's own.
func TestExistingObjects(t *testing.T) {
	db := dbtest.NewDB(t)
	ctx := context.Background()
	acct, other := newAccount(t, db, "business"), newAccount(t, db, "business")
	name := "Presse"
	l, err := db.CreateList(ctx, acct, apiActor, store.ListInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := db.UpsertContact(ctx, acct, apiActor, store.ContactInput{Email: "bleibt@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := db.UpsertContact(ctx, acct, apiActor, store.ContactInput{Email: "weg@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteContact(ctx, acct, apiActor, gone.Contact.ID); err != nil {
		t.Fatal(err)
	}
	theirs, err := db.UpsertContact(ctx, other, apiActor, store.ContactInput{Email: "fremd@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	id := func(n int64) *int64 { return &n }
	acts := []store.Activity{
		{ObjectType: store.ObjectContact, ObjectID: id(kept.Contact.ID)}, {ObjectType: store.ObjectContact, ObjectID: id(gone.Contact.ID)},
		{ObjectType: store.ObjectContact, ObjectID: id(theirs.Contact.ID)}, {ObjectType: store.ObjectList, ObjectID: id(l.ID)},
		{ObjectType: store.ObjectBlockedAddress}, {ObjectType: "unknown", ObjectID: id(1)},
	}
	got, err := db.ExistingObjects(ctx, acct, acts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[store.ObjectRef]bool{{store.ObjectContact, kept.Contact.ID}: true, {store.ObjectList, l.ID}: true}
	if len(got) != len(want) || !got[store.ObjectRef{store.ObjectContact, kept.Contact.ID}] || !got[store.ObjectRef{store.ObjectList, l.ID}] {
		t.Errorf("existing %v, want %v", got, want)
	}
}

func trim(s string) string {
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return s
}

// TestContactFieldsLimit: at MaxContactFields neither the consumer nor a
// create adds more, and the create says so in German.
func TestContactFieldsLimit(t *testing.T) {
	db := dbtest.NewDB(t)
	ctx := context.Background()
	acct := newAccount(t, db, "business")
	if _, err := db.ExecContext(ctx, `INSERT INTO contact_fields (account_id, key, label)
SELECT $1, 'f' || i, 'f' || i FROM generate_series(1, $2 - 1) AS i`, acct, store.MaxContactFields); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpsertContact(ctx, acct, apiActor, store.ContactInput{Email: "a@example.com",
		CustomFields: map[string]any{"neu_a": "x", "neu_b": "y"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.NewFieldConsumer(store.ConsumerOptions{}).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	fields, err := db.ContactFields(ctx, acct)
	if err != nil || len(fields) != store.MaxContactFields {
		t.Fatalf("%d fields (%v), want %d", len(fields), err, store.MaxContactFields)
	}
	if _, err := db.ContactField(ctx, acct, "neu_a"); err != nil {
		t.Errorf("the first new key (in key order) did not fill the last place: %v", err)
	}
	_, err = db.CreateContactField(ctx, acct, apiActor, store.FieldInput{Key: str("noch_eins")})
	var ve *store.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(ve.Fields["key"], "Höchstens") {
		t.Errorf("create beyond the limit: %v", err)
	}
}
