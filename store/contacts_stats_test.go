package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestBulkWritesAnalyseTheGrownContactTable: a new database's contact table
// has no statistics; the first bulk writes that fill it get it analysed in
// the background (reltuples is set by ANALYZE), so the write path's plans
// stop assuming an empty table; writes that do not double it leave the
// statistics alone.
func TestBulkWritesAnalyseTheGrownContactTable(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	stats := func() (pages int, tuples float64) {
		t.Helper()
		if err := db.QueryRowContext(ctx, `SELECT relpages, reltuples FROM pg_class WHERE oid = 'contacts'::regclass`).Scan(&pages, &tuples); err != nil {
			t.Fatal(err)
		}
		return pages, tuples
	}
	if _, tuples := stats(); tuples > 0 {
		t.Fatalf("a new database's contact table has statistics already: %v", tuples)
	}
	bulk := func(from, n int) {
		t.Helper()
		in := store.BulkContacts{}
		for i := from; i < from+n; i++ {
			in.Contacts = append(in.Contacts, store.ContactInput{Email: fmt.Sprintf("s%05d@example.com", i), FirstName: str("Vorname")})
		}
		res, err := db.BulkUpsertContacts(ctx, acct, store.Actor{Type: store.ActorSystem}, in)
		if err != nil || res.Created != n {
			t.Fatalf("bulk: %+v %v", res.Created, err)
		}
	}
	waitTuples := func(min float64) int {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			pages, tuples := stats()
			if tuples >= min {
				return pages
			}
			if time.Now().After(deadline) {
				t.Fatalf("contact table not analysed: %d pages, %v tuples, want ≥ %v tuples", pages, tuples, min)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	bulk(0, 1000)
	pages := waitTuples(1000)
	// The stopgap analyses the key and sort columns only, so that PostgreSQL
	// keeps the count of changes and autovacuum still analyses the whole
	// table (unless it has done so already).
	// (ANALYZE sets reltuples in place at once, its pg_statistic rows come
	// with its commit, a moment later.)
	var email, firstName, autoAnalyzed bool
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := db.QueryRowContext(ctx, `SELECT
  EXISTS (SELECT 1 FROM pg_stats WHERE tablename = 'contacts' AND attname = 'email'),
  EXISTS (SELECT 1 FROM pg_stats WHERE tablename = 'contacts' AND attname = 'first_name'),
  (SELECT autoanalyze_count > 0 FROM pg_stat_user_tables WHERE relname = 'contacts')`).Scan(&email, &firstName, &autoAnalyzed); err != nil {
			t.Fatal(err)
		}
		if email || time.Now().After(deadline) {
			break
		}
	}
	if !email || (firstName && !autoAnalyzed) {
		t.Errorf("statistics of email: %v, of first_name: %v (autovacuum analysed: %v), want email's only", email, firstName, autoAnalyzed)
	}
	// Growing it by a fifth does not analyse it again.
	bulk(1000, 200)
	time.Sleep(500 * time.Millisecond)
	if p, tuples := stats(); p != pages || tuples >= 1200 {
		t.Errorf("analysed again after growing by a fifth: %d pages, %v tuples", p, tuples)
	}
	// Doubling it does.
	bulk(1200, 1000)
	waitTuples(2200)
}

// TestGroupedCreatesAnalyseTheGrownContactTable: single creates that arrive
// together are written in shared batches (contacts_combine.go); a new
// database's first burst of them gets the contact table analysed too, once
// the burst is over, though every batch came within a second of the last
// check.
func TestGroupedCreatesAnalyseTheGrownContactTable(t *testing.T) {
	const n = 1200 // some 30 pages, past minStatsPages
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	release := heldBatch(t, db, acct)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			if _, err := db.UpsertContact(ctx, acct, apiActor, store.ContactInput{Email: fmt.Sprintf("g%05d@example.com", i)}); err != nil {
				errs <- err
			}
		})
	}
	waitFor(t, "the creates to line up behind the held batch", func() bool { return db.UpsertsWaiting(acct, apiActor) == n })
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var tuples float64
		if err := db.GetContext(ctx, &tuples, `SELECT reltuples FROM pg_class WHERE oid = 'contacts'::regclass`); err != nil {
			t.Fatal(err)
		}
		if tuples >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("contact table not analysed after %d grouped creates: %v tuples", n, tuples)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
