package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// ObjectForm is the activity log's object type of a sign-up form.
const ObjectForm = "form"

// FormTokenLen is the length of a form's public token (A-Za-z0-9).
const FormTokenLen = 24

// Optional visible fields of a sign-up form besides the address (always shown).
const (
	FormFieldFirstName = "first_name"
	FormFieldLastName  = "last_name"
	FormFieldPhone     = "phone"
	FormFieldZip       = "zip"
	FormFieldCity      = "city"
)

// formFields returns the optional fields a form may show, in the order a form
// shows them.
func formFields() []string {
	return []string{FormFieldFirstName, FormFieldLastName, FormFieldPhone, FormFieldZip, FormFieldCity}
}

// Defaults and bounds of a form's settings.
const (
	DefaultMinFillSeconds = 3
	maxMinFillSeconds     = 3600
	maxFormListIDs        = 20
	maxSuccessMessage     = 1000
)

// Form is a sign-up form of an account. Its public Token is what the embedded
// snippet and the hosted page post to (POST /v1/subscribe/{token}).
type Form struct {
	ID        int64  `db:"id"`
	AccountID int64  `db:"account_id"`
	Name      string `db:"name"`
	Token     string `db:"token"`
	// ListIDs are the lists a sign-up joins; lists deleted since are left out.
	ListIDs     pq.Int64Array  `db:"list_ids"`
	Tags        pq.StringArray `db:"tags"`
	DoubleOptIn bool           `db:"double_opt_in"`
	// Fields are the visible optional fields (FormField…) besides the address.
	Fields          pq.StringArray `db:"fields"`
	SuccessRedirect string         `db:"success_redirect"`
	SuccessMessage  string         `db:"success_message"`
	ProofOfWork     bool           `db:"proof_of_work"`
	// MinFillSeconds is the minimum time between rendering and posting the form; 0
	// turns the signed stamp off (server-to-server integrations).
	MinFillSeconds int       `db:"min_fill_seconds"`
	Submissions    int64     `db:"submissions"`
	CreatedAt      time.Time `db:"created_at"`
	UpdatedAt      time.Time `db:"updated_at"`
}

// HasField reports whether the form shows the optional field name.
func (f Form) HasField(name string) bool { return slices.Contains(f.Fields, name) }

// FormInput is what a caller may write of a form; nil fields are not given.
// ListIDs, Tags and Fields replace the current ones when given.
type FormInput struct {
	Name            *string
	ListIDs         *[]int64
	Tags            *[]string
	DoubleOptIn     *bool
	Fields          *[]string
	SuccessRedirect *string
	SuccessMessage  *string
	ProofOfWork     *bool
	MinFillSeconds  *int
}

// Normalize trims and checks the input (pure: whether the lists exist is checked
// with the account's data); create requires a name.
func (in *FormInput) Normalize(create bool) error {
	errs := Errs{}
	normText(errs, "name", in.Name, 100)
	if in.Name != nil && *in.Name == "" || create && in.Name == nil {
		errs.Add("name", "Bitte einen Namen angeben.")
	}
	if in.ListIDs != nil {
		ids := normListIDs(errs, "list_ids", *in.ListIDs)
		if ids == nil {
			ids = []int64{}
		}
		if len(ids) > maxFormListIDs {
			errs.Add("list_ids", fmt.Sprintf("Höchstens %d Listen pro Formular.", maxFormListIDs))
		}
		in.ListIDs = &ids
	}
	if in.Tags != nil {
		tags := normTags(errs, "tags", *in.Tags)
		if tags == nil {
			tags = []string{}
		}
		in.Tags = &tags
	}
	if in.Fields != nil {
		known := formFields()
		fields := []string{}
		for _, f := range *in.Fields {
			f = strings.TrimSpace(f)
			if !slices.Contains(known, f) {
				errs.Add("fields", "Erlaubt sind first_name, last_name, phone, zip und city (die E-Mail-Adresse ist immer dabei).")
				continue
			}
			if !slices.Contains(fields, f) {
				fields = append(fields, f)
			}
		}
		// Shown in the fixed order of formFields, whatever order was given.
		slices.SortFunc(fields, func(a, b string) int {
			return slices.Index(known, a) - slices.Index(known, b)
		})
		in.Fields = &fields
	}
	if in.SuccessRedirect != nil {
		*in.SuccessRedirect = strings.TrimSpace(*in.SuccessRedirect)
		if r := *in.SuccessRedirect; r != "" && !validWebURL(r) {
			errs.Add("success_redirect", "Bitte eine vollständige http(s)-Adresse angeben, z. B. https://example.com/danke, oder leer lassen.")
		}
	}
	normText(errs, "success_message", in.SuccessMessage, maxSuccessMessage)
	if in.MinFillSeconds != nil && (*in.MinFillSeconds < 0 || *in.MinFillSeconds > maxMinFillSeconds) {
		errs.Add("min_fill_seconds", fmt.Sprintf("Bitte eine ganze Zahl von 0 bis %d angeben (0 schaltet die Prüfung ab).", maxMinFillSeconds))
	}
	return errs.Err()
}

// formColumns reads a form; list_ids keeps only lists that still exist, in the
// order the form names them (an array has no foreign key).
const formColumns = `f.id, f.account_id, f.name, f.token,
  ARRAY(SELECT l.id FROM lists l WHERE l.account_id = f.account_id AND l.id = ANY(f.list_ids)
        ORDER BY array_position(f.list_ids, l.id)) AS list_ids,
  f.tags, f.double_opt_in, f.fields, f.success_redirect, f.success_message, f.proof_of_work,
  f.min_fill_seconds, f.submissions, f.created_at, f.updated_at`

const countAccountLists = `SELECT count(*) FROM lists WHERE account_id = $1 AND id = ANY($2)`

// checkFormLists makes sure every list id belongs to the account.
func checkFormLists(ctx context.Context, q sqlx.QueryerContext, accountID int64, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	var n int
	if err := sqlx.GetContext(ctx, q, &n, countAccountLists, accountID, pq.Int64Array(ids)); err != nil {
		return fmt.Errorf("store: form lists: %w", err)
	}
	if n != len(ids) {
		return Invalid("list_ids", "Mindestens eine dieser Listen gibt es nicht.")
	}
	return nil
}

const insertForm = `INSERT INTO forms AS f (account_id, name, token, list_ids, tags, double_opt_in, fields, success_redirect,
  success_message, proof_of_work, min_fill_seconds)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
RETURNING ` + formColumns

// CreateForm creates a sign-up form with a new public token. Defaults: double
// opt-in on, the field first_name, min_fill_seconds 3, no proof of work.
func (db *DB) CreateForm(ctx context.Context, accountID int64, actor Actor, in FormInput) (Form, error) {
	if err := in.Normalize(true); err != nil {
		return Form{}, err
	}
	f := Form{Name: *in.Name, ListIDs: pq.Int64Array{}, Tags: pq.StringArray{}, DoubleOptIn: true,
		Fields: pq.StringArray{FormFieldFirstName}, MinFillSeconds: DefaultMinFillSeconds}
	applyFormInput(&f, in)
	var out Form
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if err := checkFormLists(ctx, tx, accountID, f.ListIDs); err != nil {
			return err
		}
		if err := tx.GetContext(ctx, &out, insertForm, accountID, f.Name, RandomString(FormTokenLen), f.ListIDs, f.Tags,
			f.DoubleOptIn, f.Fields, f.SuccessRedirect, f.SuccessMessage, f.ProofOfWork, f.MinFillSeconds); err != nil {
			return fmt.Errorf("store: create form: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "form.created", ObjectType: ObjectForm,
			ObjectID: out.ID, Details: map[string]any{"name": out.Name}})
	})
	if err != nil {
		return Form{}, err
	}
	return out, nil
}

// applyFormInput sets the given fields on f and names those that changed.
func applyFormInput(f *Form, in FormInput) []string {
	var changed []string
	setText(&changed, "name", &f.Name, in.Name)
	if in.ListIDs != nil && !slices.Equal(*in.ListIDs, []int64(f.ListIDs)) {
		f.ListIDs = slices.Clone(*in.ListIDs)
		changed = append(changed, "list_ids")
	}
	if in.Tags != nil && !slices.Equal(*in.Tags, []string(f.Tags)) {
		f.Tags = slices.Clone(*in.Tags)
		changed = append(changed, "tags")
	}
	if in.DoubleOptIn != nil && *in.DoubleOptIn != f.DoubleOptIn {
		f.DoubleOptIn = *in.DoubleOptIn
		changed = append(changed, "double_opt_in")
	}
	if in.Fields != nil && !slices.Equal(*in.Fields, []string(f.Fields)) {
		f.Fields = slices.Clone(*in.Fields)
		changed = append(changed, "fields")
	}
	setText(&changed, "success_redirect", &f.SuccessRedirect, in.SuccessRedirect)
	setText(&changed, "success_message", &f.SuccessMessage, in.SuccessMessage)
	if in.ProofOfWork != nil && *in.ProofOfWork != f.ProofOfWork {
		f.ProofOfWork = *in.ProofOfWork
		changed = append(changed, "proof_of_work")
	}
	if in.MinFillSeconds != nil && *in.MinFillSeconds != f.MinFillSeconds {
		f.MinFillSeconds = *in.MinFillSeconds
		changed = append(changed, "min_fill_seconds")
	}
	return changed
}

const selectForm = `SELECT ` + formColumns + ` FROM forms f WHERE f.account_id = $1 AND f.id = $2`

// Form returns one form of the account.
func (db *DB) Form(ctx context.Context, accountID, id int64) (Form, error) {
	var f Form
	if err := db.GetContext(ctx, &f, selectForm, accountID, id); err != nil {
		return Form{}, notFound("form", err)
	}
	return f, nil
}

const selectForms = `SELECT ` + formColumns + ` FROM forms f WHERE f.account_id = $1 ORDER BY f.id DESC LIMIT $2 OFFSET $3`

const countForms = `SELECT count(*) FROM forms WHERE account_id = $1`

// Forms lists an account's forms, newest first.
func (db *DB) Forms(ctx context.Context, accountID int64, p Page) ([]Form, int, error) {
	var out []Form
	var total int
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.SelectContext(ctx, &out, selectForms, accountID, p.PerPage, p.Offset()); err != nil {
			return fmt.Errorf("store: forms: %w", err)
		}
		if err := tx.GetContext(ctx, &total, countForms, accountID); err != nil {
			return fmt.Errorf("store: forms: %w", err)
		}
		return nil
	})
	return out, total, err
}

const lockForm = `SELECT ` + formColumns + ` FROM forms f WHERE f.account_id = $1 AND f.id = $2 FOR UPDATE`

const updateForm = `UPDATE forms AS f SET name = $3, list_ids = $4, tags = $5, double_opt_in = $6, fields = $7,
  success_redirect = $8, success_message = $9, proof_of_work = $10, min_fill_seconds = $11, updated_at = now()
WHERE f.account_id = $1 AND f.id = $2 RETURNING ` + formColumns

// UpdateForm changes the given fields of a form; its token stays.
func (db *DB) UpdateForm(ctx context.Context, accountID int64, actor Actor, id int64, in FormInput) (Form, error) {
	if err := in.Normalize(false); err != nil {
		return Form{}, err
	}
	var out Form
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var cur Form
		if err := tx.GetContext(ctx, &cur, lockForm, accountID, id); err != nil {
			return notFound("update form", err)
		}
		if in.ListIDs != nil {
			if err := checkFormLists(ctx, tx, accountID, *in.ListIDs); err != nil {
				return err
			}
		}
		next := cur
		changed := applyFormInput(&next, in)
		if len(changed) == 0 {
			out = cur
			return nil
		}
		if err := tx.GetContext(ctx, &out, updateForm, accountID, id, next.Name, next.ListIDs, next.Tags, next.DoubleOptIn,
			next.Fields, next.SuccessRedirect, next.SuccessMessage, next.ProofOfWork, next.MinFillSeconds); err != nil {
			return fmt.Errorf("store: update form: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "form.updated", ObjectType: ObjectForm,
			ObjectID: id, Details: map[string]any{"changed": changed}})
	})
	if err != nil {
		return Form{}, err
	}
	return out, nil
}

const deleteForm = `DELETE FROM forms WHERE account_id = $1 AND id = $2 RETURNING name`

// DeleteForm deletes a form; its token stops working at once. Contacts that
// signed up through it stay.
func (db *DB) DeleteForm(ctx context.Context, accountID int64, actor Actor, id int64) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var name string
		if err := tx.GetContext(ctx, &name, deleteForm, accountID, id); err != nil {
			return notFound("delete form", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "form.deleted", ObjectType: ObjectForm,
			ObjectID: id, Details: map[string]any{"name": name}})
	})
}

// PublicForm is a form as the public pages see it: with the name of its account,
// which the hosted page shows, and whether one of its lists asks for double opt-in.
type PublicForm struct {
	Form
	AccountName string `db:"account_name"`
	// PrivacyURL is the account's privacy policy (account settings), linked
	// under the form; empty: none given.
	PrivacyURL string `db:"privacy_url"`
	// ListsDoubleOptIn: a target list has double opt-in, so a sign-up is
	// confirmed by mail even when the form's own flag is off.
	ListsDoubleOptIn bool `db:"lists_double_opt_in"`
}

// ConfirmsByMail reports whether a new sign-up through the form is pending until
// confirmed by mail.
func (f PublicForm) ConfirmsByMail() bool { return f.DoubleOptIn || f.ListsDoubleOptIn }

const selectFormByToken = `SELECT ` + formColumns + `, a.name AS account_name,
  coalesce((SELECT x.privacy_url FROM account_settings x WHERE x.account_id = f.account_id), '') AS privacy_url,
  EXISTS (SELECT 1 FROM lists l WHERE l.account_id = f.account_id AND l.id = ANY(f.list_ids) AND l.double_opt_in) AS lists_double_opt_in
FROM forms f JOIN accounts a ON a.id = f.account_id
WHERE f.token = $1 AND a.blocked_at IS NULL`

// FormByToken finds a form by its public token. It is the one lookup across
// accounts: a visitor has nothing but the token (24 random characters, ~143
// bits, unguessable), and every query after it filters on the form's
// AccountID. A form of a blocked account is not found.
func (db *DB) FormByToken(ctx context.Context, token string) (PublicForm, error) {
	if len(token) != FormTokenLen {
		return PublicForm{}, ErrNotFound
	}
	var f PublicForm
	if err := db.GetContext(ctx, &f, selectFormByToken, token); err != nil {
		return PublicForm{}, notFound("form by token", err)
	}
	return f, nil
}
