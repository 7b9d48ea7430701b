package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestContactsUpToCountsUpToTheCap(t *testing.T) {
	ctx := context.Background()
	db := dbtest.Open(t, dbtest.URL(t))
	acct := newAccount(t, db, "")
	other := newAccount(t, db, "")
	l := mkList(t, db, acct, "Kunden", false)
	var in []store.ContactInput
	for i := range 12 {
		c := store.ContactInput{Email: fmt.Sprintf("p%02d@example.com", i), LastName: ptr("Schmidt")}
		if i < 8 {
			c.Tags, c.ListIDs = []string{"vip"}, []int64{l.ID}
		}
		in = append(in, c)
	}
	if _, err := db.BulkUpsertContacts(ctx, acct, apiActor, store.BulkContacts{Contacts: in}); err != nil {
		t.Fatal(err)
	}
	upsert(t, db, other, store.ContactInput{Email: "fremd@example.com", LastName: ptr("Schmidt"), Tags: []string{"vip"}})
	for _, tc := range []struct {
		f       store.ContactFilter
		page    int
		want    int
		total   int
		atLeast bool
		more    bool
	}{
		{store.ContactFilter{Tag: "vip"}, 1, 5, 5, true, true},  // 8 matches, counted to 5: "more than 5"
		{store.ContactFilter{Tag: "vip"}, 2, 3, 5, true, false}, // the page itself is exact
		{store.ContactFilter{Query: "schmidt"}, 2, 5, 5, true, true},
		{store.ContactFilter{Query: "schmidt"}, 3, 2, 5, true, false},
		{store.ContactFilter{Tag: "vip", Query: "p1"}, 1, 0, 0, false, false},
		{store.ContactFilter{Status: "pending"}, 1, 0, 0, false, false},
		{store.ContactFilter{Query: "p1"}, 1, 2, 2, false, false}, // under the cap: exact
		{store.ContactFilter{Tag: "vip", ListID: l.ID, Query: "p07"}, 1, 1, 1, false, false},
		{store.ContactFilter{}, 1, 5, 12, false, true},            // unfiltered: the exact counter
		{store.ContactFilter{}, 3, 2, 12, false, false},           //
		{store.ContactFilter{ListID: l.ID}, 1, 5, 8, false, true}, // one list: its exact counter
	} {
		res, err := db.ContactsUpTo(ctx, acct, tc.f, store.Page{Page: tc.page, PerPage: 5}, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Contacts) != tc.want || res.Total != tc.total || res.AtLeast != tc.atLeast || res.More != tc.more {
			t.Errorf("%+v page %d: %d contacts, total %d (at least %v, more %v), want %d, %d, %v, %v",
				tc.f, tc.page, len(res.Contacts), res.Total, res.AtLeast, res.More, tc.want, tc.total, tc.atLeast, tc.more)
		}
		for _, c := range res.Contacts {
			if c.AccountID != acct {
				t.Errorf("another account's contact %s", c.Email)
			}
		}
	}
	if _, err := db.ContactsUpTo(ctx, acct, store.ContactFilter{ListID: mkList(t, db, other, "Fremd", false).ID, Tag: "vip"},
		store.Page{Page: 1, PerPage: 5}, 5); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account's list: %v", err)
	}
}
