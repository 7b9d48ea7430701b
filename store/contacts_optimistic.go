package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Optimistic writes of plain contact changes.
//
// The locked write path (applyOps) takes five round trips: BEGIN, the lock of
// the contacts, their update (or insert), the records, COMMIT. Under load on a
// small machine each round trip is a wake-up on both sides, and every call of
// a combined batch (contacts_combine.go) waits for all five. Most upserts are
// plain, though: they set fields and add tags of one contact, without lists,
// confirmation mails, blocks or forms. Those take two round trips here and no
// transaction block: a read of the contacts, unlocked, with each row's version
// (xmin) and the database's clock; and one statement that inserts the new
// contacts, updates the existing ones only where the row is still the version
// read, and writes the events, activities and counters of exactly the rows it
// wrote. One statement commits as a whole or not at all, so a change and its
// records stay together as in the locked path.
//
// The decisions are the locked path's own (decideOps, planUpdate, planCreate),
// taken against a read that is current when the statement applies them: an
// update applies only to the row version it was decided on, and an insert only
// where no contact has the address. An op whose contact changed, appeared or
// went away in between, and every op of a batch whose statement fails as a
// whole (an address taken meanwhile, the plan's contact limit, a deadlock),
// takes the locked path afterwards, which decides it again under locks. A
// batch with any op that is not plain takes the locked path at once.

// readUnlockedSQL is lockContactsBlockedSQL without the locks, with each
// contact's row version and the database's clock (on every row, in whole
// seconds as the contacts' timestamps are stored). Blocked
// addresses come as rows with id 0 and only the email set; one more row with
// id 0 and an empty email makes sure the clock comes back when nothing else does.
const readUnlockedSQL = `WITH l AS (
  SELECT ` + contactColumns + `, ` + contactLists + `, c.xmin::text::bigint AS version
  FROM contacts c WHERE c.account_id = $1 AND (c.email = ANY($2) OR c.id = ANY($3))
)
SELECT l.*, now()::timestamptz(0) FROM l
UNION ALL
SELECT 0, $1, e.email, '', '', '', '', '', '', '', '{}'::text[], '', '', '{}'::jsonb, NULL::timestamptz, NULL::timestamptz,
  now(), now(), '{}'::text[], 0, now()::timestamptz(0)
FROM (
  SELECT b.email FROM blocked_addresses b WHERE b.account_id = $1 AND b.email = ANY($2::text[] || ARRAY(SELECT l.email FROM l))
  UNION ALL SELECT ''
) e`

// writePlainSQL writes planned contacts ($2: new ones without id, existing ones
// with the version they were planned on) and the records of those it wrote:
// events ($3-$6), activities ($7-$12), tag counts ($13-$15) and new contacts
// per day ($16: the day's clock). Records name their contact by its address,
// which is unique in the account once the statement is done; the events and
// activities get the contact's id from the row written (a new contact has none
// before). It returns the contacts written, and fails as a whole when the
// plan's contact limit would be exceeded (require_account_contacts).
const writePlainSQL = `WITH x AS (
  SELECT * FROM jsonb_to_recordset($2::jsonb) AS x(id bigint, version bigint, email text, first_name text, last_name text,
    address text, zip text, city text, phone text, note text, tags text[], status text, source text, custom_fields jsonb,
    unsubscribed_at timestamptz, created_at timestamptz, updated_at timestamptz)
), ins AS (
  INSERT INTO contacts AS c (account_id, email, first_name, last_name, address, zip, city, phone, note,
    tags, status, source, custom_fields, unsubscribed_at, created_at, updated_at)
  SELECT $1, x.email, x.first_name, x.last_name, x.address, x.zip, x.city, x.phone, x.note,
    x.tags, x.status, x.source, x.custom_fields, x.unsubscribed_at, x.created_at, x.updated_at
  FROM x WHERE x.id IS NULL ORDER BY x.email
  ON CONFLICT (account_id, email) DO NOTHING
  RETURNING c.id, c.email
), upd AS (
  UPDATE contacts c SET email = x.email, first_name = x.first_name, last_name = x.last_name,
    address = x.address, zip = x.zip, city = x.city, phone = x.phone, note = x.note, tags = x.tags,
    status = x.status, source = x.source, custom_fields = x.custom_fields,
    unsubscribed_at = x.unsubscribed_at, updated_at = x.updated_at
  FROM x WHERE c.account_id = $1 AND c.id = x.id AND c.xmin = x.version::text::xid
  RETURNING c.id, c.email
), written AS (
  SELECT id, email FROM ins UNION ALL SELECT id, email FROM upd
), ev AS (
  INSERT INTO events (account_id, public_id, name, payload)
  SELECT $1, e.public_id, e.name, jsonb_set(e.payload, '{contact,id}', to_jsonb(w.id))
  FROM ROWS FROM (unnest($3::text[]), unnest($4::text[]), jsonb_array_elements($5::jsonb), unnest($6::text[]))
    WITH ORDINALITY AS e(public_id, name, payload, email, n)
  JOIN written w ON w.email = e.email
  ORDER BY e.n
), act AS (
  INSERT INTO activity_log (account_id, actor_type, actor_id, action, object_type, object_id, details)
  SELECT $1, $7, $8, a.action, a.object_type, w.id, a.details::jsonb
  FROM unnest($9::text[], $10::text[], $11::text[], $12::text[]) WITH ORDINALITY AS a(action, object_type, details, email, n)
  JOIN written w ON w.email = a.email
  ORDER BY a.n
), tags AS (
  INSERT INTO contact_tag_counts AS t (account_id, tag, stripe, contacts)
  SELECT $1, g.tag, pg_backend_pid() % 32, sum(g.d)
  FROM unnest($13::text[], $14::bigint[], $15::text[]) AS g(tag, d, email)
  JOIN written w ON w.email = g.email
  GROUP BY g.tag HAVING sum(g.d) <> 0 ORDER BY g.tag
  ON CONFLICT (account_id, tag, stripe) DO UPDATE SET contacts = t.contacts + excluded.contacts
), days AS (
  INSERT INTO contact_days AS d (account_id, day, stripe, contacts)
  SELECT $1, ($16::timestamptz AT TIME ZONE 'Europe/Berlin')::date, pg_backend_pid() % 32, i.n
  FROM (SELECT count(*) AS n FROM ins) i WHERE i.n > 0
  ON CONFLICT (account_id, day, stripe) DO UPDATE SET contacts = d.contacts + excluded.contacts
), usage AS (
  SELECT require_account_contacts($1, (SELECT count(*) FROM ins)) AS ok
)
SELECT w.id, w.email FROM usage u LEFT JOIN written w ON true`

// plainRow is a planned contact as writePlainSQL reads it.
type plainRow struct {
	contactRow
	Version        int64      `json:"version,omitempty"`
	UnsubscribedAt *time.Time `json:"unsubscribed_at"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
}

// plainInput reports whether an op asks for nothing but its contact's own
// fields and tags, judged before reading: the ops that can go optimistically.
func (op *contactOp) plainInput() bool {
	in := op.in
	return len(in.ListIDs) == 0 && !op.setLists && len(op.rmLists) == 0 && op.formID == 0 &&
		!in.SignUp && !in.DoubleOptIn && (in.Status == nil || *in.Status == StatusSubscribed) &&
		canonicalNumbers(in.CustomFields)
}

// plainPlan reports whether a decided op writes nothing but its contact's row
// and records (an op that failed alone writes nothing at all).
func (op *contactOp) plainPlan() bool {
	return op.err != nil || (len(op.join) == 0 && len(op.leave) == 0 && !op.needDOI && !op.block && !op.unsubNow)
}

// writesRow reports whether a decided op that did not fail creates or changes
// its contact (a no-op update writes nothing and records nothing).
func (op *contactOp) writesRow() bool {
	return op.cur == nil || len(op.changed) > 0
}

// pgNumber is how PostgreSQL prints a jsonb number it was given in this form.
var pgNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?$`)

// canonicalNumbers reports whether every number among the custom fields reads
// back from jsonb as it was written (1e2 comes back as 100, -0 as 0). The
// optimistic write returns the contact as planned, not as read back, so it
// takes only values whose stored form is the given one.
func canonicalNumbers(fields map[string]any) bool {
	for _, v := range fields {
		n, ok := v.(json.Number)
		if !ok {
			continue
		}
		s := n.String()
		if !pgNumber.MatchString(s) || (s[0] == '-' && isZero(s[1:])) {
			return false
		}
	}
	return true
}

func isZero(s string) bool {
	for _, r := range s {
		if r != '0' && r != '.' {
			return false
		}
	}
	return true
}

// applyOptimistic applies the plain ops of a batch as described above and
// returns the ops left for the locked path: none when it applied them all,
// all of them when the batch is not plain or its statement failed. Its
// statements run on any connection of the pool, or on tx's when it is not nil
// (the warm-up, warm.go).
func (db *DB) applyOptimistic(ctx context.Context, tx *sqlx.Tx, accountID int64, actor Actor, ops []*contactOp) ([]*contactOp, error) {
	live := liveOps(ops)
	if len(live) == 0 {
		return nil, nil
	}
	for _, op := range live {
		if !op.plainInput() {
			return ops, nil
		}
	}
	if err := actor.valid(); err != nil {
		return nil, err
	}
	if err := db.prepare(ctx, db.generic, writePathStatements()...); err != nil {
		return nil, err
	}
	primaries := mergeSameContact(live)
	emails, ids := contactKeys(primaries)
	read, blocked, now, err := db.readUnlocked(ctx, tx, accountID, emails, ids)
	if err != nil {
		return nil, err
	}
	primaries, _ = decideOps(primaries, read.lockedSet, blocked, nil)

	var rows []plainRow
	for _, op := range primaries {
		if !op.plainPlan() {
			return ops, nil
		}
		if op.err != nil {
			continue
		}
		if !op.writesRow() {
			op.final = op.cur.Contact // a no-op: nothing to write
			continue
		}
		row := finishPlain(op, nil, now)
		if op.cur != nil {
			row.Version = read.version[op.cur.ID]
		}
		rows = append(rows, row)
	}

	// Concurrent writers lock the rows they update in one order (by id, as
	// the join walks x), so that two of them cannot deadlock on each other.
	slices.SortFunc(rows, func(a, b plainRow) int { return cmp.Compare(a.ID, b.ID) })
	written := map[string]int64{}
	if len(rows) > 0 {
		if written, err = db.writePlain(ctx, tx, accountID, actor, primaries, rows, now); err != nil {
			var pqErr *pq.Error
			if errors.As(err, &pqErr) && ctx.Err() == nil {
				// Nothing of the statement was written: all of it goes locked.
				return ops, nil
			}
			return nil, err
		}
	}

	// The ops whose write did not apply go the locked way, with the ops merged
	// into them.
	retry := map[*contactOp]bool{}
	for _, op := range primaries {
		if op.err != nil || !op.writesRow() {
			continue
		}
		id, ok := written[op.next.Email]
		if !ok {
			retry[op] = true
			continue
		}
		op.next.ID, op.final.ID = id, id
	}
	var rest []*contactOp
	for _, op := range live {
		p := op.primary
		if p == nil {
			p = op
		}
		if retry[p] {
			rest = append(rest, op)
		} else if p != op {
			op.err, op.final = p.err, p.final
		}
	}
	return rest, nil
}

// readSet is what readUnlocked found: the contacts with their row versions.
type readSet struct {
	lockedSet
	version map[int64]int64
}

// readUnlocked reads the contacts with the given addresses or ids (unlocked),
// their row versions, which of their addresses (and of the given ones) are
// blocked, and the database's clock; on tx's connection when tx is not nil.
func (db *DB) readUnlocked(ctx context.Context, tx *sqlx.Tx, accountID int64, emails []string, ids []int64) (readSet, map[string]bool, time.Time, error) {
	rows, err := db.stmtOn(ctx, tx, readUnlockedSQL).QueryContext(ctx, accountID, pq.StringArray(emails), pq.Int64Array(ids))
	if err != nil {
		return readSet{}, nil, time.Time{}, fmt.Errorf("store: read contacts: %w", err)
	}
	defer rows.Close()
	s, blocked, now, err := scanReadSet(rows)
	if err != nil {
		return s, nil, now, fmt.Errorf("store: read contacts: %w", err)
	}
	return s, blocked, now, nil
}

// scanReadSet reads the rows of readUnlockedSQL and of statements shaped
// like it: a contact with its lists, row version and the database's clock per
// row, and rows of id 0 naming a blocked address. extra are destinations of
// further columns after the clock, the same in every row.
func scanReadSet(rows *sql.Rows, extra ...any) (readSet, map[string]bool, time.Time, error) {
	s := readSet{lockedSet: lockedSet{byEmail: map[string]*lockedContact{}, byID: map[int64]*lockedContact{}}, version: map[int64]int64{}}
	blocked := map[string]bool{}
	var now time.Time
	dest := make([]any, 0, 21+len(extra))
	for rows.Next() {
		r := &lockedContact{}
		var version int64
		dest = append(append(appendContactDest(dest[:0], &r.Contact), &r.Lists, &version, &now), extra...)
		if err := rows.Scan(dest...); err != nil {
			return s, nil, now, err
		}
		if r.ID == 0 {
			if r.Email != "" {
				blocked[r.Email] = true
			}
			continue
		}
		s.add(r)
		s.version[r.ID] = version
	}
	if err := rows.Err(); err != nil {
		return s, nil, now, err
	}
	return s, blocked, now, nil
}

// writePlain runs writePlainSQL for the planned rows and the records of the
// primaries that have one; it returns the ids of the contacts written, by
// address; on tx's connection when tx is not nil.
func (db *DB) writePlain(ctx context.Context, tx *sqlx.Tx, accountID int64, actor Actor, primaries []*contactOp, rows []plainRow, now time.Time) (map[string]int64, error) {
	var events []Event
	var acts []ActivityEntry
	var evEmails, actEmails, tagNames, tagEmails pq.StringArray
	var tagDelta pq.Int64Array
	for _, op := range primaries {
		if op.err != nil || !op.writesRow() {
			continue
		}
		e, a := len(events), len(acts)
		var err error
		if events, acts, err = appendOpRecords(events, acts, op, nil); err != nil {
			return nil, err
		}
		email := op.next.Email
		for range events[e:] {
			evEmails = append(evEmails, email)
		}
		for range acts[a:] {
			actEmails = append(actEmails, email)
		}
		var before []string
		if op.cur != nil {
			before = op.cur.Tags
		}
		d := tagDeltas{}
		d.change(before, op.next.Tags)
		for t, n := range d {
			tagNames, tagDelta, tagEmails = append(tagNames, t), append(tagDelta, n), append(tagEmails, email)
		}
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return nil, fmt.Errorf("store: write contacts: %w", err)
	}
	evIDs, evNames, payloads, err := eventArgs(events)
	if err != nil {
		return nil, err
	}
	actions, types, _, details, err := activityArgs(acts)
	if err != nil {
		return nil, err
	}
	res, err := db.stmtOn(ctx, tx, writePlainSQL).QueryContext(ctx, accountID, string(b), evIDs, evNames, payloads, evEmails,
		actor.Type, actor.idOrNil(), actions, types, details, actEmails, tagNames, tagDelta, tagEmails, now)
	if err != nil {
		return nil, fmt.Errorf("store: write contacts: %w", err)
	}
	defer res.Close()
	written := make(map[string]int64, len(rows))
	for res.Next() {
		var id sql.NullInt64
		var email sql.NullString
		if err := res.Scan(&id, &email); err != nil {
			return nil, fmt.Errorf("store: write contacts: %w", err)
		}
		if id.Valid {
			written[email.String] = id.Int64
		}
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("store: write contacts: %w", err)
	}
	return written, nil
}

// finishPlain stamps an op's next state with now (created, updated, and the
// unsubscribe time its status implies), makes it the op's final contact with
// its lists, and returns the row the plain write statements store.
func finishPlain(op *contactOp, lists map[int64]listInfo, now time.Time) plainRow {
	n := &op.next
	n.UpdatedAt = now
	if op.created {
		n.CreatedAt = now
	}
	switch {
	case n.Status != StatusUnsubscribed:
		n.UnsubscribedAt = nil
	case n.UnsubscribedAt == nil:
		n.UnsubscribedAt = &now
	}
	op.final = *n
	finalLists(op, lists)
	return plainRow{contactRow: rowOf(*n), UnsubscribedAt: n.UnsubscribedAt, CreatedAt: n.CreatedAt, UpdatedAt: now}
}
