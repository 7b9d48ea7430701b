package store

import (
	"context"
	"fmt"
	"strings"
)

// exportBatch is how many contacts ExportContacts reads per query.
const exportBatch = 1000

// exportWhere is the condition of the contact listing's filters (ListID, Status,
// Tag, Query) on contacts c, with its arguments after $1 (the account). It
// mirrors Contacts in contacts.go, which builds it inline with its paging.
//
// perRow asks for a list membership test that probes the index once per contact
// (a scalar subquery): for a condition evaluated on a few hundred contacts
// walked in order, where the planner would otherwise hash every member of the
// list first.
func exportWhere(accountID int64, f ContactFilter, perRow bool) (string, []any) {
	where := []string{"c.account_id = $1"}
	args := []any{accountID}
	add := func(cond string, v ...any) { where, args = addCond(where, args, cond, v...) }
	switch {
	case f.ListID != 0 && perRow:
		add("coalesce((SELECT true FROM list_members m WHERE m.list_id = $%d AND m.contact_id = c.id), false)", f.ListID)
	case f.ListID != 0:
		add("EXISTS (SELECT 1 FROM list_members m WHERE m.list_id = $%d AND m.contact_id = c.id)", f.ListID)
	}
	if f.Status != "" {
		add("c.status = $%d", f.Status)
	}
	if t := strings.TrimSpace(f.Tag); t != "" {
		add("c.tags @> ARRAY[$%d]::text[]", t)
	}
	if strings.TrimSpace(f.Query) != "" {
		cond, v := contactSearch(f.Query)
		add(cond, v...)
	}
	where, args = filterConds(f, where, args)
	return strings.Join(where, " AND "), args
}

// ExportCustomKeys returns the custom field names the contacts of a filter use,
// sorted: the export's extra columns.
func (db *DB) ExportCustomKeys(ctx context.Context, accountID int64, f ContactFilter) ([]string, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	cond, args := exportWhere(accountID, f, false)
	var keys []string
	q := `SELECT DISTINCT k FROM contacts c CROSS JOIN LATERAL jsonb_object_keys(c.custom_fields) AS k
WHERE ` + cond + ` AND c.custom_fields <> '{}' ORDER BY k`
	if err := db.SelectContext(ctx, &keys, q, args...); err != nil {
		return nil, fmt.Errorf("store: export keys: %w", err)
	}
	return keys, nil
}

// ExportContacts calls fn with the contacts of a filter (with their lists), in
// id order, exportBatch at a time: an export of any size holds one batch in
// memory, and no query stays open while the caller writes.
func (db *DB) ExportContacts(ctx context.Context, accountID int64, f ContactFilter, fn func([]Contact) error) error {
	if err := f.Validate(); err != nil {
		return err
	}
	if f.ListID != 0 {
		if _, err := db.List(ctx, accountID, f.ListID); err != nil {
			return err
		}
	}
	cond, args := exportWhere(accountID, f, false)
	n := len(args)
	q := fmt.Sprintf(`SELECT %s, %s FROM contacts c WHERE %s AND c.id > $%d ORDER BY c.id LIMIT %d`,
		contactColumns, contactLists, cond, n+1, exportBatch)
	var after int64
	for {
		rows, err := queryContacts(ctx, db, nil, true, q, append(args[:n:n], after)...)
		if err != nil {
			return fmt.Errorf("store: export contacts: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		if err := fn(rows); err != nil {
			return err
		}
		if len(rows) < exportBatch {
			return nil
		}
		after = rows[len(rows)-1].ID
	}
}
