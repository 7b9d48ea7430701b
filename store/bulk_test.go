package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/lib/pq"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// bulkEnv is an account with n contacts b0000… of which the even ones carry
// the tag "even".
func bulkEnv(t *testing.T, n int) (*store.DB, int64) {
	t.Helper()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	in := store.BulkContacts{}
	for i := range n {
		c := store.ContactInput{Email: fmt.Sprintf("b%04d@example.com", i)}
		if i%2 == 0 {
			c.Tags = []string{"even"}
		}
		in.Contacts = append(in.Contacts, c)
		if len(in.Contacts) == store.MaxBatch || i == n-1 {
			if _, err := db.BulkUpsertContacts(context.Background(), acct, apiActor, in); err != nil {
				t.Fatal(err)
			}
			in.Contacts = nil
		}
	}
	return db, acct
}

func countQ(t *testing.T, db *store.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.GetContext(context.Background(), &n, q, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

func runBulk(t *testing.T, db *store.DB, opts store.BulkRun) bool {
	t.Helper()
	ran, err := db.RunNextBulkJob(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return ran
}

// TestBulkJobByFilter: a tag added to every match of a filter, chunk by chunk,
// with one contact.updated event and activity per contact (as AddTags writes)
// and one activity for the whole job; progress ends at the total.
func TestBulkJobByFilter(t *testing.T) {
	db, acct := bulkEnv(t, 250)
	ctx := context.Background()
	mark := len(outbox(t, db, acct))
	user := store.Actor{Type: store.ActorUser, ID: 7}
	j, err := db.CreateBulkJob(ctx, acct, user, store.BulkInput{Action: store.BulkAddTag, Tag: " neu ", Filter: &store.ContactFilter{Tag: "even"}})
	if err != nil || j.Status != store.BulkQueued || j.Tag != "neu" {
		t.Fatalf("create = %+v, %v", j, err)
	}
	if !runBulk(t, db, store.BulkRun{Chunk: 40}) || runBulk(t, db, store.BulkRun{Chunk: 40}) {
		t.Fatal("the job ran not exactly once")
	}
	j, err = db.BulkJob(ctx, acct, j.ID)
	if err != nil || j.Status != store.BulkDone || *j.Total != 125 || j.Processed != 125 || j.Changed != 125 || j.Percent() != 100 {
		t.Fatalf("job = %+v, %v", j, err)
	}
	if n := countQ(t, db, `SELECT count(*) FROM contacts WHERE account_id = $1 AND tags @> '{neu}'`, acct); n != 125 {
		t.Fatalf("tagged %d", n)
	}
	ev := outboxSince(t, db, acct, mark)
	if len(ev) != 125 || ev[0].Name != "contact.updated" {
		t.Fatalf("%d events, first %v", len(ev), outboxNames(ev[:1]))
	}
	if n := countQ(t, db, `SELECT count(*) FROM activity_log WHERE account_id = $1 AND action = 'contacts.bulk_add_tag'
		AND actor_type = 'user' AND actor_id = 7 AND (details->>'changed')::int = 125`, acct); n != 1 {
		t.Fatalf("job activities %d", n)
	}
	if _, err := db.BulkJob(ctx, newAccount(t, db, "business"), j.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("other account: %v", err)
	}
}

// TestBulkJobResumesAfterCrash: a worker that dies after its first chunk
// (MaxChunks) leaves the job to the next one once the lease ran out; the
// chunk already committed is not applied again and none is skipped.
func TestBulkJobResumesAfterCrash(t *testing.T) {
	db, acct := bulkEnv(t, 300)
	ctx := context.Background()
	mark := len(outbox(t, db, acct))
	j, err := db.CreateBulkJob(ctx, acct, apiActor, store.BulkInput{Action: store.BulkRemoveTag, Tag: "even", Filter: &store.ContactFilter{}})
	if err != nil {
		t.Fatal(err)
	}
	runBulk(t, db, store.BulkRun{Chunk: 100, MaxChunks: 1})
	j, _ = db.BulkJob(ctx, acct, j.ID)
	if j.Status != store.BulkRunning || j.Processed != 100 || *j.Total != 300 {
		t.Fatalf("after the crash: %+v", j)
	}
	// The lease still holds: nobody takes the job over.
	if runBulk(t, db, store.BulkRun{Chunk: 100}) {
		t.Fatal("a leased job was claimed")
	}
	if _, err := db.ExecContext(ctx, `UPDATE bulk_jobs SET lease_until = now() - interval '1 second' WHERE id = $1`, j.ID); err != nil {
		t.Fatal(err)
	}
	if !runBulk(t, db, store.BulkRun{Chunk: 100}) {
		t.Fatal("the job was not resumed")
	}
	j, _ = db.BulkJob(ctx, acct, j.ID)
	if j.Status != store.BulkDone || j.Processed != 300 || j.Changed != 150 {
		t.Fatalf("after the resume: %+v", j)
	}
	if n := countQ(t, db, `SELECT count(*) FROM contacts WHERE account_id = $1 AND tags @> '{even}'`, acct); n != 0 {
		t.Fatalf("%d still tagged", n)
	}
	perContact := map[int64]int{}
	for _, e := range outboxSince(t, db, acct, mark) {
		var p struct {
			Contact struct{ ID int64 } `json:"contact"`
		}
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatal(err)
		}
		perContact[p.Contact.ID]++
	}
	if len(perContact) != 150 {
		t.Fatalf("events for %d contacts, want 150", len(perContact))
	}
	for id, n := range perContact {
		if n != 1 {
			t.Fatalf("contact %d: %d events", id, n)
		}
	}
}

// TestBulkJobActions: each action on chosen rows, through the single-contact
// paths (list.joined/left, contact.unsubscribed with the address blocked,
// contact.deleted with the counters).
func TestBulkJobActions(t *testing.T) {
	db, acct := bulkEnv(t, 6)
	ctx := context.Background()
	list := mkList(t, db, acct, "L", false)
	var ids []int64
	if err := db.SelectContext(ctx, &ids, `SELECT id FROM contacts WHERE account_id = $1 ORDER BY id LIMIT 3`, acct); err != nil {
		t.Fatal(err)
	}
	run := func(in store.BulkInput) store.BulkJob {
		t.Helper()
		in.ContactIDs = ids
		j, err := db.CreateBulkJob(ctx, acct, apiActor, in)
		if err != nil {
			t.Fatal(err)
		}
		runBulk(t, db, store.BulkRun{})
		j, _ = db.BulkJob(ctx, acct, j.ID)
		if j.Status != store.BulkDone {
			t.Fatalf("%s: %+v", in.Action, j)
		}
		return j
	}
	mark := len(outbox(t, db, acct))
	run(store.BulkInput{Action: store.BulkAddToList, ListID: list.ID})
	if l, _ := db.List(ctx, acct, list.ID); l.MemberCount != 3 {
		t.Fatalf("members %d", l.MemberCount)
	}
	if j := run(store.BulkInput{Action: store.BulkRemoveFromList, ListID: list.ID}); j.Changed != 3 {
		t.Fatalf("left: %+v", j)
	}
	run(store.BulkInput{Action: store.BulkUnsubscribe})
	if n := countQ(t, db, `SELECT count(*) FROM blocked_addresses WHERE account_id = $1`, acct); n != 3 {
		t.Fatalf("blocked %d", n)
	}
	run(store.BulkInput{Action: store.BulkDelete})
	if n := countQ(t, db, `SELECT count(*) FROM contacts WHERE account_id = $1`, acct); n != 3 {
		t.Fatalf("contacts left %d", n)
	}
	want := map[string]int{"list.joined": 3, "list.left": 3, "contact.unsubscribed": 3, "contact.deleted": 3}
	got := map[string]int{}
	for _, e := range outboxSince(t, db, acct, mark) {
		got[e.Name]++
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
	if _, n, _ := db.Contacts(ctx, acct, store.ContactFilter{}, store.Page{Page: 1, PerPage: 10}); n != 3 {
		t.Fatalf("the contact counter says %d", n)
	}
	for _, c := range []struct {
		in    store.BulkInput
		field string
	}{
		{store.BulkInput{Action: "merge", ContactIDs: ids}, "action"},
		{store.BulkInput{Action: store.BulkAddTag, ContactIDs: ids}, "tag"},
		{store.BulkInput{Action: store.BulkAddToList, ContactIDs: ids}, "list_id"},
		{store.BulkInput{Action: store.BulkAddToList, ListID: 999999, ContactIDs: ids}, "list_id"},
		{store.BulkInput{Action: store.BulkDelete}, "contact_ids"},
		{store.BulkInput{Action: store.BulkDelete, ContactIDs: ids, Filter: &store.ContactFilter{}}, "contact_ids"},
		{store.BulkInput{Action: store.BulkDelete, SegmentID: 999999}, "segment_id"},
		{store.BulkInput{Action: store.BulkDelete, Filter: &store.ContactFilter{Status: "x"}}, "filter.status"},
	} {
		_, err := db.CreateBulkJob(ctx, acct, apiActor, c.in)
		var ve *store.ValidationError
		if !errors.As(err, &ve) || ve.Fields[c.field] == "" {
			t.Errorf("%+v: %v, want a message on %s", c.in, err, c.field)
		}
	}
}

// TestBulkDeleteCountsEverythingDown deletes every match of a filter in
// chunks, set by set, and checks each maintained counter against a recount
// of what is left: the account's total, each list's members, each tag, each
// day's new contacts (contacts created on two days). Every deleted contact
// has one contact.deleted event with its lists and one activity.
func TestBulkDeleteCountsEverythingDown(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	a, b := mkList(t, db, acct, "A", false), mkList(t, db, acct, "B", false)
	in := store.BulkContacts{}
	for i := range 120 {
		c := store.ContactInput{Email: fmt.Sprintf("d%03d@example.com", i), Tags: []string{"alle"}}
		if i%3 == 0 {
			c.Tags = append(c.Tags, "vip")
		}
		if i%2 == 0 {
			c.ListIDs = append(c.ListIDs, a.ID)
		}
		if i%5 == 0 {
			c.ListIDs = append(c.ListIDs, b.ID)
		}
		in.Contacts = append(in.Contacts, c)
	}
	if _, err := db.BulkUpsertContacts(ctx, acct, apiActor, in); err != nil {
		t.Fatal(err)
	}
	// Half of them were created three days earlier, their day's count with them.
	if _, err := db.ExecContext(ctx, `WITH moved AS (
		UPDATE contacts SET created_at = created_at - interval '3 days' WHERE account_id = $1 AND id % 2 = 0 RETURNING created_at
	), days AS (
		SELECT (created_at AT TIME ZONE 'Europe/Berlin')::date AS day, count(*) AS n FROM moved GROUP BY 1
	), added AS (
		INSERT INTO contact_days AS d (account_id, day, stripe, contacts) SELECT $1, day, 0, n FROM days
		ON CONFLICT (account_id, day, stripe) DO UPDATE SET contacts = d.contacts + excluded.contacts
	)
	INSERT INTO contact_days AS d (account_id, day, stripe, contacts) SELECT $1, day + 3, 0, -n FROM days
	ON CONFLICT (account_id, day, stripe) DO UPDATE SET contacts = d.contacts + excluded.contacts`, acct); err != nil {
		t.Fatal(err)
	}
	mark := len(outbox(t, db, acct))
	var vip []int64
	if err := db.SelectContext(ctx, &vip, `SELECT id FROM contacts WHERE account_id = $1 AND tags @> '{vip}' ORDER BY id`, acct); err != nil {
		t.Fatal(err)
	}
	lists := map[int64]int{}
	var onLists []struct {
		ID int64 `db:"id"`
		N  int   `db:"n"`
	}
	if err := db.SelectContext(ctx, &onLists, `SELECT contact_id AS id, count(*) AS n FROM list_members WHERE contact_id = ANY($1) GROUP BY 1`,
		pq.Int64Array(vip)); err != nil {
		t.Fatal(err)
	}
	for _, c := range onLists {
		lists[c.ID] = c.N
	}
	j, err := db.CreateBulkJob(ctx, acct, apiActor, store.BulkInput{Action: store.BulkDelete, Filter: &store.ContactFilter{Tag: "vip"}})
	if err != nil {
		t.Fatal(err)
	}
	runBulk(t, db, store.BulkRun{Chunk: 7})
	if j, _ = db.BulkJob(ctx, acct, j.ID); j.Status != store.BulkDone || j.Changed != 40 || j.Processed != 40 {
		t.Fatalf("job %+v", j)
	}

	same := func(what, counted, recounted string) {
		t.Helper()
		var diff []string
		if err := db.SelectContext(ctx, &diff, `SELECT coalesce(x.k, y.k) || ': ' || coalesce(x.n, 0) || ' counted, ' || coalesce(y.n, 0) || ' there'
			FROM (`+counted+`) x(k, n) FULL JOIN (`+recounted+`) y(k, n) ON x.k = y.k WHERE coalesce(x.n, 0) <> coalesce(y.n, 0)`, acct); err != nil {
			t.Fatal(err)
		}
		if len(diff) > 0 {
			t.Errorf("%s: %v", what, diff)
		}
	}
	same("tags", `SELECT tag, sum(contacts) FROM contact_tag_counts WHERE account_id = $1 GROUP BY 1`,
		`SELECT t, count(*) FROM contacts, unnest(tags) t WHERE account_id = $1 GROUP BY 1`)
	same("days", `SELECT day::text, sum(contacts) FROM contact_days WHERE account_id = $1 GROUP BY 1`,
		`SELECT (created_at AT TIME ZONE 'Europe/Berlin')::date::text, count(*) FROM contacts WHERE account_id = $1 GROUP BY 1`)
	for _, l := range []store.List{a, b} {
		got, err := db.List(ctx, acct, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := countQ(t, db, `SELECT count(*) FROM list_members WHERE list_id = $1`, l.ID); got.MemberCount != int64(want) {
			t.Errorf("list %s counts %d members, has %d", l.Name, got.MemberCount, want)
		}
	}
	if _, n, err := db.Contacts(ctx, acct, store.ContactFilter{}, store.Page{Page: 1, PerPage: 1}); err != nil || n != 80 {
		t.Errorf("the account's total says %d, want 80 (%v)", n, err)
	}
	if n := countQ(t, db, `SELECT count(*) FROM contacts WHERE account_id = $1 AND tags @> '{vip}'`, acct); n != 0 {
		t.Errorf("%d vip contacts left", n)
	}

	var deleted []int64
	for _, e := range outboxSince(t, db, acct, mark) {
		if e.Name != store.EventContactDeleted {
			continue
		}
		var p struct {
			Contact struct {
				ID    int64 `json:"id"`
				Lists []struct {
					ID int64 `json:"id"`
				} `json:"lists"`
			} `json:"contact"`
		}
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatal(err)
		}
		deleted = append(deleted, p.Contact.ID)
		if len(p.Contact.Lists) != lists[p.Contact.ID] {
			t.Errorf("contact %d's event names %d lists, it was on %d", p.Contact.ID, len(p.Contact.Lists), lists[p.Contact.ID])
		}
	}
	if fmt.Sprint(deleted) != fmt.Sprint(vip) {
		t.Errorf("contact.deleted for %v, want %v in order", deleted, vip)
	}
	if n := countQ(t, db, `SELECT count(DISTINCT object_id) FROM activity_log WHERE account_id = $1 AND action = 'contact.deleted'
		AND actor_type = 'key' AND object_id = ANY($2)`, acct, pq.Int64Array(vip)); n != len(vip) {
		t.Errorf("contact.deleted activities for %d contacts, want %d", n, len(vip))
	}
}
