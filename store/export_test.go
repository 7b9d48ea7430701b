package store

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// UpsertsWaiting is how many UpsertContact calls of accountID and actor wait
// for the batch under way to finish (tests use it to line calls up behind a
// batch they hold).
func (db *DB) UpsertsWaiting(accountID int64, actor Actor) int {
	_, waiting := db.upserts.waitingIn(upsertGroupKey{accountID, actor})
	return waiting
}

// PoolSettings shows a run-time setting as each pool's sessions have it.
func (db *DB) PoolSettings(ctx context.Context, name string) ([]string, error) {
	var out []string
	for _, pool := range []*sqlx.DB{db.DB, db.relaxed, db.generic, db.queue} {
		var v string
		if err := pool.GetContext(ctx, &v, `SELECT current_setting($1)`, name); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// PoolLimits is each pool's MaxOpenConns: the main, the generic, the
// relaxed and the send queue's pool's.
func (db *DB) PoolLimits() (main, generic, relaxed, queue int) {
	return db.DB.Stats().MaxOpenConnections, db.generic.Stats().MaxOpenConnections, db.relaxed.Stats().MaxOpenConnections,
		db.queue.Stats().MaxOpenConnections
}

// QueuePool is the send queue's pool, for tests that read its sessions'
// statistics (one connection, flushed on demand).
func (db *DB) QueuePool() *sqlx.DB { return db.queue }

// KeyCacheServing reports whether the key cache answers from memory, which it
// does only while the notification listener is connected and has acknowledged.
func (db *DB) KeyCacheServing() bool {
	db.keys.mu.Lock()
	defer db.keys.mu.Unlock()
	return db.keys.enabled
}

// ReadsRunning is how many batches of an account's contact reads run and how
// many calls wait for one; -1 and -1 when its group is gone.
func (db *DB) ReadsRunning(accountID int64) (running, waiting int) {
	return db.reads.waitingIn(accountID)
}

// OutcomesRunning is how many statements of a campaign's outcomes run and
// how many RecordOutcomes calls wait for one; -1 and -1 when none runs.
func (db *DB) OutcomesRunning(accountID, campaignID int64) (running, waiting int) {
	return db.outcomes.waitingIn(outcomeKey{accountID, campaignID})
}

// waitingIn reports how many batches of key run and how many calls wait for
// one; -1 and -1 when the key has no group.
func (cb *combiner[K, C]) waitingIn(key K) (running, waiting int) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if g := cb.groups[key]; g != nil {
		return g.running, len(g.waiting)
	}
	return -1, -1
}
