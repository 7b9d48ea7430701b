package store

import (
	"context"
	"errors"
	"slices"
	"sync"
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
// as POST /contacts/bulk. A call that finds its group idle runs at once, as
// its batch's leader; calls arriving while a batch of their group runs wait,
// and the finishing leader hands all of them (up to maxUpsertBatch) to the
// next leader as one batch.
// Nothing waits on a timer: a call without company runs alone, and the busier
// the account, the larger its batches, so the cost per contact falls as load
// rises. One batch at a time per group is also what measured best: a second
// one running beside it only splits the waiting calls into smaller batches.
//
// Each call keeps its own outcome (an op of a batch fails alone, as in a bulk
// request). A batch that fails as a whole (a database error, or the plan's
// contact limit reached by one of its new contacts) is rolled back and its
// calls run again one by one, so that none carries another's failure and each
// new contact near the limit is admitted or refused exactly as it would be
// alone. Two calls for one address are never in one batch: each is its own
// change with its own events, in order.
//
// The groups live in this process only, which is enough: they decide nothing
// but which transaction carries a change, and the rules that hold across
// processes (one contact per address, the exact plan limit) are PostgreSQL's.

// maxUpsertBatch is the most calls one batch carries, which bounds how long a
// call may wait for the others in its batch.
const maxUpsertBatch = 64

// upsertBatchTimeout bounds a batch, which runs detached from the leader's
// request: the leader's client going away must not fail the others' changes.
const upsertBatchTimeout = time.Minute

// upsertGroups are the groups of calls being combined, by account and actor
// (the actor is written to every activity of a batch).
type upsertGroups struct {
	mu     sync.Mutex
	groups map[upsertGroupKey]*upsertGroup
}

type upsertGroupKey struct {
	accountID int64
	actor     Actor
}

// upsertGroup exists while a batch of its calls runs.
type upsertGroup struct {
	waiting []*upsertCall // calls not yet in a batch, in arrival order
}

// upsertCall is one UpsertContact call in a group.
type upsertCall struct {
	ctx context.Context
	op  *contactOp
	err error // the call's error when its batch failed as a whole
	// wake receives exactly one value per turn of the call: true when the
	// call is to lead the next batch, false when its batch is done.
	wake chan bool
}

// upsertCombined applies op, combined with concurrent calls of its group.
func (db *DB) upsertCombined(ctx context.Context, accountID int64, actor Actor, op *contactOp) (UpsertResult, error) {
	if op.inputErr != nil {
		return UpsertResult{}, op.inputErr
	}
	if err := actor.valid(); err != nil {
		return UpsertResult{}, err
	}
	key := upsertGroupKey{accountID, actor}
	call := &upsertCall{ctx: ctx, op: op, wake: make(chan bool, 1)}

	u := &db.upserts
	u.mu.Lock()
	if u.groups == nil {
		u.groups = map[upsertGroupKey]*upsertGroup{}
	}
	g := u.groups[key]
	lead := g == nil
	if lead {
		g = &upsertGroup{}
		u.groups[key] = g
	} else {
		g.waiting = append(g.waiting, call)
	}
	u.mu.Unlock()

	if !lead {
		select {
		case lead = <-call.wake:
		case <-ctx.Done():
			if u.withdraw(g, call) {
				return UpsertResult{}, ctx.Err()
			}
			// Already taken into a batch or made its leader: see it through.
			lead = <-call.wake
		}
	}
	if lead {
		db.leadUpserts(key, g, call)
	}
	if call.err != nil {
		return UpsertResult{}, call.err
	}
	return op.result()
}

// withdraw takes a call that has not been taken into a batch out of its
// group; false means it was taken and will be woken.
func (u *upsertGroups) withdraw(g *upsertGroup, call *upsertCall) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i, c := range g.waiting {
		if c == call {
			g.waiting = append(g.waiting[:i], g.waiting[i+1:]...)
			return true
		}
	}
	return false
}

// leadUpserts runs one batch: the leader's call and the calls waiting in its
// group (one per address, at most maxUpsertBatch), wakes them, and hands the
// lead to the group's next waiting call, or ends the group.
func (db *DB) leadUpserts(key upsertGroupKey, g *upsertGroup, leader *upsertCall) {
	u := &db.upserts
	batch := []*upsertCall{leader}
	emails := map[string]bool{leader.op.in.Email: true}
	u.mu.Lock()
	rest := g.waiting[:0]
	for _, c := range g.waiting {
		if len(batch) < maxUpsertBatch && !emails[c.op.in.Email] {
			emails[c.op.in.Email] = true
			batch = append(batch, c)
		} else {
			rest = append(rest, c)
		}
	}
	clear(g.waiting[len(rest):])
	g.waiting = rest
	u.mu.Unlock()

	finished := false
	defer func() {
		if !finished {
			// A panic in the batch: the others must not wait forever, nor the
			// group stay busy; the leader's request reports the panic.
			for _, c := range batch[1:] {
				c.err = errors.New("store: upsert contact: the batch it was in failed")
			}
		}
		for _, c := range batch[1:] {
			c.wake <- false
		}
		u.mu.Lock()
		var next *upsertCall
		if len(g.waiting) > 0 {
			next = g.waiting[0]
			g.waiting = g.waiting[1:]
		} else {
			delete(u.groups, key)
		}
		u.mu.Unlock()
		if next != nil {
			next.wake <- true
		}
	}()
	db.runUpsertBatch(key, batch)
	finished = true
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
