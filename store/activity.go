package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Actor types of the activity log.
const (
	ActorKey    = "key"    // an API key; ID is the key's id
	ActorUser   = "user"   // a portal user; ID is the user's id
	ActorSystem = "system" // the service itself (workers, integrations); ID 0
	ActorPublic = "public" // a visitor of a public page (sign-up form, confirmation link); ID 0
)

// Actor is who makes a change. Every service that changes data takes one and
// records it in the activity log; the API passes Actor{Type: ActorKey, ID: key id}.
type Actor struct {
	Type string
	ID   int64
}

func (a Actor) idOrNil() *int64 {
	if a.ID == 0 {
		return nil
	}
	id := a.ID
	return &id
}

func (a Actor) valid() error {
	switch a.Type {
	case ActorKey, ActorUser, ActorSystem, ActorPublic:
		return nil
	}
	return fmt.Errorf("store: unknown actor type %q", a.Type)
}

// Object types of the activity log.
const (
	ObjectContact        = "contact"
	ObjectList           = "list"
	ObjectBlockedAddress = "blocked_address"
)

// Activity is a row of the activity log.
type Activity struct {
	ID         int64           `db:"id"`
	AccountID  int64           `db:"account_id"`
	ActorType  string          `db:"actor_type"`
	ActorID    *int64          `db:"actor_id"`
	Action     string          `db:"action"`
	ObjectType string          `db:"object_type"`
	ObjectID   *int64          `db:"object_id"`
	Details    json.RawMessage `db:"details"`
	CreatedAt  time.Time       `db:"created_at"`
}

// ActivityEntry is one activity to record: what happened to which object. Details
// is marshalled to a JSON object (nil: {}).
type ActivityEntry struct {
	Action     string
	ObjectType string
	ObjectID   int64 // 0: none
	Details    any
}

const insertActivities = `INSERT INTO activity_log (account_id, actor_type, actor_id, action, object_type, object_id, details)
SELECT $1, $2, $3, x.action, x.object_type, nullif(x.object_id, 0), x.details::jsonb
FROM unnest($4::text[], $5::text[], $6::bigint[], $7::text[]) WITH ORDINALITY AS x(action, object_type, object_id, details, n)
ORDER BY x.n`

// LogActivity records one activity inside tx.
func LogActivity(ctx context.Context, tx *sqlx.Tx, accountID int64, actor Actor, e ActivityEntry) error {
	return LogActivities(ctx, tx, accountID, actor, []ActivityEntry{e})
}

// LogActivities records several activities of one actor in one statement.
func LogActivities(ctx context.Context, tx *sqlx.Tx, accountID int64, actor Actor, entries []ActivityEntry) error {
	if len(entries) == 0 {
		return nil
	}
	if err := actor.valid(); err != nil {
		return err
	}
	actions, types, ids, details, err := activityArgs(entries)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, insertActivities, accountID, actor.Type, actor.idOrNil(), actions, types, ids, details); err != nil {
		return fmt.Errorf("store: log activity: %w", err)
	}
	return nil
}

// rawDetails are an activity's details marshalled already (compact JSON, as
// encoding/json writes it): the bulk path's 1,000 contact.created activities
// per request skip json.Marshal's reflection over a map each.
type rawDetails []byte

// MarshalJSON returns the details as they are.
func (r rawDetails) MarshalJSON() ([]byte, error) { return r, nil }

// activityArgs are the parameters $4 to $7 of insertActivities.
func activityArgs(entries []ActivityEntry) (actions, types pq.StringArray, ids pq.Int64Array, details pq.StringArray, err error) {
	actions = make(pq.StringArray, len(entries))
	types = make(pq.StringArray, len(entries))
	ids = make(pq.Int64Array, len(entries))
	details = make(pq.StringArray, len(entries))
	for i, e := range entries {
		d := "{}"
		if r, ok := e.Details.(rawDetails); ok {
			d = string(r)
		} else if e.Details != nil {
			b, err := json.Marshal(e.Details)
			if err != nil {
				return nil, nil, nil, nil, fmt.Errorf("store: activity %s: %w", e.Action, err)
			}
			d = string(b)
		}
		actions[i], types[i], ids[i], details[i] = e.Action, e.ObjectType, e.ObjectID, d
	}
	return actions, types, ids, details, nil
}

// ActivityFilter narrows GET /logs/activity; zero fields do not filter.
type ActivityFilter struct {
	ObjectType string
	ObjectID   int64
	Action     string
}

const activityColumns = `id, account_id, actor_type, actor_id, action, object_type, object_id, details, created_at`

// ActivityLog lists an account's activity log, newest first.
func (db *DB) ActivityLog(ctx context.Context, accountID int64, f ActivityFilter, p Page) ([]Activity, int, error) {
	cond, args := activityWhere(accountID, f)
	return db.activities(ctx, cond, args, p)
}

// activityWhere is the condition of ActivityLog's filter and its arguments.
func activityWhere(accountID int64, f ActivityFilter) (string, []any) {
	where := []string{"account_id = $1"}
	args := []any{accountID}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.ObjectType != "" {
		add("object_type = $%d", f.ObjectType)
	}
	if f.ObjectID != 0 {
		add("object_id = $%d", f.ObjectID)
	}
	if f.Action != "" {
		add("action = $%d", f.Action)
	}
	return strings.Join(where, " AND "), args
}

// ActivityLogCapped is ActivityLog for pages a person waits for: it counts at
// most maxCount entries (an exact count of a long log costs more than the page
// itself) and reports with capped whether there are more.
func (db *DB) ActivityLogCapped(ctx context.Context, accountID int64, f ActivityFilter, p Page, maxCount int) (acts []Activity, total int, capped bool, err error) {
	cond, args := activityWhere(accountID, f)
	if total, capped, err = countUpTo(ctx, db, "activity_log", cond, args, maxCount); err != nil {
		return nil, 0, false, fmt.Errorf("store: activity log: %w", err)
	}
	args = append(args, p.PerPage, p.Offset())
	q := fmt.Sprintf(`SELECT %s FROM activity_log WHERE %s ORDER BY id DESC LIMIT $%d OFFSET $%d`, activityColumns, cond, len(args)-1, len(args))
	if err := db.SelectContext(ctx, &acts, q, args...); err != nil {
		return nil, 0, false, fmt.Errorf("store: activity log: %w", err)
	}
	return acts, total, capped, nil
}

const contactExists = `SELECT EXISTS (SELECT 1 FROM contacts WHERE account_id = $1 AND id = $2)`

// ContactActivities lists what happened to a contact, newest first: its rows of
// the activity log (created, updated, list joined/left, unsubscribed, form sign-up,
// confirmed; later features add theirs with object type "contact").
func (db *DB) ContactActivities(ctx context.Context, accountID, contactID int64, p Page) ([]Activity, int, error) {
	var ok bool
	if err := db.GetContext(ctx, &ok, contactExists, accountID, contactID); err != nil {
		return nil, 0, fmt.Errorf("store: contact activities: %w", err)
	}
	if !ok {
		return nil, 0, ErrNotFound
	}
	acts, total, err := db.activities(ctx, "account_id = $1 AND object_type = 'contact' AND object_id = $2", []any{accountID, contactID}, p)
	if err != nil {
		return nil, 0, err
	}
	return acts, total, db.addCampaigns(ctx, accountID, acts)
}

// activityCampaign is the campaign a mail activity (email.sent, .opened,
// .clicked, .bounced) names, as its details show it.
type activityCampaign struct {
	ID      int64  `db:"id" json:"id"`
	Kind    string `db:"kind" json:"kind"`
	Name    string `db:"name" json:"name"`
	Subject string `db:"subject" json:"subject"`
}

// addCampaigns puts the campaign (id, kind, name, subject) into the details
// of the mail activities of a page, read in one query: the rows only record
// its id, and a contact's timeline should say which mail it was.
func (db *DB) addCampaigns(ctx context.Context, accountID int64, acts []Activity) error {
	want := map[int64][]int{}
	for i, a := range acts {
		if !strings.HasPrefix(a.Action, "email.") {
			continue
		}
		var d struct {
			CampaignID int64 `json:"campaign_id"`
		}
		if json.Unmarshal(a.Details, &d) == nil && d.CampaignID > 0 {
			want[d.CampaignID] = append(want[d.CampaignID], i)
		}
	}
	if len(want) == 0 {
		return nil
	}
	ids := make(pq.Int64Array, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	var cs []activityCampaign
	if err := db.SelectContext(ctx, &cs, `SELECT id, kind, name, subject FROM campaigns WHERE account_id = $1 AND id = ANY($2)`,
		accountID, ids); err != nil {
		return fmt.Errorf("store: activity campaigns: %w", err)
	}
	for _, c := range cs {
		for _, i := range want[c.ID] {
			var d map[string]any
			if err := json.Unmarshal(acts[i].Details, &d); err != nil || d == nil {
				continue
			}
			d["campaign"] = c
			b, err := json.Marshal(d)
			if err != nil {
				return fmt.Errorf("store: activity campaigns: %w", err)
			}
			acts[i].Details = b
		}
	}
	return nil
}

func (db *DB) activities(ctx context.Context, cond string, args []any, p Page) ([]Activity, int, error) {
	var total int
	if err := db.GetContext(ctx, &total, `SELECT count(*) FROM activity_log WHERE `+cond, args...); err != nil {
		return nil, 0, fmt.Errorf("store: activity log: %w", err)
	}
	args = append(args, p.PerPage, p.Offset())
	q := fmt.Sprintf(`SELECT %s FROM activity_log WHERE %s ORDER BY id DESC LIMIT $%d OFFSET $%d`,
		activityColumns, cond, len(args)-1, len(args))
	var out []Activity
	if err := db.SelectContext(ctx, &out, q, args...); err != nil {
		return nil, 0, fmt.Errorf("store: activity log: %w", err)
	}
	return out, total, nil
}

// ObjectRef names one object of the activity log.
type ObjectRef struct {
	Type string
	ID   int64
}

// selectExistingObjects keeps the given objects that still exist, each one
// index lookup by primary key (a page of the log names at most 25). Story
// emails, newsletters and single emails are campaigns; an object type
// without a table here (blocked addresses, fields) is never linked by id.
const selectExistingObjects = `SELECT x.type, x.id FROM unnest($2::text[], $3::bigint[]) AS x(type, id)
WHERE CASE x.type
  WHEN 'contact' THEN EXISTS (SELECT 1 FROM contacts WHERE account_id = $1 AND id = x.id)
  WHEN 'list' THEN EXISTS (SELECT 1 FROM lists WHERE account_id = $1 AND id = x.id)
  WHEN 'newsletter' THEN EXISTS (SELECT 1 FROM campaigns WHERE account_id = $1 AND id = x.id)
  WHEN 'email' THEN EXISTS (SELECT 1 FROM campaigns WHERE account_id = $1 AND id = x.id)
  WHEN 'story_email' THEN EXISTS (SELECT 1 FROM campaigns WHERE account_id = $1 AND id = x.id)
  WHEN 'form' THEN EXISTS (SELECT 1 FROM forms WHERE account_id = $1 AND id = x.id)
  WHEN 'webhook' THEN EXISTS (SELECT 1 FROM webhooks WHERE account_id = $1 AND id = x.id)
  WHEN 'template' THEN EXISTS (SELECT 1 FROM templates WHERE account_id = $1 AND id = x.id)
  WHEN 'sequence' THEN EXISTS (SELECT 1 FROM sequences WHERE account_id = $1 AND id = x.id)
  WHEN 'ab_test' THEN EXISTS (SELECT 1 FROM ab_tests WHERE account_id = $1 AND id = x.id)
  WHEN 'integration' THEN EXISTS (SELECT 1 FROM integrations WHERE account_id = $1 AND id = x.id)
  WHEN 'user' THEN EXISTS (SELECT 1 FROM users WHERE account_id = $1 AND id = x.id)
  ELSE false END`

// ExistingObjects reports which of the activities' objects still exist, so
// that the log links only to those.
func (db *DB) ExistingObjects(ctx context.Context, accountID int64, acts []Activity) (map[ObjectRef]bool, error) {
	out := map[ObjectRef]bool{}
	var types pq.StringArray
	var ids pq.Int64Array
	seen := map[ObjectRef]bool{}
	for _, a := range acts {
		if a.ObjectID == nil {
			continue
		}
		ref := ObjectRef{a.ObjectType, *a.ObjectID}
		if !seen[ref] {
			seen[ref] = true
			types, ids = append(types, ref.Type), append(ids, ref.ID)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.QueryxContext(ctx, selectExistingObjects, accountID, types, ids)
	if err != nil {
		return nil, fmt.Errorf("store: existing objects: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ref ObjectRef
		if err := rows.Scan(&ref.Type, &ref.ID); err != nil {
			return nil, fmt.Errorf("store: existing objects: %w", err)
		}
		out[ref] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: existing objects: %w", err)
	}
	return out, nil
}
