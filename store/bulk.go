package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Bulk actions on contacts run as jobs (bulk_jobs, migration 00031): the
// chosen rows or every match of a filter, walked in id order in chunks. Each
// chunk is applied through the single-contact write paths (applyOps, the
// engine of AddTags, RemoveTag, list membership and UnsubscribeContact;
// deleteContactsTx of DeleteContact), so it emits the same events and
// activities, in the transaction that moves the job's cursor: a crash either
// keeps a chunk whole or leaves it to the next run, never applies it twice.

// Bulk actions.
const (
	BulkAddTag         = "add_tag"
	BulkRemoveTag      = "remove_tag"
	BulkAddToList      = "add_to_list"
	BulkRemoveFromList = "remove_from_list"
	BulkUnsubscribe    = "unsubscribe"
	BulkDelete         = "delete"
)

// Bulk job statuses.
const (
	BulkQueued  = "queued"
	BulkRunning = "running"
	BulkDone    = "done"
	BulkFailed  = "failed"
)

// DefaultBulkChunk is how many contacts one transaction of a bulk job changes.
const DefaultBulkChunk = 1000

// BulkInput asks for a bulk action: on ContactIDs, or on every contact that
// Filter (or the segment SegmentID) matches when the job runs.
type BulkInput struct {
	Action     string
	Tag        string // add_tag, remove_tag
	ListID     int64  // add_to_list, remove_from_list
	ContactIDs []int64
	Filter     *ContactFilter
	SegmentID  int64
}

// BulkJob is a bulk action and its progress.
type BulkJob struct {
	ID         int64         `db:"id"`
	AccountID  int64         `db:"account_id"`
	ActorType  string        `db:"actor_type"`
	ActorID    *int64        `db:"actor_id"`
	Action     string        `db:"action"`
	Tag        string        `db:"tag"`
	ListID     *int64        `db:"list_id"`
	ContactIDs pq.Int64Array `db:"contact_ids"`
	FilterJSON []byte        `db:"filter"`
	SegmentID  *int64        `db:"segment_id"`
	Status     string        `db:"status"`
	// Total is the number of contacts to go through, nil until the worker
	// counted them.
	Total      *int64     `db:"total"`
	Processed  int64      `db:"processed"`
	Changed    int64      `db:"changed"`
	CursorID   int64      `db:"cursor_id"`
	Error      string     `db:"error"`
	CreatedAt  time.Time  `db:"created_at"`
	StartedAt  *time.Time `db:"started_at"`
	FinishedAt *time.Time `db:"finished_at"`
}

// Filter is the job's filter (nil for chosen rows).
func (j BulkJob) Filter() (*ContactFilter, error) {
	if j.ContactIDs != nil {
		return nil, nil
	}
	var f ContactFilter
	if err := json.Unmarshal(j.FilterJSON, &f); err != nil {
		return nil, fmt.Errorf("store: bulk job %d filter: %w", j.ID, err)
	}
	return &f, nil
}

// Percent is the job's progress, 0 to 100.
func (j BulkJob) Percent() int {
	if j.Status == BulkDone {
		return 100
	}
	if j.Total == nil || *j.Total == 0 {
		return 0
	}
	return int(min(100, j.Processed*100 / *j.Total))
}

const bulkColumns = `id, account_id, actor_type, actor_id, action, tag, list_id, contact_ids, filter, segment_id, status,
  total, processed, changed, cursor_id, error, created_at, started_at, finished_at`

const insertBulkJob = `INSERT INTO bulk_jobs (account_id, actor_type, actor_id, action, tag, list_id, contact_ids, filter, segment_id, total)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ` + bulkColumns

func validBulkAction(a string) bool {
	switch a {
	case BulkAddTag, BulkRemoveTag, BulkAddToList, BulkRemoveFromList, BulkUnsubscribe, BulkDelete:
		return true
	}
	return false
}

// normalize checks the input; the filter is validated, the segment read
// later, in the transaction that stores the job.
func (in *BulkInput) normalize() error {
	errs := Errs{}
	if !validBulkAction(in.Action) {
		errs.Add("action", "Erlaubt sind add_tag, remove_tag, add_to_list, remove_from_list, unsubscribe und delete.")
	}
	switch in.Action {
	case BulkAddTag, BulkRemoveTag:
		tags := normTags(errs, "tag", []string{in.Tag})
		if len(tags) == 1 {
			in.Tag = tags[0]
		}
		in.ListID = 0
	case BulkAddToList, BulkRemoveFromList:
		if in.ListID <= 0 {
			errs.Add("list_id", "Bitte eine Liste angeben.")
		}
		in.Tag = ""
	default:
		in.Tag, in.ListID = "", 0
	}
	targets := 0
	if in.ContactIDs != nil {
		targets++
		if len(in.ContactIDs) == 0 {
			errs.Add("contact_ids", "Bitte mindestens einen Kontakt auswählen.")
		}
		if len(in.ContactIDs) > MaxBatch {
			errs.Add("contact_ids", fmt.Sprintf("Höchstens %d Kontakte; für mehr bitte filter oder segment_id verwenden.", MaxBatch))
		}
		for _, id := range in.ContactIDs {
			if id <= 0 {
				errs.Add("contact_ids", "Kontakt-IDs sind positive ganze Zahlen.")
				break
			}
		}
	}
	if in.Filter != nil {
		targets++
		f := SegmentFilter(*in.Filter)
		if err := f.Validate(); err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) {
				return err
			}
			for k, v := range ve.Fields {
				errs.Add("filter."+k, v)
			}
		}
		f.Sort = ""
		in.Filter = &f
	}
	if in.SegmentID != 0 {
		targets++
		if in.SegmentID < 0 {
			errs.Add("segment_id", "Bitte eine gültige ID angeben.")
		}
	}
	if targets != 1 {
		errs.Add("contact_ids", "Bitte genau eines angeben: contact_ids, filter oder segment_id.")
	}
	return errs.Err()
}

// CreateBulkJob queues a bulk action; the worker (store/bulk) runs it. A
// segment's conditions are copied into the job: the job acts on what the
// segment meant when it was asked for.
func (db *DB) CreateBulkJob(ctx context.Context, accountID int64, actor Actor, in BulkInput) (BulkJob, error) {
	if err := actor.valid(); err != nil {
		return BulkJob{}, err
	}
	if err := in.normalize(); err != nil {
		return BulkJob{}, err
	}
	var out BulkJob
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var ids any
		var total *int64
		filter := []byte("{}")
		var segID *int64
		switch {
		case in.ContactIDs != nil:
			ids = pq.Int64Array(in.ContactIDs)
			n := int64(len(in.ContactIDs))
			total = &n
		case in.SegmentID != 0:
			s, err := segmentOn(ctx, tx, accountID, in.SegmentID)
			if errors.Is(err, ErrNotFound) {
				return Invalid("segment_id", fmt.Sprintf("Das Segment %d gibt es nicht.", in.SegmentID))
			} else if err != nil {
				return err
			}
			in.Filter, segID = &s.Filter, &s.ID
		}
		if in.Filter != nil {
			if err := checkFilterList(ctx, tx, accountID, *in.Filter); err != nil {
				return err
			}
			b, err := json.Marshal(in.Filter)
			if err != nil {
				return fmt.Errorf("store: create bulk job: %w", err)
			}
			filter = b
		}
		var listID *int64
		if in.ListID != 0 {
			if err := checkListIDs(ctx, tx, accountID, "list_id", []int64{in.ListID}); err != nil {
				return err
			}
			listID = &in.ListID
		}
		if err := tx.GetContext(ctx, &out, insertBulkJob, accountID, actor.Type, actor.idOrNil(), in.Action, in.Tag, listID,
			ids, filter, segID, total); err != nil {
			return fmt.Errorf("store: create bulk job: %w", err)
		}
		return nil
	})
	return out, err
}

// BulkJob returns one job of the account.
func (db *DB) BulkJob(ctx context.Context, accountID, id int64) (BulkJob, error) {
	var j BulkJob
	if err := db.GetContext(ctx, &j, `SELECT `+bulkColumns+` FROM bulk_jobs WHERE account_id = $1 AND id = $2`, accountID, id); err != nil {
		return BulkJob{}, notFound("bulk job", err)
	}
	return j, nil
}

// BulkRun tunes RunNextBulkJob.
type BulkRun struct {
	Lease time.Duration // how long a claim lasts without a renewing chunk
	Chunk int           // contacts per transaction; default DefaultBulkChunk
	// MaxChunks stops after that many chunks without finishing or releasing
	// the job (0: no limit): what a crash leaves behind, for tests.
	MaxChunks int
	Log       *slog.Logger
}

const claimBulkJob = `UPDATE bulk_jobs j SET status = 'running', lease_owner = $1, lease_until = now() + $2 * interval '1 millisecond',
  started_at = coalesce(j.started_at, now())
FROM (SELECT id AS claim_id FROM bulk_jobs WHERE status = 'queued' OR (status = 'running' AND lease_until < now())
      ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) x
WHERE j.id = x.claim_id
RETURNING ` + bulkColumns

var errBulkLeaseLost = errors.New("store: bulk job lease lost")

// errBulkStopped is MaxChunks reached (a simulated crash).
var errBulkStopped = errors.New("store: bulk job stopped")

// RunNextBulkJob claims one queued job (or one whose worker's lease ran out)
// and runs it to its end, one chunk per transaction; ran is false when the
// queue was empty.
func (db *DB) RunNextBulkJob(ctx context.Context, opts BulkRun) (ran bool, err error) {
	if opts.Chunk <= 0 || opts.Chunk > 10*MaxBatch {
		opts.Chunk = DefaultBulkChunk
	}
	if opts.Lease <= 0 {
		opts.Lease = 2 * time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	owner := randomToken()
	var j BulkJob
	if err := db.GetContext(ctx, &j, claimBulkJob, owner, opts.Lease.Milliseconds()); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		return false, fmt.Errorf("store: claim bulk job: %w", err)
	}
	if err := db.runBulkJob(ctx, owner, &j, opts); err != nil {
		if ctx.Err() != nil || errors.Is(err, errBulkLeaseLost) || errors.Is(err, errBulkStopped) {
			return true, nil // resumed later, by this process or another
		}
		opts.Log.Error("bulk job failed", "job", j.ID, "account", j.AccountID, "err", err)
		_, ferr := db.ExecContext(ctx, `UPDATE bulk_jobs SET status = 'failed', finished_at = now(), error = $3,
  lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2`,
			j.ID, owner, "Die Aktion wurde wegen eines internen Fehlers abgebrochen. Bereits geänderte Kontakte bleiben geändert.")
		return true, errors.Join(err, ferr)
	}
	return true, nil
}

// bulkTargets is the id query of a job's next chunk: $1 the account, then the
// filter's arguments (or the chosen ids), then the cursor and the limit.
func bulkTargets(j BulkJob, f *ContactFilter) (string, []any) {
	var cond string
	var args []any
	if f == nil {
		cond, args = "c.account_id = $1 AND c.id = ANY($2)", []any{j.AccountID, j.ContactIDs}
	} else {
		cond, args = exportWhere(j.AccountID, *f, false)
	}
	n := len(args)
	return fmt.Sprintf(`SELECT c.id FROM contacts c WHERE %s AND c.id > $%d ORDER BY c.id LIMIT $%d`, cond, n+1, n+2), args
}

func (db *DB) runBulkJob(ctx context.Context, owner string, j *BulkJob, opts BulkRun) error {
	f, err := j.Filter()
	if err != nil {
		return err
	}
	actor := Actor{Type: j.ActorType}
	if j.ActorID != nil {
		actor.ID = *j.ActorID
	}
	if j.Total == nil {
		// Counted once, before the first chunk: the progress bar's 100 %.
		cond, args := exportWhere(j.AccountID, *f, false)
		var n int64
		if err := db.GetContext(ctx, &n, `SELECT count(*) FROM contacts c WHERE `+cond, args...); err != nil {
			return fmt.Errorf("store: count bulk job: %w", err)
		}
		res, err := db.ExecContext(ctx, `UPDATE bulk_jobs SET total = $3 WHERE id = $1 AND lease_owner = $2`, j.ID, owner, n)
		if err != nil {
			return fmt.Errorf("store: count bulk job: %w", err)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return errBulkLeaseLost
		}
		j.Total = &n
	}
	q, args := bulkTargets(*j, f)
	for chunks := 0; ; chunks++ {
		if opts.MaxChunks > 0 && chunks == opts.MaxChunks {
			return errBulkStopped
		}
		done, err := db.bulkChunk(ctx, owner, j, actor, q, args, opts)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}

const lockBulkJob = `SELECT cursor_id FROM bulk_jobs WHERE id = $1 AND lease_owner = $2 FOR UPDATE`

const advanceBulkJob = `UPDATE bulk_jobs SET cursor_id = $3, processed = processed + $4, changed = changed + $5,
  lease_until = now() + $6 * interval '1 millisecond' WHERE id = $1 AND lease_owner = $2`

const finishBulkJob = `UPDATE bulk_jobs SET status = 'done', finished_at = now(), lease_owner = NULL, lease_until = NULL,
  total = processed WHERE id = $1 AND lease_owner = $2 RETURNING processed, changed`

// bulkChunk applies the next chunk of a job and moves its cursor, in one
// transaction; done reports that no contact was left, and the job is then
// finished (with its activity) in that transaction.
func (db *DB) bulkChunk(ctx context.Context, owner string, j *BulkJob, actor Actor, q string, args []any, opts BulkRun) (done bool, err error) {
	err = retryTxOn(ctx, db.generic, func(tx *sqlx.Tx) error {
		done = false
		var cursor int64
		if err := tx.GetContext(ctx, &cursor, lockBulkJob, j.ID, owner); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return errBulkLeaseLost
			}
			return fmt.Errorf("store: bulk chunk: %w", err)
		}
		var ids []int64
		if err := tx.SelectContext(ctx, &ids, q, append(args, cursor, opts.Chunk)...); err != nil {
			return fmt.Errorf("store: bulk chunk: %w", err)
		}
		if len(ids) == 0 {
			done = true
			var processed, changed int64
			if err := tx.QueryRowxContext(ctx, finishBulkJob, j.ID, owner).Scan(&processed, &changed); err != nil {
				return fmt.Errorf("store: finish bulk job: %w", err)
			}
			details := map[string]any{"job_id": j.ID, "action": j.Action, "processed": processed, "changed": changed}
			if j.Tag != "" {
				details["tag"] = j.Tag
			}
			if j.ListID != nil {
				details["list_id"] = *j.ListID
			}
			return LogActivity(ctx, tx, j.AccountID, actor, ActivityEntry{Action: "contacts.bulk_" + j.Action,
				ObjectType: ObjectContact, Details: details})
		}
		changed, err := applyBulk(ctx, tx, *j, actor, ids)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, advanceBulkJob, j.ID, owner, ids[len(ids)-1], len(ids), changed, opts.Lease.Milliseconds()); err != nil {
			return fmt.Errorf("store: bulk chunk: %w", err)
		}
		return nil
	})
	return done, err
}

// applyBulk applies a job's action to the contacts ids inside tx, through the
// single-contact paths; it returns how many contacts changed (a contact
// without the tag to remove, say, fails alone and is not counted).
func applyBulk(ctx context.Context, tx *sqlx.Tx, j BulkJob, actor Actor, ids []int64) (int64, error) {
	if j.Action == BulkDelete {
		return deleteContactsTx(ctx, tx, j.AccountID, actor, ids) // skips contacts deleted meanwhile
	}
	ops := make([]*contactOp, len(ids))
	unsub := StatusUnsubscribed
	for i, id := range ids {
		op := &contactOp{byID: id, noCreate: true}
		switch j.Action {
		case BulkAddTag:
			op.in.Tags = []string{j.Tag}
		case BulkRemoveTag:
			op.rmTags = []string{j.Tag}
		case BulkAddToList:
			op.in.ListIDs = []int64{*j.ListID}
		case BulkRemoveFromList:
			op.rmLists = []int64{*j.ListID}
		case BulkUnsubscribe:
			op.in.Status = &unsub
			op.unsub = Unsubscribe{Source: UnsubManual}
		}
		ops[i] = op
	}
	if err := applyOps(ctx, tx, j.AccountID, actor, ops, true); err != nil {
		return 0, err
	}
	var n int64
	for _, op := range ops {
		if !op.failed() && (len(op.changed) > 0 || len(op.join) > 0 || len(op.leave) > 0 || op.unsubNow) {
			n++
		}
	}
	return n, nil
}
