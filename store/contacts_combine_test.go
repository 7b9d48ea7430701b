package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// heldBatch starts an upsert of an existing contact whose row the test holds
// locked in a transaction of its own, so that the upsert's batch cannot finish
// until release is called; calls of the same group made meanwhile line up
// behind it. release waits for the held upsert to return.
func heldBatch(t *testing.T, db *store.DB, acct int64) (release func()) {
	t.Helper()
	ctx := context.Background()
	held := upsert(t, db, acct, store.ContactInput{Email: "held@example.com"})
	unlock := holdLock(t, db, `SELECT 1 FROM contacts WHERE id = $1 FOR UPDATE`, held.Contact.ID)
	done := make(chan error, 1)
	go func() {
		_, err := db.UpsertContact(ctx, acct, apiActor, store.ContactInput{Email: "held@example.com", City: ptr("Kiel")})
		done <- err
	}()
	waitFor(t, "the held upsert to start its batch", func() bool { return db.UpsertsWaiting(acct, apiActor) == 0 })
	return func() {
		t.Helper()
		unlock()
		if err := <-done; err != nil {
			t.Errorf("held upsert: %v", err)
		}
	}
}

// holdLock runs query in a transaction of the test's own, which keeps the
// locks it takes until unlock (or the test's end: a test that fails before
// it unlocks must not leave the calls it held hanging).
func holdLock(t *testing.T, db *store.DB, query string, args ...any) (unlock func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, query, args...); err != nil {
		t.Fatal(err)
	}
	var rollback sync.Once
	unlock = func() {
		rollback.Do(func() {
			if err := tx.Rollback(); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(unlock)
	return unlock
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

type upsertOutcome struct {
	res store.UpsertResult
	err error
}

// queueUpserts starts one upsert per input while a batch is held and waits
// until all of them wait in the group.
func queueUpserts(t *testing.T, db *store.DB, acct int64, ins []store.ContactInput) (wait func() []upsertOutcome) {
	t.Helper()
	out := make([]upsertOutcome, len(ins))
	var wg sync.WaitGroup
	for i, in := range ins {
		wg.Go(func() {
			res, err := db.UpsertContact(context.Background(), acct, apiActor, in)
			out[i] = upsertOutcome{res, err}
		})
		// In order, so that the batch's order is the inputs' order.
		waitFor(t, "the upsert to queue", func() bool { return db.UpsertsWaiting(acct, apiActor) == i+1 })
	}
	return func() []upsertOutcome { wg.Wait(); return out }
}

// transactionsOf counts the distinct transactions that wrote the contacts with
// the given addresses.
func transactionsOf(t *testing.T, db *store.DB, acct int64, emails ...string) int {
	t.Helper()
	var n int
	if err := db.GetContext(context.Background(), &n,
		`SELECT count(DISTINCT xmin::text) FROM contacts WHERE account_id = $1 AND email = ANY($2)`, acct, emails); err != nil {
		t.Fatal(err)
	}
	return n
}

// Upserts that arrive while a batch of their account runs are applied together,
// in one transaction, and each still gets its own result and its own events.
func TestConcurrentUpsertsShareATransaction(t *testing.T) {
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	l := mkList(t, db, acct, "Kunden", false)
	existing := upsert(t, db, acct, store.ContactInput{Email: "old@example.com", FirstName: ptr("Olga")})
	release := heldBatch(t, db, acct)
	mark := len(outbox(t, db, acct))

	var ins []store.ContactInput
	var emails []string
	for i := range 10 {
		e := fmt.Sprintf("n%d@example.com", i)
		ins = append(ins, store.ContactInput{Email: e, Tags: []string{"neu"}, ListIDs: []int64{l.ID}})
		emails = append(emails, e)
	}
	ins = append(ins, store.ContactInput{Email: "OLD@example.com", City: ptr("Bonn")})
	wait := queueUpserts(t, db, acct, ins)
	release()
	out := wait()

	for i, o := range out[:10] {
		if o.err != nil || !o.res.Created || o.res.Contact.Email != emails[i] || len(o.res.Joined) != 1 {
			t.Errorf("upsert %d: %+v, %v; want its own new contact on the list", i, o.res, o.err)
		}
	}
	if o := out[10]; o.err != nil || o.res.Created || o.res.Contact.ID != existing.Contact.ID ||
		o.res.Contact.City != "Bonn" || fmt.Sprint(o.res.Changed) != "[city]" {
		t.Errorf("update in the batch: %+v, %v", o.res, o.err)
	}
	if n := transactionsOf(t, db, acct, append(emails, "old@example.com")...); n != 1 {
		t.Errorf("the 11 queued upserts were written by %d transactions, want 1", n)
	}
	counts := map[string]int{}
	for _, e := range outboxSince(t, db, acct, mark) {
		counts[e.Name]++
	}
	if counts[store.EventContactCreated] != 10 || counts[store.EventListJoined] != 10 || counts[store.EventContactUpdated] != 2 {
		t.Errorf("events = %v; want 10 created, 10 list.joined, 2 updated (held and batched)", counts)
	}
	if u := usageOf(t, db, acct); u.Contacts != 12 {
		t.Errorf("usage.contacts = %d, want 12", u.Contacts)
	}
	if list, _ := db.List(context.Background(), acct, l.ID); list.MemberCount != 10 {
		t.Errorf("member_count = %d, want 10", list.MemberCount)
	}
}

// One call's failure stays its own: an invalid list fails that call only, and
// a second call for an address already in the batch goes into a later batch,
// as an update of the contact the first one created.
func TestBatchedUpsertsFailAlone(t *testing.T) {
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	release := heldBatch(t, db, acct)
	wait := queueUpserts(t, db, acct, []store.ContactInput{
		{Email: "a@example.com", FirstName: ptr("Anna")},
		{Email: "b@example.com", ListIDs: []int64{999999}},
		{Email: "a@example.com", LastName: ptr("Arndt")},
		{Email: "c@example.com"},
	})
	release()
	out := wait()

	var verr *store.ValidationError
	if !errors.As(out[1].err, &verr) || verr.Fields["list_ids"] == "" {
		t.Errorf("unknown list: %v, want a validation error on list_ids", out[1].err)
	}
	if out[0].err != nil || !out[0].res.Created || out[3].err != nil || !out[3].res.Created {
		t.Errorf("the others: %+v %v / %+v %v", out[0].res, out[0].err, out[3].res, out[3].err)
	}
	if o := out[2]; o.err != nil || o.res.Created || o.res.Contact.FirstName != "Anna" || o.res.Contact.LastName != "Arndt" {
		t.Errorf("second call for a@: %+v, %v; want an update of the created contact", o.res, o.err)
	}
	if _, err := db.ContactByEmail(context.Background(), acct, "b@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("b@ exists: %v", err)
	}
	if n := transactionsOf(t, db, acct, "c@example.com", "a@example.com"); n != 2 {
		t.Errorf("a@ (updated later) and c@ share %d transactions, want 2", n)
	}
}

// A batch whose new contacts do not all fit the plan is rolled back and its
// calls run one by one: exactly as many are created as the plan has room for,
// the others get the limit error, and the counter stays exact.
func TestBatchedUpsertsAtThePlanLimit(t *testing.T) {
	db := dbtest.NewDB(t)
	newContactPlan(t, db, "five", 5)
	acct := newAccount(t, db, "five")
	upsert(t, db, acct, store.ContactInput{Email: "first@example.com"})
	release := heldBatch(t, db, acct) // the third contact
	var ins []store.ContactInput
	for i := range 8 {
		ins = append(ins, store.ContactInput{Email: fmt.Sprintf("p%d@example.com", i)})
	}
	wait := queueUpserts(t, db, acct, ins)
	release()
	created, limited := 0, 0
	for i, o := range wait() {
		var le *store.LimitError
		switch {
		case o.err == nil && o.res.Created:
			created++
		case errors.As(o.err, &le) && le.Limit == "contacts":
			limited++
		default:
			t.Errorf("upsert %d: %+v, %v", i, o.res, o.err)
		}
	}
	if created != 3 || limited != 5 {
		t.Errorf("%d created, %d over the limit; want 3 and 5", created, limited)
	}
	if u := usageOf(t, db, acct); u.Contacts != 5 {
		t.Errorf("usage.contacts = %d, want 5", u.Contacts)
	}
}

// A waiting call whose request goes away leaves its group without being applied.
func TestWaitingUpsertCanBeCancelled(t *testing.T) {
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	release := heldBatch(t, db, acct)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := db.UpsertContact(ctx, acct, apiActor, store.ContactInput{Email: "gone@example.com"})
		done <- err
	}()
	waitFor(t, "the upsert to queue", func() bool { return db.UpsertsWaiting(acct, apiActor) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled upsert: %v, want context.Canceled", err)
	}
	if n := db.UpsertsWaiting(acct, apiActor); n != 0 {
		t.Errorf("%d calls still wait", n)
	}
	release()
	if _, err := db.ContactByEmail(context.Background(), acct, "gone@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the cancelled upsert was applied: %v", err)
	}
	if n := db.UpsertsWaiting(acct, apiActor); n != -1 {
		t.Errorf("the group outlived its last batch (%d waiting)", n)
	}
}
