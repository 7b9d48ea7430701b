package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestDeleteListEmitsListLeft: deleting a list is a change of list membership
// for each member, so each gets list.left (issue 27, item 10), with the same
// payload a single removal carries: the list, and the contact as it is after
// the change (its other lists, the new updated_at).
func TestDeleteListEmitsListLeft(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	gone := mkList(t, db, acct, `Kunden & "VIP" <2026>`, false)
	stays := mkList(t, db, acct, "Bleibt", false)
	first, city := "Jürgen", "Köln"
	a := upsert(t, db, acct, store.ContactInput{Email: "a@example.com", FirstName: &first, City: &city, Tags: []string{"kunde", "vip"},
		CustomFields: map[string]any{"punkte": 12.5, "lieblingsfarbe": "grün & <blau>"}, ListIDs: []int64{gone.ID, stays.ID}}).Contact
	b := upsert(t, db, acct, store.ContactInput{Email: "b@example.com", ListIDs: []int64{gone.ID}}).Contact
	pending := "pending"
	c := upsert(t, db, acct, store.ContactInput{Email: "c@example.com", Status: &pending, ListIDs: []int64{gone.ID}}).Contact
	if _, err := db.ExecContext(ctx, `UPDATE contacts SET doi_confirmed_at = '2026-07-01 10:00:00+00' WHERE id = $1`, b.ID); err != nil {
		t.Fatal(err)
	}
	outsider := upsert(t, db, acct, store.ContactInput{Email: "d@example.com", ListIDs: []int64{stays.ID}}).Contact

	mark := len(outbox(t, db, acct))
	if err := db.DeleteList(ctx, acct, apiActor, gone.ID); err != nil {
		t.Fatal(err)
	}
	events := outboxSince(t, db, acct, mark)
	if len(events) != 3 {
		t.Fatalf("events after deleting a list of 3: %v", outboxNames(events))
	}
	idPattern := regexp.MustCompile(`^evt_[A-Za-z0-9]{24}$`)
	seen := map[string]bool{}
	for i, id := range []int64{a.ID, b.ID, c.ID} {
		ev := events[i]
		if ev.Name != store.EventListLeft || !idPattern.MatchString(ev.PublicID) || seen[ev.PublicID] {
			t.Errorf("event %d: %s %s", i, ev.Name, ev.PublicID)
		}
		seen[ev.PublicID] = true
		after, err := db.Contact(ctx, acct, id)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(store.ListEventData{List: store.ListEventRef{ID: gone.ID, Name: gone.Name}, Contact: after.Data()})
		if err != nil {
			t.Fatal(err)
		}
		if !sameJSONValue(t, ev.Payload, want) {
			t.Errorf("list.left of %s:\n got %s\nwant %s", after.Email, ev.Payload, want)
		}
	}
	if after, _ := db.Contact(ctx, acct, outsider.ID); after.UpdatedAt != outsider.UpdatedAt {
		t.Errorf("a contact outside the deleted list was touched")
	}
}

// sameJSONValue reports whether two JSON documents hold the same value (key
// order and escaping aside: the outbox stores jsonb).
func sameJSONValue(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// BenchmarkDeleteList deletes a list of 200,000 members, with a list.left
// event for each (issue 27, item 10). The members are written by SQL outside
// the timer; each iteration deletes a fresh list of the same contacts.
func BenchmarkDeleteList(b *testing.B) {
	const members = 200_000
	ctx := context.Background()
	db := dbtest.NewDB(b)
	res, err := db.CreateAccount(ctx, store.NewAccount{Name: "Bench", Email: "bench@example.com", Plan: "business"})
	if err != nil {
		b.Fatal(err)
	}
	acct := res.Account.ID
	if _, err := db.ExecContext(ctx, `INSERT INTO contacts (account_id, email, first_name, tags, custom_fields)
		SELECT $1, 'k' || g || '@example.com', 'Kontakt ' || g, '{kunde}', jsonb_build_object('nr', g)
		FROM generate_series(1, $2) g`, acct, members); err != nil {
		b.Fatal(err)
	}
	name := "Bleibt"
	other, err := db.CreateList(ctx, acct, apiActor, store.ListInput{Name: &name})
	if err != nil {
		b.Fatal(err)
	}
	fill := `INSERT INTO list_members (list_id, contact_id, account_id) SELECT $2, id, $1 FROM contacts WHERE account_id = $1`
	// Every contact stays in one other list, so each payload carries a list.
	if _, err := db.ExecContext(ctx, fill, acct, other.ID); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		name := fmt.Sprintf("Weg %d", i)
		l, err := db.CreateList(ctx, acct, apiActor, store.ListInput{Name: &name})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, fill, acct, l.ID); err != nil {
			b.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `ANALYZE list_members`); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := db.DeleteList(ctx, acct, apiActor, l.ID); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var n int64
	if err := db.GetContext(ctx, &n, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'list.left'`, acct); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/float64(b.N), "events/op")
}
