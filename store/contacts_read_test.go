package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

type readOutcome struct {
	c   store.Contact
	err error
}

// heldReads locks the contact table in a transaction of the test's own and
// starts as many reads as run at once; they wait for the lock in PostgreSQL,
// so that reads started meanwhile line up in the process. release lets them
// finish and returns their outcomes.
func heldReads(t *testing.T, db *store.DB, acct int64, ids ...int64) (release func() []readOutcome) {
	t.Helper()
	unlock := holdLock(t, db, `LOCK TABLE contacts IN ACCESS EXCLUSIVE MODE`)
	wait := startReads(t, db, acct, ids)
	waitFor(t, "the held reads to reach PostgreSQL", func() bool { return lockedReads(t, db) == len(ids) })
	return func() []readOutcome {
		t.Helper()
		unlock()
		return wait()
	}
}

// startReads reads each id in a goroutine of its own.
func startReads(t *testing.T, db *store.DB, acct int64, ids []int64) (wait func() []readOutcome) {
	t.Helper()
	out := make([]readOutcome, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			c, err := db.Contact(context.Background(), acct, id)
			out[i] = readOutcome{c, err}
		})
	}
	return func() []readOutcome { wg.Wait(); return out }
}

// lockedReads counts the contact reads that wait for a lock in PostgreSQL.
func lockedReads(t *testing.T, db *store.DB) int {
	t.Helper()
	var n int
	if err := db.GetContext(context.Background(), &n, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'SELECT c.id, c.account_id, c.email%'`); err != nil {
		t.Fatal(err)
	}
	return n
}

// Reads that arrive while an account's reads are busy wait in the process and
// then share statements, each still getting its own contact: lists included,
// one row for two calls of one id, and not found for an id that does not exist
// or that belongs to another account.
func TestConcurrentReadsShareStatements(t *testing.T) {
	db := dbtest.NewDB(t)
	ctx := context.Background()
	acct := newAccount(t, db, "business")
	other := newAccount(t, db, "business")
	l := mkList(t, db, acct, "Kunden", false)
	var ids []int64
	for i := range 8 {
		in := store.ContactInput{Email: fmt.Sprintf("r%d@example.com", i)}
		if i%2 == 0 {
			in.ListIDs = []int64{l.ID}
		}
		ids = append(ids, upsert(t, db, acct, in).Contact.ID)
	}
	foreign := upsert(t, db, other, store.ContactInput{Email: "fremd@example.com"}).Contact.ID
	const missing = 1 << 40

	release := heldReads(t, db, acct, ids[0], ids[1])
	// More than one statement's worth, every contact several times.
	var want []int64
	for i := range 100 {
		switch {
		case i%25 == 7:
			want = append(want, foreign)
		case i%25 == 11:
			want = append(want, missing)
		default:
			want = append(want, ids[i%len(ids)])
		}
	}
	wait := startReads(t, db, acct, want)
	waitFor(t, "the reads to line up", func() bool { _, w := db.ReadsRunning(acct); return w == len(want) })
	if running, _ := db.ReadsRunning(acct); running != 2 {
		t.Errorf("%d batches run, want 2", running)
	}
	if n := lockedReads(t, db); n != 2 {
		t.Errorf("%d reads reached PostgreSQL while two batches were held, want 2", n)
	}
	for i, o := range release() {
		if o.err != nil || o.c.ID != ids[i] {
			t.Errorf("held read %d: %d, %v", i, o.c.ID, o.err)
		}
	}
	for i, o := range wait() {
		switch id := want[i]; id {
		case foreign, missing:
			if !errors.Is(o.err, store.ErrNotFound) {
				t.Errorf("read %d of id %d: %+v, %v; want not found", i, id, o.c, o.err)
			}
		default:
			k := slices.Index(ids, id)
			wantLists := 0
			if k%2 == 0 {
				wantLists = 1
			}
			if o.err != nil || o.c.ID != id || o.c.Email != fmt.Sprintf("r%d@example.com", k) || len(o.c.Lists) != wantLists {
				t.Errorf("read %d of id %d: %+v, %v", i, id, o.c, o.err)
			}
		}
	}
	if running, waiting := db.ReadsRunning(acct); running != -1 || waiting != -1 {
		t.Errorf("the group outlived its batches: %d running, %d waiting", running, waiting)
	}
	// The other account's reads are a group of their own.
	if c, err := db.Contact(ctx, other, foreign); err != nil || c.Email != "fremd@example.com" {
		t.Errorf("other account: %+v, %v", c, err)
	}
}

// A waiting read whose request goes away leaves its group at once.
func TestWaitingReadCanBeCancelled(t *testing.T) {
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	id := upsert(t, db, acct, store.ContactInput{Email: "a@example.com"}).Contact.ID
	release := heldReads(t, db, acct, id, id)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := db.Contact(ctx, acct, id)
		done <- err
	}()
	waitFor(t, "the read to line up", func() bool { _, w := db.ReadsRunning(acct); return w == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled read: %v, want context.Canceled", err)
	}
	if _, w := db.ReadsRunning(acct); w != 0 {
		t.Errorf("%d calls still wait", w)
	}
	for i, o := range release() {
		if o.err != nil || o.c.ID != id {
			t.Errorf("held read %d: %d, %v", i, o.c.ID, o.err)
		}
	}
	if running, _ := db.ReadsRunning(acct); running != -1 {
		t.Errorf("the group outlived its batches: %d running", running)
	}
}
