package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

var apiActor = store.Actor{Type: store.ActorKey, ID: 1}

func ptr[T any](v T) *T { return &v }

// events returns an account's outbox, oldest first.
func outbox(t *testing.T, db *store.DB, acct int64) []store.StoredEvent {
	t.Helper()
	ev, err := db.EventsAfter(context.Background(), acct, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func outboxNames(ev []store.StoredEvent) []string {
	out := make([]string, len(ev))
	for i, e := range ev {
		out[i] = e.Name
	}
	return out
}

// eventsSince returns the events written after mark (a count from events()).
func outboxSince(t *testing.T, db *store.DB, acct int64, mark int) []store.StoredEvent {
	t.Helper()
	return outbox(t, db, acct)[mark:]
}

func mkList(t testing.TB, db *store.DB, acct int64, name string, doi bool) store.List {
	t.Helper()
	l, err := db.CreateList(context.Background(), acct, apiActor, store.ListInput{Name: &name, DoubleOptIn: &doi})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func upsert(t testing.TB, db *store.DB, acct int64, in store.ContactInput) store.UpsertResult {
	t.Helper()
	res, err := db.UpsertContact(context.Background(), acct, apiActor, in)
	if err != nil {
		t.Fatalf("upsert %s: %v", in.Email, err)
	}
	return res
}

func usageOf(t *testing.T, db *store.DB, acct int64) store.Usage {
	t.Helper()
	u, err := db.Usage(context.Background(), acct, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func listIDsOf(c store.Contact) []int64 {
	out := []int64{}
	for _, l := range c.Lists {
		out = append(out, l.ID)
	}
	return out
}

// confirmationToken returns the token of the newest confirmation mail to email.
func confirmationToken(t *testing.T, db *store.DB, acct int64, email string) string {
	t.Helper()
	mails, _, err := db.SystemMails(context.Background(), acct, store.Page{Page: 1, PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mails {
		if m.ToEmail == email && m.Kind == store.SystemMailDOI {
			return strings.TrimPrefix(m.LinkPath, store.ConfirmPathPrefix)
		}
	}
	t.Fatalf("no confirmation mail to %s", email)
	return ""
}

func countMails(t *testing.T, db *store.DB, acct int64, email string) int {
	t.Helper()
	var n int
	if err := db.GetContext(context.Background(), &n, `SELECT count(*) FROM system_mails WHERE account_id = $1 AND to_email = $2 AND sent_at IS NULL`, acct, email); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestUpsertCreatesThenUpdatesAdditively(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	a := mkList(t, db, acct, "A", false)
	b := mkList(t, db, acct, "B", false)

	res := upsert(t, db, acct, store.ContactInput{
		Email: "  Max@Example.COM ", FirstName: ptr("Max"), Tags: []string{"kunde"}, ListIDs: []int64{a.ID},
		CustomFields: map[string]any{"firma": "ACME", "alter": json.Number("41")},
	})
	c := res.Contact
	if !res.Created || c.Email != "max@example.com" || c.Status != store.StatusSubscribed || c.Source != store.SourceAPI {
		t.Fatalf("created = %v, contact = %+v", res.Created, c)
	}
	if !slices.Equal(listIDsOf(c), []int64{a.ID}) || c.Lists[0].Name != "A" || c.Lists[0].Color != store.DefaultListColor {
		t.Fatalf("lists = %+v", c.Lists)
	}

	res = upsert(t, db, acct, store.ContactInput{
		Email: "max@example.com", LastName: ptr("Muster"), Tags: []string{"vip", "kunde"}, ListIDs: []int64{b.ID},
		CustomFields: map[string]any{"alter": nil, "ort2": "Bonn"},
	})
	c = res.Contact
	if res.Created {
		t.Fatal("second upsert created a contact")
	}
	if c.FirstName != "Max" || c.LastName != "Muster" {
		t.Errorf("names = %q %q: a field not given must stay", c.FirstName, c.LastName)
	}
	if !slices.Equal([]string(c.Tags), []string{"kunde", "vip"}) {
		t.Errorf("tags = %v, want kunde, vip (only added)", c.Tags)
	}
	if !slices.Equal(listIDsOf(c), []int64{a.ID, b.ID}) {
		t.Errorf("lists = %v, want both (only added)", listIDsOf(c))
	}
	if len(c.CustomFields) != 2 || c.CustomFields["firma"] != "ACME" || c.CustomFields["ort2"] != "Bonn" {
		t.Errorf("custom fields = %v, want merged with alter removed", c.CustomFields)
	}
	want := []string{"last_name", "tags", "custom_fields", "lists"}
	if !slices.Equal(res.Changed, want) {
		t.Errorf("changed = %v, want %v", res.Changed, want)
	}
	// An upsert never removes: sending fewer tags and lists changes nothing.
	res = upsert(t, db, acct, store.ContactInput{Email: "max@example.com", Tags: []string{}, ListIDs: []int64{}})
	if len(res.Changed) != 0 || len(res.Contact.Tags) != 2 || len(res.Contact.Lists) != 2 {
		t.Errorf("empty tags/lists removed something: %+v", res)
	}

	ev := outbox(t, db, acct)
	names := outboxNames(ev)
	wantNames := []string{"list.joined", "contact.created", "contact.updated", "list.joined"}
	slices.Sort(names[:2])
	if !slices.Equal(names, []string{"contact.created", "list.joined", "contact.updated", "list.joined"}) {
		t.Errorf("events = %v, want (in some order) %v", outboxNames(ev), wantNames)
	}
	var upd struct {
		Contact map[string]any `json:"contact"`
		Changed []string       `json:"changed"`
	}
	if err := json.Unmarshal(ev[2].Payload, &upd); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(upd.Changed, want) || upd.Contact["last_name"] != "Muster" {
		t.Errorf("contact.updated payload = %s", ev[2].Payload)
	}
	for _, e := range ev {
		if !strings.HasPrefix(e.PublicID, "evt_") || len(e.PublicID) < 20 {
			t.Errorf("event id %q", e.PublicID)
		}
	}
	if u := usageOf(t, db, acct); u.Contacts != 1 {
		t.Errorf("usage.contacts = %d, want 1 (updates do not count)", u.Contacts)
	}
	if got, err := db.ContactByEmail(ctx, acct, "MAX@example.com"); err != nil || got.ID != c.ID {
		t.Errorf("ContactByEmail = %v, %v", got.ID, err)
	}
}

// A contact's lists come back with their names as stored, whatever characters
// the names hold, in list id order, from every read.
func TestContactListsKeepAnyName(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	names := []string{`Kunden, "VIP" {2026}`, `C:\Pfad\`, "Zwei  Leerzeichen", "NULL", ",,,", "Grüße ✉"}
	var ids []int64
	for _, n := range names {
		ids = append(ids, mkList(t, db, acct, n, false).ID)
	}
	slices.Reverse(ids) // joined in the opposite order
	c := upsert(t, db, acct, store.ContactInput{Email: "liste@example.com", ListIDs: ids}).Contact
	slices.Reverse(ids)

	check := func(from string, got store.ListRefs) {
		t.Helper()
		if len(got) != len(names) {
			t.Fatalf("%s: lists = %+v", from, got)
		}
		for i, l := range got {
			if l.ID != ids[i] || l.Name != names[i] || l.Color != store.DefaultListColor {
				t.Errorf("%s: list %d = %+v, want id %d, name %q", from, i, l, ids[i], names[i])
			}
		}
	}
	check("upsert", c.Lists)
	read, err := db.Contact(ctx, acct, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	check("contact", read.Lists)
	page, _, err := db.Contacts(ctx, acct, store.ContactFilter{}, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(page) != 1 {
		t.Fatalf("listing = %+v, %v", page, err)
	}
	check("listing", page[0].Lists)
	// The optimistic write path reads the lists too, and returns them.
	c = upsert(t, db, acct, store.ContactInput{Email: "liste@example.com", City: ptr("Bonn")}).Contact
	check("plain upsert", c.Lists)
}

func TestEventPayloadIsTheContactResource(t *testing.T) {
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	l := mkList(t, db, acct, "News", false)
	upsert(t, db, acct, store.ContactInput{Email: "a@example.com", ListIDs: []int64{l.ID}})
	var created store.StoredEvent
	for _, e := range outbox(t, db, acct) {
		if e.Name == store.EventContactCreated {
			created = e
		}
	}
	var data map[string]map[string]json.RawMessage
	if err := json.Unmarshal(created.Payload, &data); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range data["contact"] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"address", "city", "created_at", "custom_fields", "doi_confirmed_at", "email", "first_name", "id",
		"last_name", "lists", "note", "phone", "source", "status", "tags", "updated_at", "zip"}
	if !slices.Equal(keys, want) {
		t.Errorf("contact keys = %v, want %v", keys, want)
	}
	var ts string
	_ = json.Unmarshal(data["contact"]["created_at"], &ts)
	if _, err := time.Parse(time.RFC3339, ts); err != nil || !(strings.HasSuffix(ts, "+01:00") || strings.HasSuffix(ts, "+02:00")) {
		t.Errorf("created_at %q is not Europe/Berlin ISO 8601", ts)
	}
	// Every event kind of a contact has the documented shape.
	upsert(t, db, acct, store.ContactInput{Email: "a@example.com", City: ptr("Ulm")})
	id := mustContactID(t, db, acct, "a@example.com")
	if err := db.RemoveListMember(context.Background(), acct, apiActor, l.ID, id); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteContact(context.Background(), acct, apiActor, id); err != nil {
		t.Fatal(err)
	}
	shapes := map[string][]string{
		store.EventContactCreated: {"contact"},
		store.EventContactUpdated: {"changed", "contact"},
		store.EventContactDeleted: {"contact"},
		store.EventListJoined:     {"contact", "list"},
		store.EventListLeft:       {"contact", "list"},
	}
	seen := map[string]bool{}
	for _, e := range outbox(t, db, acct) {
		seen[e.Name] = true
		var m map[string]json.RawMessage
		if err := json.Unmarshal(e.Payload, &m); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, shapes[e.Name]) {
			t.Errorf("%s payload keys %v, want %v", e.Name, keys, shapes[e.Name])
		}
		// Every event's contact is the whole Contact resource.
		var contact map[string]json.RawMessage
		_ = json.Unmarshal(m["contact"], &contact)
		if got := slices.Sorted(maps.Keys(contact)); !slices.Equal(got, want) {
			t.Errorf("%s contact keys = %v, want %v", e.Name, got, want)
		}
		if e.Name == store.EventListJoined || e.Name == store.EventListLeft {
			var list map[string]any
			_ = json.Unmarshal(m["list"], &list)
			if len(list) != 2 || list["name"] != "News" || list["id"] != float64(l.ID) {
				t.Errorf("%s list = %v", e.Name, list)
			}
		}
	}
	if len(seen) != len(shapes) {
		t.Errorf("events %v, want one of each of %v", seen, shapes)
	}
	if string(data["contact"]["lists"]) != fmt.Sprintf(`[{"id": %d, "name": "News", "color": "#4f46e5"}]`, l.ID) &&
		string(data["contact"]["lists"]) != fmt.Sprintf(`[{"id":%d,"name":"News","color":"#4f46e5"}]`, l.ID) {
		t.Errorf("lists = %s", data["contact"]["lists"])
	}
}

func mustContactID(t *testing.T, db *store.DB, acct int64, email string) int64 {
	t.Helper()
	c, err := db.ContactByEmail(context.Background(), acct, email)
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

func TestNoEventForNoOpUpdate(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	l := mkList(t, db, acct, "A", false)
	in := store.ContactInput{Email: "a@example.com", FirstName: ptr("Anna"), Tags: []string{"x"}, ListIDs: []int64{l.ID},
		CustomFields: map[string]any{"n": json.Number("1.0"), "s": "ä"}, Source: ptr("api"), Status: ptr("subscribed")}
	first := upsert(t, db, acct, in)
	mark := len(outbox(t, db, acct))
	for _, again := range []store.ContactInput{
		in,
		{Email: "A@EXAMPLE.COM", CustomFields: map[string]any{"n": json.Number("1"), "gone": nil}},
		{Email: "a@example.com", Tags: []string{"x"}, ListIDs: []int64{l.ID}},
	} {
		res := upsert(t, db, acct, again)
		if len(res.Changed) != 0 || res.Created {
			t.Errorf("no-op upsert %+v: changed %v", again, res.Changed)
		}
		if !res.Contact.UpdatedAt.Equal(first.Contact.UpdatedAt) {
			t.Errorf("no-op moved updated_at")
		}
	}
	if _, err := db.UpdateContact(ctx, acct, apiActor, first.Contact.ID, store.ContactPatch{FirstName: ptr("Anna"), Tags: &[]string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if got := outboxSince(t, db, acct, mark); len(got) != 0 {
		t.Errorf("no-op updates emitted %v", outboxNames(got))
	}
}

func TestContactStatusTransitions(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	plain := mkList(t, db, acct, "Plain", false)
	doi := mkList(t, db, acct, "DOI", true)

	type step func(t *testing.T, email string) store.Contact
	post := func(in store.ContactInput) step {
		return func(t *testing.T, email string) store.Contact {
			in.Email = email
			return upsert(t, db, acct, in).Contact
		}
	}
	unsubscribe := func(t *testing.T, email string) store.Contact {
		c, err := db.ContactByEmail(ctx, acct, email)
		if err != nil {
			t.Fatal(err)
		}
		c, err = db.UnsubscribeContact(ctx, acct, apiActor, c.ID, store.Unsubscribe{Source: store.UnsubLink, Reason: "zu viele Mails", CampaignID: 7})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	confirm := func(t *testing.T, email string) store.Contact {
		res, err := db.ConfirmContact(ctx, confirmationToken(t, db, acct, email))
		if err != nil {
			t.Fatal(err)
		}
		return res.Contact
	}
	block := func(t *testing.T, email string) store.Contact {
		if _, err := db.BlockAddresses(ctx, acct, apiActor, []string{email}, store.Unsubscribe{Source: store.UnsubManual}); err != nil {
			t.Fatal(err)
		}
		c, _ := db.ContactByEmail(ctx, acct, email)
		return c
	}
	signUp := post(store.ContactInput{Source: ptr("form"), SignUp: true, ListIDs: []int64{doi.ID}})

	cases := []struct {
		name       string
		steps      []step
		status     string
		events     []string // of the last step, sorted
		mails      int      // unsent confirmation mails in all
		blocked    bool
		confirmed  bool
		wantListed bool // member of its lists' events
	}{
		{"new without double opt-in is subscribed", []step{post(store.ContactInput{ListIDs: []int64{plain.ID}})},
			"subscribed", []string{"contact.created", "list.joined"}, 0, false, false, true},
		{"new on a double opt-in list is pending and gets a mail", []step{post(store.ContactInput{ListIDs: []int64{doi.ID}})},
			"pending", []string{"contact.created"}, 1, false, false, false},
		{"status pending asks for confirmation", []step{post(store.ContactInput{Status: ptr("pending")})},
			"pending", []string{"contact.created"}, 1, false, false, false},
		{"explicit subscribed skips double opt-in", []step{post(store.ContactInput{Status: ptr("subscribed"), ListIDs: []int64{doi.ID}})},
			"subscribed", []string{"contact.created", "list.joined"}, 0, false, false, true},
		{"new as unsubscribed is blocked", []step{post(store.ContactInput{Status: ptr("unsubscribed")})},
			"unsubscribed", []string{"contact.created"}, 0, true, false, false},
		{"existing email is updated, lists added", []step{post(store.ContactInput{}), post(store.ContactInput{ListIDs: []int64{plain.ID}, Tags: []string{"t"}})},
			"subscribed", []string{"contact.updated", "list.joined"}, 0, false, false, true},
		{"existing subscribed joining a double opt-in list stays subscribed", []step{post(store.ContactInput{}), post(store.ContactInput{ListIDs: []int64{doi.ID}})},
			"subscribed", []string{"contact.updated", "list.joined"}, 0, false, false, true},
		{"subscribed unsubscribes", []step{post(store.ContactInput{}), unsubscribe},
			"unsubscribed", []string{"contact.unsubscribed", "contact.updated"}, 0, true, false, false},
		{"pending unsubscribes", []step{post(store.ContactInput{Status: ptr("pending")}), unsubscribe},
			"unsubscribed", []string{"contact.unsubscribed", "contact.updated"}, 1, true, false, false},
		{"unsubscribe via POST status", []step{post(store.ContactInput{}), post(store.ContactInput{Status: ptr("unsubscribed")})},
			"unsubscribed", []string{"contact.unsubscribed", "contact.updated"}, 0, true, false, false},
		{"pending confirms", []step{post(store.ContactInput{ListIDs: []int64{doi.ID}}), confirm},
			"subscribed", []string{"contact.updated", "list.joined"}, 1, false, true, true},
		{"blocked address stays unsubscribed on POST subscribed", []step{post(store.ContactInput{}), unsubscribe, post(store.ContactInput{Status: ptr("subscribed"), FirstName: ptr("X")})},
			"unsubscribed", []string{"contact.updated"}, 0, true, false, false},
		{"blocked new address is created unsubscribed", []step{block, post(store.ContactInput{Status: ptr("subscribed")})},
			"unsubscribed", []string{"contact.created"}, 0, true, false, false},
		{"blocked address on a double opt-in list via API gets no mail", []step{block, post(store.ContactInput{ListIDs: []int64{doi.ID}})},
			"unsubscribed", []string{"contact.created"}, 0, true, false, false},
		{"fresh double opt-in sign-up of a blocked address asks again", []step{post(store.ContactInput{}), unsubscribe, signUp},
			"pending", []string{"contact.updated"}, 1, true, false, false},
		{"its confirmation lifts the block", []step{post(store.ContactInput{}), unsubscribe, signUp, confirm},
			"subscribed", []string{"contact.updated", "list.joined"}, 1, false, true, true},
		{"blocking an address unsubscribes its contact", []step{post(store.ContactInput{}), block},
			"unsubscribed", []string{"contact.unsubscribed", "contact.updated"}, 0, true, false, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			email := fmt.Sprintf("case%d@example.com", i)
			var c store.Contact
			var mark int
			for _, s := range tc.steps {
				mark = len(outbox(t, db, acct))
				c = s(t, email)
			}
			if c.Status != tc.status {
				t.Errorf("status = %s, want %s", c.Status, tc.status)
			}
			got := outboxNames(outboxSince(t, db, acct, mark))
			slices.Sort(got)
			if !slices.Equal(got, tc.events) {
				t.Errorf("events of the last step = %v, want %v", got, tc.events)
			}
			if n := countMails(t, db, acct, email); n != tc.mails {
				t.Errorf("confirmation mails = %d, want %d", n, tc.mails)
			}
			blocked, err := db.IsBlocked(ctx, acct, strings.ToUpper(email))
			if err != nil || blocked != tc.blocked {
				t.Errorf("blocked = %v (%v), want %v", blocked, err, tc.blocked)
			}
			if (c.DOIConfirmedAt != nil) != tc.confirmed {
				t.Errorf("doi_confirmed_at = %v, want set: %v", c.DOIConfirmedAt, tc.confirmed)
			}
		})
	}
}

func TestUnsubscribedEventPayload(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	c := upsert(t, db, acct, store.ContactInput{Email: "u@example.com"}).Contact
	mark := len(outbox(t, db, acct))
	if _, err := db.UnsubscribeContact(ctx, acct, apiActor, c.ID, store.Unsubscribe{Source: store.UnsubLink, Reason: "zu viel", CampaignID: 9}); err != nil {
		t.Fatal(err)
	}
	var unsub store.StoredEvent
	for _, e := range outboxSince(t, db, acct, mark) {
		if e.Name == store.EventContactUnsubscribed {
			unsub = e
		}
	}
	var data struct {
		Contact    struct{ Status string } `json:"contact"`
		Email      string                  `json:"email"`
		Source     string                  `json:"source"`
		Reason     *string                 `json:"reason"`
		CampaignID *int64                  `json:"campaign_id"`
	}
	if err := json.Unmarshal(unsub.Payload, &data); err != nil {
		t.Fatal(err)
	}
	if data.Contact.Status != "unsubscribed" || data.Email != "u@example.com" || data.Source != "link" ||
		data.Reason == nil || *data.Reason != "zu viel" || data.CampaignID == nil || *data.CampaignID != 9 {
		t.Errorf("contact.unsubscribed = %s", unsub.Payload)
	}
	// Unsubscribing again changes and emits nothing.
	mark = len(outbox(t, db, acct))
	if _, err := db.UnsubscribeContact(ctx, acct, apiActor, c.ID, store.Unsubscribe{}); err != nil {
		t.Fatal(err)
	}
	if got := outboxSince(t, db, acct, mark); len(got) != 0 {
		t.Errorf("second unsubscribe emitted %v", outboxNames(got))
	}
}

func TestPatchBlockedAddressConflicts(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	c := upsert(t, db, acct, store.ContactInput{Email: "b@example.com", Status: ptr("unsubscribed")}).Contact
	_, err := db.UpdateContact(ctx, acct, apiActor, c.ID, store.ContactPatch{Status: ptr("subscribed")})
	var conflict *store.ConflictError
	if !errors.As(err, &conflict) || conflict.Reason != "address_blocked" {
		t.Fatalf("PATCH subscribed of a blocked address: %v, want conflict address_blocked", err)
	}
	// Once the account lifts the block itself, it may subscribe the contact again.
	if err := db.UnblockAddress(ctx, acct, apiActor, "B@example.com"); err != nil {
		t.Fatal(err)
	}
	res, err := db.UpdateContact(ctx, acct, apiActor, c.ID, store.ContactPatch{Status: ptr("subscribed")})
	if err != nil || res.Contact.Status != store.StatusSubscribed || res.Contact.UnsubscribedAt != nil {
		t.Fatalf("after unblock: %+v, %v", res.Contact, err)
	}
	if err := db.UnblockAddress(ctx, acct, apiActor, "b@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unblocking an unblocked address: %v, want ErrNotFound", err)
	}
}

func TestPatchReplacesTagsAndLists(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	a := mkList(t, db, acct, "A", false)
	b := mkList(t, db, acct, "B", false)
	c := upsert(t, db, acct, store.ContactInput{Email: "p@example.com", Tags: []string{"x", "y"}, ListIDs: []int64{a.ID}}).Contact
	other := upsert(t, db, acct, store.ContactInput{Email: "other@example.com"}).Contact
	mark := len(outbox(t, db, acct))
	res, err := db.UpdateContact(ctx, acct, apiActor, c.ID, store.ContactPatch{
		Email: ptr("P2@Example.com"), Tags: &[]string{"z"}, ListIDs: &[]int64{b.ID}, Note: ptr("hallo"),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Contact
	if got.Email != "p2@example.com" || !slices.Equal([]string(got.Tags), []string{"z"}) || !slices.Equal(listIDsOf(got), []int64{b.ID}) {
		t.Errorf("patched = %+v", got)
	}
	names := outboxNames(outboxSince(t, db, acct, mark))
	slices.Sort(names)
	if !slices.Equal(names, []string{"contact.updated", "list.joined", "list.left"}) {
		t.Errorf("events = %v", names)
	}
	for id, want := range map[int64]int64{a.ID: 0, b.ID: 1} {
		l, _ := db.List(ctx, acct, id)
		if l.MemberCount != want {
			t.Errorf("list %d member_count = %d, want %d", id, l.MemberCount, want)
		}
	}
	_, err = db.UpdateContact(ctx, acct, apiActor, c.ID, store.ContactPatch{Email: ptr(other.Email)})
	var conflict *store.ConflictError
	if !errors.As(err, &conflict) || conflict.Reason != "email_taken" {
		t.Errorf("taking another contact's address: %v", err)
	}
	_, err = db.UpdateContact(ctx, acct, apiActor, c.ID, store.ContactPatch{Email: ptr("kaputt")})
	var ve *store.ValidationError
	if !errors.As(err, &ve) || ve.Fields["email"] == "" {
		t.Errorf("invalid email: %v", err)
	}
}

func TestValidation(t *testing.T) {
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	cases := []struct {
		in    store.ContactInput
		field string
	}{
		{store.ContactInput{Email: "kein-at"}, "email"},
		{store.ContactInput{Email: ""}, "email"},
		{store.ContactInput{Email: "Name <a@b.de>"}, "email"},
		{store.ContactInput{Email: "a@b.de", Status: ptr("active")}, "status"},
		{store.ContactInput{Email: "a@b.de", Source: ptr("fax")}, "source"},
		{store.ContactInput{Email: "a@b.de", Tags: []string{" "}}, "tags"},
		{store.ContactInput{Email: "a@b.de", FirstName: ptr("a\x00b")}, "first_name"},
		{store.ContactInput{Email: "a@b.de", Zip: ptr(strings.Repeat("1", 21))}, "zip"},
		{store.ContactInput{Email: "a@b.de", CustomFields: map[string]any{"Firma": "x"}}, "custom_fields"},
		{store.ContactInput{Email: "a@b.de", CustomFields: map[string]any{"vorname": "x"}}, "custom_fields.vorname"},
		{store.ContactInput{Email: "a@b.de", CustomFields: map[string]any{"x": []any{1}}}, "custom_fields.x"},
		{store.ContactInput{Email: "a@b.de", ListIDs: []int64{999999}}, "list_ids"},
		{store.ContactInput{Email: "a@b.de", ListIDs: []int64{-1}}, "list_ids"},
	}
	for _, tc := range cases {
		_, err := db.UpsertContact(context.Background(), acct, apiActor, tc.in)
		var ve *store.ValidationError
		if !errors.As(err, &ve) || ve.Fields[tc.field] == "" {
			t.Errorf("%+v: %v, want a message for %s", tc.in, err, tc.field)
		}
	}
	if u := usageOf(t, db, acct); u.Contacts != 0 {
		t.Errorf("invalid upserts counted %d contacts", u.Contacts)
	}
}

func TestConcurrentUpsertsOfOneAddress(t *testing.T) {
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	l := mkList(t, db, acct, "A", false)
	var wg sync.WaitGroup
	created := make(chan bool, 50)
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Go(func() {
			res, err := db.UpsertContact(context.Background(), acct, apiActor, store.ContactInput{
				Email: "Same@Example.com", Tags: []string{fmt.Sprintf("t%d", i%5)}, ListIDs: []int64{l.ID}})
			if err != nil {
				errs <- err
				return
			}
			created <- res.Created
		})
	}
	wg.Wait()
	close(errs)
	close(created)
	for err := range errs {
		t.Fatal(err)
	}
	n := 0
	for c := range created {
		if c {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d upserts report created, want 1", n)
	}
	var contacts int
	if err := db.GetContext(context.Background(), &contacts, `SELECT count(*) FROM contacts WHERE account_id = $1`, acct); err != nil {
		t.Fatal(err)
	}
	created1 := 0
	for _, e := range outbox(t, db, acct) {
		if e.Name == store.EventContactCreated {
			created1++
		}
	}
	if contacts != 1 || created1 != 1 {
		t.Errorf("contacts = %d, contact.created = %d; want 1 and 1", contacts, created1)
	}
	c, _ := db.ContactByEmail(context.Background(), acct, "same@example.com")
	if len(c.Tags) != 5 {
		t.Errorf("tags = %v, want all five added", c.Tags)
	}
	if u := usageOf(t, db, acct); u.Contacts != 1 {
		t.Errorf("usage.contacts = %d", u.Contacts)
	}
	list, _ := db.List(context.Background(), acct, l.ID)
	if list.MemberCount != 1 {
		t.Errorf("member_count = %d", list.MemberCount)
	}
}

func TestBulkMixedEntries(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	a := mkList(t, db, acct, "A", false)
	d := mkList(t, db, acct, "D", true)
	upsert(t, db, acct, store.ContactInput{Email: "old@example.com", FirstName: ptr("Alt")})
	mark := len(outbox(t, db, acct))
	res, err := db.BulkUpsertContacts(ctx, acct, apiActor, store.BulkContacts{
		Contacts: []store.ContactInput{
			{Email: "new1@example.com", FirstName: ptr("Eins")},
			{Email: "kaputt"},
			{Email: "OLD@example.com", LastName: ptr("Neu")},
			{Email: "new2@example.com", ListIDs: []int64{d.ID}},
			{Email: "new3@example.com", ListIDs: []int64{424242}},
			{Email: "new1@example.com", City: ptr("Köln")},
			{Email: "new4@example.com", Status: ptr("bogus")},
		},
		ListIDs: []int64{a.ID},
		Tags:    []string{"import"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"created", "error", "updated", "created", "error", "updated", "error"}
	for i, e := range res.Entries {
		if e.Result != want[i] {
			t.Errorf("entry %d (%s): %s %v, want %s", i, e.Email, e.Result, e.Err, want[i])
		}
	}
	if res.Created != 2 || res.Updated != 2 || res.Failed != 3 {
		t.Errorf("totals = %d/%d/%d", res.Created, res.Updated, res.Failed)
	}
	var ve *store.ValidationError
	if !errors.As(res.Entries[1].Err, &ve) || ve.Fields["email"] == "" {
		t.Errorf("entry 1 error = %v", res.Entries[1].Err)
	}
	if !errors.As(res.Entries[4].Err, &ve) || ve.Fields["list_ids"] == "" {
		t.Errorf("entry 4 error = %v", res.Entries[4].Err)
	}
	n1, _ := db.ContactByEmail(ctx, acct, "new1@example.com")
	if n1.FirstName != "Eins" || n1.City != "Köln" || !slices.Equal([]string(n1.Tags), []string{"import"}) || !slices.Equal(listIDsOf(n1), []int64{a.ID}) {
		t.Errorf("new1 = %+v", n1)
	}
	n2, _ := db.ContactByEmail(ctx, acct, "new2@example.com")
	if n2.Status != store.StatusPending || countMails(t, db, acct, "new2@example.com") != 1 {
		t.Errorf("new2 on a double opt-in list: status %s", n2.Status)
	}
	old, _ := db.ContactByEmail(ctx, acct, "old@example.com")
	if old.FirstName != "Alt" || old.LastName != "Neu" {
		t.Errorf("old = %+v", old)
	}
	counts := map[string]int{}
	for _, e := range outboxSince(t, db, acct, mark) {
		counts[e.Name]++
	}
	if counts["contact.created"] != 2 || counts["contact.updated"] != 1 || counts["list.joined"] != 2 {
		t.Errorf("events = %v (new2 is pending: no list.joined)", counts)
	}
	if u := usageOf(t, db, acct); u.Contacts != 3 {
		t.Errorf("usage.contacts = %d, want 3", u.Contacts)
	}
	la, _ := db.List(ctx, acct, a.ID)
	if la.MemberCount != 3 {
		t.Errorf("list A members = %d, want 3", la.MemberCount)
	}
	_, err = db.BulkUpsertContacts(ctx, acct, apiActor, store.BulkContacts{Contacts: []store.ContactInput{{Email: "x@example.com"}}, ListIDs: []int64{987654}})
	if !errors.As(err, &ve) || ve.Fields["list_ids"] == "" {
		t.Errorf("unknown shared list: %v", err)
	}
}

func TestPlanLimits(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	newContactPlan(t, db, "tiny", 3)
	acct := newAccount(t, db, "tiny")
	for i := range 2 {
		upsert(t, db, acct, store.ContactInput{Email: fmt.Sprintf("c%d@example.com", i)})
	}
	_, err := db.UpsertContact(ctx, acct, apiActor, store.ContactInput{Email: "c2@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.UpsertContact(ctx, acct, apiActor, store.ContactInput{Email: "c3@example.com"})
	var le *store.LimitError
	if !errors.As(err, &le) || le.Limit != "contacts" || le.Max != 3 {
		t.Fatalf("4th contact: %v, want contacts limit", err)
	}
	if _, err := db.UpsertContact(ctx, acct, apiActor, store.ContactInput{Email: "c0@example.com", City: ptr("Ulm")}); err != nil {
		t.Errorf("updating at the limit: %v", err)
	}
	if err := db.DeleteContact(ctx, acct, apiActor, upsert(t, db, acct, store.ContactInput{Email: "c2@example.com"}).Contact.ID); err != nil {
		t.Fatal(err)
	}
	res, err := db.BulkUpsertContacts(ctx, acct, apiActor, store.BulkContacts{Contacts: []store.ContactInput{
		{Email: "c0@example.com"}, {Email: "n1@example.com"}, {Email: "n2@example.com"}, {Email: "n3@example.com"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Created != 1 || res.Updated != 1 || res.Failed != 2 || !errors.As(res.Entries[3].Err, &le) {
		t.Errorf("bulk at the limit: %+v", res)
	}
	if u := usageOf(t, db, acct); u.Contacts != 3 {
		t.Errorf("usage.contacts = %d", u.Contacts)
	}
	mkList(t, db, acct, "Eins", false)
	name := "Zwei"
	if _, err := db.CreateList(ctx, acct, apiActor, store.ListInput{Name: &name}); !errors.As(err, &le) || le.Limit != "lists" {
		t.Errorf("2nd list: %v, want lists limit", err)
	}
	if u := usageOf(t, db, acct); u.Lists != 1 {
		t.Errorf("usage.lists = %d", u.Lists)
	}
}

func TestOtherAccountsAreInvisible(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	mine := newAccount(t, db, "business")
	theirs := newAccount(t, db, "business")
	tl := mkList(t, db, theirs, "Fremd", false)
	tc := upsert(t, db, theirs, store.ContactInput{Email: "t@example.com", ListIDs: []int64{tl.ID}}).Contact
	checks := map[string]error{}
	_, checks["Contact"] = db.Contact(ctx, mine, tc.ID)
	_, checks["UpdateContact"] = db.UpdateContact(ctx, mine, apiActor, tc.ID, store.ContactPatch{FirstName: ptr("x")})
	checks["DeleteContact"] = db.DeleteContact(ctx, mine, apiActor, tc.ID)
	_, checks["UnsubscribeContact"] = db.UnsubscribeContact(ctx, mine, apiActor, tc.ID, store.Unsubscribe{})
	_, checks["AddTags"] = db.AddTags(ctx, mine, apiActor, tc.ID, []string{"x"})
	_, _, checks["ContactActivities"] = db.ContactActivities(ctx, mine, tc.ID, store.Page{Page: 1, PerPage: 10})
	_, checks["List"] = db.List(ctx, mine, tl.ID)
	_, checks["UpdateList"] = db.UpdateList(ctx, mine, apiActor, tl.ID, store.ListInput{Name: ptr("x")})
	checks["DeleteList"] = db.DeleteList(ctx, mine, apiActor, tl.ID)
	checks["RemoveListMember"] = db.RemoveListMember(ctx, mine, apiActor, tl.ID, tc.ID)
	_, checks["AddListMembers"] = db.AddListMembers(ctx, mine, apiActor, tl.ID, []int64{tc.ID}, nil)
	_, _, checks["Contacts(list_id)"] = db.Contacts(ctx, mine, store.ContactFilter{ListID: tl.ID}, store.Page{Page: 1, PerPage: 10})
	for name, err := range checks {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s with another account's id: %v, want ErrNotFound", name, err)
		}
	}
	// Their list as a target of my contact is an invalid field, not a lookup.
	_, err := db.UpsertContact(ctx, mine, apiActor, store.ContactInput{Email: "m@example.com", ListIDs: []int64{tl.ID}})
	var ve *store.ValidationError
	if !errors.As(err, &ve) || ve.Fields["list_ids"] == "" {
		t.Errorf("their list id: %v", err)
	}
	// My own contact with their address is a different contact.
	res := upsert(t, db, mine, store.ContactInput{Email: "t@example.com"})
	if !res.Created || res.Contact.ID == tc.ID {
		t.Errorf("same address in two accounts: %+v", res)
	}
	if b, _ := db.IsBlocked(ctx, mine, "t@example.com"); b {
		t.Error("blocked in the wrong account")
	}
	if _, err := db.Contact(ctx, theirs, tc.ID); err != nil {
		t.Errorf("their contact was touched: %v", err)
	}
	// A contact added by id from another account fails alone.
	ml := mkList(t, db, mine, "Meins", false)
	mr, err := db.AddListMembers(ctx, mine, apiActor, ml.ID, []int64{tc.ID, res.Contact.ID}, nil)
	if err != nil || mr.Failed != 1 || mr.Added != 1 || !errors.Is(mr.Entries[0].Err, store.ErrNotFound) {
		t.Errorf("add members across accounts: %+v, %v", mr, err)
	}
}

func TestListMembers(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	l := mkList(t, db, acct, "Kunden", false)
	sub := upsert(t, db, acct, store.ContactInput{Email: "sub@example.com"}).Contact
	unsub := upsert(t, db, acct, store.ContactInput{Email: "unsub@example.com", Status: ptr("unsubscribed")}).Contact
	mark := len(outbox(t, db, acct))
	res, err := db.AddListMembers(ctx, acct, apiActor, l.ID, []int64{sub.ID, unsub.ID, sub.ID, 987654},
		[]string{"NEU@example.com", "sub@example.com", "nix"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"added", "added", "already_member", "error", "created", "already_member", "error"}
	for i, e := range res.Entries {
		if e.Result != want[i] {
			t.Errorf("entry %d: %s (%v), want %s", i, e.Result, e.Err, want[i])
		}
	}
	if res.Added != 2 || res.Created != 1 || res.Already != 2 || res.Failed != 2 {
		t.Errorf("totals %+v", res)
	}
	joined := 0
	for _, e := range outboxSince(t, db, acct, mark) {
		if e.Name == store.EventListJoined {
			joined++
		}
	}
	if joined != 2 {
		t.Errorf("list.joined = %d, want 2 (not for the unsubscribed contact)", joined)
	}
	neu, _ := db.ContactByEmail(ctx, acct, "neu@example.com")
	if neu.Source != store.SourceImport {
		t.Errorf("source of an imported contact = %s", neu.Source)
	}
	got, _ := db.List(ctx, acct, l.ID)
	if got.MemberCount != 3 {
		t.Errorf("member_count = %d, want 3", got.MemberCount)
	}
	members, total, err := db.Contacts(ctx, acct, store.ContactFilter{ListID: l.ID, Sort: store.SortEmailAsc}, store.Page{Page: 1, PerPage: 2})
	if err != nil || total != 3 || len(members) != 2 || members[0].Email != "neu@example.com" {
		t.Errorf("members page = %v total %d, %v", members, total, err)
	}
	members, total, err = db.Contacts(ctx, acct, store.ContactFilter{ListID: l.ID, Status: "subscribed"}, store.Page{Page: 1, PerPage: 10})
	if err != nil || total != 2 || len(members) != 2 {
		t.Errorf("subscribed members: %d total %d, %v", len(members), total, err)
	}

	mark = len(outbox(t, db, acct))
	if err := db.RemoveListMember(ctx, acct, apiActor, l.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	names := outboxNames(outboxSince(t, db, acct, mark))
	slices.Sort(names)
	if !slices.Equal(names, []string{"contact.updated", "list.left"}) {
		t.Errorf("removal events = %v", names)
	}
	if err := db.RemoveListMember(ctx, acct, apiActor, l.ID, sub.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("removing a non-member: %v", err)
	}
	got, _ = db.List(ctx, acct, l.ID)
	if got.MemberCount != 2 {
		t.Errorf("member_count after removal = %d", got.MemberCount)
	}
	if err := db.DeleteContact(ctx, acct, apiActor, neu.ID); err != nil {
		t.Fatal(err)
	}
	got, _ = db.List(ctx, acct, l.ID)
	if got.MemberCount != 1 {
		t.Errorf("member_count after deleting a member = %d", got.MemberCount)
	}
	before, _ := db.Contact(ctx, acct, unsub.ID)
	time.Sleep(1100 * time.Millisecond) // updated_at has whole seconds
	if err := db.DeleteList(ctx, acct, apiActor, l.ID); err != nil {
		t.Fatal(err)
	}
	after, _ := db.Contact(ctx, acct, unsub.ID)
	if len(after.Lists) != 0 || !after.UpdatedAt.After(before.UpdatedAt) {
		t.Errorf("member of a deleted list: lists %v, updated_at %v → %v", after.Lists, before.UpdatedAt, after.UpdatedAt)
	}
	if u := usageOf(t, db, acct); u.Lists != 0 || u.Contacts != 2 {
		t.Errorf("usage = %+v", u)
	}
}

// A list's members sorted by creation come from the list's own index
// (migration 00017); the order must be the contacts' own, ties by id, across
// pages, also after a contact's created_at was changed by hand, and for
// members added after that.
// A list's members sorted by update or address are walked to in the account's
// order within a budget, and read from the list when the budget runs out. Both
// ways must give the account's own order, page by page, with the exact total.
// Joining a list moves a contact's updated_at to now, so by update every list
// here lies at the far end of updated_asc (read from the list) and the near
// end of updated_desc (walked); by address "ende" lies at the far end and
// "jeder3" is spread (walked, and read from the list from some depth on).
func TestListMembersInEveryOrder(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	in := store.BulkContacts{}
	for i := range 300 {
		in.Contacts = append(in.Contacts, store.ContactInput{Email: fmt.Sprintf("k%03d@example.com", i)})
	}
	if _, err := db.BulkUpsertContacts(ctx, acct, apiActor, in); err != nil {
		t.Fatal(err)
	}
	// Update times against the address order, with ties.
	if _, err := db.ExecContext(ctx, `UPDATE contacts SET updated_at = timestamptz '2026-01-01 00:00:00+01' + ((id * 7) % 150) * interval '1 second'
WHERE account_id = $1`, acct); err != nil {
		t.Fatal(err)
	}
	byOrder := func(sort string) []int64 {
		t.Helper()
		all, _, err := db.Contacts(ctx, acct, store.ContactFilter{Sort: sort}, store.Page{Page: 1, PerPage: 1000})
		if err != nil || len(all) != 300 {
			t.Fatalf("%s: %d contacts, %v", sort, len(all), err)
		}
		ids := make([]int64, len(all))
		for i, c := range all {
			ids[i] = c.ID
		}
		return ids
	}
	lists := map[string][]int64{
		// The 40 contacts last updated before any joined a list, the 40 last
		// by address, and every third by creation.
		"zuletzt": byOrder(store.SortUpdatedDesc)[:40],
		"ende":    byOrder(store.SortEmailAsc)[260:],
		"jeder3":  nil,
	}
	for i, id := range byOrder(store.SortCreatedAsc) {
		if i%3 == 1 {
			lists["jeder3"] = append(lists["jeder3"], id)
		}
	}
	for name, members := range lists {
		l := mkList(t, db, acct, name, false)
		if res, err := db.AddListMembers(ctx, acct, apiActor, l.ID, members, nil); err != nil || res.Added != len(members) {
			t.Fatalf("add members: %+v, %v", res, err)
		}
		for _, sort := range []string{store.SortUpdatedAsc, store.SortUpdatedDesc, store.SortEmailAsc} {
			var want []int64
			for _, id := range byOrder(sort) {
				if slices.Contains(members, id) {
					want = append(want, id)
				}
			}
			for _, perPage := range []int{7, 10, 100} {
				var got []int64
				for p := 1; ; p++ {
					page, total, err := db.Contacts(ctx, acct, store.ContactFilter{ListID: l.ID, Sort: sort}, store.Page{Page: p, PerPage: perPage})
					if err != nil {
						t.Fatal(err)
					}
					if total != len(members) {
						t.Fatalf("%s %s: total %d, want %d", name, sort, total, len(members))
					}
					for _, c := range page {
						got = append(got, c.ID)
					}
					if len(page) < perPage {
						break
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s %s, %d a page: members\n%v\nwant\n%v", name, sort, perPage, got, want)
				}
			}
		}
	}
	if _, _, err := db.Contacts(ctx, acct, store.ContactFilter{ListID: 987654, Sort: store.SortUpdatedDesc}, store.Page{Page: 1, PerPage: 10}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a list that does not exist: %v, want ErrNotFound", err)
	}
}

func TestListMembersInCreationOrder(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	l := mkList(t, db, acct, "Alt", false)
	var onList []int64
	for i := range 30 {
		in := store.ContactInput{Email: fmt.Sprintf("m%02d@example.com", i)}
		if i%3 != 0 {
			in.ListIDs = []int64{l.ID}
		}
		c := upsert(t, db, acct, in).Contact
		if i%3 != 0 {
			onList = append(onList, c.ID)
		}
	}
	// Creation times against the id order, with ties.
	if _, err := db.ExecContext(ctx, `UPDATE contacts SET created_at = timestamptz '2026-01-01 00:00:00+01' + ((40 - id) / 3) * interval '1 second'
WHERE account_id = $1`, acct); err != nil {
		t.Fatal(err)
	}
	late := upsert(t, db, acct, store.ContactInput{Email: "spaet@example.com"}).Contact
	if _, err := db.AddListMembers(ctx, acct, apiActor, l.ID, []int64{late.ID}, nil); err != nil {
		t.Fatal(err)
	}
	onList = append(onList, late.ID)

	for _, sort := range []string{store.SortCreatedDesc, store.SortCreatedAsc} {
		// What the account's own listing says, keeping the list's members.
		var want []int64
		all, _, err := db.Contacts(ctx, acct, store.ContactFilter{Sort: sort}, store.Page{Page: 1, PerPage: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range all {
			if slices.Contains(onList, c.ID) {
				want = append(want, c.ID)
			}
		}
		var got []int64
		for p := 1; ; p++ {
			page, total, err := db.Contacts(ctx, acct, store.ContactFilter{ListID: l.ID, Sort: sort}, store.Page{Page: p, PerPage: 4})
			if err != nil {
				t.Fatal(err)
			}
			if total != len(onList) {
				t.Fatalf("%s: total = %d, want %d", sort, total, len(onList))
			}
			if len(page) == 0 {
				break
			}
			for _, c := range page {
				got = append(got, c.ID)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: members %v, want %v", sort, got, want)
		}
	}
}

func TestDeleteContact(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	c := upsert(t, db, acct, store.ContactInput{Email: "d@example.com", Status: ptr("pending")}).Contact
	mark := len(outbox(t, db, acct))
	if err := db.DeleteContact(ctx, acct, apiActor, c.ID); err != nil {
		t.Fatal(err)
	}
	ev := outboxSince(t, db, acct, mark)
	if len(ev) != 1 || ev[0].Name != store.EventContactDeleted || !strings.Contains(string(ev[0].Payload), `"d@example.com"`) {
		t.Errorf("events = %v", outboxNames(ev))
	}
	if _, err := db.Contact(ctx, acct, c.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted contact: %v", err)
	}
	if err := db.DeleteContact(ctx, acct, apiActor, c.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting twice: %v", err)
	}
	if u := usageOf(t, db, acct); u.Contacts != 0 {
		t.Errorf("usage.contacts = %d", u.Contacts)
	}
}

func TestConfirmContactTokens(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	d := mkList(t, db, acct, "DOI", true)
	upsert(t, db, acct, store.ContactInput{Email: "c@example.com", FirstName: ptr("Clara"), ListIDs: []int64{d.ID}})
	mails, _, err := db.SystemMails(ctx, acct, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(mails) != 1 {
		t.Fatalf("mails = %v, %v", mails, err)
	}
	m := mails[0]
	text, html := m.Bodies("https://rundbrief.example/")
	token := strings.TrimPrefix(m.LinkPath, store.ConfirmPathPrefix)
	if m.Kind != "doi_confirmation" || m.SentAt != nil || len(token) != 32 ||
		!strings.Contains(text, "https://rundbrief.example/confirm/"+token) || !strings.Contains(text, "Hallo Clara") ||
		!strings.Contains(html, `href="https://rundbrief.example/confirm/`+token+`"`) {
		t.Errorf("mail = %+v\n%s\n%s", m, text, html)
	}
	var stored int
	if err := db.GetContext(ctx, &stored, `SELECT count(*) FROM doi_tokens WHERE token_hash = convert_to($1, 'UTF8')`, token); err != nil || stored != 0 {
		t.Errorf("the token is stored in plain text (%d, %v)", stored, err)
	}

	if _, err := db.ConfirmContact(ctx, strings.Repeat("x", 32)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown token: %v", err)
	}
	first, err := db.ConfirmContact(ctx, token)
	if err != nil || first.AlreadyConfirmed || first.Contact.Status != store.StatusSubscribed || first.Contact.DOIConfirmedAt == nil {
		t.Fatalf("confirm: %+v, %v", first, err)
	}
	mark := len(outbox(t, db, acct))
	again, err := db.ConfirmContact(ctx, token)
	if err != nil || !again.AlreadyConfirmed || again.Contact.ID != first.Contact.ID {
		t.Errorf("second click: %+v, %v", again, err)
	}
	if got := outboxSince(t, db, acct, mark); len(got) != 0 {
		t.Errorf("second click emitted %v", outboxNames(got))
	}

	upsert(t, db, acct, store.ContactInput{Email: "late@example.com", ListIDs: []int64{d.ID}})
	late := confirmationToken(t, db, acct, "late@example.com")
	if _, err := db.ExecContext(ctx, `UPDATE doi_tokens SET expires_at = now() - interval '1 minute' WHERE account_id = $1 AND used_at IS NULL`, acct); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ConfirmContact(ctx, late); !errors.Is(err, store.ErrConfirmationExpired) {
		t.Errorf("expired token: %v", err)
	}
	c, _ := db.ContactByEmail(ctx, acct, "late@example.com")
	if c.Status != store.StatusPending {
		t.Errorf("expired confirmation changed the status to %s", c.Status)
	}

	// The confirmation event says what changed.
	var upd struct {
		Changed []string `json:"changed"`
	}
	for _, e := range outbox(t, db, acct) {
		if e.Name == store.EventContactUpdated {
			_ = json.Unmarshal(e.Payload, &upd)
		}
	}
	if !slices.Equal(upd.Changed, []string{"status", "doi_confirmed_at"}) {
		t.Errorf("changed = %v", upd.Changed)
	}
}

func TestContactActivities(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	d := mkList(t, db, acct, "DOI", true)
	c := upsert(t, db, acct, store.ContactInput{Email: "a@example.com", Source: ptr("form"), SignUp: true, ListIDs: []int64{d.ID}}).Contact
	if _, err := db.ConfirmContact(ctx, confirmationToken(t, db, acct, "a@example.com")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpdateContact(ctx, acct, apiActor, c.ID, store.ContactPatch{City: ptr("Jena")}); err != nil {
		t.Fatal(err)
	}
	news := mkList(t, db, acct, "News", false)
	upsert(t, db, acct, store.ContactInput{Email: "a@example.com", ListIDs: []int64{news.ID}})
	if err := db.RemoveListMember(ctx, acct, apiActor, d.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UnsubscribeContact(ctx, acct, apiActor, c.ID, store.Unsubscribe{}); err != nil {
		t.Fatal(err)
	}
	acts, total, err := db.ContactActivities(ctx, acct, c.ID, store.Page{Page: 1, PerPage: 50})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := len(acts) - 1; i >= 0; i-- {
		got = append(got, acts[i].Action+"/"+acts[i].ActorType)
	}
	want := []string{"contact.created/key", "contact.signed_up/key", "contact.confirmation_sent/key",
		"contact.confirmed/public", "contact.updated/key", "contact.updated/key", "list.joined/key",
		"contact.updated/key", "list.left/key", "contact.updated/key", "contact.unsubscribed/key"}
	if total != len(want) || !slices.Equal(got, want) {
		t.Errorf("activities (%d) =\n%v\nwant\n%v", total, got, want)
	}
	all, _, err := db.ActivityLog(ctx, acct, store.ActivityFilter{ObjectType: store.ObjectList}, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(all) != 2 || all[1].Action != "list.created" || all[1].ActorID == nil || *all[1].ActorID != 1 {
		t.Errorf("list activities = %+v, %v", all, err)
	}
}

func TestTagsAndTagEndpoints(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	a := upsert(t, db, acct, store.ContactInput{Email: "a@example.com", Tags: []string{"vip", "kunde"}}).Contact
	upsert(t, db, acct, store.ContactInput{Email: "b@example.com", Tags: []string{"kunde"}})
	tags, total, err := db.Tags(ctx, acct, store.Page{Page: 1, PerPage: 10})
	if err != nil || total != 2 || len(tags) != 2 || tags[0] != (store.Tag{Name: "kunde", Count: 2}) || tags[1] != (store.Tag{Name: "vip", Count: 1}) {
		t.Errorf("tags = %+v total %d, %v", tags, total, err)
	}
	c, err := db.AddTags(ctx, acct, apiActor, a.ID, []string{"neu", "vip"})
	if err != nil || !slices.Equal([]string(c.Tags), []string{"vip", "kunde", "neu"}) {
		t.Errorf("AddTags = %v, %v", c.Tags, err)
	}
	c, err = db.RemoveTag(ctx, acct, apiActor, a.ID, "vip")
	if err != nil || !slices.Equal([]string(c.Tags), []string{"kunde", "neu"}) {
		t.Errorf("RemoveTag = %v, %v", c.Tags, err)
	}
	if _, err := db.RemoveTag(ctx, acct, apiActor, a.ID, "vip"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("removing a missing tag: %v", err)
	}
	found, total, err := db.Contacts(ctx, acct, store.ContactFilter{Tag: "neu"}, store.Page{Page: 1, PerPage: 10})
	if err != nil || total != 1 || found[0].ID != a.ID {
		t.Errorf("tag filter: %v %d %v", found, total, err)
	}
}

func TestContactListing(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	other := newAccount(t, db, "business")
	upsert(t, db, other, store.ContactInput{Email: "fremd@example.com"})
	l := mkList(t, db, acct, "L", false)
	var in []store.ContactInput
	for i := range 250 {
		c := store.ContactInput{Email: fmt.Sprintf("k%03d@example.com", i), FirstName: ptr(fmt.Sprintf("Vor%d", i)), LastName: ptr("Nach")}
		if i%2 == 0 {
			c.ListIDs = []int64{l.ID}
		}
		if i%5 == 0 {
			c.Tags = []string{"fünf"}
		}
		if i%10 == 0 {
			c.Status = ptr("unsubscribed")
		}
		in = append(in, c)
	}
	if _, err := db.BulkUpsertContacts(ctx, acct, apiActor, store.BulkContacts{Contacts: in}); err != nil {
		t.Fatal(err)
	}
	// Spread created_at/updated_at: ten contacts per second, so sorts have ties.
	if _, err := db.ExecContext(ctx, `UPDATE contacts SET created_at = timestamptz '2026-01-01 00:00:00+01' + (id / 10) * interval '1 second',
		updated_at = timestamptz '2026-02-01 00:00:00+01' + ((300 - id) / 10) * interval '1 second' WHERE account_id = $1`, acct); err != nil {
		t.Fatal(err)
	}
	page := func(p, per int) store.Page { return store.Page{Page: p, PerPage: per} }
	list := func(f store.ContactFilter, p store.Page) ([]store.Contact, int) {
		t.Helper()
		cs, total, err := db.Contacts(ctx, acct, f, p)
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		return cs, total
	}

	cases := []struct {
		name  string
		f     store.ContactFilter
		total int
	}{
		{"all", store.ContactFilter{}, 250},
		{"list", store.ContactFilter{ListID: l.ID}, 125},
		{"status", store.ContactFilter{Status: "unsubscribed"}, 25},
		{"tag", store.ContactFilter{Tag: "fünf"}, 50},
		{"q email", store.ContactFilter{Query: "K01"}, 10},
		{"q full name", store.ContactFilter{Query: "vor12 nach"}, 1},
		{"q like chars", store.ContactFilter{Query: "%_"}, 0},
		{"list and status", store.ContactFilter{ListID: l.ID, Status: "subscribed"}, 100},
	}
	for _, tc := range cases {
		for _, sort := range []string{"updated_asc", "updated_desc", "created_asc", "created_desc", "email_asc"} {
			f := tc.f
			f.Sort = sort
			var seen []store.Contact
			for p := 1; ; p++ {
				cs, total := list(f, page(p, 30))
				if total != tc.total {
					t.Fatalf("%s %s page %d: total %d, want %d", tc.name, sort, p, total, tc.total)
				}
				seen = append(seen, cs...)
				if len(cs) < 30 {
					break
				}
			}
			if len(seen) != tc.total {
				t.Fatalf("%s %s: paged through %d, want %d", tc.name, sort, len(seen), tc.total)
			}
			ordered := slices.IsSortedFunc(seen, func(a, b store.Contact) int {
				switch sort {
				case "updated_asc":
					return cmpTimeID(a.UpdatedAt, a.ID, b.UpdatedAt, b.ID)
				case "updated_desc":
					return cmpTimeID(b.UpdatedAt, b.ID, a.UpdatedAt, a.ID)
				case "created_asc":
					return cmpTimeID(a.CreatedAt, a.ID, b.CreatedAt, b.ID)
				case "created_desc":
					return cmpTimeID(b.CreatedAt, b.ID, a.CreatedAt, a.ID)
				}
				return strings.Compare(a.Email, b.Email)
			})
			ids := map[int64]bool{}
			for _, c := range seen {
				ids[c.ID] = true
			}
			if !ordered || len(ids) != len(seen) {
				t.Errorf("%s %s: not in order or repeated", tc.name, sort)
			}
		}
	}
	if cs, total := list(store.ContactFilter{}, page(50, 30)); len(cs) != 0 || total != 250 {
		t.Errorf("page beyond the end: %d rows, total %d", len(cs), total)
	}
	if cs, total := list(store.ContactFilter{ListID: l.ID}, page(50, 30)); len(cs) != 0 || total != 125 {
		t.Errorf("list page beyond the end: %d rows, total %d", len(cs), total)
	}
	for _, bad := range []store.ContactFilter{{Sort: "name"}, {Status: "x"}, {AfterID: 3}, {AfterID: 3, UpdatedAfter: ptr(time.Now()), Sort: "created_asc"}} {
		var ve *store.ValidationError
		if _, _, err := db.Contacts(ctx, acct, bad, page(1, 10)); !errors.As(err, &ve) {
			t.Errorf("%+v: %v, want a validation error", bad, err)
		}
	}
	if _, _, err := db.Contacts(ctx, acct, store.ContactFilter{ListID: 999999}, page(1, 10)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown list: %v", err)
	}

	// An updated_after sync walks every contact exactly once, also across ties of
	// updated_at, with the planner's statistics steering the count either way.
	if _, err := db.ExecContext(ctx, `ANALYZE contacts`); err != nil {
		t.Fatal(err)
	}
	sync := func(from time.Time, fromID int64) (seen map[int64]int, last store.Contact) {
		seen = map[int64]int{}
		after, afterID := from, fromID
		for {
			f := store.ContactFilter{UpdatedAfter: &after, AfterID: afterID}
			cs, total := list(f, page(1, 40))
			var want int
			if err := db.GetContext(ctx, &want, `SELECT count(*) FROM contacts WHERE account_id = $1 AND (updated_at, id) > ($2, $3)`, acct, after, afterID); err != nil {
				t.Fatal(err)
			}
			if total != want {
				t.Fatalf("sync after (%v, %d): total %d, want %d", after, afterID, total, want)
			}
			for _, c := range cs {
				seen[c.ID]++
			}
			if len(cs) == 0 {
				return seen, last
			}
			last = cs[len(cs)-1]
			after, afterID = last.UpdatedAt, last.ID
		}
	}
	seen, last := sync(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), 0)
	if len(seen) != 250 {
		t.Errorf("sync saw %d contacts, want 250", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("sync saw contact %d %d times", id, n)
		}
	}
	// Changes after the sync show up in the next one, nothing else.
	time.Sleep(1100 * time.Millisecond)
	changed := upsert(t, db, acct, store.ContactInput{Email: "k007@example.com", City: ptr("Ulm")}).Contact
	seen, _ = sync(last.UpdatedAt, last.ID)
	if len(seen) != 1 || seen[changed.ID] != 1 {
		t.Errorf("incremental sync saw %v, want only %d", seen, changed.ID)
	}
	// updated_after alone is exclusive.
	cut := time.Date(2026, 2, 1, 0, 0, 10, 0, store.Berlin)
	_, total := list(store.ContactFilter{UpdatedAfter: &cut}, page(1, 10))
	var want int
	_ = db.GetContext(ctx, &want, `SELECT count(*) FROM contacts WHERE account_id = $1 AND updated_at > $2`, acct, cut)
	if total != want || want == 0 {
		t.Errorf("updated_after total %d, want %d", total, want)
	}
}

func cmpTimeID(at time.Time, aid int64, bt time.Time, bid int64) int {
	if c := at.Compare(bt); c != 0 {
		return c
	}
	switch {
	case aid < bid:
		return -1
	case aid > bid:
		return 1
	}
	return 0
}

func TestBlockedAddresses(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	c := upsert(t, db, acct, store.ContactInput{Email: "kunde@example.com"}).Contact
	rows, err := db.BlockAddresses(ctx, acct, apiActor, []string{" Kunde@Example.com", "fremd@example.com", "fremd@example.com"},
		store.Unsubscribe{Source: store.UnsubAPI, Reason: "Beschwerde"})
	if err != nil || len(rows) != 2 || rows[0].Email != "fremd@example.com" || rows[1].Reason == nil || *rows[1].Reason != "Beschwerde" {
		t.Fatalf("BlockAddresses = %+v, %v", rows, err)
	}
	got, _ := db.Contact(ctx, acct, c.ID)
	if got.Status != store.StatusUnsubscribed || got.UnsubscribedAt == nil {
		t.Errorf("contact of a blocked address: %+v", got)
	}
	if _, err := db.ContactByEmail(ctx, acct, "fremd@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("blocking created a contact: %v", err)
	}
	m, err := db.BlockedAddresses(ctx, acct, []string{"KUNDE@example.com", "frei@example.com", "fremd@example.com"})
	if err != nil || !m["kunde@example.com"] || m["frei@example.com"] || !m["fremd@example.com"] {
		t.Errorf("BlockedAddresses = %v, %v", m, err)
	}
	list, total, err := db.BlockedList(ctx, acct, "", store.Page{Page: 1, PerPage: 10})
	if err != nil || total != 2 || len(list) != 2 {
		t.Errorf("BlockedList = %v %d %v", list, total, err)
	}
	list, total, _ = db.BlockedList(ctx, acct, "KUNDE", store.Page{Page: 1, PerPage: 10})
	if total != 1 || list[0].Email != "kunde@example.com" {
		t.Errorf("BlockedList q = %v %d", list, total)
	}
	var ve *store.ValidationError
	if _, err := db.BlockAddresses(ctx, acct, apiActor, []string{"kaputt"}, store.Unsubscribe{}); !errors.As(err, &ve) || ve.Fields["emails"] == "" {
		t.Errorf("invalid address: %v", err)
	}
	// The API cannot re-subscribe it; an upsert leaves it unsubscribed.
	res := upsert(t, db, acct, store.ContactInput{Email: "kunde@example.com", Status: ptr("subscribed")})
	if res.Contact.Status != store.StatusUnsubscribed {
		t.Errorf("re-subscribed a blocked address: %s", res.Contact.Status)
	}
	acts, _, _ := db.ActivityLog(ctx, acct, store.ActivityFilter{ObjectType: store.ObjectBlockedAddress}, store.Page{Page: 1, PerPage: 10})
	if len(acts) != 2 {
		t.Errorf("blocked-address activities = %d, want 2", len(acts))
	}
}

func TestListCRUD(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	l, err := db.CreateList(ctx, acct, apiActor, store.ListInput{Name: ptr(" Newsletter "), Color: ptr("#AABBCC"), Description: ptr("Monatlich")})
	if err != nil || l.Name != "Newsletter" || l.Color != "#aabbcc" || l.DoubleOptIn {
		t.Fatalf("CreateList = %+v, %v", l, err)
	}
	var ve *store.ValidationError
	for _, in := range []store.ListInput{{}, {Name: ptr("")}, {Name: ptr("X"), Color: ptr("red")}, {Name: ptr("newsletter")}} {
		if _, err := db.CreateList(ctx, acct, apiActor, in); !errors.As(err, &ve) {
			t.Errorf("CreateList(%+v) = %v, want a validation error", in, err)
		}
	}
	u, err := db.UpdateList(ctx, acct, apiActor, l.ID, store.ListInput{DoubleOptIn: ptr(true), Name: ptr("Newsletter")})
	if err != nil || !u.DoubleOptIn || u.Name != "Newsletter" {
		t.Errorf("UpdateList = %+v, %v", u, err)
	}
	lists, total, err := db.Lists(ctx, acct, store.Page{Page: 1, PerPage: 10})
	if err != nil || total != 1 || lists[0].ID != l.ID {
		t.Errorf("Lists = %v %d %v", lists, total, err)
	}
	if err := db.DeleteList(ctx, acct, apiActor, l.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.List(ctx, acct, l.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted list: %v", err)
	}
}

// The striped contact counter (migration 00012) keeps the plan's limit exact
// under concurrency, near the limit (one transaction at a time) and far from
// it (striped), and its total is exact afterwards.
func TestContactLimitUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	newContactPlan(t, db, "forty", 40)
	newContactPlan(t, db, "roomy", 1000000)
	run := func(acct int64, n int) (created, limited int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, err := db.UpsertContact(ctx, acct, apiActor, store.ContactInput{Email: fmt.Sprintf("p%d@example.com", i)})
				var le *store.LimitError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					created++
				case errors.As(err, &le):
					limited++
				default:
					t.Errorf("upsert %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		return created, limited
	}
	count := func(acct int64) int64 {
		var n int64
		if err := db.GetContext(ctx, &n, `SELECT count(*) FROM contacts WHERE account_id = $1`, acct); err != nil {
			t.Fatal(err)
		}
		return n
	}

	near := newAccount(t, db, "forty")
	// Ten contacts the counter's base knows of (as an import or an operator sets it).
	if _, err := db.ExecContext(ctx, `UPDATE account_usage SET contacts = 10 WHERE account_id = $1`, near); err != nil {
		t.Fatal(err)
	}
	if created, limited := run(near, 60); created != 30 || limited != 30 {
		t.Errorf("near the limit: %d created, %d over the limit; want 30 and 30", created, limited)
	}
	if u := usageOf(t, db, near); u.Contacts != 40 || count(near) != 30 {
		t.Errorf("usage %d with %d rows, want 40 with 30", u.Contacts, count(near))
	}

	far := newAccount(t, db, "roomy")
	if created, limited := run(far, 60); created != 60 || limited != 0 {
		t.Errorf("far from the limit: %d created, %d over the limit", created, limited)
	}
	c, err := db.ContactByEmail(ctx, far, "p7@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteContact(ctx, far, apiActor, c.ID); err != nil {
		t.Fatal(err)
	}
	if u := usageOf(t, db, far); u.Contacts != 59 || count(far) != 59 {
		t.Errorf("usage %d with %d rows, want 59", u.Contacts, count(far))
	}
	_, total, err := db.Contacts(ctx, far, store.ContactFilter{}, store.Page{Page: 1, PerPage: 10})
	if err != nil || total != 59 {
		t.Errorf("listing total = %d, %v; want 59", total, err)
	}
}

// limitHarness drives add_account_contacts from transactions on connections
// of their own, for tests of its locks.
type limitHarness struct {
	t    *testing.T
	db   *store.DB
	raw  *sql.DB
	acct int64
}

// newLimitHarness makes an account on a plan with room for max contacts, with
// its counter stripes in place.
func newLimitHarness(t *testing.T, plan string, max int64) *limitHarness {
	t.Helper()
	url := dbtest.URL(t)
	db := dbtest.Open(t, url)
	newContactPlan(t, db, plan, max)
	acct := newAccount(t, db, plan)
	if _, err := db.ExecContext(context.Background(), `INSERT INTO account_contact_counts (account_id, stripe)
		SELECT $1, g FROM generate_series(0, 31) AS g ON CONFLICT DO NOTHING`, acct); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	return &limitHarness{t: t, db: db, raw: raw, acct: acct}
}

// limitConn is a connection and its backend's pid (pid % 32 is its stripe).
type limitConn struct {
	*sql.Conn
	pid int
}

func (h *limitHarness) conn() limitConn {
	h.t.Helper()
	ctx := context.Background()
	c, err := h.raw.Conn(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = c.Close() })
	var pid int
	if err := c.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		h.t.Fatal(err)
	}
	return limitConn{c, pid}
}

func (h *limitHarness) begin(c limitConn) *sql.Tx {
	h.t.Helper()
	tx, err := c.BeginTx(context.Background(), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = tx.Rollback() })
	return tx
}

func (h *limitHarness) commit(tx *sql.Tx) {
	h.t.Helper()
	if err := tx.Commit(); err != nil {
		h.t.Fatal(err)
	}
}

// wantUsage checks the account's counted contacts.
func (h *limitHarness) wantUsage(n int64) {
	h.t.Helper()
	if u := usageOf(h.t, h.db, h.acct); u.Contacts != n {
		h.t.Errorf("usage %d, want %d", u.Contacts, n)
	}
}

func (h *limitHarness) add(tx *sql.Tx, n int) (bool, error) {
	var ok bool
	err := tx.QueryRowContext(context.Background(), `SELECT add_account_contacts($1, $2)`, h.acct, n).Scan(&ok)
	return ok, err
}

// mustAdd adds n and fails the test unless that is within the limit.
func (h *limitHarness) mustAdd(tx *sql.Tx, n int) {
	h.t.Helper()
	if ok, err := h.add(tx, n); err != nil || !ok {
		h.t.Fatalf("add %d: %v, %v", n, ok, err)
	}
}

type limitResult struct {
	ok  bool
	err error
}

// addLater adds n in the background, for a call that is to wait for a lock.
func (h *limitHarness) addLater(tx *sql.Tx, n int) <-chan limitResult {
	out := make(chan limitResult, 1)
	go func() {
		ok, err := h.add(tx, n)
		out <- limitResult{ok, err}
	}()
	return out
}

// blocked returns once the backend pid waits for a lock.
func (h *limitHarness) blocked(pid int) {
	h.t.Helper()
	h.returnedOrBlocked(nil, pid)
}

// returnedOrBlocked returns once the call behind res has returned (its
// result stays in res; a nil res never returns) or its backend pid waits for
// a lock.
func (h *limitHarness) returnedOrBlocked(res <-chan limitResult, pid int) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(res) == 0 {
		var waiting bool
		if err := h.db.GetContext(context.Background(), &waiting,
			`SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1`, pid); err != nil {
			h.t.Fatal(err)
		}
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("backend %d did not wait for a lock", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// isSerializationFailure reports whether err is SQLSTATE 40001, which the
// contact writes retry.
func isSerializationFailure(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && pqErr.Code == "40001"
}

// A transaction whose fast-path check of the contact limit fails after it
// took its stripe (others committed in between) must not wait for the usage
// row: a transaction on the slow path holds that row and waits for every
// stripe in order, its stripe included, a cycle PostgreSQL breaks only after
// deadlock_timeout, by failing one of them. The transaction gives up at once
// instead, with a serialization failure its caller retries (retryTxOn), and
// the slow path goes on. The steps are ordered by waiting until each
// transaction is blocked where it should be; the slow path is kept on a lower
// stripe until the late adder has its own, so that the two never race for it.
func TestContactLimitSlowPathDoesNotDeadlock(t *testing.T) {
	// Room for 33,000: the fast path's first check (the total, the call and
	// 32 stripes of 1,000 in flight) just passes for a call of 1,000 while
	// nothing is committed, and its second fails once 2,000 more are.
	h := newLimitHarness(t, "tight", 33000)
	// Connections until two share a stripe that has another stripe below it,
	// and two more stripes are taken.
	byStripe := map[int][]limitConn{}
	shared, below := -1, -1
	for shared < 0 || len(byStripe) < 4 {
		c := h.conn()
		byStripe[c.pid%32] = append(byStripe[c.pid%32], c)
		if shared >= 0 {
			continue
		}
		for s, cs := range byStripe {
			for b := range byStripe {
				if len(cs) >= 2 && b < s {
					shared, below = s, b
				}
			}
		}
	}
	var rest []limitConn
	for s, cs := range byStripe {
		if s != shared && s != below {
			rest = append(rest, cs[0])
		}
	}
	same, lower := byStripe[shared], byStripe[below][0]

	// Three fast-path adds of 1,000: on the shared stripe, below it, and on a
	// third.
	first, held, early := h.begin(same[0]), h.begin(lower), h.begin(rest[0])
	for _, tx := range []*sql.Tx{first, held, early} {
		h.mustAdd(tx, 1000)
	}
	// The late adder passes its first check (it sees none of them) and waits
	// for the shared stripe.
	late := h.begin(same[1])
	lateRes := h.addLater(late, 1000)
	h.blocked(same[1].pid)
	h.commit(early)
	// 1,001 at once takes the slow path: the usage row, then every stripe in
	// order, up to the lower one that is still held.
	slow := h.begin(rest[1])
	slowRes := h.addLater(slow, 1001)
	h.blocked(rest[1].pid)
	// The late adder gets the shared stripe, and its second check sees 3,000.
	// It must give up now; had it waited for the usage row, the slow path
	// would close the cycle as soon as the lower stripe is free.
	h.commit(first)
	h.returnedOrBlocked(lateRes, same[1].pid)
	h.commit(held)
	if r := <-lateRes; !isSerializationFailure(r.err) {
		t.Fatalf("the add whose second check failed: %v, %v; want a serialization failure (40001)", r.ok, r.err)
	}
	if err := late.Rollback(); err != nil {
		t.Fatal(err)
	}
	if r := <-slowRes; r.err != nil || !r.ok {
		t.Fatalf("slow-path add: %v, %v", r.ok, r.err)
	}
	h.commit(slow)
	// Retried, it takes the slow path and is within the limit.
	retry := h.begin(same[1])
	h.mustAdd(retry, 1000)
	h.commit(retry)
	h.wantUsage(5001)
}

// A transaction that counted contacts in an earlier statement holds its
// stripe; when a later statement of it takes the slow path, it must not wait
// for the usage row either.
func TestContactLimitSecondCallDoesNotDeadlock(t *testing.T) {
	h := newLimitHarness(t, "roomy", 1000000)
	a, b := h.conn(), h.conn()
	holder := h.begin(a)
	h.mustAdd(holder, 1) // fast path: holds its stripe until it ends
	slow := h.begin(b)
	slowRes := h.addLater(slow, 1001) // the usage row, then every stripe
	h.blocked(b.pid)
	if ok, err := h.add(holder, 1001); !isSerializationFailure(err) {
		t.Fatalf("second, slow-path add of the transaction holding a stripe: %v, %v; want a serialization failure (40001)", ok, err)
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	if r := <-slowRes; r.err != nil || !r.ok {
		t.Fatalf("slow-path add: %v, %v", r.ok, r.err)
	}
	h.commit(slow)
	retry := h.begin(a)
	h.mustAdd(retry, 1)
	h.mustAdd(retry, 1001)
	h.commit(retry)
	h.wantUsage(2003)
}

// GET /tags reads maintained counts (contact_tag_counts): after creates, added
// and removed tags, a patch replacing tags, a bulk and a deletion they equal
// what counting the contacts gives.
func TestTagCountsFollowEveryChange(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	a := upsert(t, db, acct, store.ContactInput{Email: "a@example.com", Tags: []string{"vip", "kunde"}}).Contact
	b := upsert(t, db, acct, store.ContactInput{Email: "b@example.com", Tags: []string{"kunde"}}).Contact
	upsert(t, db, acct, store.ContactInput{Email: "b@example.com", Tags: []string{"kunde", "neu"}})
	if _, err := db.RemoveTag(ctx, acct, apiActor, a.ID, "vip"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpdateContact(ctx, acct, apiActor, b.ID, store.ContactPatch{Tags: &[]string{"neu", "presse"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.BulkUpsertContacts(ctx, acct, apiActor, store.BulkContacts{Contacts: []store.ContactInput{
		{Email: "c@example.com"}, {Email: "a@example.com"}, {Email: "d@example.com", Tags: []string{"presse"}},
	}, Tags: []string{"messe"}}); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteContact(ctx, acct, apiActor, a.ID); err != nil {
		t.Fatal(err)
	}
	got, total, err := db.Tags(ctx, acct, store.Page{Page: 1, PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	var want []store.Tag
	if err := db.SelectContext(ctx, &want, `SELECT t AS name, count(*) AS count FROM contacts c CROSS JOIN LATERAL unnest(c.tags) AS t
		WHERE c.account_id = $1 GROUP BY t ORDER BY t`, acct); err != nil {
		t.Fatal(err)
	}
	// b: neu, presse, messe; c: messe; d: presse, messe (a with kunde, messe deleted).
	if !slices.Equal(got, want) || total != len(want) || len(want) != 3 {
		t.Errorf("tags = %+v (total %d), counted %+v", got, total, want)
	}
}
