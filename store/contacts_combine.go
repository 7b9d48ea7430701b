package store

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Group commit of single contact upserts.
//
// One upsert in a transaction of its own costs PostgreSQL about half a
// millisecond of CPU, most of it per transaction and per statement (begin,
// locks, executor start-up, the statement trigger, the counters, commit, and a
// round trip for each), while the same statements over a batch cost some 50 µs
// per contact. So concurrent UpsertContact calls of one account and actor are
// applied together: when all of them are plain, in one read and one write
// statement (contacts_optimistic.go), else through the same set-based applyOps
// as POST /contacts/bulk (combine.go: calls arriving while a batch of their
// group runs wait, and go together as the next batch, up to maxUpsertBatch),
// so the cost per contact falls as load rises. One batch at a time per group
// is what measured best: a second one running beside it only splits the
// waiting calls into smaller batches.
//
// Each call keeps its own outcome (an op of a batch fails alone, as in a bulk
// request). A batch that fails as a whole (a database error, or the plan's
// contact limit reached by one of its new contacts) is rolled back and its
// calls run again one by one, so that none carries another's failure and each
// new contact near the limit is admitted or refused exactly as it would be
// alone. Two calls for one address are never in one batch: each is its own
// change with its own events, in order.

// maxUpsertBatch is the most calls one batch carries, which bounds how long a
// call may wait for the others in its batch.
const maxUpsertBatch = 64

// upsertBatchTimeout bounds a batch, which runs detached from the leader's
// request: the leader's client going away must not fail the others' changes.
const upsertBatchTimeout = time.Minute

// upsertGroupKey groups upserts by account and actor (the actor is written to
// every activity of a batch).
type upsertGroupKey struct {
	accountID int64
	actor     Actor
}

// upsertCall is one UpsertContact call.
type upsertCall struct {
	ctx context.Context
	op  *contactOp
	err error // the call's error when its batch failed as a whole
}

// joins takes at most maxUpsertBatch calls into a batch, one per address.
func (c *upsertCall) joins(batch []*upsertCall) bool {
	return len(batch) < maxUpsertBatch && !slices.ContainsFunc(batch, func(b *upsertCall) bool {
		return b.op.in.Email == c.op.in.Email
	})
}

func (c *upsertCall) abandon() {
	c.err = errors.New("store: upsert contact: the batch it was in failed")
}

// upsertCombined applies op, combined with concurrent calls of its group.
func (db *DB) upsertCombined(ctx context.Context, accountID int64, actor Actor, op *contactOp) (UpsertResult, error) {
	if op.inputErr != nil {
		return UpsertResult{}, op.inputErr
	}
	if err := actor.valid(); err != nil {
		return UpsertResult{}, err
	}
	call := &upsertCall{ctx: ctx, op: op}
	if err := db.upserts.do(ctx, upsertGroupKey{accountID, actor}, call, 1, db.runUpsertBatch); err != nil {
		return UpsertResult{}, err
	}
	if call.err != nil {
		return UpsertResult{}, call.err
	}
	return op.result()
}

// runUpsertBatch applies a batch's ops, optimistically where it can and in
// one locked transaction otherwise; the calls of a batch that fails as a whole
// (and was not applied optimistically) run again on their own.
func (db *DB) runUpsertBatch(key upsertGroupKey, batch []*upsertCall) {
	if len(batch) == 1 {
		c := batch[0]
		c.err = db.runOps(c.ctx, key.accountID, key.actor, []*contactOp{c.op}, false)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(batch[0].ctx), upsertBatchTimeout)
	defer cancel()
	ops := make([]*contactOp, len(batch))
	for i, c := range batch {
		ops[i] = c.op
	}
	rest, err := db.applyOptimistic(ctx, nil, key.accountID, key.actor, ops)
	if err == nil {
		db.contactsGrew(createdOps(ops), false)
		if len(rest) == 0 {
			return
		}
		// Not in bulk mode (batch false): a new contact over the plan's limit
		// fails the whole batch, and the calls then learn alone whether theirs
		// fits.
		if db.runLocked(ctx, key.accountID, key.actor, rest, false) == nil {
			return
		}
	}
	// The calls not applied yet run alone (all of them when the optimistic
	// write failed before writing anything).
	for _, c := range batch {
		if err != nil || slices.Contains(rest, c.op) {
			c.err = db.runOps(c.ctx, key.accountID, key.actor, []*contactOp{c.op}, false)
		}
	}
}
