package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Warming the contact write path's connections.
//
// A new connection's first contact write or provider purchase costs
// PostgreSQL about twenty times a warm one: the backend's start, its catalog
// caches for a dozen tables and their indexes, the plans of the prepared
// statements, the foreign-key checks' plans and the PL/pgSQL functions, each
// made on first use and kept for the connection's life. A burst that meets a
// cold pool opens all of its connections at once and pays that on every one
// of them together: after a start, providers calling at 300 to 500 calls/s
// waited up to one or two seconds (BenchmarkIntegrationInbound on a fresh
// process, on a slow machine), where a warm process answers in milliseconds.
//
// Warm pays it before the first request, on every connection of the pool:
// each runs the hot statements once, on rows of its own that it rolls back.
// The events it writes may take the turn to notify (migration 00040) until
// they roll back; meanwhile other processes' consumers wake on their poll.

// warmedStatements are the generic pool's statements that a request may run
// first on a connection: the contact write path (optimistic and locked), the
// contact read by id and the provider calls (the integration's look-up and
// both purchase paths).
func warmedStatements() []string {
	return append(writePathStatements(), selectContactsByID, selectIntegrationByToken,
		recordOrder, finishOrder, purchaseSQL, purchaseReadSQL)
}

// Warm opens every connection of the contact write path's pool and runs its
// hot statements once on each (warmedStatements), in transactions it rolls
// back: nothing it writes stays. `rundbrief serve` calls it before it takes
// requests. The pool keeps those connections however long they idle
// (limitPool), so that they stay warm.
func (db *DB) Warm(ctx context.Context) error {
	if err := db.prepare(ctx, db.generic, warmedStatements()...); err != nil {
		return err
	}
	// All transactions are open at once, so that each has a connection of
	// its own and the pool opens all of them.
	n := db.generic.Stats().MaxOpenConnections
	txs := make([]*sqlx.Tx, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := range txs {
		wg.Go(func() {
			if txs[k], errs[k] = db.generic.BeginTxx(ctx, nil); errs[k] != nil {
				return
			}
			errs[k] = db.warmConn(ctx, txs[k], k)
		})
	}
	wg.Wait()
	for _, tx := range txs {
		if tx != nil {
			_ = tx.Rollback()
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: warm: %w", err)
	}
	return nil
}

// warmConn runs the hot statements on tx's connection: it makes an account
// with a list and an integration, takes a purchase through the optimistic
// path, and creates, reads and changes a contact as the API does.
func (db *DB) warmConn(ctx context.Context, tx *sqlx.Tx, k int) error {
	var a Account
	if err := tx.GetContext(ctx, &a, insertAccount, "Aufwärmen", DefaultPlan); err != nil {
		return fmt.Errorf("account: %w", err)
	}
	if _, err := tx.ExecContext(ctx, insertAccountUsage, a.ID); err != nil {
		return fmt.Errorf("account usage: %w", err)
	}
	var l List
	if err := tx.GetContext(ctx, &l, insertList, a.ID, "Aufwärmen", DefaultListColor, "", false); err != nil {
		return fmt.Errorf("list: %w", err)
	}
	var id int64
	if err := tx.GetContext(ctx, &id, nextIntegrationID); err != nil {
		return fmt.Errorf("integration: %w", err)
	}
	var i Integration
	now := time.Now()
	if err := tx.GetContext(ctx, &i, insertIntegration, id, a.ID, ProviderGeneric, "Aufwärmen", RandomString(IntegrationTokenLen),
		"", pq.Int64Array{l.ID}, pq.StringArray{"aufwärmen"}, true, now); err != nil {
		return fmt.Errorf("integration: %w", err)
	}
	q := preparedTx{Tx: tx, db: db}
	var ig InboundIntegration
	if err := sqlx.GetContext(ctx, q, &ig, selectIntegrationByToken, i.Token, i.Provider); err != nil {
		return fmt.Errorf("integration by token: %w", err)
	}

	buyer := fmt.Sprintf("kaeufer-%d@aufwaermen.invalid", k)
	ev := ProviderEvent{Kind: OrderPurchase, EventType: "order.completed", OrderID: "W-1", Email: buyer, FirstName: "Erika",
		Currency: "EUR", Items: []OrderItem{{Product: "Kurs", Amount: 1}}}
	call := IntegrationEvent{AccountID: a.ID, IntegrationID: i.ID, ReceivedAt: now, ContentType: "application/json", Payload: "{}"}
	switch status, ok, err := db.applyPurchaseOptimistic(ctx, tx, ig, ev, call); {
	case err != nil:
		return fmt.Errorf("purchase: %w", err)
	case !ok || status != IntegrationProcessed:
		return fmt.Errorf("purchase: not applied optimistically (%q)", status)
	}

	// A contact as the API creates one, then added to a list, which takes the
	// locked path.
	actor := Actor{Type: ActorSystem}
	created := &contactOp{in: ContactInput{Email: fmt.Sprintf("kontakt-%d@aufwaermen.invalid", k)}}
	if err := created.in.Normalize(); err != nil {
		return err
	}
	switch rest, err := db.applyOptimistic(ctx, tx, a.ID, actor, []*contactOp{created}); {
	case err != nil:
		return fmt.Errorf("contact: %w", err)
	case len(rest) > 0:
		return errors.New("contact: not applied optimistically")
	}
	res, err := created.result()
	if err != nil {
		return fmt.Errorf("contact: %w", err)
	}
	if _, err := queryContacts(ctx, q, nil, true, selectContactsByID, a.ID, pq.Int64Array{res.Contact.ID}); err != nil {
		return fmt.Errorf("contact read: %w", err)
	}
	changed := &contactOp{in: ContactInput{Email: res.Contact.Email, Tags: []string{"aufwärmen"}, ListIDs: []int64{l.ID}}}
	if err := changed.in.Normalize(); err != nil {
		return err
	}
	if err := applyOps(ctx, q, a.ID, actor, []*contactOp{changed}, false); err != nil {
		return fmt.Errorf("contact update: %w", err)
	}
	_, err = changed.result()
	return err
}
