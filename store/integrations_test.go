package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestPurgeIntegrationEvents(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	ig, err := db.CreateIntegration(ctx, nil, acct, store.Actor{Type: store.ActorSystem},
		store.IntegrationSettings{Provider: store.ProviderGeneric, Name: "Shop", Active: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, at := range []time.Time{now.Add(-store.IntegrationEventRetention - time.Hour), now.Add(-store.IntegrationEventRetention + time.Hour)} {
		if err := db.LogIntegrationEvent(ctx, store.IntegrationEvent{AccountID: acct, IntegrationID: ig.ID, Status: store.IntegrationRejected,
			Payload: "x\x00y", ReceivedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Purge(ctx, now); err != nil {
		t.Fatal(err)
	}
	events, total, err := db.IntegrationEvents(ctx, acct, ig.ID, store.Page{Page: 1, PerPage: 10})
	if err != nil || total != 1 || len(events) != 1 || events[0].Payload != "xy" {
		t.Fatalf("after purge: %d %+v %v", total, events, err)
	}
	// Another account's integration is not found.
	other := newAccount(t, db, "business")
	if _, _, err := db.IntegrationEvents(ctx, other, ig.ID, store.Page{Page: 1, PerPage: 10}); err != store.ErrNotFound {
		t.Fatalf("other account: %v", err)
	}
}

// newShop creates a generic integration of a new business account whose
// purchases join the given lists, and returns it as an inbound call finds it.
func newShop(t *testing.T, db *store.DB, lists ...store.ListInput) store.InboundIntegration {
	t.Helper()
	ctx := context.Background()
	acct := newAccount(t, db, "business")
	var ids []int64
	for _, in := range lists {
		l, err := db.CreateList(ctx, acct, store.Actor{Type: store.ActorSystem}, in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, l.ID)
	}
	ig, err := db.CreateIntegration(ctx, nil, acct, store.Actor{Type: store.ActorSystem},
		store.IntegrationSettings{Provider: store.ProviderGeneric, Name: "Shop", Active: true, ListIDs: ids, Tags: []string{"kunde"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	in, err := db.IntegrationByToken(ctx, ig.Provider, ig.Token)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Lists) != len(ids) {
		t.Fatalf("lists of the integration: %+v", in.Lists)
	}
	return in
}

func purchase(order, email string, products ...string) store.ProviderEvent {
	ev := store.ProviderEvent{Kind: store.OrderPurchase, EventType: "order.completed", OrderID: order, Email: email,
		FirstName: "Erika", Currency: "eur"}
	for _, p := range products {
		ev.Items = append(ev.Items, store.OrderItem{Product: p, Amount: 10})
	}
	return ev
}

func scalar(t *testing.T, db *store.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.GetContext(context.Background(), &n, query, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

// Concurrent purchases of one new buyer (different orders) race for the
// contact: one creates it, the others find their statement's check failing
// and take the locked path. Every order counts once, the contact, its list
// membership and every counter exactly once.
func TestApplyOrderConcurrentBuyer(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	ig := newShop(t, db, store.ListInput{Name: ptr("Kunden")})
	const calls = 12
	var wg sync.WaitGroup
	statuses := make([]string, calls)
	errs := make([]error, calls)
	for n := range calls {
		wg.Go(func() {
			statuses[n], errs[n] = db.ApplyOrder(ctx, ig, purchase(fmt.Sprintf("O-%d", n), "neu@example.com", "Kurs"),
				store.IntegrationEvent{ReceivedAt: time.Now()})
		})
	}
	wg.Wait()
	for n := range calls {
		if errs[n] != nil || statuses[n] != store.IntegrationProcessed {
			t.Fatalf("call %d: %q %v", n, statuses[n], errs[n])
		}
	}
	acct, list := ig.AccountID, ig.Lists[0].ID
	checks := []struct {
		name  string
		query string
		want  int64
	}{
		{"contacts", `SELECT count(*) FROM contacts WHERE account_id = $1`, 1},
		{"orders with the contact", `SELECT count(*) FROM integration_orders o JOIN contacts c ON c.id = o.contact_id WHERE o.account_id = $1`, calls},
		{"order.completed", `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'order.completed'`, calls},
		{"contact.created", `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'contact.created'`, 1},
		{"list.joined", `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'list.joined'`, 1},
		{"processed", `SELECT count(*) FROM integration_events WHERE account_id = $1 AND status = 'processed'`, calls},
		{"contact counter", `SELECT u.contacts + coalesce((SELECT sum(contacts) FROM account_contact_counts s WHERE s.account_id = u.account_id), 0) FROM account_usage u WHERE u.account_id = $1`, 1},
		{"contact days", `SELECT coalesce(sum(contacts), 0) FROM contact_days WHERE account_id = $1`, 1},
		{"tag kunde", `SELECT coalesce(sum(contacts), 0) FROM contact_tag_counts WHERE account_id = $1 AND tag = 'kunde'`, 1},
		{"tag product", `SELECT coalesce(sum(contacts), 0) FROM contact_tag_counts WHERE account_id = $1 AND tag = 'product:Kurs'`, 1},
	}
	for _, c := range checks {
		if got := scalar(t, db, c.query, acct); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if l, err := db.List(ctx, acct, list); err != nil || l.MemberCount != 1 {
		t.Fatalf("list members: %+v %v", l, err)
	}
}

// What the one-statement purchase does not apply as read goes the locked
// way with the same outcome: a list with double opt-in (the buyer gets a
// confirmation), and an order whose items were recorded in part.
func TestApplyOrderLockedCases(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	doi := true
	ig := newShop(t, db, store.ListInput{Name: ptr("Newsletter"), DoubleOptIn: &doi})
	call := store.IntegrationEvent{ReceivedAt: time.Now()}
	if st, err := db.ApplyOrder(ctx, ig, purchase("D-1", "doi@example.com", "Kurs"), call); err != nil || st != store.IntegrationProcessed {
		t.Fatalf("purchase onto a double opt-in list: %q %v", st, err)
	}
	c, err := db.ContactByEmail(ctx, ig.AccountID, "doi@example.com")
	if err != nil || c.Status != store.StatusPending || c.Source != store.SourceIntegration {
		t.Fatalf("buyer on a double opt-in list: %+v %v", c, err)
	}
	if n := scalar(t, db, `SELECT count(*) FROM doi_tokens WHERE account_id = $1 AND contact_id = $2`, ig.AccountID, c.ID); n != 1 {
		t.Fatalf("confirmations: %d", n)
	}

	// Item A first, then A and B together: only B is new.
	if st, err := db.ApplyOrder(ctx, ig, purchase("M-1", "multi@example.com", "A"), call); err != nil || st != store.IntegrationProcessed {
		t.Fatalf("item A: %q %v", st, err)
	}
	if st, err := db.ApplyOrder(ctx, ig, purchase("M-1", "multi@example.com", "A", "B"), call); err != nil || st != store.IntegrationProcessed {
		t.Fatalf("items A and B: %q %v", st, err)
	}
	if st, err := db.ApplyOrder(ctx, ig, purchase("M-1", "multi@example.com", "B", "A"), call); err != nil || st != store.IntegrationDuplicate {
		t.Fatalf("replay of A and B: %q %v", st, err)
	}
	if n := scalar(t, db, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'order.completed' AND payload->'order'->>'order_id' = 'M-1'`, ig.AccountID); n != 2 {
		t.Fatalf("order.completed of M-1: %d, want 2", n)
	}
	m, err := db.ContactByEmail(ctx, ig.AccountID, "multi@example.com")
	if err != nil || !slices.Contains(m.Tags, "product:A") || !slices.Contains(m.Tags, "product:B") {
		t.Fatalf("buyer of A and B: %+v %v", m, err)
	}
	if n := scalar(t, db, `SELECT count(*) FROM integration_events WHERE account_id = $1 AND status = 'duplicate'`, ig.AccountID); n != 1 {
		t.Fatalf("duplicates logged: %d", n)
	}
}

// TestPurchaseReadPlanFindsBuyerByKey checks the plans a session of the
// contact write path (plan_cache_mode force_generic_plan) keeps for the
// purchase's reads of the buyer, the optimistic path's and the locked
// path's: made once per connection, on a new installation they are made
// while the contact table is empty or not yet analysed, and they must still
// find the buyer by the account's unique address index, not walk all of the
// account's contacts (the account's name index with the address as a filter,
// or a sequential scan), which the first purchases of a new account did on
// every call until the background ANALYZE replanned them. A returning buyer's
// lists are read by the lists' key, not by a scan of every account's lists.
func TestPurchaseReadPlanFindsBuyerByKey(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	ig := newShop(t, db, store.ListInput{Name: str("Kunden")})
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	statements := []struct{ name, sql, args string }{
		{"purchase read", store.PurchaseReadSQL, fmt.Sprintf(`%d, 'kaeufer@example.com', %d, 'B-1', ARRAY['Kurs'],
  'order.completed', '', 'kaeufer@example.com', '', '{}', 'application/json', now()`, ig.AccountID, ig.ID)},
		{"record order", store.RecordOrderSQL, fmt.Sprintf(`%d, %d, 'generic', 'B-1', ARRAY['Kurs'], ARRAY[10]::numeric[],
  'EUR', 'kaeufer@example.com', now(), 'order.completed', '', '', '{}', 'application/json', ARRAY[%d]::bigint[]`,
			ig.AccountID, ig.ID, ig.Lists[0].ID)},
	}
	plan := func(sql, args string) string {
		t.Helper()
		if _, err := conn.ExecContext(ctx, `PREPARE buyer_read AS `+sql); err != nil {
			t.Fatal(err)
		}
		defer conn.ExecContext(ctx, `DEALLOCATE buyer_read`)
		rows, err := conn.QueryContext(ctx, `EXPLAIN EXECUTE buyer_read(`+args+`)`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			out = append(out, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, "\n")
	}
	check := func(when string) {
		t.Helper()
		for _, st := range statements {
			p := plan(st.sql, st.args)
			if !strings.Contains(p, "contacts_email_key on contacts") || strings.Contains(p, "Seq Scan on contacts") ||
				strings.Contains(p, "contacts_name_idx") || strings.Contains(p, "Seq Scan on lists") {
				t.Errorf("%s, %s: the buyer is not looked up by the account's address key:\n%s", st.name, when, p)
			}
		}
	}
	check("empty table")
	// Grown, but not analysed yet (the background ANALYZE runs only after
	// writes that report created contacts).
	if _, err := db.ExecContext(ctx, `INSERT INTO contacts (account_id, email)
SELECT $1, 'viele' || g || '@example.com' FROM generate_series(1, 2000) AS g`, ig.AccountID); err != nil {
		t.Fatal(err)
	}
	check("grown table")
}
