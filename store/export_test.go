package store

import (
	"context"
	"encoding/json"
	"fmt"

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

// ClaimRowsRead runs a claim statement as ClaimDeliveries would for o, the
// first one (the bounded one when a webhook is at its share) or (perHook) the
// one that looks behind webhooks at their share, under EXPLAIN ANALYZE in a
// transaction it rolls back, and returns how many rows of webhook_deliveries
// its plan's nodes handled: scanned (returned or filtered out) or updated.
func (db *DB) ClaimRowsRead(ctx context.Context, o ClaimOptions, perHook bool) (int, error) {
	query, scan := firstClaim(o)
	if perHook {
		query, scan = claimDeliveriesPerHook, 0
	}
	args := claimArgs(o, scan)
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var out []byte
	if err := tx.QueryRowContext(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+query, args...).Scan(&out); err != nil {
		return 0, err
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
		return 0, fmt.Errorf("explain: %v: %s", err, out)
	}
	return plans[0].Plan.rowsRead("webhook_deliveries"), nil
}

// planNode is a node of a plan as EXPLAIN (FORMAT JSON) writes it.
type planNode struct {
	Relation         string     `json:"Relation Name"`
	Rows             float64    `json:"Actual Rows"`
	Loops            float64    `json:"Actual Loops"`
	RemovedByFilter  float64    `json:"Rows Removed by Filter"`
	RemovedByRecheck float64    `json:"Rows Removed by Index Recheck"`
	Plans            []planNode `json:"Plans"`
}

// rowsRead is how many rows of relation the nodes from n down handled.
func (n planNode) rowsRead(relation string) int {
	total := 0
	if n.Relation == relation {
		total += int((n.Rows + n.RemovedByFilter + n.RemovedByRecheck) * n.Loops)
	}
	for _, c := range n.Plans {
		total += c.rowsRead(relation)
	}
	return total
}
