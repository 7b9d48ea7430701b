package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// Segments are saved contact filters. A segment's conditions ARE a
// ContactFilter (stored as its JSON form), so the portal's filter, the export,
// bulk actions and newsletter audiences read one type and one SQL builder
// (filterConds); there is no second filter language.

// Operators of a custom-field condition.
const (
	FieldEquals   = "equals"   // the value as text equals (numbers compare by their JSON text)
	FieldContains = "contains" // case-insensitive substring
	FieldSet      = "set"      // the key is present with a non-empty value
	FieldGreater  = "gt"       // numeric greater than
	FieldLess     = "lt"       // numeric less than
)

// maxFieldConditions bounds the custom-field conditions of one filter.
const maxFieldConditions = 20

// FieldCondition is one condition on a contact's custom field.
type FieldCondition struct {
	Key   string     `json:"key"`
	Op    string     `json:"op"`
	Value FieldValue `json:"value,omitempty"`
}

// FieldValue is a condition's value: JSON may give it as a string or a
// number; it is kept as text (a number in its shortest form).
type FieldValue string

// UnmarshalJSON takes a string or a number.
func (v *FieldValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = FieldValue(s)
		return nil
	}
	if string(b) == "null" {
		*v = ""
		return nil
	}
	var f json.Number
	if err := json.Unmarshal(b, &f); err != nil {
		return errors.New("value must be a string or a number")
	}
	*v = FieldValue(f.String())
	return nil
}

// hasConditions reports whether f has conditions beyond list, status, tag and
// search: custom fields or date ranges.
func (f ContactFilter) hasConditions() bool {
	return len(f.Fields) > 0 || f.CreatedFrom != nil || f.CreatedTo != nil || f.UpdatedFrom != nil || f.UpdatedTo != nil
}

// Filtered reports whether f narrows the contacts at all (sorting aside).
func (f ContactFilter) Filtered() bool {
	return f.ListID != 0 || f.Status != "" || strings.TrimSpace(f.Tag) != "" || strings.TrimSpace(f.Query) != "" ||
		f.UpdatedAfter != nil || f.hasConditions()
}

// validateConditions checks the custom-field conditions and the ranges.
func (f *ContactFilter) validateConditions(errs Errs) {
	if len(f.Fields) > maxFieldConditions {
		errs.Add("fields", fmt.Sprintf("Höchstens %d Bedingungen für Zusatzfelder.", maxFieldConditions))
	}
	for i := range f.Fields {
		c := &f.Fields[i]
		field := fmt.Sprintf("fields.%d", i)
		c.Key = strings.TrimSpace(c.Key)
		switch {
		case c.Key == "":
			errs.Add(field+".key", "Bitte den Namen des Zusatzfelds angeben.")
		case len(c.Key) > 100 || strings.ContainsRune(c.Key, 0):
			errs.Add(field+".key", "Der Name des Zusatzfelds ist ungültig (höchstens 100 Zeichen).")
		}
		if strings.ContainsRune(string(c.Value), 0) || len(c.Value) > 1000 {
			errs.Add(field+".value", "Der Wert ist ungültig (höchstens 1000 Zeichen).")
		}
		switch c.Op {
		case FieldSet:
			c.Value = ""
		case FieldEquals, FieldContains:
			if strings.TrimSpace(string(c.Value)) == "" {
				errs.Add(field+".value", "Bitte einen Wert angeben.")
			}
		case FieldGreater, FieldLess:
			if _, err := strconv.ParseFloat(strings.TrimSpace(string(c.Value)), 64); err != nil {
				errs.Add(field+".value", "Bitte eine Zahl angeben.")
			}
		default:
			errs.Add(field+".op", "Erlaubt sind equals, contains, set, gt und lt.")
		}
	}
	for _, r := range []struct {
		name     string
		from, to *time.Time
	}{{"created", f.CreatedFrom, f.CreatedTo}, {"updated", f.UpdatedFrom, f.UpdatedTo}} {
		if r.from != nil && r.to != nil && !r.to.After(*r.from) {
			errs.Add(r.name+"_to", "Das Ende muss nach dem Anfang liegen.")
		}
	}
}

// numericField matches a custom field's text that reads as a decimal number;
// only such values take part in gt/lt (a cast of anything else would fail).
const numericField = `'^\s*-?[0-9]+(\.[0-9]+)?\s*$'`

// filterConds appends the SQL of f's custom-field and range conditions (alias
// c for contacts) to where, numbering their arguments after args. List,
// status, tag and search are written by the listing's callers (Contacts and
// exportWhere) so that each keeps the form its index needs.
func filterConds(f ContactFilter, where []string, args []any) ([]string, []any) {
	add := func(cond string, v ...any) { where, args = addCond(where, args, cond, v...) }
	for _, c := range f.Fields {
		switch c.Op {
		case FieldEquals:
			add("c.custom_fields ->> $%d = $%d", c.Key, strings.TrimSpace(string(c.Value)))
		case FieldContains:
			add("lower(c.custom_fields ->> $%d) LIKE $%d", c.Key, likePattern(string(c.Value)))
		case FieldSet:
			add("coalesce(c.custom_fields ->> $%d, '') <> ''", c.Key)
		case FieldGreater, FieldLess:
			op := ">"
			if c.Op == FieldLess {
				op = "<"
			}
			add("(CASE WHEN (c.custom_fields ->> $%[1]d) ~ "+numericField+" THEN (c.custom_fields ->> $%[1]d)::numeric END) "+op+" $%[2]d::numeric",
				c.Key, strings.TrimSpace(string(c.Value)))
		}
	}
	if f.CreatedFrom != nil {
		add("c.created_at >= $%d", *f.CreatedFrom)
	}
	if f.CreatedTo != nil {
		add("c.created_at < $%d", *f.CreatedTo)
	}
	if f.UpdatedFrom != nil {
		add("c.updated_at >= $%d", *f.UpdatedFrom)
	}
	if f.UpdatedTo != nil {
		add("c.updated_at < $%d", *f.UpdatedTo)
	}
	return where, args
}

// SegmentFilter is the part of a ContactFilter a segment keeps: no sort, no
// sync cursor.
func SegmentFilter(f ContactFilter) ContactFilter {
	f.Sort, f.UpdatedAfter, f.AfterID = "", nil, 0
	return f
}

// Segment is a saved contact filter.
type Segment struct {
	ID        int64
	AccountID int64
	Name      string
	Filter    ContactFilter
	CreatedAt time.Time
	UpdatedAt time.Time
}

type segmentRow struct {
	ID        int64     `db:"id"`
	AccountID int64     `db:"account_id"`
	Name      string    `db:"name"`
	Filter    []byte    `db:"filter"`
	CreatedAt time.Time `db:"created_at"`
	UpdatedAt time.Time `db:"updated_at"`
}

func (r segmentRow) segment() (Segment, error) {
	s := Segment{ID: r.ID, AccountID: r.AccountID, Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if err := json.Unmarshal(r.Filter, &s.Filter); err != nil {
		return Segment{}, fmt.Errorf("store: segment %d filter: %w", r.ID, err)
	}
	return s, nil
}

// SegmentInput is what a caller may write of a segment; nil fields are not
// given (PATCH keeps them).
type SegmentInput struct {
	Name   *string
	Filter *ContactFilter
}

// Normalize trims and checks the input.
func (in *SegmentInput) Normalize(create bool) error {
	errs := Errs{}
	normLine(errs, "name", in.Name, maxNameLen)
	if in.Name != nil && *in.Name == "" {
		errs.Add("name", "Bitte einen Namen angeben.")
	}
	if create && in.Name == nil {
		errs.Add("name", "Bitte einen Namen angeben.")
	}
	if in.Filter != nil {
		f := SegmentFilter(*in.Filter)
		if err := f.Validate(); err != nil {
			var ve *ValidationError
			if errors.As(err, &ve) {
				for k, v := range ve.Fields {
					errs.Add("filter."+k, v)
				}
			} else {
				return err
			}
		}
		f.Sort = ""
		in.Filter = &f
	}
	return errs.Err()
}

const segmentColumns = `id, account_id, name, filter, created_at, updated_at`

const insertSegment = `INSERT INTO segments (account_id, name, filter) VALUES ($1, $2, $3)
RETURNING ` + segmentColumns

const selectSegment = `SELECT ` + segmentColumns + ` FROM segments WHERE account_id = $1 AND id = $2`

const lockSegment = selectSegment + ` FOR UPDATE`

const selectSegments = `SELECT ` + segmentColumns + ` FROM segments WHERE account_id = $1 ORDER BY name, id LIMIT $2 OFFSET $3`

const countSegments = `SELECT count(*) FROM segments WHERE account_id = $1`

const updateSegment = `UPDATE segments SET name = $3, filter = $4, updated_at = now() WHERE account_id = $1 AND id = $2
RETURNING ` + segmentColumns

const deleteSegment = `DELETE FROM segments WHERE account_id = $1 AND id = $2`

// segmentInUse finds a newsletter that will still read the segment: one that
// is scheduled or sending (a draft may lose its segment).
const segmentInUse = `SELECT name FROM campaigns WHERE account_id = $1 AND segment_id = $2
  AND status IN ('scheduled', 'sending', 'paused') ORDER BY id LIMIT 1`

// Object type of segments in the activity log.
const ObjectSegment = "segment"

// errSegmentName is the 409 of a name the account already uses.
var errSegmentName = &ConflictError{Reason: "name_taken", Message: "Es gibt schon ein Segment mit diesem Namen."}

// CreateSegment saves a filter under a name.
func (db *DB) CreateSegment(ctx context.Context, accountID int64, actor Actor, in SegmentInput) (Segment, error) {
	if err := in.Normalize(true); err != nil {
		return Segment{}, err
	}
	f := ContactFilter{}
	if in.Filter != nil {
		f = *in.Filter
	}
	var out Segment
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if err := checkFilterList(ctx, tx, accountID, f); err != nil {
			return err
		}
		b, err := json.Marshal(f)
		if err != nil {
			return fmt.Errorf("store: create segment: %w", err)
		}
		var r segmentRow
		if err := tx.GetContext(ctx, &r, insertSegment, accountID, *in.Name, b); err != nil {
			if isUniqueViolation(err) {
				return errSegmentName
			}
			return fmt.Errorf("store: create segment: %w", err)
		}
		if out, err = r.segment(); err != nil {
			return err
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "segment.created", ObjectType: ObjectSegment,
			ObjectID: out.ID, Details: map[string]any{"name": out.Name}})
	})
	return out, err
}

// checkFilterList checks that the list a filter names exists.
func checkFilterList(ctx context.Context, tx *sqlx.Tx, accountID int64, f ContactFilter) error {
	if f.ListID == 0 {
		return nil
	}
	return checkListIDs(ctx, tx, accountID, "filter.list_id", []int64{f.ListID})
}

// Segment returns one segment.
func (db *DB) Segment(ctx context.Context, accountID, id int64) (Segment, error) {
	return segmentOn(ctx, db, accountID, id)
}

func segmentOn(ctx context.Context, q sqlx.QueryerContext, accountID, id int64) (Segment, error) {
	var r segmentRow
	if err := sqlx.GetContext(ctx, q, &r, selectSegment, accountID, id); err != nil {
		return Segment{}, notFound("segment", err)
	}
	return r.segment()
}

// Segments lists an account's segments by name.
func (db *DB) Segments(ctx context.Context, accountID int64, p Page) ([]Segment, int, error) {
	var rows []segmentRow
	var total int
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.SelectContext(ctx, &rows, selectSegments, accountID, p.PerPage, p.Offset()); err != nil {
			return fmt.Errorf("store: segments: %w", err)
		}
		if err := tx.GetContext(ctx, &total, countSegments, accountID); err != nil {
			return fmt.Errorf("store: segments: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	out := make([]Segment, 0, len(rows))
	for _, r := range rows {
		s, err := r.segment()
		if err != nil {
			return nil, 0, err
		}
		out = append(out, s)
	}
	return out, total, nil
}

// UpdateSegment changes a segment's name or conditions. A newsletter that is
// sending or scheduled reads the new conditions when its send starts.
func (db *DB) UpdateSegment(ctx context.Context, accountID int64, actor Actor, id int64, in SegmentInput) (Segment, error) {
	if err := in.Normalize(false); err != nil {
		return Segment{}, err
	}
	var out Segment
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var r segmentRow
		if err := tx.GetContext(ctx, &r, lockSegment, accountID, id); err != nil {
			return notFound("segment", err)
		}
		cur, err := r.segment()
		if err != nil {
			return err
		}
		var changed []string
		if in.Name != nil && *in.Name != cur.Name {
			cur.Name = *in.Name
			changed = append(changed, "name")
		}
		if in.Filter != nil {
			if err := checkFilterList(ctx, tx, accountID, *in.Filter); err != nil {
				return err
			}
			cur.Filter = *in.Filter
			changed = append(changed, "filter")
		}
		b, err := json.Marshal(cur.Filter)
		if err != nil {
			return fmt.Errorf("store: update segment: %w", err)
		}
		if err := tx.GetContext(ctx, &r, updateSegment, accountID, id, cur.Name, b); err != nil {
			if isUniqueViolation(err) {
				return errSegmentName
			}
			return fmt.Errorf("store: update segment: %w", err)
		}
		if out, err = r.segment(); err != nil {
			return err
		}
		if len(changed) == 0 {
			return nil
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "segment.updated", ObjectType: ObjectSegment,
			ObjectID: id, Details: map[string]any{"name": out.Name, "changed": changed}})
	})
	return out, err
}

// DeleteSegment deletes a segment; one that a scheduled, sending or paused
// newsletter still reads is a *ConflictError (reason in_use). Drafts that
// named it lose it (their audience falls back to their lists).
func (db *DB) DeleteSegment(ctx context.Context, accountID int64, actor Actor, id int64) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var r segmentRow
		if err := tx.GetContext(ctx, &r, lockSegment, accountID, id); err != nil {
			return notFound("segment", err)
		}
		var name string
		switch err := tx.GetContext(ctx, &name, segmentInUse, accountID, id); {
		case err == nil:
			return &ConflictError{Reason: "in_use", Message: fmt.Sprintf("Der Newsletter „%s“ ist geplant oder im Versand und verwendet dieses Segment.", name)}
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("store: delete segment: %w", err)
		}
		if _, err := tx.ExecContext(ctx, deleteSegment, accountID, id); err != nil {
			return fmt.Errorf("store: delete segment: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "segment.deleted", ObjectType: ObjectSegment,
			ObjectID: id, Details: map[string]any{"name": r.Name}})
	})
}

// SegmentContacts lists one page of a segment's contacts (sorted by sort, as
// the contact listing) with the exact number of matches.
func (db *DB) SegmentContacts(ctx context.Context, accountID, id int64, sort string, p Page) ([]Contact, int, error) {
	s, err := db.Segment(ctx, accountID, id)
	if err != nil {
		return nil, 0, err
	}
	f := s.Filter
	f.Sort = sort
	return db.Contacts(ctx, accountID, f, p)
}

// segmentAudience is who a newsletter with a segment goes to: the subscribed
// contacts matching the segment's filter and, when the newsletter has lists,
// members of one of them (the segment narrows the lists); b.email is set for a
// blocked address. Its arguments: $1 the account, then the filter's, then the
// lists ($lists). The send and the count before it share it.
func segmentAudience(accountID int64, f ContactFilter) (from string, args []any, lists int) {
	cond, args := exportWhere(accountID, f, false)
	args = append(args, nil) // placeholder for the lists, set by the caller
	lists = len(args)
	return fmt.Sprintf(`FROM contacts c
  LEFT JOIN blocked_addresses b ON b.account_id = $1 AND b.email = c.email
  WHERE %s AND c.status = 'subscribed'
    AND (cardinality($%d::bigint[]) = 0 OR EXISTS (SELECT 1 FROM list_members m WHERE m.contact_id = c.id AND m.list_id = ANY($%d)))`,
		cond, lists, lists), args, lists
}

// Segment is the newsletter's segment id, 0 for none.
func (c Campaign) Segment() int64 {
	if c.SegmentID == nil {
		return 0
	}
	return *c.SegmentID
}

// checkSegmentID returns a ValidationError on segment_id when the segment is
// not the account's.
func checkSegmentID(ctx context.Context, q sqlx.QueryerContext, accountID int64, id *int64) error {
	if id == nil {
		return nil
	}
	if _, err := segmentOn(ctx, q, accountID, *id); err != nil {
		if errors.Is(err, ErrNotFound) {
			return Invalid("segment_id", fmt.Sprintf("Das Segment %d gibt es nicht.", *id))
		}
		return err
	}
	return nil
}

// insertSegmentRecipients queues a newsletter's segment audience (read now,
// inside the start's transaction), like insertListRecipients.
func insertSegmentRecipients(ctx context.Context, tx *sqlx.Tx, c Campaign) (StartResult, error) {
	var res StartResult
	s, err := segmentOn(ctx, tx, c.AccountID, *c.SegmentID)
	if err != nil {
		return res, err
	}
	from, args, lists := segmentAudience(c.AccountID, s.Filter)
	args[lists-1] = c.ListIDs
	args = append(args, c.ID)
	q := fmt.Sprintf(`WITH ins AS (
  INSERT INTO campaign_recipients (account_id, campaign_id, contact_id, email, status, error)
  SELECT $1, $%d, c.id, c.email,
    CASE WHEN b.email IS NULL THEN 'queued' ELSE 'skipped' END,
    CASE WHEN b.email IS NULL THEN NULL ELSE 'blocked' END
  %s
  ORDER BY c.id
  RETURNING status)
SELECT count(*) FILTER (WHERE status = 'queued') AS queued, count(*) FILTER (WHERE status = 'skipped') AS skipped FROM ins`, len(args), from)
	if err := tx.QueryRowxContext(ctx, q, args...).Scan(&res.Queued, &res.Skipped); err != nil {
		return res, fmt.Errorf("store: queue segment recipients: %w", err)
	}
	return res, nil
}

// CampaignAudience counts whom a newsletter would go to now, by the rule its
// send uses: its segment (narrowed by its lists, if any) or its lists.
func (db *DB) CampaignAudience(ctx context.Context, c Campaign) (StartResult, error) {
	if c.SegmentID == nil {
		return db.NewsletterAudience(ctx, c.AccountID, c.ListIDs)
	}
	var res StartResult
	s, err := db.Segment(ctx, c.AccountID, *c.SegmentID)
	if err != nil {
		return res, err
	}
	from, args, lists := segmentAudience(c.AccountID, s.Filter)
	args[lists-1] = c.ListIDs
	q := `SELECT count(*) FILTER (WHERE b.email IS NULL) AS queued, count(*) FILTER (WHERE b.email IS NOT NULL) AS skipped ` + from
	if err := db.QueryRowxContext(ctx, q, args...).Scan(&res.Queued, &res.Skipped); err != nil {
		return res, fmt.Errorf("store: segment audience: %w", err)
	}
	return res, nil
}
