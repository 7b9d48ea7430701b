package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// How the outbox is followed (see migrations/00018_outbox_consumers.sql):
//
//   - Order and horizon. Every event carries the xid of the transaction that
//     inserted it. A consumer reads an account's events in (xid, id) order and
//     only those below the oldest running transaction's xid in this database
//     (outbox_horizon(), migration 00035): all its transactions below it have
//     ended, and any that can still insert events has an xid at
//     or above it, so no event can turn up behind a cursor later (a bigserial
//     id alone cannot promise that: it is taken at insert, not at commit).
//     (xid, id) is the order in which transactions first wrote, with each
//     transaction's events in insert order; for transactions that do not
//     overlap in time that is their commit order. Every consumer sees the same
//     order.
//   - Exactly once. A consumer's handler runs in the transaction that moves
//     the consumer's cursor for the account, so its writes and the move commit
//     together or not at all (a crash or kill -9 rolls both back).
//   - Sharing. A cursor is held with a transaction-level advisory lock taken
//     with pg_try_advisory_xact_lock, in the spirit of FOR UPDATE SKIP LOCKED:
//     several processes share a consumer's accounts, and one account's events
//     are handled by one process at a time. Unlike a row lock, the advisory
//     lock assigns the claiming transaction no xid, so a handler that is slow
//     before it writes holds nobody's horizon back; from its first write to
//     its commit it does (as every open write transaction does), hence short
//     transactions: bounded batches, and slow work (HTTP) outside them, as the
//     webhook fan-out does.
//   - Independence. Each consumer has its own cursors and its own claims, so a
//     consumer that falls behind leaves the others alone.
//   - Start. Cursors are created lazily for every account (ensureCursors),
//     before the account's first event; a new consumer starts at the oldest
//     event retention has kept.
//   - Wake-ups. Inserting events notifies eventsChannel (a statement trigger;
//     PostgreSQL folds identical notifications into one per transaction).
//     Consumer.Run listens when given a URL and polls in any case.

// eventsChannel is the NOTIFY channel the events trigger announces commits on.
const eventsChannel = "rundbrief_events"

// ConsumerHandler handles a batch of one account's events, oldest first, inside
// tx, the transaction that then moves the consumer's cursor past them. An
// error rolls both back; the batch is offered again later.
type ConsumerHandler func(ctx context.Context, tx *sqlx.Tx, events []StoredEvent) error

// ConsumerOptions tune a Consumer; zero values take the defaults.
type ConsumerOptions struct {
	// Batch is the most events handed to the handler in one transaction: 500.
	Batch int
	// PollInterval is how often Run looks for events without a notification: 1 s.
	PollInterval time.Duration
	// MinGap is the least time between the starts of two of Run's rounds:
	// 50 ms. Under a steady stream of writes, transactions are always open,
	// so every round found a few new events and came back 2 ms later, with
	// about ten round trips to PostgreSQL each: serve's three consumers cost
	// more than the contact creations that wrote the events (0.72-0.79 ms of
	// CPU per create against 0.33-0.37 without them; 0.54-0.61 with 50 ms).
	// An event reaches its webhook or sequence at most that much later.
	MinGap time.Duration
	// Drained, when set, is called by Run after each round that handled events,
	// with their number.
	Drained func(events int)
	// Log receives Run's errors; nil: slog.Default().
	Log *slog.Logger
	// Names, when set, are the only event names the handler acts on: the
	// others are passed over in PostgreSQL (their rows are read there, not
	// sent), and the cursor moves past them all the same. A newsletter writes
	// an email.sent per recipient, which consumers of contact events would
	// otherwise fetch and decode only to drop. nil: every event.
	Names []string
	// AccountNames, when set, is an SQL expression over the claimed cursor's
	// account (c.account_id) giving the event names the handler would act on
	// for that account now: NULL for all of Names, an empty array for none.
	// It is read with the claim, in the step's transaction. An account with
	// nothing to act on has its cursor moved past all of its events below the
	// horizon without reading them: most accounts have no webhook, and the
	// fan-out read every event of every import, purchase and sign-up only to
	// find no webhook for it. Empty: every account gets Names.
	AccountNames string
	// Payload, when set, is an SQL expression over the event e giving what
	// the handler gets as its payload; an event for which it is NULL is passed
	// over like one not in Names. A handler that reads a small part of large
	// payloads has only that part read out and sent. Empty: e.payload.
	Payload string
}

func (o *ConsumerOptions) defaults() {
	if o.Batch <= 0 {
		o.Batch = 500
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.MinGap <= 0 {
		o.MinGap = 50 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
}

// Consumer follows the outbox under one name with its own cursor per account.
// Any number of processes may run a Consumer of the same name: each event is
// handled once by one of them.
type Consumer struct {
	db     *DB
	name   string
	handle ConsumerHandler
	opts   ConsumerOptions
	names  map[string]bool // opts.Names as a set; nil: every event
	claim  string          // claimCursor with opts.AccountNames
	named  string          // selectNamedBatch with opts.Payload

	mu    sync.Mutex // guards own and ownAt
	own   uint64     // the last outbox_horizon() read: true for good once read
	ownAt time.Time
}

// NewConsumer returns the consumer name over the outbox; it registers itself
// (and so holds back retention) on its first Drain or Step.
func (db *DB) NewConsumer(name string, handle ConsumerHandler, opts ConsumerOptions) *Consumer {
	opts.defaults()
	c := &Consumer{db: db, name: name, handle: handle, opts: opts, names: nameSet(opts.Names)}
	accountNames := "NULL::text[]"
	if opts.AccountNames != "" {
		accountNames = "(" + opts.AccountNames + ")::text[]"
	}
	c.claim = fmt.Sprintf(claimCursor, accountNames)
	payload := "e.payload"
	if opts.Payload != "" {
		payload = "(" + opts.Payload + ")::jsonb"
	}
	c.named = fmt.Sprintf(selectNamedBatch, payload)
	return c
}

// nameSet is names as a set; nil for nil (every event).
func nameSet(names []string) map[string]bool {
	if names == nil {
		return nil
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

// Name is the consumer's name.
func (c *Consumer) Name() string { return c.name }

// ensureCursors registers the consumer and gives it a cursor for every account
// that has none yet, at the start of the account's events. The anti-join over
// accounts runs once per round, not per batch.
const ensureCursors = `WITH reg AS (
  INSERT INTO outbox_consumers (name) VALUES ($1) ON CONFLICT DO NOTHING
)
INSERT INTO outbox_cursors (consumer, account_id)
SELECT $1, a.id FROM accounts a
WHERE NOT EXISTS (SELECT 1 FROM outbox_cursors k WHERE k.consumer = $1 AND k.account_id = a.id)
ON CONFLICT DO NOTHING`

// claimCursor picks the consumer's least recently moved cursor with events
// below the horizon $2 and locks it (see the top of the file), and counts the
// cursors that had events (waiting, the claimed one included). The lock
// function sits outside the sorted subquery, whose OFFSET 0 keeps PostgreSQL
// from pushing it down into the scan of the cursors (where it ran on every row
// and locked them all): above the sort it runs row by row in that order and
// stops at the first lock it gets, and only that row's account names (%s, the
// consumer's AccountNames) are read, once (OFFSET 0 again: pulled up into the
// select list, the expression ran for each of the two columns that use it):
// every is true when they are NULL.
const claimCursor = `SELECT c.account_id, c.waiting, n.names IS NULL AS every, coalesce(n.names, '{}') AS names FROM (
  SELECT k.account_id, count(*) OVER () AS waiting FROM outbox_cursors k
  WHERE k.consumer = $1 AND EXISTS (
    SELECT 1 FROM events e
    WHERE e.account_id = k.account_id AND (e.xid, e.id) > (k.last_xid, k.last_id)
      AND e.xid < $2::xid8)
  ORDER BY k.advanced_at, k.account_id
  OFFSET 0
) c
CROSS JOIN LATERAL (SELECT %s AS names OFFSET 0) n
WHERE pg_try_advisory_xact_lock(hashtextextended('outbox:' || $1, c.account_id))
LIMIT 1`

// passCursor moves the cursor past all of the account's events below the
// horizon $3, read from the index alone (the newest of them), for an account
// whose events its consumer has nothing to do with. Zero rows: the cursor is
// there already.
const passCursor = `UPDATE outbox_cursors k SET last_xid = e.xid, last_id = e.id, advanced_at = now()
FROM (
  SELECT e.xid, e.id FROM events e WHERE e.account_id = $2 AND e.xid < $3::xid8
  ORDER BY e.xid DESC, e.id DESC LIMIT 1
) e
WHERE k.consumer = $1 AND k.account_id = $2 AND (k.last_xid, k.last_id) < (e.xid, e.id)`

// batchWindow is the next window of at most $3 events after the cursor k,
// below the horizon $4, in the consumers' order. A horizon taken by an earlier
// statement is safe: every transaction below it had ended then, so its events
// are visible now. It is LATERAL to the cursor, so that the cursor's position
// bounds the index scan instead of filtering every retained event of the
// account.
const batchWindow = `SELECT e.id, e.account_id, e.public_id, e.name, e.payload, e.created_at, e.xid FROM events e
  WHERE e.account_id = k.account_id AND (e.xid, e.id) > (k.last_xid, k.last_id)
    AND e.xid < $4::xid8
  ORDER BY e.xid, e.id
  LIMIT $3`

// selectBatch reads the cursor anew (this statement's snapshot is taken after
// the lock, so it sees the previous holder's move) and the window of events
// after it.
const selectBatch = `SELECT e.id, e.account_id, e.public_id, e.name, e.payload, e.created_at, e.xid::text AS xid
FROM outbox_cursors k
CROSS JOIN LATERAL (` + batchWindow + `) e
WHERE k.consumer = $1 AND k.account_id = $2
ORDER BY e.xid, e.id`

// selectNamedBatch is selectBatch for a consumer with Names ($5; NULL: every
// name) or a Payload (%s: the consumer's, or e.payload): of the same window
// it returns the handler's events (own: named $5, with a payload that is not
// NULL), and the window's last event whatever it is (without its payload),
// which is where the cursor moves. A window of passed-over events costs a
// scan of their index entries and rows in PostgreSQL and one row on the wire.
const selectNamedBatch = `SELECT x.id, x.account_id, x.public_id, x.name, coalesce(x.handed, 'null') AS payload, x.created_at,
  x.xid::text AS xid, x.handed IS NOT NULL AS own, x.window_size
FROM outbox_cursors k
CROSS JOIN LATERAL (
  SELECT e.id, e.account_id, e.public_id, e.name, e.created_at, e.xid,
    CASE WHEN $5::text[] IS NULL OR e.name = ANY($5) THEN %s END AS handed,
    lead(e.id) OVER (ORDER BY e.xid, e.id) IS NULL AS last, count(*) OVER () AS window_size
  FROM (` + batchWindow + `) e
) x
WHERE k.consumer = $1 AND k.account_id = $2 AND (x.handed IS NOT NULL OR x.last)
ORDER BY x.xid, x.id`

// advanceCursor moves the cursor only forward; zero rows means the lock did
// not hold and the transaction must not commit.
const advanceCursor = `UPDATE outbox_cursors SET last_xid = $3::xid8, last_id = $4, advanced_at = now()
WHERE consumer = $1 AND account_id = $2 AND (last_xid, last_id) < ($3::xid8, $4)`

// Step handles one batch of one account's events: it claims a cursor no other
// process holds, hands the events after it to the handler and moves the cursor
// past them, all in one transaction. It returns the number of events handled
// and whether it claimed a cursor (false: nothing to do for this process now).
func (c *Consumer) Step(ctx context.Context) (int, bool, error) {
	h, err := c.horizon(ctx, false)
	if err != nil {
		return 0, false, err
	}
	n, claimed, _, err := c.step(ctx, h.Horizon)
	return n, claimed, err
}

// step is Step below the given horizon. more reports whether another step
// may find events below it: another cursor had events when this one was
// claimed, or this one's window was full. Without it, a drain's last step
// would be a transaction of three round trips that claims nothing.
func (c *Consumer) step(ctx context.Context, horizon string) (n int, claimed, more bool, err error) {
	err = c.db.WithTx(ctx, func(tx *sqlx.Tx) error {
		n, claimed, more = 0, false, false
		var claim struct {
			Account int64          `db:"account_id"`
			Waiting int64          `db:"waiting"`
			Every   bool           `db:"every"`
			Names   pq.StringArray `db:"names"`
		}
		if err := tx.GetContext(ctx, &claim, c.claim, c.name, horizon); errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return fmt.Errorf("store: outbox %s: claim: %w", c.name, err)
		}
		acct := claim.Account
		claimed = true
		names := c.opts.Names
		if !claim.Every {
			names = slices.DeleteFunc(claim.Names, func(n string) bool { return c.names != nil && !c.names[n] })
		}
		if !claim.Every && len(names) == 0 {
			more = claim.Waiting > 1
			if _, err := tx.ExecContext(ctx, passCursor, c.name, acct, horizon); err != nil {
				return fmt.Errorf("store: outbox %s: pass account %d: %w", c.name, acct, err)
			}
			return nil
		}
		events, lastOwn, window, err := c.batch(ctx, tx, acct, horizon, names)
		if err != nil {
			return fmt.Errorf("store: outbox %s: events: %w", c.name, err)
		}
		more = claim.Waiting > 1 || window >= c.opts.Batch
		if len(events) == 0 {
			return nil // another process moved the cursor before we locked it
		}
		last := events[len(events)-1]
		if !lastOwn {
			events = events[:len(events)-1] // only the window's end, for the cursor
		}
		if len(events) > 0 {
			if err := c.handle(ctx, tx, events); err != nil {
				return fmt.Errorf("store: outbox %s: handle account %d: %w", c.name, acct, err)
			}
		}
		r, err := tx.ExecContext(ctx, advanceCursor, c.name, acct, last.XID, last.ID)
		if err != nil {
			return fmt.Errorf("store: outbox %s: advance: %w", c.name, err)
		}
		if moved, err := r.RowsAffected(); err != nil || moved != 1 {
			return fmt.Errorf("store: outbox %s: cursor of account %d moved by someone else (%v)", c.name, acct, err)
		}
		n = len(events)
		return nil
	})
	return n, claimed, more, err
}

// batch reads the events after the account's cursor below horizon: the
// next window of at most Batch events, of which, with names or a Payload,
// the handler's (those named so, with a payload) and the window's last one.
// lastOwn reports whether that last one is the handler's; window is the
// window's size.
func (c *Consumer) batch(ctx context.Context, tx *sqlx.Tx, acct int64, horizon string, names []string) (events []StoredEvent, lastOwn bool, window int, err error) {
	if names == nil && c.opts.Payload == "" {
		err = tx.SelectContext(ctx, &events, selectBatch, c.name, acct, c.opts.Batch, horizon)
		return events, true, len(events), err
	}
	var rows []struct {
		StoredEvent
		Own    bool `db:"own"`
		Window int  `db:"window_size"`
	}
	if err = tx.SelectContext(ctx, &rows, c.named, c.name, acct, c.opts.Batch, horizon, pq.StringArray(names)); err != nil {
		return nil, false, 0, err
	}
	events = make([]StoredEvent, len(rows))
	for i, r := range rows {
		events[i], lastOwn, window = r.StoredEvent, r.Own, r.Window
	}
	return events, lastOwn, window, nil
}

// Drain registers the consumer, creates missing cursors and steps until this
// process finds nothing more to claim. It returns the number of events handled.
func (c *Consumer) Drain(ctx context.Context) (int, error) {
	h, err := c.horizon(ctx, false)
	if err != nil {
		return 0, err
	}
	return c.drain(ctx, h.Horizon)
}

// drain is Drain below the given horizon.
func (c *Consumer) drain(ctx context.Context, horizon string) (int, error) {
	if _, err := c.db.ExecContext(ctx, ensureCursors, c.name); err != nil {
		return 0, fmt.Errorf("store: outbox %s: cursors: %w", c.name, err)
	}
	return c.steps(ctx, horizon)
}

// steps steps until this process finds nothing more to claim below horizon.
func (c *Consumer) steps(ctx context.Context, horizon string) (int, error) {
	total := 0
	for {
		n, claimed, more, err := c.step(ctx, horizon)
		total += n
		if err != nil || !claimed || !more {
			return total, err
		}
	}
}

// selectHorizon gives xmax, above every transaction that had committed events
// when the statement started, and the cluster's horizon, below which every
// transaction of every database had ended: cheap, and usually close behind.
const selectHorizon = `SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xmax,
  pg_snapshot_xmin(pg_current_snapshot())::text AS horizon`

// selectOwnHorizon is the horizon of this database alone (migration 00035),
// which a long transaction in another database does not hold back. It reads
// every backend's status, so a consumer takes it at most every ownHorizonEvery.
const selectOwnHorizon = `SELECT outbox_horizon()::text`

const ownHorizonEvery = 100 * time.Millisecond

type horizon struct {
	Xmax    string `db:"xmax"`
	Horizon string `db:"horizon"`
}

// horizon gives xmax and the horizon to read below: the higher of the
// cluster's and this database's own. Both stay true once read (a transaction
// below either has ended and stays ended), so the own one may be reused for a
// while; fresh reads it anew.
func (c *Consumer) horizon(ctx context.Context, fresh bool) (horizon, error) {
	var h horizon
	if err := c.db.GetContext(ctx, &h, selectHorizon); err != nil {
		return h, fmt.Errorf("store: outbox %s: horizon: %w", c.name, err)
	}
	if h.Horizon == h.Xmax {
		return h, nil // nothing was running
	}
	c.mu.Lock()
	own, at := c.own, c.ownAt
	c.mu.Unlock()
	if fresh || time.Since(at) >= ownHorizonEvery {
		var text string
		if err := c.db.GetContext(ctx, &text, selectOwnHorizon); err != nil {
			return h, fmt.Errorf("store: outbox %s: own horizon: %w", c.name, err)
		}
		v, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			return h, fmt.Errorf("store: outbox %s: own horizon %q: %w", c.name, text, err)
		}
		own = v
		c.mu.Lock()
		c.own, c.ownAt = max(c.own, v), time.Now()
		c.mu.Unlock()
	}
	if cluster, err := strconv.ParseUint(h.Horizon, 10, 64); err == nil && own > cluster {
		h.Horizon = strconv.FormatUint(own, 10)
	}
	return h, nil
}

// horizonPassed reports whether every transaction of this database below $1
// has ended (the cheap cluster-wide check first).
const horizonPassed = `SELECT pg_snapshot_xmin(pg_current_snapshot()) >= $1::xid8 OR outbox_horizon() >= $1::xid8`

// clusterHorizonPassed is horizonPassed for every database of the cluster: a
// cheap, conservative check (when it holds, horizonPassed holds), enough for
// Run to decide whether to come back soon.
const clusterHorizonPassed = `SELECT pg_snapshot_xmin(pg_current_snapshot()) >= $1::xid8`

// catchUpWait bounds how long CatchUp waits for transactions older than the
// call: longer means one was left open (a caller's own, perhaps).
const catchUpWait = 30 * time.Second

// CatchUp handles every event committed before the call, except those another
// process is handling at the same time: it waits until the transactions
// of this database running at the call have ended (transactions in other
// databases of the cluster do not count), then drains. Synchronous callers use it
// (tests, DispatchEvents); Run does not wait, it comes back.
func (c *Consumer) CatchUp(ctx context.Context) (int, error) {
	start, err := c.horizon(ctx, false)
	if err != nil {
		return 0, err
	}
	xmax := start.Xmax
	deadline := time.Now().Add(catchUpWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		var passed bool
		if err := c.db.GetContext(ctx, &passed, horizonPassed, xmax); err != nil {
			return 0, fmt.Errorf("store: outbox %s: horizon: %w", c.name, err)
		}
		if passed {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("store: outbox %s: transactions older than xid %s still open after %s", c.name, xmax, catchUpWait)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(pause):
		}
	}
	h, err := c.horizon(ctx, true) // at or above xmax now
	if err != nil {
		return 0, err
	}
	return c.drain(ctx, h.Horizon)
}

// Run drains at start, whenever events commit (while the process runs
// ListenNotifications) and every PollInterval, until ctx ends. Events that committed while an
// older transaction was still open lie above the horizon at first: while
// transactions open at a round's start are still running, Run comes back
// after a short pause (2 ms, doubling while rounds find nothing) instead of
// waiting for the next poll. Rounds start at least MinGap apart. Errors are
// logged and retried at the next round.
func (c *Consumer) Run(ctx context.Context) error {
	tick := time.NewTicker(c.opts.PollInterval)
	defer tick.Stop()
	full, pause := true, time.Duration(0)
	gap := time.NewTimer(0)
	defer gap.Stop()
	for {
		// Taken before the round, so that events committing during it ring
		// this very channel.
		woken := c.db.newEvents.wait()
		gap.Reset(c.opts.MinGap)
		n, behind, err := c.round(ctx, full)
		if err != nil && ctx.Err() == nil {
			c.opts.Log.Error("outbox consumer", "consumer", c.name, "err", err)
		}
		if n > 0 && c.opts.Drained != nil {
			c.opts.Drained(n)
		}
		var again <-chan time.Time
		switch {
		case behind && err == nil && n > 0:
			pause = 2 * time.Millisecond
			again = time.After(pause)
		case behind && err == nil:
			pause = min(max(2*pause, 2*time.Millisecond), c.opts.PollInterval)
			again = time.After(pause)
		default:
			pause = 0
		}
		full = false
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			full = true // new accounts' cursors are made on the poll
		case <-woken:
		case <-again:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-gap.C:
		}
	}
}

// round is one of Run's drains (with cursor creation when full); behind
// reports that transactions open at its start are still running, so that
// events committed before it may still lie above the horizon.
func (c *Consumer) round(ctx context.Context, full bool) (n int, behind bool, err error) {
	h, err := c.horizon(ctx, false)
	if err != nil {
		return 0, false, err
	}
	if full {
		n, err = c.drain(ctx, h.Horizon)
	} else {
		n, err = c.steps(ctx, h.Horizon)
	}
	if err != nil {
		return n, false, err
	}
	if h.Horizon == h.Xmax {
		return n, false, nil // nothing of this database was running at the start
	}
	var passed bool
	if err := c.db.GetContext(ctx, &passed, clusterHorizonPassed, h.Xmax); err != nil {
		return n, false, fmt.Errorf("store: outbox %s: horizon: %w", c.name, err)
	}
	return n, !passed, nil
}

// purgeConsumedEvents deletes the events every registered consumer has passed:
// per account, those at or below the lowest of its cursors, if every consumer
// has a cursor there (a missing cursor has passed nothing).
const purgeConsumedEvents = `WITH low AS (
  SELECT DISTINCT ON (k.account_id) k.account_id, k.last_xid, k.last_id
  FROM outbox_cursors k
  ORDER BY k.account_id, k.last_xid, k.last_id
), complete AS (
  SELECT k.account_id FROM outbox_cursors k
  GROUP BY k.account_id
  HAVING count(*) = (SELECT count(*) FROM outbox_consumers)
)
DELETE FROM events e USING low JOIN complete USING (account_id)
WHERE e.account_id = low.account_id AND (e.xid, e.id) <= (low.last_xid, low.last_id)`
