package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lib/pq"
)

// Combined reads of single contacts by id.
//
// A look-up by primary key costs PostgreSQL far more per statement than per
// row: the wake-up of its backend, the round trip and the executor's start-up
// outweigh the few index pages read. So concurrent Contact calls of one
// account share statements (combine.go): at most maxReadBatches of them run
// at a time, and the calls arriving while they are busy go together, up to
// maxReadBatch ids in one statement. A read in a batch sees every change
// committed before its call began: the batch's statement starts after the
// call joined it.

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

// readCall is one Contact call.
type readCall struct {
	ctx     context.Context
	id      int64
	contact Contact
	err     error
}

func (c *readCall) joins(batch []*readCall) bool { return len(batch) < maxReadBatch }

func (c *readCall) abandon() { c.err = errors.New("store: contact: the batch it was in failed") }

// readCombined reads one contact with its lists, in a statement shared with
// concurrent reads of its account.
func (db *DB) readCombined(ctx context.Context, accountID, id int64) (Contact, error) {
	call := &readCall{ctx: ctx, id: id}
	if err := db.reads.do(ctx, accountID, call, maxReadBatches, db.runReadBatch); err != nil {
		return Contact{}, err
	}
	return call.contact, call.err
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
