package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// contactJSON is a contact as the API shows it.
func contactJSON(t *testing.T, c store.Contact) []byte {
	t.Helper()
	b, err := c.Data().AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameJSON reports whether two JSON documents mean the same.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

// Plain upserts (fields and tags only) are written without locks, the
// returned contact and the event payloads built from the plan rather than
// read back: they must be exactly what is stored.
func TestPlainUpsertReturnsWhatIsStored(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	if _, err := db.BlockAddresses(ctx, acct, apiActor, []string{"blocked@example.com"}, store.Unsubscribe{Source: store.UnsubAPI}); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		name string
		in   store.ContactInput
	}{
		{"create", store.ContactInput{Email: "a@example.com", FirstName: ptr("Anna"), Tags: []string{"neu"},
			CustomFields: map[string]any{"preis": json.Number("1.50"), "kundennr": "01067", "aktiv": true}}},
		{"update", store.ContactInput{Email: "a@example.com", City: ptr("Köln"), Tags: []string{"vip"},
			CustomFields: map[string]any{"preis": json.Number("2"), "aktiv": nil}}},
		// Numbers jsonb stores in another form (100) go the locked way.
		{"number read back differently", store.ContactInput{Email: "a@example.com", CustomFields: map[string]any{"menge": json.Number("1e2")}}},
		{"no-op", store.ContactInput{Email: "a@example.com", City: ptr("Köln")}},
		{"create blocked", store.ContactInput{Email: "blocked@example.com", LastName: ptr("Berg")}},
		{"update blocked", store.ContactInput{Email: "blocked@example.com", LastName: ptr("Burg")}},
	}
	for _, s := range steps {
		mark := len(outbox(t, db, acct))
		res := upsert(t, db, acct, s.in)
		stored, err := db.Contact(ctx, acct, res.Contact.ID)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got, want := contactJSON(t, res.Contact), contactJSON(t, stored)
		if string(got) != string(want) {
			t.Errorf("%s: returned %s\nstored %s", s.name, got, want)
		}
		events := outboxSince(t, db, acct, mark)
		if s.name == "no-op" {
			if len(events) != 0 {
				t.Errorf("no-op wrote events %v", outboxNames(events))
			}
			continue
		}
		if len(events) != 1 {
			t.Fatalf("%s: events %v, want one", s.name, outboxNames(events))
		}
		var payload struct {
			Contact json.RawMessage `json:"contact"`
		}
		if err := json.Unmarshal(events[0].Payload, &payload); err != nil {
			t.Fatal(err)
		}
		if !sameJSON(t, payload.Contact, want) {
			t.Errorf("%s: %s payload contact %s\nstored %s", s.name, events[0].Name, payload.Contact, want)
		}
		acts, _, err := db.ContactActivities(ctx, acct, stored.ID, store.Page{Page: 1, PerPage: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(acts) != 1 || acts[0].ObjectID == nil || *acts[0].ObjectID != stored.ID || acts[0].Action != events[0].Name {
			t.Errorf("%s: latest activity %+v, want %s of contact %d", s.name, acts, events[0].Name, stored.ID)
		}
	}

	a, err := db.ContactByEmail(ctx, acct, "a@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if string(a.CustomFields["menge"].(json.Number)) != "100" || string(a.CustomFields["preis"].(json.Number)) != "2" {
		t.Errorf("custom fields %v", a.CustomFields)
	}
	if b, _ := db.ContactByEmail(ctx, acct, "blocked@example.com"); b.Status != store.StatusUnsubscribed || b.UnsubscribedAt == nil {
		t.Errorf("blocked address became %s (unsubscribed_at %v)", b.Status, b.UnsubscribedAt)
	}
	if u := usageOf(t, db, acct); u.Contacts != 2 {
		t.Errorf("usage counts %d contacts, want 2", u.Contacts)
	}
	var days int64
	if err := db.GetContext(ctx, &days, `SELECT coalesce(sum(contacts), 0) FROM contact_days WHERE account_id = $1`, acct); err != nil {
		t.Fatal(err)
	}
	if days != 2 {
		t.Errorf("contacts per day sum to %d, want 2", days)
	}
	got, _, err := db.Tags(ctx, acct, store.Page{Page: 1, PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	if want := []store.Tag{{Name: "neu", Count: 1}, {Name: "vip", Count: 1}}; !slices.Equal(got, want) {
		t.Errorf("tags = %+v, want %+v", got, want)
	}
}

// Upserts of one contact by different actors are not combined into one
// batch: their unlocked reads race, and a write decided on a row another call
// changed meanwhile must not apply (it would drop that call's change).
func TestConcurrentPlainUpdatesLoseNothing(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	c := upsert(t, db, acct, store.ContactInput{Email: "shared@example.com"}).Contact
	mark := len(outbox(t, db, acct))

	const actors, rounds = 12, 8
	var wg sync.WaitGroup
	errs := make(chan error, actors*rounds)
	for a := range actors {
		wg.Go(func() {
			actor := store.Actor{Type: store.ActorKey, ID: int64(100 + a)}
			for r := range rounds {
				tag := fmt.Sprintf("t%02d-%d", a, r)
				if _, err := db.UpsertContact(ctx, acct, actor, store.ContactInput{Email: "shared@example.com",
					Note: ptr(tag), Tags: []string{tag}}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	got, err := db.Contact(ctx, acct, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tags) != actors*rounds {
		t.Errorf("contact has %d tags, want %d: lost updates", len(got.Tags), actors*rounds)
	}
	// Every call changed the contact: one event each, the last one carrying
	// the contact as stored.
	events := outboxSince(t, db, acct, mark)
	if len(events) != actors*rounds {
		t.Errorf("%d events, want %d", len(events), actors*rounds)
	}
	var last struct {
		Contact json.RawMessage `json:"contact"`
	}
	if err := json.Unmarshal(events[len(events)-1].Payload, &last); err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, last.Contact, contactJSON(t, got)) {
		t.Errorf("last event's contact %s\nstored %s", last.Contact, contactJSON(t, got))
	}
	tags, total, err := db.Tags(ctx, acct, store.Page{Page: 1, PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	if total != actors*rounds {
		t.Errorf("%d tags counted, want %d", total, actors*rounds)
	}
	for _, tag := range tags {
		if tag.Count != 1 {
			t.Errorf("tag %s counted %d times", tag.Name, tag.Count)
		}
	}
}
