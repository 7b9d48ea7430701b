package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestWarmReadiesEveryConnectionAndKeepsNothing checks that Warm leaves every
// connection of the contact write path's pool with the hot statements
// prepared and planned, writes nothing that stays, and that the purchases
// after it are applied as usual.
func TestWarmReadiesEveryConnectionAndKeepsNothing(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	ig := newShop(t, db, store.ListInput{Name: str("Kunden")})
	const rows = `SELECT (SELECT count(*) FROM accounts) + (SELECT count(*) FROM account_usage) + (SELECT count(*) FROM lists)
  + (SELECT count(*) FROM integrations) + (SELECT count(*) FROM integration_orders) + (SELECT count(*) FROM integration_events)
  + (SELECT count(*) FROM contacts) + (SELECT count(*) FROM list_members) + (SELECT count(*) FROM events)
  + (SELECT count(*) FROM activity_log) + (SELECT count(*) FROM contact_tag_counts) + (SELECT count(*) FROM list_member_counts)`
	before := scalar(t, db, rows)

	if err := db.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	if after := scalar(t, db, rows); after != before {
		t.Fatalf("the warm-up left %d rows behind", after-before)
	}
	planned, err := db.PlannedOnEachConn(ctx, store.WarmedStatements)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(store.WarmedStatements); slices.ContainsFunc(planned, func(n int) bool { return n != want }) {
		t.Fatalf("hot statements planned per connection: %v, want %d on each", planned, want)
	}

	// Sixteen purchases at once on the warmed connections, and a replay.
	var wg sync.WaitGroup
	statuses := make([]string, 16)
	errs := make([]error, 16)
	for n := range statuses {
		wg.Go(func() {
			call := store.IntegrationEvent{ReceivedAt: time.Now(), Payload: "{}", ContentType: "application/json"}
			statuses[n], errs[n] = db.ApplyOrder(ctx, ig, purchase(fmt.Sprintf("O-%d", n), fmt.Sprintf("k%d@example.com", n), "Kurs"), call)
		})
	}
	wg.Wait()
	for n := range statuses {
		if errs[n] != nil || statuses[n] != store.IntegrationProcessed {
			t.Fatalf("purchase %d: %q, %v", n, statuses[n], errs[n])
		}
	}
	call := store.IntegrationEvent{ReceivedAt: time.Now(), Payload: "{}", ContentType: "application/json"}
	if st, err := db.ApplyOrder(ctx, ig, purchase("O-3", "k3@example.com", "Kurs"), call); err != nil || st != store.IntegrationDuplicate {
		t.Fatalf("replay: %q, %v", st, err)
	}
	if n := scalar(t, db, `SELECT count(*) FROM contacts WHERE account_id = $1`, ig.AccountID); n != 16 {
		t.Fatalf("%d buyers, want 16", n)
	}
	if n := scalar(t, db, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'order.completed'`, ig.AccountID); n != 16 {
		t.Fatalf("%d order.completed, want 16", n)
	}
}
