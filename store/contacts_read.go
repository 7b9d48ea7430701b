package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lib/pq"
)

// Combined reads of single contacts by id.
//
// A look-up by primary key costs PostgreSQL far more per statement than per
// row: the wake-up of its backend, the round trip and the executor's start-up
// outweigh the few index pages read. So concurrent Contact calls of one
// account share statements: at most maxReadBatches of them run at a time, and
// the calls arriving while they are busy wait for the next free one and go
// together, up to maxReadBatch ids in one statement. As with the upserts
// (contacts_combine.go), nothing waits on a timer: a call that finds a
// statement free runs at once, so a quiet service reads exactly as before.
//
// A read in a batch sees every change committed before its call began: the
// batch's statement starts after the call joined it. Nothing but which
// statement carries a read is decided here, so the groups can live in one
// process.

// maxReadBatches is how many batches of one account run at once. One is too
// few for a machine whose database has more than one core to spare; beyond
// two, the waiting calls split into batches small enough to cost nearly a
// statement each again.
const maxReadBatches = 2

// maxReadBatch is the most ids one statement reads.
const maxReadBatch = 64

// readBatchTimeout bounds a batch of several calls, which runs detached from
// its leader's request: the leader's client going away must not fail the
// others' reads.
const readBatchTimeout = 30 * time.Second

// readGroups are the accounts whose contact reads are running.
type readGroups struct {
	mu     sync.Mutex
	groups map[int64]*readGroup
}

// readGroup exists while a batch of its account runs.
type readGroup struct {
	running int         // batches running
	waiting []*readCall // calls not yet in a batch, in arrival order
}

// readCall is one Contact call.
type readCall struct {
	ctx     context.Context
	id      int64
	contact Contact
	err     error
	// wake receives exactly one value per turn of the call: true when the
	// call is to lead the next batch, false when its batch is done.
	wake chan bool
}

// readCombined reads one contact with its lists, in a statement shared with
// concurrent reads of its account.
func (db *DB) readCombined(ctx context.Context, accountID, id int64) (Contact, error) {
	call := &readCall{ctx: ctx, id: id, wake: make(chan bool, 1)}
	r := &db.reads
	r.mu.Lock()
	if r.groups == nil {
		r.groups = map[int64]*readGroup{}
	}
	g := r.groups[accountID]
	if g == nil {
		g = &readGroup{}
		r.groups[accountID] = g
	}
	lead := g.running < maxReadBatches
	if lead {
		g.running++
	} else {
		g.waiting = append(g.waiting, call)
	}
	r.mu.Unlock()

	if !lead {
		select {
		case lead = <-call.wake:
		case <-ctx.Done():
			if r.withdraw(g, call) {
				return Contact{}, ctx.Err()
			}
			// Already taken into a batch or made its leader: see it through.
			lead = <-call.wake
		}
	}
	if lead {
		db.leadReads(accountID, g, call)
	}
	return call.contact, call.err
}

// withdraw takes a call that has not been taken into a batch out of its
// group; false means it was taken and will be woken.
func (r *readGroups) withdraw(g *readGroup, call *readCall) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.Index(g.waiting, call); i >= 0 {
		g.waiting = slices.Delete(g.waiting, i, i+1)
		return true
	}
	return false
}

// leadReads runs one batch: the leader's call and the calls waiting in its
// group (at most maxReadBatch), wakes them, and hands the lead to the group's
// next waiting call, or gives back its turn.
func (db *DB) leadReads(accountID int64, g *readGroup, leader *readCall) {
	r := &db.reads
	r.mu.Lock()
	n := min(len(g.waiting), maxReadBatch-1)
	batch := append([]*readCall{leader}, g.waiting[:n]...)
	g.waiting = slices.Delete(g.waiting, 0, n)
	r.mu.Unlock()

	finished := false
	defer func() {
		if !finished {
			// A panic in the batch: the others must not wait forever, nor the
			// group stay busy; the leader's request reports the panic.
			for _, c := range batch[1:] {
				c.err = errors.New("store: contact: the batch it was in failed")
			}
		}
		for _, c := range batch[1:] {
			c.wake <- false
		}
		r.mu.Lock()
		var next *readCall
		if len(g.waiting) > 0 {
			next = g.waiting[0]
			g.waiting = g.waiting[1:]
		} else if g.running--; g.running == 0 {
			delete(r.groups, accountID)
		}
		r.mu.Unlock()
		if next != nil {
			next.wake <- true
		}
	}()
	db.runReadBatch(accountID, batch)
	finished = true
}

// runReadBatch reads the contacts of a batch's calls and gives each call its
// own, or ErrNotFound.
func (db *DB) runReadBatch(accountID int64, batch []*readCall) {
	ctx := batch[0].ctx
	if len(batch) > 1 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), readBatchTimeout)
		defer cancel()
	}
	ids := make(pq.Int64Array, 0, len(batch))
	for _, c := range batch {
		if !slices.Contains(ids, c.id) {
			ids = append(ids, c.id)
		}
	}
	var cs []Contact
	err := db.prepare(ctx, db.generic, selectContactsByID)
	if err == nil {
		cs, err = appendContacts(ctx, make([]Contact, 0, len(ids)), preparedDB{db}, nil, true, selectContactsByID, accountID, ids)
	}
	for _, call := range batch {
		switch i := slices.IndexFunc(cs, func(c Contact) bool { return c.ID == call.id }); {
		case err != nil:
			call.err = fmt.Errorf("store: contact: %w", err)
		case i < 0:
			call.err = ErrNotFound
		default:
			// Two calls for one id share the slices of one row's tags, fields
			// and lists; callers only read them.
			call.contact = cs[i]
		}
	}
}
