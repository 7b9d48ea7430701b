package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
)

// The bulk path's writes (POST /contacts/bulk and the CSV import): a batch's
// new contacts and their events go into their tables by COPY, straight from
// Go, instead of one INSERT … SELECT FROM jsonb_to_recordset(…) RETURNING *.
// Everything else of applyOps stays as it is: the same locks, decisions,
// plan limit, memberships, blocks, activities and counters in the same
// transaction, so a bulk request or an import batch keeps every guarantee of
// the single path.
//
// Why COPY into the tables and not into a staging table merged by one
// statement: the decisions (new, changed, unchanged, blocked, double opt-in,
// limit) are made in Go on the locked rows anyway, so what remains for
// PostgreSQL is appending rows. Measured per contact of a batch of 1,000
// (PostgreSQL CPU, loaded 2-core machine): the JSON insert with RETURNING
// 62–74 µs, COPY into a staging table plus INSERT … SELECT … ON CONFLICT
// 66–69 µs, COPY straight into contacts 44–57 µs (the trigram search index
// alone is some 22 µs of each). Events: 20–28 µs by the JSON insert, 19–24 µs
// by COPY. COPY has no ON CONFLICT and returns nothing, hence:
//   - the ids come from the contact sequence beforehand (one query, which
//     also reads the transaction's now(), the rows' created_at and
//     updated_at), so the rows need not be read back;
//   - an address another transaction created after the lock (a race the lock
//     cannot prevent for rows that do not exist yet) fails the COPY with a
//     unique violation; the COPY runs in a savepoint, and after such a
//     failure the batch's new contacts take the ON CONFLICT insert of
//     insertNew, which turns them into updates of the other contact.

// minCopyRows is the fewest rows written by COPY: below it, the one INSERT
// statement is cheaper than COPY's extra round trips. (A variable only for
// the tests, which run both paths on the same batches.)
var minCopyRows = func() *atomic.Int64 {
	var n atomic.Int64
	n.Store(32)
	return &n
}()

// copiedContacts counts the contacts this process wrote by COPY (the tests
// make sure which path a batch took).
var copiedContacts atomic.Int64

// selectContactIDs takes $1 ids of the contact sequence (in order) with the
// transaction's time as the timestamp(0) columns store it, which is what the
// rows' created_at and updated_at default to.
const selectContactIDs = `SELECT nextval('contacts_id_seq') AS id, now()::timestamptz(0) AS now FROM generate_series(1, $1::int)`

// contactCopyColumns are the columns copyContacts writes; created_at and
// updated_at take their default, now().
var contactCopyColumns = []string{"id", "account_id", "email", "first_name", "last_name", "address", "zip", "city", "phone",
	"note", "tags", "status", "source", "custom_fields", "unsubscribed_at"}

// insertNewCopy is insertNew for a batch: the planned new contacts by COPY,
// or by insertNew when there are few of them or another transaction created
// one of their addresses meanwhile. It returns how many rows it inserted.
func insertNewCopy(ctx context.Context, tx querier, accountID int64, creates []*contactOp, blocked map[string]bool, lists map[int64]listInfo) (int64, error) {
	pending := make([]*contactOp, 0, len(creates))
	for _, op := range creates {
		if op.err == nil {
			pending = append(pending, op)
		}
	}
	if int64(len(pending)) < minCopyRows.Load() || slices.ContainsFunc(pending, readsBackOtherwise) {
		return insertNew(ctx, tx, accountID, pending, blocked, lists)
	}
	// In address order, as insertNew inserts: concurrent batches with common
	// new addresses wait for each other in one order instead of deadlocking.
	slices.SortFunc(pending, func(a, b *contactOp) int { return cmp.Compare(a.next.Email, b.next.Email) })
	var alloc []struct {
		ID  int64     `db:"id"`
		Now time.Time `db:"now"`
	}
	if err := tx.SelectContext(ctx, &alloc, selectContactIDs, len(pending)); err != nil {
		return 0, fmt.Errorf("store: contact ids: %w", err)
	}
	if len(alloc) != len(pending) {
		return 0, fmt.Errorf("store: contact ids: got %d of %d", len(alloc), len(pending))
	}
	now := alloc[0].Now
	rows := make([]Contact, len(pending))
	for i, op := range pending {
		c := op.next
		c.ID, c.AccountID, c.CreatedAt, c.UpdatedAt = alloc[i].ID, accountID, now, now
		c.Tags, c.DOIConfirmedAt, c.UnsubscribedAt, c.Lists = nonNil(c.Tags), nil, nil, nil
		if c.CustomFields == nil {
			c.CustomFields = CustomFields{}
		}
		if c.Status == StatusUnsubscribed {
			at := now
			c.UnsubscribedAt = &at
		}
		rows[i] = c
	}
	if _, err := tx.ExecContext(ctx, `SAVEPOINT bulk_copy`); err != nil {
		return 0, fmt.Errorf("store: insert contacts: %w", err)
	}
	err := copyContacts(ctx, tx, rows)
	if isUniqueViolation(err) {
		// Another transaction created one of the addresses after the lock.
		if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT bulk_copy`); err != nil {
			return 0, fmt.Errorf("store: insert contacts: %w", err)
		}
		return insertNew(ctx, tx, accountID, pending, blocked, lists)
	}
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT bulk_copy`); err != nil {
		return 0, fmt.Errorf("store: insert contacts: %w", err)
	}
	for i, op := range pending {
		op.next.ID, op.final = rows[i].ID, rows[i]
	}
	copiedContacts.Add(int64(len(pending)))
	return int64(len(pending)), nil
}

// readsBackOtherwise reports whether the op's new contact would read back
// from PostgreSQL other than it is in Go: COPY reads nothing back, so a batch
// with such a contact takes insertNew. Only a number among the custom fields may not: jsonb keeps numbers as
// numeric, so 1e2 reads back as 100 and -0.0 as 0.0. Such a contact takes
// the INSERT with RETURNING, whose row is what its event then carries.
func readsBackOtherwise(op *contactOp) bool {
	for _, v := range op.next.CustomFields {
		if n, ok := v.(json.Number); ok && !plainDecimal(string(n)) {
			return true
		}
	}
	return false
}

// plainDecimal reports whether s is a number as numeric prints it: digits
// with an optional sign and fraction, no exponent, no leading zeros, no sign
// on zero.
func plainDecimal(s string) bool {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, hasFrac := strings.Cut(s, ".")
	digits := func(d string) bool {
		return d != "" && strings.Trim(d, "0123456789") == ""
	}
	if !digits(whole) || (hasFrac && !digits(frac)) || (len(whole) > 1 && whole[0] == '0') {
		return false
	}
	return !neg || strings.Trim(whole+frac, "0") != ""
}

// copyContacts writes new contact rows (ids set) by COPY.
func copyContacts(ctx context.Context, tx querier, rows []Contact) error {
	st, err := plainTx(tx).PrepareContext(ctx, pq.CopyIn("contacts", contactCopyColumns...))
	if err != nil {
		return fmt.Errorf("store: copy contacts: %w", err)
	}
	defer st.Close()
	for i := range rows {
		c := &rows[i]
		cf := "{}"
		if len(c.CustomFields) > 0 {
			b, err := json.Marshal(c.CustomFields)
			if err != nil {
				return fmt.Errorf("store: copy contacts: %w", err)
			}
			cf = string(b)
		}
		var unsub any
		if c.UnsubscribedAt != nil {
			unsub = *c.UnsubscribedAt
		}
		if _, err := st.ExecContext(ctx, c.ID, c.AccountID, c.Email, c.FirstName, c.LastName, c.Address, c.Zip, c.City,
			c.Phone, c.Note, textArray(c.Tags), c.Status, c.Source, cf, unsub); err != nil {
			return fmt.Errorf("store: copy contacts: %w", err)
		}
	}
	if _, err := st.ExecContext(ctx); err != nil {
		return fmt.Errorf("store: copy contacts: %w", err)
	}
	return nil
}

// textArray is a text[] literal of ss, as pq.StringArray's Value writes it
// (every element quoted) without its per-value reflection.
func textArray(ss []string) string {
	n := 2
	for _, s := range ss {
		n += len(s) + 3
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		for j := 0; j < len(s); j++ {
			if s[j] == '"' || s[j] == '\\' {
				b = append(b, '\\')
			}
			b = append(b, s[j])
		}
		b = append(b, '"')
	}
	return string(append(b, '}'))
}

// eventCopyColumns are the columns copyEvents writes.
var eventCopyColumns = []string{"account_id", "public_id", "name", "payload"}

// writeRecordsCopy is writeRecords for a batch: many events go in by COPY
// (in their order, so their ids keep it), the rest as writeRecords writes it.
func writeRecordsCopy(ctx context.Context, tx querier, accountID int64, actor Actor, events []Event, acts []ActivityEntry, tags tagDeltas, newContacts int64) (bool, error) {
	if int64(len(events)) >= minCopyRows.Load() {
		if err := copyEvents(ctx, tx, accountID, events); err != nil {
			return false, err
		}
		events = nil
	}
	return writeRecords(ctx, tx, accountID, actor, events, acts, tags, newContacts)
}

// copyEvents writes events into the outbox by COPY.
func copyEvents(ctx context.Context, tx querier, accountID int64, events []Event) error {
	st, err := plainTx(tx).PrepareContext(ctx, pq.CopyIn("events", eventCopyColumns...))
	if err != nil {
		return fmt.Errorf("store: copy events: %w", err)
	}
	defer st.Close()
	for _, e := range events {
		b, ok := e.Data.(json.RawMessage)
		if !ok {
			if b, err = json.Marshal(e.Data); err != nil {
				return fmt.Errorf("store: emit %s: %w", e.Name, err)
			}
		}
		if _, err := st.ExecContext(ctx, accountID, newEventID(), e.Name, string(b)); err != nil {
			return fmt.Errorf("store: copy events: %w", err)
		}
	}
	if _, err := st.ExecContext(ctx); err != nil {
		return fmt.Errorf("store: copy events: %w", err)
	}
	return nil
}
