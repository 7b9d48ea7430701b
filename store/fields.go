package store

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Types of a custom contact field: how the portal shows and checks its values.
const (
	FieldText    = "text"
	FieldNumber  = "number"
	FieldDate    = "date" // an ISO date, 2026-12-24
	FieldBoolean = "boolean"
)

// FieldTypes are the types of custom fields, in menu order.
func FieldTypes() []string { return []string{FieldText, FieldNumber, FieldDate, FieldBoolean} }

// MaxContactFields bounds an account's field definitions: the placeholder
// picker and the settings page list them all, and an import with a new key per
// row must not grow the list without end. Beyond it the consumer adds no more
// keys, and creating one answers 422.
const MaxContactFields = 1000

// maxFieldLabelLen bounds a field's label.
const maxFieldLabelLen = 100

// ObjectField is the activity log's object type of a field definition (its
// details name the key: definitions have no numeric id).
const ObjectField = "field"

// OutboxConsumerFields names the outbox consumer that adds the keys of
// written contacts to contact_fields.
const OutboxConsumerFields = "fields"

// ContactField is the definition of one custom field of an account's contacts.
type ContactField struct {
	AccountID int64     `db:"account_id"`
	Key       string    `db:"key"`
	Label     string    `db:"label"`
	Type      string    `db:"type"`
	CreatedAt time.Time `db:"created_at"`
	UpdatedAt time.Time `db:"updated_at"`
}

// FieldInput is what a caller may write of a field definition; nil fields are
// not given. Key is only read on create: a key cannot be renamed, since the
// contacts' values and the mails' placeholders carry it.
type FieldInput struct {
	Key   *string
	Label *string
	Type  *string
}

// Normalize trims and checks the input; create requires a key.
func (in *FieldInput) Normalize(create bool) error {
	errs := Errs{}
	if create {
		switch {
		case in.Key == nil || *in.Key == "":
			errs.Add("key", "Bitte einen Schlüssel angeben.")
		case !validCustomKey(*in.Key):
			errs.Add("key", fmt.Sprintf("Der Schlüssel ist ungültig: 1 bis %d Zeichen aus a–z, 0–9, _ und -.", maxCustomKeyLen))
		case builtinPlaceholder(*in.Key):
			errs.Add("key", fmt.Sprintf("%q ist ein eingebauter Platzhalter und kann kein eigenes Feld sein.", *in.Key))
		}
	} else if in.Key != nil {
		errs.Add("key", "Der Schlüssel lässt sich nicht ändern; legen Sie ein neues Feld an.")
	}
	normText(errs, "label", in.Label, maxFieldLabelLen)
	if in.Label != nil && *in.Label == "" {
		errs.Add("label", "Bitte eine Bezeichnung angeben.")
	}
	if in.Type != nil && !slices.Contains(FieldTypes(), *in.Type) {
		errs.Add("type", "Bitte einen Typ wählen: text, number, date oder boolean.")
	}
	return errs.Err()
}

const fieldColumns = `account_id, key, label, type, created_at, updated_at`

// selectFields lists the definitions by label; the limit is MaxContactFields,
// which no account exceeds, so the list is whole.
const selectFields = `SELECT ` + fieldColumns + ` FROM contact_fields WHERE account_id = $1
ORDER BY lower(label), key LIMIT $2 OFFSET $3`

const countFields = `SELECT count(*) FROM contact_fields WHERE account_id = $1`

// ContactFields returns every field definition of the account, by label.
func (db *DB) ContactFields(ctx context.Context, accountID int64) ([]ContactField, error) {
	out := []ContactField{}
	if err := db.SelectContext(ctx, &out, selectFields, accountID, MaxContactFields, 0); err != nil {
		return nil, fmt.Errorf("store: contact fields: %w", err)
	}
	return out, nil
}

// ContactFieldsPage returns one page of the account's field definitions and
// their number.
func (db *DB) ContactFieldsPage(ctx context.Context, accountID int64, p Page) ([]ContactField, int, error) {
	out := make([]ContactField, 0, p.capacity())
	var total int
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.SelectContext(ctx, &out, selectFields, accountID, p.PerPage, p.Offset()); err != nil {
			return fmt.Errorf("store: contact fields: %w", err)
		}
		if err := tx.GetContext(ctx, &total, countFields, accountID); err != nil {
			return fmt.Errorf("store: contact fields: %w", err)
		}
		return nil
	})
	return out, total, err
}

const selectFieldsFor = `SELECT ` + fieldColumns + ` FROM contact_fields WHERE account_id = $1 AND key = ANY($2)`

// ContactFieldsFor returns the definitions of the given keys (a contact's), by
// key; keys without one are missing from the map.
func (db *DB) ContactFieldsFor(ctx context.Context, accountID int64, keys []string) (map[string]ContactField, error) {
	out := map[string]ContactField{}
	if len(keys) == 0 {
		return out, nil
	}
	var rows []ContactField
	if err := db.SelectContext(ctx, &rows, selectFieldsFor, accountID, pq.StringArray(keys)); err != nil {
		return nil, fmt.Errorf("store: contact fields: %w", err)
	}
	for _, f := range rows {
		out[f.Key] = f
	}
	return out, nil
}

const selectField = `SELECT ` + fieldColumns + ` FROM contact_fields WHERE account_id = $1 AND key = $2`

// ContactField returns one field definition.
func (db *DB) ContactField(ctx context.Context, accountID int64, key string) (ContactField, error) {
	var f ContactField
	if err := db.GetContext(ctx, &f, selectField, accountID, key); err != nil {
		return ContactField{}, notFound("contact field", err)
	}
	return f, nil
}

// insertField adds a definition while the account has fewer than
// MaxContactFields; no row back means the key exists or the limit is reached.
// The account row is locked first, so that two creates cannot both pass the
// count.
const insertField = `WITH acct AS (SELECT id FROM accounts WHERE id = $1 FOR UPDATE)
INSERT INTO contact_fields (account_id, key, label, type)
SELECT $1, $2, $3, $4 FROM acct
WHERE (SELECT count(*) FROM contact_fields WHERE account_id = $1) < $5
ON CONFLICT (account_id, key) DO NOTHING
RETURNING ` + fieldColumns

const fieldExists = `SELECT EXISTS (SELECT 1 FROM contact_fields WHERE account_id = $1 AND key = $2)`

// CreateContactField defines a custom field; the label defaults to the key and
// the type to text. A key that is defined already is a validation error.
func (db *DB) CreateContactField(ctx context.Context, accountID int64, actor Actor, in FieldInput) (ContactField, error) {
	if err := in.Normalize(true); err != nil {
		return ContactField{}, err
	}
	label, typ := *in.Key, FieldText
	if in.Label != nil {
		label = *in.Label
	}
	if in.Type != nil {
		typ = *in.Type
	}
	var f ContactField
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var rows []ContactField
		if err := tx.SelectContext(ctx, &rows, insertField, accountID, *in.Key, label, typ, MaxContactFields); err != nil {
			return fmt.Errorf("store: create contact field: %w", err)
		}
		if len(rows) == 0 {
			var exists bool
			if err := tx.GetContext(ctx, &exists, fieldExists, accountID, *in.Key); err != nil {
				return fmt.Errorf("store: create contact field: %w", err)
			}
			if exists {
				return Invalid("key", "Ein Feld mit diesem Schlüssel gibt es schon.")
			}
			return Invalid("key", fmt.Sprintf("Höchstens %d eigene Felder pro Konto.", MaxContactFields))
		}
		f = rows[0]
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "field.created", ObjectType: ObjectField,
			Details: map[string]any{"key": f.Key, "label": f.Label, "type": f.Type}})
	})
	if err != nil {
		return ContactField{}, err
	}
	return f, nil
}

const lockField = `SELECT ` + fieldColumns + ` FROM contact_fields WHERE account_id = $1 AND key = $2 FOR UPDATE`

const updateField = `UPDATE contact_fields SET label = $3, type = $4, updated_at = now()
WHERE account_id = $1 AND key = $2 RETURNING ` + fieldColumns

// FieldChange is one changed attribute of an activity entry: its old and new
// value, which the activity log shows as "old → new".
type FieldChange struct {
	From any `json:"from"`
	To   any `json:"to"`
}

// UpdateContactField changes the label or type of a definition; the contacts'
// values stay as they are (the type decides how they are shown).
func (db *DB) UpdateContactField(ctx context.Context, accountID int64, actor Actor, key string, in FieldInput) (ContactField, error) {
	if err := in.Normalize(false); err != nil {
		return ContactField{}, err
	}
	var f ContactField
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var cur ContactField
		if err := tx.GetContext(ctx, &cur, lockField, accountID, key); err != nil {
			return notFound("update contact field", err)
		}
		changes := map[string]FieldChange{}
		next := cur
		if in.Label != nil && *in.Label != cur.Label {
			changes["label"], next.Label = FieldChange{cur.Label, *in.Label}, *in.Label
		}
		if in.Type != nil && *in.Type != cur.Type {
			changes["type"], next.Type = FieldChange{cur.Type, *in.Type}, *in.Type
		}
		if len(changes) == 0 {
			f = cur
			return nil
		}
		if err := tx.GetContext(ctx, &f, updateField, accountID, key, next.Label, next.Type); err != nil {
			return fmt.Errorf("store: update contact field: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "field.updated", ObjectType: ObjectField,
			Details: map[string]any{"key": key, "changes": changes}})
	})
	if err != nil {
		return ContactField{}, err
	}
	return f, nil
}

const deleteField = `DELETE FROM contact_fields WHERE account_id = $1 AND key = $2 RETURNING label`

// DeleteContactField removes a definition. The contacts keep their values (a
// scan of every contact is no request's work); a contact written again with
// the key brings the definition back, as text labelled with its key.
func (db *DB) DeleteContactField(ctx context.Context, accountID int64, actor Actor, key string) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var label string
		if err := tx.GetContext(ctx, &label, deleteField, accountID, key); err != nil {
			return notFound("delete contact field", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "field.deleted", ObjectType: ObjectField,
			Details: map[string]any{"key": key, "label": label}})
	})
}

// insertSeenFields adds the keys the consumer saw that the account has not
// defined yet, typed by the value seen, up to MaxContactFields. Existing
// definitions are never touched: their label and type are the user's.
const insertSeenFields = `INSERT INTO contact_fields (account_id, key, label, type)
SELECT $1, k.key, k.key, k.type
FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS k(key, type, n)
WHERE NOT EXISTS (SELECT 1 FROM contact_fields f WHERE f.account_id = $1 AND f.key = k.key)
ORDER BY k.n
LIMIT greatest(0, $4 - (SELECT count(*) FROM contact_fields WHERE account_id = $1))
ON CONFLICT (account_id, key) DO NOTHING`

// fieldEventPayload is the field consumer's ConsumerOptions.Payload: of a
// contact event only its custom fields (fieldEvent), and nothing of one
// without them, which the consumer then passes over. An import or a stream
// of sign-ups without custom fields had every payload read and decoded here.
const fieldEventPayload = `CASE WHEN e.payload->'contact'->'custom_fields' <> '{}'
  THEN jsonb_build_object('contact', jsonb_build_object('custom_fields', e.payload->'contact'->'custom_fields')) END`

// fieldEvent is what the consumer reads of a contact event's payload.
type fieldEvent struct {
	Contact struct {
		CustomFields map[string]json.RawMessage `json:"custom_fields"`
	} `json:"contact"`
}

// isoDate is the form of a date value that makes a new key a date field.
var isoDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// seenFieldType guesses a new key's type from the first value seen.
func seenFieldType(v json.RawMessage) string {
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return FieldText
	}
	switch x := x.(type) {
	case float64:
		return FieldNumber
	case bool:
		return FieldBoolean
	case string:
		if isoDate.MatchString(x) {
			return FieldDate
		}
	}
	return FieldText
}

// HandleFieldEvents is the handler of the consumer OutboxConsumerFields: it
// adds the custom-field keys of created and updated contacts to the account's
// definitions, in the transaction that moves its cursor. One statement per
// batch (up to 500 events), whatever the batch holds.
func HandleFieldEvents(ctx context.Context, tx *sqlx.Tx, events []StoredEvent) error {
	if len(events) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var keys, types pq.StringArray
	for _, e := range events {
		if e.Name != EventContactCreated && e.Name != EventContactUpdated {
			continue
		}
		var ev fieldEvent
		if err := json.Unmarshal(e.Payload, &ev); err != nil {
			continue // not a contact payload we understand: nothing to add
		}
		for _, k := range sortedFieldKeys(ev.Contact.CustomFields) {
			if seen[k] || !validCustomKey(k) {
				continue
			}
			seen[k] = true
			keys, types = append(keys, k), append(types, seenFieldType(ev.Contact.CustomFields[k]))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, insertSeenFields, events[0].AccountID, keys, types, MaxContactFields); err != nil {
		return fmt.Errorf("store: seen contact fields: %w", err)
	}
	return nil
}

// sortedFieldKeys orders a payload's keys, so that which keys make it under
// the limit does not depend on map order.
func sortedFieldKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// NewFieldConsumer is the outbox consumer that keeps contact_fields up to date
// with the keys contacts are written with (HandleFieldEvents); serve runs it
// among the workers, and any number of processes share it.
func (db *DB) NewFieldConsumer(opts ConsumerOptions) *Consumer {
	opts.Names = []string{EventContactCreated, EventContactUpdated} // what HandleFieldEvents reads
	opts.Payload = fieldEventPayload
	return db.NewConsumer(OutboxConsumerFields, HandleFieldEvents, opts)
}
