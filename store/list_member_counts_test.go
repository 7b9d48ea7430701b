package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestListMemberCountsAreStriped: concurrent joins of one list count exactly
// (the listing total and the list's member_count agree with its members)
// without writing the list's row, which every writer would otherwise queue on
// until its commit; a deleted contact counts one member less.
func TestListMemberCountsAreStriped(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	sys := store.Actor{Type: store.ActorSystem}
	list, err := db.CreateList(ctx, acct, sys, store.ListInput{Name: ptr("Käufer")})
	if err != nil {
		t.Fatal(err)
	}
	rowVersion := func() (v string) {
		if err := db.GetContext(ctx, &v, `SELECT xmin::text FROM lists WHERE id = $1`, list.ID); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := rowVersion()

	const n = 24
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := db.UpsertContact(ctx, acct, sys, store.ContactInput{Email: fmt.Sprintf("k%d@example.com", i), ListIDs: []int64{list.ID}})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = res.Contact.ID
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	want := func(members int64) {
		t.Helper()
		l, err := db.List(ctx, acct, list.ID)
		if err != nil || l.MemberCount != members {
			t.Fatalf("member_count %d (%v), want %d", l.MemberCount, err, members)
		}
		_, total, err := db.Contacts(ctx, acct, store.ContactFilter{ListID: list.ID}, store.Page{Page: 1, PerPage: 10})
		if err != nil || int64(total) != members {
			t.Fatalf("listing total %d (%v), want %d", total, err, members)
		}
	}
	want(n)
	if after := rowVersion(); after != before {
		t.Fatalf("the list's row was written (xmin %s, was %s)", after, before)
	}

	if err := db.DeleteContact(ctx, acct, sys, ids[0]); err != nil {
		t.Fatal(err)
	}
	want(n - 1)
}
