package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
)

// Statistics of the contact table after bulk writes.
//
// The contact write path runs prepared statements with generic plans
// (db.generic), planned once per connection with the table's statistics of
// that moment. On a new installation those say the table is empty, and the
// look-up of a batch's addresses is planned as a sequential scan, which stays
// the plan while the first big import fills the table (autovacuum analyses it
// a minute later at the earliest): each batch of 1,000 then scanned the whole
// table, half of a fresh import's time. So after a write that created
// contacts, the writer compares the table's size on disk with the size its
// statistics were taken at (pg_class.relpages, set by ANALYZE and VACUUM) and,
// when the table has more than doubled since, analyses it in the background.
// ANALYZE changes the table's pg_class row, which invalidates every
// session's cached plans on the table: the next execution plans with the new
// figures. Doubling keeps it to a few runs while a table grows (about ten from
// empty to a million rows); past that, autovacuum's own thresholds take over.

// contactStatsStale says whether the contact table has grown past twice the
// size of its statistics (and past minStatsPages, below which any plan is
// cheap). pg_relation_size is the size now, from the file system.
const contactStatsStale = `SELECT pg_relation_size('contacts') / current_setting('block_size')::int > greatest(2 * relpages, $1)
FROM pg_class WHERE oid = 'contacts'::regclass`

// analyzeContacts refreshes the statistics the write path's and the
// listings' plans read: the table's size (relpages, reltuples, which every
// ANALYZE sets) and its key and sort columns. It is a stopgap until
// autovacuum's own ANALYZE, and priced like one: a full ANALYZE (every column
// and the trigram expression index, a sample of 30,000 rows at the default
// statistics target) cost some 600 ms of PostgreSQL CPU at a million
// contacts and about a tenth of a fresh import's PostgreSQL time; this one,
// with a sample of 3,000 rows (analyzeContactsTarget) and six columns, some
// 60 ms. Because it names columns, PostgreSQL does not reset the table's
// count of changes since its last analysis, so autovacuum still analyses the
// whole table with the full sample when its threshold is reached. A role that
// does not own the table gets a warning and no error: then autovacuum does it.
const analyzeContacts = `ANALYZE contacts (id, account_id, email, status, created_at, updated_at)`

// analyzeContactsTarget is the statistics target of analyzeContacts (300
// sampled rows per unit): enough to tell an empty table from a large one and
// to see that ids and addresses are distinct.
const analyzeContactsTarget = `SET LOCAL default_statistics_target = 10`

// minStatsPages is the table size (8 kB pages, about 40 contacts each) below
// which the statistics are left to autovacuum.
const minStatsPages = 16

// statsCheckInterval bounds how often one process checks after single
// writes; after a batch write it always checks (a batch adds up to 1,000). A
// write that comes within the interval of the last check gets one check at
// its end, so that a burst of single writes that fills the table in less
// than the interval is seen once it is over.
const statsCheckInterval = time.Second

// contactStats runs the background checks of one DB: at most one at a time,
// none after the DB is closed.
type contactStats struct {
	running   atomic.Bool
	trailing  atomic.Bool  // a check is due at the end of the interval
	lastCheck atomic.Int64 // unix nanoseconds
	mu        sync.Mutex
	closed    bool
	stop      chan struct{} // closed by close; made by the first start
	wg        sync.WaitGroup
}

// start runs f in the background unless the DB is closed; f's stop channel
// closes when the DB does.
func (s *contactStats) start(f func(stop <-chan struct{})) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.stop == nil {
		s.stop = make(chan struct{})
	}
	stop := s.stop
	s.wg.Go(func() { f(stop) })
	return true
}

// close waits for the check running, if any, and lets no other start.
func (s *contactStats) close() {
	s.mu.Lock()
	s.closed = true
	if s.stop != nil {
		close(s.stop)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// contactsGrew is called after a committed write that created n contacts; in
// a batch (bulk request, import) it checks at once, otherwise at most every
// statsCheckInterval, with one check at the end of an interval in which
// writes were passed over. The check and the ANALYZE run in the background,
// so the write's caller does not wait for them.
func (db *DB) contactsGrew(n int64, batch bool) {
	if n <= 0 {
		return
	}
	s := &db.contactStats
	if wait := time.Duration(s.lastCheck.Load() + int64(statsCheckInterval) - time.Now().UnixNano()); !batch && wait > 0 {
		if s.trailing.CompareAndSwap(false, true) && !s.start(func(stop <-chan struct{}) { db.trailingCheck(wait, stop) }) {
			s.trailing.Store(false)
		}
		return
	}
	if !s.running.CompareAndSwap(false, true) {
		return
	}
	s.lastCheck.Store(time.Now().UnixNano())
	started := s.start(func(<-chan struct{}) {
		defer s.running.Store(false)
		db.checkContactStats()
	})
	if !started {
		s.running.Store(false)
	}
}

// trailingCheck checks once wait has passed, after the check running then,
// if any, has ended.
func (db *DB) trailingCheck(wait time.Duration, stop <-chan struct{}) {
	s := &db.contactStats
	for {
		select {
		case <-stop:
			s.trailing.Store(false)
			return
		case <-time.After(wait):
		}
		if s.running.CompareAndSwap(false, true) {
			break
		}
		wait = statsCheckInterval / 10 // a check is running: look again when it has ended
	}
	defer s.running.Store(false)
	s.trailing.Store(false) // writes from now on are after this check: they get one of their own
	s.lastCheck.Store(time.Now().UnixNano())
	db.checkContactStats()
}

// checkContactStats is the background check: refreshContactStats within a
// minute.
func (db *DB) checkContactStats() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = db.refreshContactStats(ctx)
}

// refreshContactStats analyses the contact table when it outgrew its
// statistics and reports whether it did. Errors are only returned: a missed
// ANALYZE costs speed, never correctness, and autovacuum catches up.
func (db *DB) refreshContactStats(ctx context.Context) (bool, error) {
	var stale bool
	if err := db.GetContext(ctx, &stale, contactStatsStale, minStatsPages); err != nil || !stale {
		return false, err
	}
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, analyzeContactsTarget); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, analyzeContacts)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: analyze contacts: %w", err)
	}
	return true, nil
}
