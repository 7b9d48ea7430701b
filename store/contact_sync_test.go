package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestSyncTotalFollowsEveryWrite checks the exact total of updated_after sync
// pages, which sums the hourly counts the triggers of migration 00015 keep,
// against counting the contacts, after every kind of write: single and bulk
// upserts, updates that change updated_at and ones that do not, unsubscribes,
// deletions, and raw SQL (the triggers cover writers outside the upsert path).
func TestSyncTotalFollowsEveryWrite(t *testing.T) {
	db := dbtest.NewDB(t)
	ctx := context.Background()
	acct := newAccount(t, db, "business")
	other := newAccount(t, db, "business")

	var ids []int64
	for i := range 30 {
		ids = append(ids, upsert(t, db, acct, store.ContactInput{Email: fmt.Sprintf("s%02d@example.com", i)}).Contact.ID)
	}
	upsert(t, db, other, store.ContactInput{Email: "fremd@example.com"}) // another account's never counts
	bulk := store.BulkContacts{}
	for i := range 40 {
		bulk.Contacts = append(bulk.Contacts, store.ContactInput{Email: fmt.Sprintf("b%02d@example.com", i)})
	}
	if _, err := db.BulkUpsertContacts(ctx, acct, apiActor, bulk); err != nil {
		t.Fatal(err)
	}
	// Spread the contacts over three days, hours and minutes, as a long-lived
	// account has them.
	if _, err := db.ExecContext(ctx, `UPDATE contacts SET updated_at = now() - (id % 70) * interval '67 minutes' WHERE account_id = $1`, acct); err != nil {
		t.Fatal(err)
	}

	check := func(stage string) {
		t.Helper()
		var cuts []time.Time
		if err := db.SelectContext(ctx, &cuts, `SELECT updated_at FROM contacts WHERE account_id = $1 ORDER BY updated_at`, acct); err != nil {
			t.Fatal(err)
		}
		cuts = append(cuts, time.Now().Add(-100*time.Hour), time.Now().Add(time.Hour))
		for i, cut := range cuts {
			for _, shift := range []time.Duration{-time.Second, 0, time.Second, 30 * time.Minute} {
				at := cut.Add(shift)
				var want int
				if err := db.GetContext(ctx, &want, `SELECT count(*) FROM contacts WHERE account_id = $1 AND updated_at > $2`, acct, at); err != nil {
					t.Fatal(err)
				}
				_, got, err := db.Contacts(ctx, acct, store.ContactFilter{UpdatedAfter: &at, Sort: store.SortUpdatedAsc}, store.Page{Page: 1, PerPage: 10})
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("%s: total after %s = %d, counted %d", stage, at.Format(time.RFC3339), got, want)
				}
				if i%7 == 0 {
					afterID := ids[i%len(ids)]
					if err := db.GetContext(ctx, &want, `SELECT count(*) FROM contacts WHERE account_id = $1 AND (updated_at, id) > ($2, $3)`, acct, at, afterID); err != nil {
						t.Fatal(err)
					}
					if _, got, err = db.Contacts(ctx, acct, store.ContactFilter{UpdatedAfter: &at, AfterID: afterID, Sort: store.SortUpdatedAsc}, store.Page{Page: 1, PerPage: 10}); err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Fatalf("%s: total after (%s, %d) = %d, counted %d", stage, at.Format(time.RFC3339), afterID, got, want)
					}
				}
			}
		}
	}
	check("seeded")

	city := "Köln"
	for _, id := range ids[:10] {
		if _, err := db.UpdateContact(ctx, acct, apiActor, id, store.ContactPatch{City: &city}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.UpdateContact(ctx, acct, apiActor, ids[0], store.ContactPatch{City: &city}); err != nil { // a no-op
		t.Fatal(err)
	}
	if _, err := db.UnsubscribeContact(ctx, acct, apiActor, ids[10], store.Unsubscribe{Source: "api"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[11:15] {
		if err := db.DeleteContact(ctx, acct, apiActor, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `UPDATE contacts SET note = 'ohne Zeitstempel' WHERE account_id = $1 AND id = $2`, acct, ids[20]); err != nil {
		t.Fatal(err)
	}
	check("after updates, an unsubscribe and deletions")
}
