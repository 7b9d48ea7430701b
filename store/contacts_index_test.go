package store_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// Contact writes leave their GIN index entries in the indexes' pending lists;
// the merge loop that serve runs moves them into the indexes soon after, so
// that no write has to, and the contacts are still found through them.
func TestContactIndexMergeEmptiesPendingLists(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	// pgstattuple ships with PostgreSQL's server, like pg_trgm.
	if _, err := db.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS pgstattuple`); err != nil {
		t.Fatal(err)
	}
	pending := func() (search, tags int64) {
		t.Helper()
		if err := db.QueryRowxContext(ctx, `SELECT (pgstatginindex('contacts_search_idx')).pending_tuples,
  (pgstatginindex('contacts_tags_idx')).pending_tuples`).Scan(&search, &tags); err != nil {
			t.Fatal(err)
		}
		return search, tags
	}

	in := store.BulkContacts{Tags: []string{"messe"}}
	for i := range 200 {
		in.Contacts = append(in.Contacts, store.ContactInput{Email: fmt.Sprintf("gast%03d@example.com", i), LastName: ptr("Zettelmeyer")})
	}
	if res, err := db.BulkUpsertContacts(ctx, acct, apiActor, in); err != nil || res.Created != 200 {
		t.Fatalf("bulk: %+v, %v", res, err)
	}
	if _, err := db.UpsertContact(ctx, acct, apiActor, store.ContactInput{Email: "gast007@example.com", FirstName: ptr("Ida")}); err != nil {
		t.Fatal(err)
	}
	search, tags := pending()
	if search == 0 || tags == 0 {
		t.Fatalf("pending entries after the writes: search %d, tags %d; want both pending (fastupdate)", search, tags)
	}

	loopCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- db.RunContactIndexMerge(loopCtx, 10*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if search, tags = pending(); search == 0 && tags == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still pending after 10 s of the merge loop: search %d, tags %d", search, tags)
		}
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("merge loop: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("merge loop did not stop with its context")
	}
	if n, err := db.MergePendingContactIndexEntries(ctx); err != nil || n != 0 {
		t.Fatalf("a merge after the loop emptied the lists: %d pages, %v; want 0", n, err)
	}

	// Searches and tag filters find the contacts as before.
	for _, f := range []store.ContactFilter{{Query: "zettelmeyer"}, {Query: "ida"}, {Tag: "messe"}} {
		if err := f.Validate(); err != nil {
			t.Fatal(err)
		}
		_, total, err := db.Contacts(ctx, acct, f, store.Page{Page: 1, PerPage: 10})
		want := map[string]int{"zettelmeyer": 200, "ida": 1, "": 200}[f.Query]
		if err != nil || total != want {
			t.Errorf("%+v: %d found, %v; want %d", f, total, err, want)
		}
	}
}

// A role that does not own the contacts table cannot merge its indexes; the
// loop then waits twice as long after each failure, so that it logs a few
// times rather than on every tick.
func TestContactIndexMergeBacksOffWhenRefused(t *testing.T) {
	ctx := context.Background()
	dbURL := dbtest.URL(t)
	owner := dbtest.Open(t, dbURL)
	role := pq.QuoteIdentifier("rb_guest_" + strings.ToLower(store.RandomString(8)))
	if _, err := owner.ExecContext(ctx, "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = owner.ExecContext(ctx, "DROP ROLE "+role) })
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(strings.Trim(role, `"`))
	guest := dbtest.Open(t, u.String())
	if _, err := guest.MergePendingContactIndexEntries(ctx); err == nil {
		t.Fatal("a role that does not own the contacts table merged its indexes")
	}

	var logged atomic.Int64
	runCtx, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
	defer cancel()
	if err := guest.RunContactIndexMerge(runCtx, time.Millisecond, slog.New(slog.NewTextHandler(countWrites{&logged}, nil))); err != nil {
		t.Fatal(err)
	}
	// Doubling from 1 ms, the ninth failure comes after 511 ms; without the
	// back-off there would be one every millisecond or two.
	if n := logged.Load(); n < 2 || n > 9 {
		t.Fatalf("%d failures logged in 400 ms, want 2 to 9", n)
	}
}

// countWrites counts the records a slog text handler writes (one Write each).
type countWrites struct{ n *atomic.Int64 }

func (c countWrites) Write(p []byte) (int, error) {
	c.n.Add(1)
	return len(p), nil
}
