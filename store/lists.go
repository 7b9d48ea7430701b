package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// DefaultListColor is the colour of a list created without one.
const DefaultListColor = "#4f46e5"

// List is an email list of an account.
type List struct {
	ID          int64     `db:"id"`
	AccountID   int64     `db:"account_id"`
	Name        string    `db:"name"`
	Color       string    `db:"color"`
	Description string    `db:"description"`
	DoubleOptIn bool      `db:"double_opt_in"`
	MemberCount int64     `db:"member_count"`
	CreatedAt   time.Time `db:"created_at"`
	UpdatedAt   time.Time `db:"updated_at"`
}

// ListInput is what a caller may write of a list; nil fields are not given.
type ListInput struct {
	Name        *string
	Color       *string
	Description *string
	DoubleOptIn *bool
}

func validColor(s string) bool {
	if len(s) != 7 || s[0] != '#' {
		return false
	}
	for i := 1; i < 7; i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Normalize trims and checks the input; create requires a name.
func (in *ListInput) Normalize(create bool) error {
	errs := Errs{}
	normText(errs, "name", in.Name, 100)
	if in.Name != nil && *in.Name == "" || create && in.Name == nil {
		errs.Add("name", "Bitte einen Namen angeben.")
	}
	if in.Color != nil {
		*in.Color = strings.ToLower(strings.TrimSpace(*in.Color))
		if !validColor(*in.Color) {
			errs.Add("color", "Bitte eine Farbe im Format #rrggbb angeben.")
		}
	}
	normText(errs, "description", in.Description, 1000)
	return errs.Err()
}

const listColumns = `id, account_id, name, color, description, double_opt_in, ` + listMembersOfLists + ` AS member_count, created_at, updated_at`

// listMembers is the member count of the list l: its base (lists.member_count)
// plus the changes counted in its stripes (list_member_counts, migration
// 00030), which concurrent writers add to without queuing on the list's row.
const listMembers = `(l.member_count + coalesce((SELECT sum(s.members) FROM list_member_counts s WHERE s.list_id = l.id), 0))`

// listMembersOfLists is listMembers for statements that name the table lists
// without an alias (RETURNING of an insert or update).
const listMembersOfLists = `(lists.member_count + coalesce((SELECT sum(s.members) FROM list_member_counts s WHERE s.list_id = lists.id), 0))`

const insertList = `INSERT INTO lists (account_id, name, color, description, double_opt_in)
VALUES ($1, $2, $3, $4, $5) RETURNING ` + listColumns

const addUsageLists = `UPDATE account_usage u SET lists = u.lists + 1
FROM accounts a JOIN plans p ON p.name = a.plan
WHERE u.account_id = $1 AND a.id = u.account_id AND u.lists + 1 <= p.max_lists
RETURNING u.lists`

func errListNameTaken() error { return Invalid("name", "Eine Liste mit diesem Namen gibt es schon.") }

// CreateList creates a list within the plan's list limit (*LimitError beyond it).
func (db *DB) CreateList(ctx context.Context, accountID int64, actor Actor, in ListInput) (List, error) {
	if err := in.Normalize(true); err != nil {
		return List{}, err
	}
	color, desc, doi := DefaultListColor, "", false
	if in.Color != nil {
		color = *in.Color
	}
	if in.Description != nil {
		desc = *in.Description
	}
	if in.DoubleOptIn != nil {
		doi = *in.DoubleOptIn
	}
	var l List
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &l, insertList, accountID, *in.Name, color, desc, doi); err != nil {
			if isUniqueViolation(err) {
				return errListNameTaken()
			}
			return fmt.Errorf("store: create list: %w", err)
		}
		if err := LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "list.created", ObjectType: ObjectList,
			ObjectID: l.ID, Details: map[string]any{"name": l.Name}}); err != nil {
			return err
		}
		var n int64
		if err := tx.GetContext(ctx, &n, addUsageLists, accountID); err != nil {
			if !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("store: create list: %w", err)
			}
			plan, err := accountPlan(ctx, tx, accountID)
			if err != nil {
				return err
			}
			return &LimitError{Limit: "lists", Max: plan.MaxLists, UpgradeURL: plan.UpgradeURL}
		}
		return nil
	})
	if err != nil {
		return List{}, err
	}
	return l, nil
}

const selectList = `SELECT ` + listColumns + ` FROM lists WHERE account_id = $1 AND id = $2`

// List returns one list.
func (db *DB) List(ctx context.Context, accountID, id int64) (List, error) {
	var l List
	if err := db.GetContext(ctx, &l, selectList, accountID, id); err != nil {
		return List{}, notFound("list", err)
	}
	return l, nil
}

const selectLists = `SELECT ` + listColumns + ` FROM lists WHERE account_id = $1 ORDER BY lower(name), id LIMIT $2 OFFSET $3`

const countLists = `SELECT count(*) FROM lists WHERE account_id = $1`

// Lists lists an account's lists by name.
func (db *DB) Lists(ctx context.Context, accountID int64, p Page) ([]List, int, error) {
	var out []List
	var total int
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.SelectContext(ctx, &out, selectLists, accountID, p.PerPage, p.Offset()); err != nil {
			return fmt.Errorf("store: lists: %w", err)
		}
		if err := tx.GetContext(ctx, &total, countLists, accountID); err != nil {
			return fmt.Errorf("store: lists: %w", err)
		}
		return nil
	})
	return out, total, err
}

const lockList = `SELECT ` + listColumns + ` FROM lists WHERE account_id = $1 AND id = $2 FOR UPDATE`

const updateList = `UPDATE lists SET name = $3, color = $4, description = $5, double_opt_in = $6, updated_at = now()
WHERE account_id = $1 AND id = $2 RETURNING ` + listColumns

// UpdateList changes the given fields of a list.
func (db *DB) UpdateList(ctx context.Context, accountID int64, actor Actor, id int64, in ListInput) (List, error) {
	if err := in.Normalize(false); err != nil {
		return List{}, err
	}
	var l List
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var cur List
		if err := tx.GetContext(ctx, &cur, lockList, accountID, id); err != nil {
			return notFound("update list", err)
		}
		next := cur
		var changed []string
		setText(&changed, "name", &next.Name, in.Name)
		setText(&changed, "color", &next.Color, in.Color)
		setText(&changed, "description", &next.Description, in.Description)
		if in.DoubleOptIn != nil && *in.DoubleOptIn != cur.DoubleOptIn {
			next.DoubleOptIn = *in.DoubleOptIn
			changed = append(changed, "double_opt_in")
		}
		if len(changed) == 0 {
			l = cur
			return nil
		}
		if err := tx.GetContext(ctx, &l, updateList, accountID, id, next.Name, next.Color, next.Description, next.DoubleOptIn); err != nil {
			if isUniqueViolation(err) {
				return errListNameTaken()
			}
			return fmt.Errorf("store: update list: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "list.updated", ObjectType: ObjectList,
			ObjectID: id, Details: map[string]any{"changed": changed}})
	})
	if err != nil {
		return List{}, err
	}
	return l, nil
}

// leaveDeletedList moves the members' updated_at on (their lists changed, so
// an updated_after sync sees them again) and emits list.left for each of them
// in one statement, before the list and its memberships go: the payload is
// ListEventData with the contact as Contact.Data shows it after the change
// (its other lists), built in SQL so that a list of 200,000 members never
// passes through Go; times are RFC 3339 in Europe/Berlin with the offset, as
// EventTime writes them. Public ids are evt_ and 24 letters and digits as
// newEventID makes them, cut from the base64 of two random UUIDs.
const leaveDeletedList = `WITH touched AS (
  UPDATE contacts c SET updated_at = now()
  WHERE c.account_id = $1 AND c.id IN (SELECT contact_id FROM list_members WHERE account_id = $1 AND list_id = $2)
  RETURNING c.id, c.email, c.first_name, c.last_name, c.address, c.zip, c.city, c.phone, c.note, c.tags, c.status,
    c.source, c.custom_fields, c.doi_confirmed_at, c.created_at, c.updated_at
)
INSERT INTO events (account_id, public_id, name, payload)
SELECT $1, 'evt_' || left(translate(encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'base64'), '+/=', ''), 24),
  '` + EventListLeft + `',
  jsonb_build_object('list', jsonb_build_object('id', $2::bigint, 'name', $3::text), 'contact', jsonb_build_object(
    'id', t.id, 'email', t.email, 'first_name', t.first_name, 'last_name', t.last_name, 'address', t.address,
    'zip', t.zip, 'city', t.city, 'phone', t.phone, 'note', t.note, 'tags', to_jsonb(COALESCE(t.tags, '{}')),
    'status', t.status, 'source', t.source, 'custom_fields', COALESCE(t.custom_fields, '{}'),
    'doi_confirmed_at', to_char(t.doi_confirmed_at AT TIME ZONE 'Europe/Berlin', 'YYYY-MM-DD"T"HH24:MI:SS')
      || '+' || to_char((t.doi_confirmed_at AT TIME ZONE 'Europe/Berlin') - (t.doi_confirmed_at AT TIME ZONE 'UTC'), 'HH24:MI'),
    'created_at', to_char(t.created_at AT TIME ZONE 'Europe/Berlin', 'YYYY-MM-DD"T"HH24:MI:SS')
      || '+' || to_char((t.created_at AT TIME ZONE 'Europe/Berlin') - (t.created_at AT TIME ZONE 'UTC'), 'HH24:MI'),
    'updated_at', to_char(t.updated_at AT TIME ZONE 'Europe/Berlin', 'YYYY-MM-DD"T"HH24:MI:SS')
      || '+' || to_char((t.updated_at AT TIME ZONE 'Europe/Berlin') - (t.updated_at AT TIME ZONE 'UTC'), 'HH24:MI'),
    'lists', COALESCE((SELECT jsonb_agg(jsonb_build_object('id', l.id, 'name', l.name, 'color', l.color) ORDER BY m.list_id)
      FROM list_members m JOIN lists l ON l.id = m.list_id WHERE m.contact_id = t.id AND m.list_id <> $2), '[]')))
FROM touched t ORDER BY t.id`

const deleteList = `DELETE FROM lists WHERE account_id = $1 AND id = $2`

const decrementUsageLists = `UPDATE account_usage SET lists = greatest(lists - 1, 0) WHERE account_id = $1`

// DeleteList deletes a list and its memberships. Like every change of list
// membership it emits list.left for each member, set-based and in the delete's
// transaction (leaveDeletedList); BenchmarkDeleteList measures a list of
// 200,000 members.
func (db *DB) DeleteList(ctx context.Context, accountID int64, actor Actor, id int64) error {
	return db.retryTx(ctx, func(tx *sqlx.Tx) error {
		var cur List
		if err := tx.GetContext(ctx, &cur, lockList, accountID, id); err != nil {
			return notFound("delete list", err)
		}
		if _, err := tx.ExecContext(ctx, leaveDeletedList, accountID, id, cur.Name); err != nil {
			return fmt.Errorf("store: delete list: %w", err)
		}
		if _, err := tx.ExecContext(ctx, deleteList, accountID, id); err != nil {
			return fmt.Errorf("store: delete list: %w", err)
		}
		if err := LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "list.deleted", ObjectType: ObjectList,
			ObjectID: id, Details: map[string]any{"name": cur.Name, "members": cur.MemberCount}}); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, decrementUsageLists, accountID); err != nil {
			return fmt.Errorf("store: delete list: %w", err)
		}
		return nil
	})
}

// Outcomes of one entry of AddListMembers.
const (
	MemberAdded   = "added"
	MemberAlready = "already_member"
	MemberCreated = "created"
	MemberError   = "error"
)

// MemberEntry is the outcome of one entry of AddListMembers.
type MemberEntry struct {
	Index     int
	ContactID int64
	Email     string
	Result    string // added, already_member, created or error
	Err       error
}

// MemberResult is the outcome of AddListMembers, entry by entry and in totals.
type MemberResult struct {
	Entries                         []MemberEntry
	Added, Already, Created, Failed int
}

// AddListMembers adds contacts to a list (the list import): contacts named by
// id must exist; addresses without a contact become new contacts (source
// import) with the upsert's rules, so a list with double opt-in makes them
// pending and queues confirmation mails. Entries fail alone. At most MaxBatch
// entries (ids and emails together).
func (db *DB) AddListMembers(ctx context.Context, accountID int64, actor Actor, listID int64, contactIDs []int64, emails []string) (MemberResult, error) {
	if len(contactIDs)+len(emails) > MaxBatch {
		return MemberResult{}, Invalid("contact_ids", fmt.Sprintf("Höchstens %d Einträge pro Anfrage.", MaxBatch))
	}
	if _, err := db.List(ctx, accountID, listID); err != nil {
		return MemberResult{}, err
	}
	ops := make([]*contactOp, 0, len(contactIDs)+len(emails))
	for _, id := range contactIDs {
		op := &contactOp{byID: id, noCreate: true, in: ContactInput{ListIDs: []int64{listID}}}
		if id < 1 {
			op.inputErr = ErrNotFound
		}
		ops = append(ops, op)
	}
	for _, e := range emails {
		op := &contactOp{in: ContactInput{Email: e, ListIDs: []int64{listID}}, newSource: SourceImport}
		op.inputErr = op.in.Normalize()
		ops = append(ops, op)
	}
	if err := db.runOps(ctx, accountID, actor, ops, true); err != nil {
		return MemberResult{}, err
	}
	res := MemberResult{Entries: make([]MemberEntry, len(ops))}
	for i, op := range ops {
		e := MemberEntry{Index: i, ContactID: op.final.ID, Email: op.in.Email}
		if op.byID != 0 {
			e.ContactID = op.byID
			e.Email = op.final.Email
		}
		switch {
		case op.failed():
			e.Result, e.Err = MemberError, cmpErr(op.inputErr, op.err)
			res.Failed++
		case op.primary != nil:
			e.Result = MemberAlready
			res.Already++
		case op.created:
			e.Result = MemberCreated
			res.Created++
		case len(op.join) > 0:
			e.Result = MemberAdded
			res.Added++
		default:
			e.Result = MemberAlready
			res.Already++
		}
		res.Entries[i] = e
	}
	return res, nil
}

// RemoveListMember removes a contact from a list (event list.left); ErrNotFound
// when the list or contact does not exist or the contact is no member.
func (db *DB) RemoveListMember(ctx context.Context, accountID int64, actor Actor, listID, contactID int64) error {
	op := &contactOp{byID: contactID, noCreate: true, rmLists: []int64{listID}}
	_, err := db.single(ctx, accountID, actor, op)
	return err
}
