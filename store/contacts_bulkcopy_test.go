package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// bulkFixture is an account with two lists (one with double opt-in), a
// blocked address and two contacts, and the bulk request run against it: new
// contacts (some unsubscribed, some onto the double opt-in list, some with
// custom fields), a blocked address, an address twice, the existing contacts
// (one changed, one not) and invalid entries.
func bulkFixture(t *testing.T, db *store.DB) (int64, store.BulkContacts) {
	t.Helper()
	ctx := context.Background()
	acct := newAccount(t, db, "business")
	plain := mkList(t, db, acct, "Alle", false)
	doi := mkList(t, db, acct, "Bestätigt", true)
	if _, err := db.BlockAddresses(ctx, acct, apiActor, []string{"gesperrt@example.com"}, store.Unsubscribe{Source: store.UnsubManual}); err != nil {
		t.Fatal(err)
	}
	upsert(t, db, acct, store.ContactInput{Email: "alt1@example.com", FirstName: ptr("Alt"), Tags: []string{"bestand"}})
	upsert(t, db, acct, store.ContactInput{Email: "alt2@example.com", FirstName: ptr("Gleich"), ListIDs: []int64{plain.ID}, Tags: []string{"import"}})
	var in store.BulkContacts
	for i := range 60 {
		c := store.ContactInput{Email: fmt.Sprintf("Neu%03d@Example.com ", i), FirstName: ptr("Vorname"), LastName: ptr(fmt.Sprintf("Nachname %d", i)),
			City: ptr("Hamburg"), Tags: []string{"t" + fmt.Sprint(i%3)}}
		switch {
		case i%10 == 1:
			c.Status = ptr(store.StatusUnsubscribed)
		case i%10 == 2:
			c.ListIDs = []int64{doi.ID}
		case i%10 == 3:
			c.CustomFields = map[string]any{"kundennummer": fmt.Sprint(1000 + i), "umsatz": 12.5, "aktiv": true, "hinweis": "<b>&</b> \\ \t \"x\""}
		case i%10 == 4:
			c.Note = ptr("Zeile 1\nZeile 2\\n\t€")
		}
		in.Contacts = append(in.Contacts, c)
	}
	in.Contacts = append(in.Contacts,
		store.ContactInput{Email: "gesperrt@example.com", FirstName: ptr("Gesperrt")},
		store.ContactInput{Email: "neu005@example.com", Zip: ptr("20095")},
		store.ContactInput{Email: "alt1@example.com", LastName: ptr("Neu")},
		store.ContactInput{Email: "alt2@example.com", FirstName: ptr("Gleich")},
		store.ContactInput{Email: "kaputt"},
		store.ContactInput{Email: "liste@example.com", ListIDs: []int64{987654}},
	)
	in.ListIDs, in.Tags = []int64{plain.ID}, []string{"import"}
	return acct, in
}

// accountState is what a bulk request leaves in an account, without ids and
// timestamps: contacts, events and activities in order, counters, lists,
// blocked addresses and confirmation mails.
func accountState(t *testing.T, db *store.DB, acct int64) map[string]any {
	t.Helper()
	ctx := context.Background()
	q := func(query string) []string {
		var rows []string
		if err := db.SelectContext(ctx, &rows, query, acct); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return rows
	}
	state := map[string]any{
		"contacts": q(`SELECT concat_ws('|', email, first_name, last_name, address, zip, city, phone, note, tags::text, status, source,
			custom_fields::text, unsubscribed_at IS NOT NULL, created_at = updated_at OR email LIKE 'alt%', created_at > now() - interval '1 minute',
			(SELECT string_agg(l.name, ',' ORDER BY l.name) FROM list_members m JOIN lists l ON l.id = m.list_id WHERE m.contact_id = c.id))
			FROM contacts c WHERE account_id = $1 ORDER BY email`),
		"activities": q(`SELECT concat_ws('|', actor_type, action, object_type, object_id IS NOT NULL, details - 'list_ids' - 'list_id')
			FROM activity_log WHERE account_id = $1 ORDER BY id`),
		"tag_counts": q(`SELECT tag || '=' || sum(contacts) FROM contact_tag_counts WHERE account_id = $1 GROUP BY tag HAVING sum(contacts) <> 0 ORDER BY tag`),
		"lists":      q(`SELECT name || '=' || member_count || '/' || (SELECT count(*) FROM list_members m WHERE m.list_id = l.id) FROM lists l WHERE account_id = $1 ORDER BY name`),
		"blocked":    q(`SELECT email || '|' || source FROM blocked_addresses WHERE account_id = $1 ORDER BY email`),
		"mails":      q(`SELECT to_email FROM system_mails WHERE account_id = $1 ORDER BY to_email`),
		"counters": q(`SELECT concat_ws('|', (SELECT u.contacts + (SELECT coalesce(sum(s.contacts), 0) FROM account_contact_counts s WHERE s.account_id = u.account_id)
			FROM account_usage u WHERE u.account_id = $1),
			(SELECT sum(contacts) FROM contact_days WHERE account_id = $1),
			(SELECT sum(contacts) FROM contact_update_hours WHERE account_id = $1),
			(SELECT count(*) FROM contacts WHERE account_id = $1))`),
	}
	var events []string
	for _, e := range outbox(t, db, acct) {
		var payload any
		if err := json.Unmarshal(e.Payload, &payload); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(withoutKeys(payload))
		events = append(events, e.Name+" "+string(b))
	}
	state["events"] = events
	return state
}

// withoutKeys drops what differs between two accounts with the same
// contacts: ids and timestamps.
func withoutKeys(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k := range v {
			if k == "id" || strings.HasSuffix(k, "_at") || k == "list_ids" {
				delete(v, k)
				continue
			}
			v[k] = withoutKeys(v[k])
		}
	case []any:
		for i := range v {
			v[i] = withoutKeys(v[i])
		}
	}
	return v
}

// bulkOutcome is a bulk result without ids and timestamps.
func bulkOutcome(res store.BulkResult) []string {
	out := make([]string, len(res.Entries))
	for i, e := range res.Entries {
		out[i] = fmt.Sprintf("%d %s %s %v", e.Index, e.Email, e.Result, e.Err)
	}
	return append(out, fmt.Sprintf("totals %d/%d/%d", res.Created, res.Updated, res.Failed))
}

// TestBulkCopyWritesWhatTheInsertWrites runs the same mixed bulk request on
// two accounts, once through the INSERT statements and once through COPY,
// and compares everything they leave: results, contacts, events (in order),
// activities, tag, list and contact counters, blocked addresses and
// confirmation mails. The contacts the COPY path returns are the rows as
// stored.
func TestBulkCopyWritesWhatTheInsertWrites(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	run := func(minCopy int) (int64, store.BulkResult) {
		acct, in := bulkFixture(t, db)
		restore := store.SetMinCopyRows(minCopy)
		defer restore()
		res, err := db.BulkUpsertContacts(ctx, acct, apiActor, in)
		if err != nil {
			t.Fatal(err)
		}
		return acct, res
	}
	insAcct, insRes := run(1 << 30)
	copied := store.CopiedContacts()
	copyAcct, copyRes := run(1)
	if n := store.CopiedContacts() - copied; n != 61 {
		t.Fatalf("%d contacts copied, want 61", n)
	}
	if got, want := bulkOutcome(copyRes), bulkOutcome(insRes); !reflect.DeepEqual(got, want) {
		t.Errorf("results by COPY:\n%s\nby INSERT:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if copyRes.Created != 61 || copyRes.Updated != 3 || copyRes.Failed != 2 {
		t.Errorf("totals = %d/%d/%d, want 61/3/2: %v", copyRes.Created, copyRes.Updated, copyRes.Failed, copyRes.Entries[3].Err)
	}
	got, want := accountState(t, db, copyAcct), accountState(t, db, insAcct)
	for k := range want {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("%s by COPY:\n%v\nby INSERT:\n%v", k, got[k], want[k])
		}
	}
	for _, e := range copyRes.Entries {
		if e.Result != store.BulkCreated {
			continue
		}
		stored, err := db.Contact(ctx, copyAcct, e.Contact.ID)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(e.Contact.Data())
		b, _ := json.Marshal(stored.Data())
		if string(a) != string(b) {
			t.Errorf("returned %s\nstored   %s", a, b)
		}
	}
}

// TestBulkCopyLosesARaceForAnAddress: another transaction creates one of a
// batch's new addresses after the batch locked its contacts and before it
// commits. The COPY fails on the address, and the batch's new contacts take
// the ON CONFLICT insert instead: that address becomes an update of the other
// transaction's contact, the others are created, and counters and events
// say so.
func TestBulkCopyLosesARaceForAnAddress(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	restore := store.SetMinCopyRows(1)
	defer restore()
	other, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Rollback() }()
	if _, err := other.ExecContext(ctx, `INSERT INTO contacts (account_id, email, first_name) VALUES ($1, 'race@example.com', 'Erster')`, acct); err != nil {
		t.Fatal(err)
	}
	var in store.BulkContacts
	for i := range 40 {
		in.Contacts = append(in.Contacts, store.ContactInput{Email: fmt.Sprintf("n%02d@example.com", i), FirstName: ptr("Neu")})
	}
	in.Contacts = append(in.Contacts, store.ContactInput{Email: "race@example.com", LastName: ptr("Zweiter")})
	type result struct {
		res store.BulkResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := db.BulkUpsertContacts(ctx, acct, apiActor, in)
		done <- result{res, err}
	}()
	// The batch's COPY waits for the other transaction's address.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := db.GetContext(ctx, &waiting, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'COPY%'`); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the bulk request's COPY never waited for the other transaction")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := other.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.res.Created != 40 || r.res.Updated != 1 || r.res.Failed != 0 {
		t.Fatalf("totals = %d/%d/%d, want 40/1/0", r.res.Created, r.res.Updated, r.res.Failed)
	}
	if e := r.res.Entries[40]; e.Result != store.BulkUpdated || e.Contact.FirstName != "Erster" || e.Contact.LastName != "Zweiter" {
		t.Errorf("race entry = %s %+v", e.Result, e.Contact)
	}
	c, err := db.ContactByEmail(ctx, acct, "race@example.com")
	if err != nil || c.FirstName != "Erster" || c.LastName != "Zweiter" {
		t.Errorf("race contact = %+v, %v", c, err)
	}
	counts := map[string]int{}
	for _, e := range outbox(t, db, acct) {
		counts[e.Name]++
	}
	if counts["contact.created"] != 40 || counts["contact.updated"] != 1 {
		t.Errorf("events = %v", counts)
	}
	// The other transaction wrote its row without the counter: the batch counts its 40.
	if u := usageOf(t, db, acct); u.Contacts != 40 {
		t.Errorf("usage.contacts = %d, want 40", u.Contacts)
	}
}

// TestBulkCopyKeepsNumbersAsStored: jsonb keeps numbers as numeric (1e2
// reads back as 100), so a batch with such a custom field takes the INSERT
// that reads the rows back, and the results and events carry the numbers as
// stored.
func TestBulkCopyKeepsNumbersAsStored(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	restore := store.SetMinCopyRows(1)
	defer restore()
	in := store.BulkContacts{Contacts: []store.ContactInput{
		{Email: "a@example.com", CustomFields: map[string]any{"punkte": json.Number("1e2"), "rabatt": json.Number("-0.0")}},
		{Email: "b@example.com", CustomFields: map[string]any{"punkte": json.Number("12.50")}},
	}}
	copied := store.CopiedContacts()
	res, err := db.BulkUpsertContacts(ctx, acct, apiActor, in)
	if err != nil {
		t.Fatal(err)
	}
	if n := store.CopiedContacts() - copied; n != 0 {
		t.Errorf("%d contacts copied, want 0", n)
	}
	for _, e := range res.Entries {
		stored, err := db.Contact(ctx, acct, e.Contact.ID)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(e.Contact.CustomFields)
		b, _ := json.Marshal(stored.CustomFields)
		if string(a) != string(b) {
			t.Errorf("returned %s, stored %s", a, b)
		}
	}
	if got := string(res.Entries[0].Contact.CustomFields["punkte"].(json.Number)); got != "100" {
		t.Errorf("punkte = %s, want 100", got)
	}
	ev := outbox(t, db, acct)
	if len(ev) != 2 || !strings.Contains(string(ev[0].Payload), `"punkte": 100`) {
		t.Errorf("events = %v", ev)
	}
	// The same numbers in plain form go by COPY.
	in = store.BulkContacts{Contacts: []store.ContactInput{{Email: "c@example.com", CustomFields: map[string]any{"punkte": json.Number("100"), "x": json.Number("-0.5")}}}}
	if _, err := db.BulkUpsertContacts(ctx, acct, apiActor, in); err != nil {
		t.Fatal(err)
	}
	if n := store.CopiedContacts() - copied; n != 1 {
		t.Errorf("%d contacts copied, want 1", n)
	}
}

func TestPlainDecimal(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "100": true, "-1": true, "12.50": true, "0.001": true, "-0.5": true,
		"1e2": false, "1E2": false, "-0": false, "-0.0": false, "01": false, ".5": false, "5.": false, "": false, "-": false, "+1": false,
	} {
		if got := store.PlainDecimal(s); got != want {
			t.Errorf("PlainDecimal(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestCreatedDetailsAreWhatJSONMarshalWrites holds the hand-written details
// of contact.created to json.Marshal's output of the map they replace.
func TestCreatedDetailsAreWhatJSONMarshalWrites(t *testing.T) {
	for _, c := range []struct {
		contact store.Contact
		lists   []int64
	}{
		{store.Contact{Email: "a@example.com", Source: "api", Status: "subscribed"}, nil},
		{store.Contact{Email: "x&<y>\"\\\u2028@example.com", Source: "import", Status: "pending"}, []int64{3, 12}},
	} {
		want, _ := json.Marshal(map[string]any{"email": c.contact.Email, "source": c.contact.Source, "status": c.contact.Status,
			"list_ids": append([]int64{}, c.lists...)})
		if got := store.CreatedDetails(c.contact, c.lists); string(got) != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

// TestTextArrayIsWhatStringArrayWrites holds the COPY path's text[] literal
// to lib/pq's.
func TestTextArrayIsWhatStringArrayWrites(t *testing.T) {
	for _, tags := range [][]string{{}, {"a"}, {"import", "x y", `q"uote`, `back\slash`, "{}", "ä,ö", "NULL"}} {
		want, _ := pq.StringArray(tags).Value()
		if got := store.TextArray(tags); got != want {
			t.Errorf("TextArray(%q) = %s, want %s", tags, got, want)
		}
	}
}
