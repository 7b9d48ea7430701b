package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
)

// pageWindow is how many contacts, in sort order, ContactsUpTo walks for a
// page before it asks the filter's index instead: enough for any filter that
// matches one contact in a hundred; rarer ones have few matches, which their
// index finds and sorts quickly.
const pageWindow = 3000

// countWindow is how many contacts, in sort order, ContactsUpTo walks to
// count a filter's matches up to its cap before it asks the filter's index.
const countWindow = 20_000

// ContactPage is one page of the portal's contact table.
type ContactPage struct {
	Contacts []Contact
	// Total is the number of contacts the filter matches; with AtLeast the
	// filter matches more than Total (the count stopped there).
	Total   int
	AtLeast bool
	// More says that a next page follows.
	More bool
}

// ContactsUpTo lists one page of contacts like Contacts, but a filtered listing
// counts its matches only up to countCap: an exact count of a broad filter
// walks every match (tens of thousands of rows), which the portal's table must
// not wait for. The unfiltered and the per-list listing keep their exact,
// maintained totals; the portal asks for an exact count separately (Contacts).
func (db *DB) ContactsUpTo(ctx context.Context, accountID int64, f ContactFilter, p Page, countCap int) (ContactPage, error) {
	if err := f.Validate(); err != nil {
		return ContactPage{}, err
	}
	filtered := f.Status != "" || strings.TrimSpace(f.Tag) != "" || strings.TrimSpace(f.Query) != "" || f.hasConditions()
	if !filtered || f.UpdatedAfter != nil {
		cs, total, err := db.Contacts(ctx, accountID, f, p)
		return ContactPage{Contacts: cs, Total: total, More: p.Offset()+len(cs) < total}, err
	}
	if f.ListID != 0 {
		if _, err := db.List(ctx, accountID, f.ListID); err != nil {
			return ContactPage{}, err
		}
	}
	order, _ := sortOrder(f.Sort)
	cond, args := exportWhere(accountID, f, false)
	hit, _ := exportWhere(accountID, f, true) // the same arguments
	n := len(args)
	// Two ways to the page, both with one row more than the page (which tells
	// whether a next page follows). The planner reads a filter's matches through
	// its index (trigram, tags) and sorts them all, which for a common term is
	// every tenth contact; walking the sort index and filtering stops after a
	// few hundred rows instead. So first walk the newest window contacts in sort
	// order; only if they hold fewer matches than the page needs, ask the index.
	// (The window is filtered in its index order: a sort after the filter
	// would read all of it, and a join would be planned as a hash join.)
	inner := fmt.Sprintf(`SELECT w.id FROM (SELECT c.id, (%s) AS hit FROM contacts c WHERE c.account_id = $1 ORDER BY %s LIMIT %d) w
WHERE w.hit LIMIT $%d OFFSET $%d`, hit, order, pageWindow, n+1, n+2)
	full := fmt.Sprintf(`SELECT c.id FROM contacts c WHERE %s ORDER BY %s LIMIT $%d OFFSET $%d`, cond, order, n+1, n+2)
	pageSQL := func(ids string) string {
		return fmt.Sprintf(`SELECT %s, %s FROM (%s) page JOIN contacts c ON c.id = page.id ORDER BY %s`, contactColumns, contactLists, ids, order)
	}
	pageArgs := append(args[:n:n], p.PerPage+1, p.Offset())
	var out ContactPage
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		var err error
		if out.Contacts, err = queryContacts(ctx, tx, nil, true, pageSQL(inner), pageArgs...); err != nil {
			return fmt.Errorf("store: contact page: %w", err)
		}
		if len(out.Contacts) <= p.PerPage {
			if out.Contacts, err = queryContacts(ctx, tx, nil, true, pageSQL(full), pageArgs...); err != nil {
				return fmt.Errorf("store: contact page: %w", err)
			}
		}
		if len(out.Contacts) > p.PerPage {
			out.Contacts, out.More = out.Contacts[:p.PerPage], true
		}
		// The count the same way: a common term has countCap matches among
		// the newest countWindow contacts (a search's trigram index would
		// first collect all its matches: 300 ms for "schmidt" in a million);
		// only a rarer filter, whose index finds few, is counted through it.
		var w int
		q := fmt.Sprintf(`SELECT count(*) FROM (SELECT 1 FROM (SELECT (%s) AS hit FROM contacts c WHERE c.account_id = $1 ORDER BY %s LIMIT %d) w
WHERE w.hit LIMIT %d) x`, hit, order, countWindow, countCap+1)
		if err := tx.GetContext(ctx, &w, q, args[:n:n]...); err != nil {
			return fmt.Errorf("store: contact page: %w", err)
		}
		if w > countCap {
			out.Total, out.AtLeast = countCap, true
			return nil
		}
		if out.Total, out.AtLeast, err = countUpTo(ctx, tx, "contacts c", cond, args[:n:n], countCap); err != nil {
			return fmt.Errorf("store: contact page: %w", err)
		}
		return nil
	})
	if err != nil {
		return ContactPage{}, err
	}
	return out, nil
}
