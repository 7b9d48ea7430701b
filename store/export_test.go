package store

// UpsertsWaiting is how many UpsertContact calls of accountID and actor wait
// for the batch under way to finish (tests use it to line calls up behind a
// batch they hold).
func (db *DB) UpsertsWaiting(accountID int64, actor Actor) int {
	u := &db.upserts
	u.mu.Lock()
	defer u.mu.Unlock()
	if g := u.groups[upsertGroupKey{accountID, actor}]; g != nil {
		return len(g.waiting)
	}
	return -1
}
