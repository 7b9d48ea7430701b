package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

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
