package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestDisplayEmail: a stored address reads with its domain in Unicode when
// the domain is Latin letters, and keeps its ASCII form when a label is in
// another script, so that a look-alike of a known domain shows as what it is.
func TestDisplayEmail(t *testing.T) {
	for stored, want := range map[string]string{
		"müller@xn--exmple-cua.de":      "müller@exämple.de",
		"info@xn--mller-kva.de":         "info@müller.de",
		"a@shop.xn--strae-oqa.example":  "a@shop.straße.example",
		"b@xn--zel-goa8o.com.tr":        "b@ğüzel.com.tr",
		"plain@example.org":             "plain@example.org",
		"x@xn--l-7sba6dbr.com":          "x@xn--l-7sba6dbr.com", // Cyrillic "раура" and a Latin "l": reads as "paypal"
		"y@xn--e1afmkfd.xn--p1ai":       "y@xn--e1afmkfd.xn--p1ai",
		"z@xn--wgv71a.jp":               "z@xn--wgv71a.jp",
		"broken@xn--zz-invalid-.de":     "broken@xn--zz-invalid-.de",
		"xn--mller-kva@example.org":     "xn--mller-kva@example.org", // the local part is no domain
		"mixed@xn--mller-kva.xn--p1ai":  "mixed@müller.xn--p1ai",
		"no address":                    "no address",
		"":                              "",
		"kein-at-xn--mller-kva.example": "kein-at-xn--mller-kva.example",
	} {
		if got := store.DisplayEmail(stored); got != want {
			t.Errorf("DisplayEmail(%q) = %q, want %q", stored, got, want)
		}
		// What is shown is the same address: parsed again, it is the stored form.
		if want != stored && store.NormalizeEmail(want) != stored {
			t.Errorf("%q shown as %q, which parses to %q", stored, want, store.NormalizeEmail(want))
		}
	}
}

// TestSearchByUnicodeDomain: a domain typed in Unicode finds the addresses
// stored in ASCII, in the contact search, its export and the blocked list;
// the same word still finds names as typed.
func TestSearchByUnicodeDomain(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	byDomain := upsert(t, db, acct, store.ContactInput{Email: "info@müller.de"}).Contact
	byName := upsert(t, db, acct, store.ContactInput{Email: "kontakt@example.org", LastName: ptr("Müller")}).Contact
	other := upsert(t, db, acct, store.ContactInput{Email: "anna@schulz.de"}).Contact
	if byDomain.Email != "info@xn--mller-kva.de" {
		t.Fatalf("stored as %q", byDomain.Email)
	}
	ids := func(q string) []int64 {
		t.Helper()
		cs, total, err := db.Contacts(ctx, acct, store.ContactFilter{Query: q}, store.Page{Page: 1, PerPage: 10})
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, c := range cs {
			out = append(out, c.ID)
		}
		slices.Sort(out)
		if total != len(out) {
			t.Errorf("%q: total %d, %d on the page", q, total, len(out))
		}
		var exported []int64
		if err := db.ExportContacts(ctx, acct, store.ContactFilter{Query: q}, func(cs []store.Contact) error {
			for _, c := range cs {
				exported = append(exported, c.ID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(exported)
		if !slices.Equal(exported, out) {
			t.Errorf("%q: export %v, listing %v", q, exported, out)
		}
		return out
	}
	for q, want := range map[string][]int64{
		"müller.de":        {byDomain.ID},
		"@MÜLLER.de":       {byDomain.ID},
		"info@müller.de":   {byDomain.ID},
		"müller":           {byDomain.ID, byName.ID},
		"xn--mller-kva.de": {byDomain.ID},
		"schulz":           {other.ID},
		"müll":             {byName.ID}, // part of a label: only the name, punycode is no substring of itself
		"bäcker.de":        nil,
	} {
		slices.Sort(want)
		if got := ids(q); !slices.Equal(got, want) {
			t.Errorf("search %q: %v, want %v", q, got, want)
		}
	}

	if _, err := db.BlockAddresses(ctx, acct, apiActor, []string{"zoë@bücher.example", "max@example.org"},
		store.Unsubscribe{Source: store.UnsubManual}); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int{"bücher": 1, "@bücher.example": 1, "example": 2, "zoë": 1, "bäcker": 0} {
		bs, total, err := db.BlockedList(ctx, acct, q, store.Page{Page: 1, PerPage: 10})
		if err != nil || total != want || len(bs) != want {
			t.Errorf("blocked list %q: %d (%d on the page), want %d: %v", q, total, len(bs), want, err)
		}
	}
}
