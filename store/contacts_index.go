package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// The GIN indexes of contacts (the trigram search index and the tags index)
// take new entries into a pending list (fastupdate), which costs a write
// little. Merging that list into the index is the expensive part, and
// PostgreSQL leaves it to whichever write finds the list over
// gin_pending_list_limit (4 MB): every eighth bulk request of 1,000 new
// contacts paid 27 ms more for the whole list's trigrams, and concurrent
// single upserts waited behind such a merge (their slowest took 150–200 ms,
// against 20–35 ms with the merge in the background). Writing straight into the index
// instead (fastupdate off) measured twice the cost of every bulk request.
// So serve merges the lists in the background, soon after the writes: a write
// that merges skips its merge when it finds one running, and the lists stay
// far below the limit. The limit stays PostgreSQL's default, so a process
// without the merge loop (or one falling behind) costs no more than before.

// mergeContactIndexes merges both pending lists; each call waits for a merge
// of the same index already running (another process's loop), then finds
// little left.
const mergeContactIndexes = `SELECT gin_clean_pending_list('contacts_search_idx'::regclass)
  + gin_clean_pending_list('contacts_tags_idx'::regclass)`

// MergePendingContactIndexEntries merges the pending lists of the contacts'
// GIN indexes into the indexes and returns how many list pages it emptied.
// The lists are the database's (all accounts'), so this is not per account.
func (db *DB) MergePendingContactIndexEntries(ctx context.Context) (int64, error) {
	var pages int64
	if err := db.GetContext(ctx, &pages, mergeContactIndexes); err != nil {
		return 0, fmt.Errorf("store: merge contact index entries: %w", err)
	}
	return pages, nil
}

// ContactIndexMergeInterval is how often serve merges the pending lists. Bulk
// writes at full speed add some 10 MB a second to the search index's list, so
// a merge every quarter second keeps it well below the 4 MB at which a write
// would merge it itself; an empty list costs one short statement.
const ContactIndexMergeInterval = 250 * time.Millisecond

// RunContactIndexMerge merges the pending lists every interval until ctx ends.
// Several processes may run it: a merge waits for another one of the same
// index and then has nothing left to do. After a failure it waits twice as
// long each time, up to a minute, so that a lasting one (a role that does not
// own the indexes) logs rarely; the writes then merge the lists themselves.
func (db *DB) RunContactIndexMerge(ctx context.Context, interval time.Duration, log *slog.Logger) error {
	wait := interval
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		_, err := db.MergePendingContactIndexEntries(ctx)
		switch {
		case err == nil:
			wait = interval
		case ctx.Err() != nil:
			return nil
		default:
			wait = min(2*wait, time.Minute)
			log.Error("contact index merge", "err", err, "retry_in", wait)
		}
		timer.Reset(wait)
	}
}
