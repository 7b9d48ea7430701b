package store

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// ObjectTemplate is the activity log's object type of templates.
const ObjectTemplate = "template"

// Template is an account's mail template. One whose HTML holds the slot
// {{content}} / {{inhalt}} is a layout (IsLayout): mails naming it are
// rendered into the slot at send time. Any other is a starting point that a
// new mail copies.
type Template struct {
	ID        int64     `db:"id"`
	AccountID int64     `db:"account_id"`
	Key       string    `db:"key"`
	Name      string    `db:"name"`
	Subject   string    `db:"subject"`
	Preheader string    `db:"preheader"`
	HTML      string    `db:"html"`
	CreatedAt time.Time `db:"created_at"`
	UpdatedAt time.Time `db:"updated_at"`
}

// layoutSlot matches the content slot of a layout, in any case and spacing.
var layoutSlot = regexp.MustCompile(`(?i)\{\{\s*(content|inhalt)\s*\}\}`)

// IsLayout reports whether html has the content slot.
func IsLayout(html string) bool { return layoutSlot.MatchString(html) }

// LayoutSlot returns the byte range of the first content slot in html, or
// (-1, -1) without one.
func LayoutSlot(html string) (start, end int) {
	loc := layoutSlot.FindStringIndex(html)
	if loc == nil {
		return -1, -1
	}
	return loc[0], loc[1]
}

// IsLayout reports whether the template is a layout.
func (t Template) IsLayout() bool { return IsLayout(t.HTML) }

// TemplateInput is what a caller may write of a template; nil fields are not
// given (PATCH keeps them).
type TemplateInput struct {
	Key       *string
	Name      *string
	Subject   *string
	Preheader *string
	HTML      *string
}

var templateKeyRe = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// ValidTemplateKey reports whether key is a template key (a-z0-9_-, 1 to 64).
func ValidTemplateKey(key string) bool { return templateKeyRe.MatchString(key) }

// Normalize trims and checks the input; create asks for key and name.
func (in *TemplateInput) Normalize(create bool) error {
	errs := Errs{}
	if in.Key != nil {
		*in.Key = strings.TrimSpace(*in.Key)
		if !ValidTemplateKey(*in.Key) {
			errs.Add("key", "Der Schlüssel besteht aus 1 bis 64 Zeichen a–z, 0–9, _ und -.")
		}
	} else if create {
		errs.Add("key", "Bitte einen Schlüssel angeben.")
	}
	normLine(errs, "name", in.Name, maxNameLen)
	if (in.Name == nil && create) || (in.Name != nil && *in.Name == "") {
		errs.Add("name", "Bitte einen Namen angeben.")
	}
	normLine(errs, "subject", in.Subject, maxSubjectLen)
	normLine(errs, "preheader", in.Preheader, maxPreheaderLen)
	if in.HTML != nil {
		if IsRichText(*in.HTML) { // written in the rich-text editor: sanitised as every mail's
			clean := SanitizeRichText(*in.HTML)
			in.HTML = &clean
		}
		if !utf8.ValidString(*in.HTML) {
			errs.Add("html", "Der Inhalt ist kein gültiges UTF-8.")
		}
		if len(*in.HTML) > MaxHTMLBytes {
			errs.Add("html", "Der Inhalt ist größer als 2 MB.")
		}
	}
	return errs.Err()
}

func (in TemplateInput) apply(t *Template) []string {
	var changed []string
	setText(&changed, "key", &t.Key, in.Key)
	setText(&changed, "name", &t.Name, in.Name)
	setText(&changed, "subject", &t.Subject, in.Subject)
	setText(&changed, "preheader", &t.Preheader, in.Preheader)
	setText(&changed, "html", &t.HTML, in.HTML)
	return changed
}

const templateColumns = `id, account_id, key, name, subject, preheader, html, created_at, updated_at`

const insertTemplate = `INSERT INTO templates (account_id, key, name, subject, preheader, html)
VALUES ($1, $2, $3, $4, $5, $6) RETURNING ` + templateColumns

func errTemplateKeyTaken(key string) error {
	return &ConflictError{Reason: "duplicate_key", Message: fmt.Sprintf("Eine Vorlage mit dem Schlüssel „%s“ gibt es schon.", key)}
}

// CreateTemplate stores a new template; a key the account already uses is a
// 409 conflict (duplicate_key).
func (db *DB) CreateTemplate(ctx context.Context, accountID int64, actor Actor, in TemplateInput) (Template, error) {
	if err := in.Normalize(true); err != nil {
		return Template{}, err
	}
	var t Template
	in.apply(&t)
	var out Template
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &out, insertTemplate, accountID, t.Key, t.Name, t.Subject, t.Preheader, t.HTML); err != nil {
			if isUniqueViolation(err) {
				return errTemplateKeyTaken(t.Key)
			}
			return fmt.Errorf("store: create template: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "template.created", ObjectType: ObjectTemplate,
			ObjectID: out.ID, Details: map[string]any{"key": out.Key}})
	})
	return out, err
}

const selectTemplate = `SELECT ` + templateColumns + ` FROM templates WHERE account_id = $1 AND id = $2`

// Template returns one template.
func (db *DB) Template(ctx context.Context, accountID, id int64) (Template, error) {
	var t Template
	if err := db.GetContext(ctx, &t, selectTemplate, accountID, id); err != nil {
		return Template{}, notFound("template", err)
	}
	return t, nil
}

const selectTemplateByKey = `SELECT ` + templateColumns + ` FROM templates WHERE account_id = $1 AND key = $2`

// TemplateByKey returns the account's template with key.
func (db *DB) TemplateByKey(ctx context.Context, accountID int64, key string) (Template, error) {
	return templateByKey(ctx, db, accountID, key)
}

func templateByKey(ctx context.Context, q sqlx.QueryerContext, accountID int64, key string) (Template, error) {
	var t Template
	if err := sqlx.GetContext(ctx, q, &t, selectTemplateByKey, accountID, key); err != nil {
		return Template{}, notFound("template by key", err)
	}
	return t, nil
}

const selectTemplatePage = `SELECT ` + templateColumns + ` FROM templates WHERE account_id = $1 ORDER BY name, id LIMIT $2 OFFSET $3`

const countTemplates = `SELECT count(*) FROM templates WHERE account_id = $1`

// Templates lists an account's templates by name.
func (db *DB) Templates(ctx context.Context, accountID int64, p Page) ([]Template, int, error) {
	out := make([]Template, 0, p.capacity())
	var total int
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.SelectContext(ctx, &out, selectTemplatePage, accountID, p.PerPage, p.Offset()); err != nil {
			return fmt.Errorf("store: templates: %w", err)
		}
		if err := tx.GetContext(ctx, &total, countTemplates, accountID); err != nil {
			return fmt.Errorf("store: templates: %w", err)
		}
		return nil
	})
	return out, total, err
}

const lockTemplate = `SELECT ` + templateColumns + ` FROM templates WHERE account_id = $1 AND id = $2 FOR UPDATE`

const updateTemplate = `UPDATE templates SET key = $2, name = $3, subject = $4, preheader = $5, html = $6, updated_at = now()
WHERE id = $1 RETURNING ` + templateColumns

// templateInUse is whether a scheduled or sending mail names the key: its
// layout is applied when it is sent, so the template must stay.
const templateInUse = `SELECT EXISTS (SELECT 1 FROM campaigns WHERE account_id = $1 AND template_key = $2
  AND status IN ('scheduled', 'sending', 'paused'))`

func errTemplateInUse() error {
	return &ConflictError{Reason: "in_use", Message: "Die Vorlage wird von einer geplanten oder laufenden Sendung verwendet."}
}

// UpdateTemplate changes the given fields. Renaming the key of a template
// that a scheduled or sending mail uses is a 409 in_use; a taken key is 409
// duplicate_key.
func (db *DB) UpdateTemplate(ctx context.Context, accountID int64, actor Actor, id int64, in TemplateInput) (Template, error) {
	if err := in.Normalize(false); err != nil {
		return Template{}, err
	}
	var out Template
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var t Template
		if err := tx.GetContext(ctx, &t, lockTemplate, accountID, id); err != nil {
			return notFound("template", err)
		}
		oldKey := t.Key
		changed := in.apply(&t)
		if len(changed) == 0 {
			out = t
			return nil
		}
		if t.Key != oldKey {
			var used bool
			if err := tx.GetContext(ctx, &used, templateInUse, accountID, oldKey); err != nil {
				return fmt.Errorf("store: template in use: %w", err)
			}
			if used {
				return errTemplateInUse()
			}
		}
		if err := tx.GetContext(ctx, &out, updateTemplate, id, t.Key, t.Name, t.Subject, t.Preheader, t.HTML); err != nil {
			if isUniqueViolation(err) {
				return errTemplateKeyTaken(t.Key)
			}
			return fmt.Errorf("store: update template: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "template.updated", ObjectType: ObjectTemplate,
			ObjectID: id, Details: map[string]any{"changed": changed}})
	})
	return out, err
}

// DeleteTemplate deletes a template unless a scheduled or sending mail uses
// it (409 in_use).
func (db *DB) DeleteTemplate(ctx context.Context, accountID int64, actor Actor, id int64) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var t Template
		if err := tx.GetContext(ctx, &t, lockTemplate, accountID, id); err != nil {
			return notFound("template", err)
		}
		var used bool
		if err := tx.GetContext(ctx, &used, templateInUse, accountID, t.Key); err != nil {
			return fmt.Errorf("store: template in use: %w", err)
		}
		if used {
			return errTemplateInUse()
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM templates WHERE id = $1`, id); err != nil {
			return fmt.Errorf("store: delete template: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "template.deleted", ObjectType: ObjectTemplate,
			ObjectID: id, Details: map[string]any{"key": t.Key}})
	})
}

// CopyLibraryTemplate copies the library design key into the account as a new
// template. Its key is the design's key, or the key with -2, -3 … when the
// account has that one already. ErrNotFound for an unknown design.
func (db *DB) CopyLibraryTemplate(ctx context.Context, accountID int64, actor Actor, key string) (Template, error) {
	d, ok := LibraryDesign(key)
	if !ok {
		return Template{}, ErrNotFound
	}
	var out Template
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var taken pq.StringArray
		if err := tx.SelectContext(ctx, &taken, `SELECT key FROM templates WHERE account_id = $1 AND (key = $2 OR key LIKE $3)`,
			accountID, d.Key, d.Key+"-%"); err != nil {
			return fmt.Errorf("store: copy template: %w", err)
		}
		newKey := d.Key
		for n := 2; containsString(taken, newKey); n++ {
			newKey = fmt.Sprintf("%s-%d", d.Key, n)
		}
		if err := tx.GetContext(ctx, &out, insertTemplate, accountID, newKey, d.Name, d.Subject, d.Preheader, d.HTML); err != nil {
			return fmt.Errorf("store: copy template: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "template.copied", ObjectType: ObjectTemplate,
			ObjectID: out.ID, Details: map[string]any{"key": out.Key, "from": d.Key}})
	})
	return out, err
}
