package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lib/pq"
	"github.com/pressly/goose/v3"
)

// emailFormVersion is the migration that brings addresses stored before the
// one normalisation (email.go) to their new form. It is written in Go, not
// in migrations/, because the IDNA conversion has no PostgreSQL counterpart;
// it takes the next free number after the SQL migrations.
const emailFormVersion = 20

// emailFormMigration rewrites stored addresses whose form ParseEmail changes:
// contacts, blocked addresses and users. Addresses stored before were
// trimmed and lower-cased, so only the ones with a non-ASCII character can
// change (an internationalised domain to its IDNA form, a full-width
// character to its NFKC form); octet_length <> char_length finds them. An
// address that ParseEmail refuses now (an invisible character, say) stays
// as it is, so nothing is lost, and NormalizeEmail still finds it. Where the
// new form already exists in the same account (müller@exämple.de beside
// müller@xn--exmple-cua.de), a contact or user keeps its old form, since
// merging two contacts is a decision for a person; a blocked duplicate is
// dropped, since the address stays blocked either way.
func emailFormMigration() *goose.Migration {
	return goose.NewGoMigration(emailFormVersion, &goose.GoFunc{RunTx: migrateEmailForms}, &goose.GoFunc{RunTx: func(context.Context, *sql.Tx) error { return nil }})
}

// Statements of emailFormMigration. Rows whose address has a non-ASCII
// character are the only ones whose form can change.
const (
	selectNonASCIIContacts = `SELECT id, account_id, email FROM contacts WHERE octet_length(email) <> char_length(email) ORDER BY id`
	updateContactEmails    = `UPDATE contacts c SET email = x.new FROM unnest($1::bigint[], $2::text[]) AS x(id, new)
WHERE c.id = x.id AND NOT EXISTS (SELECT 1 FROM contacts o WHERE o.account_id = c.account_id AND o.email = x.new)`

	selectNonASCIIBlocked = `SELECT 0, account_id, email FROM blocked_addresses WHERE octet_length(email) <> char_length(email)
ORDER BY created_at, email`
	deleteBlockedShadowed = `DELETE FROM blocked_addresses b USING unnest($1::bigint[], $2::text[], $3::text[]) AS x(acct, old, new)
WHERE b.account_id = x.acct AND b.email = x.old
  AND EXISTS (SELECT 1 FROM blocked_addresses o WHERE o.account_id = x.acct AND o.email = x.new)`
	deleteBlockedEmails = `DELETE FROM blocked_addresses b USING unnest($1::bigint[], $2::text[]) AS x(acct, old)
WHERE b.account_id = x.acct AND b.email = x.old`
	updateBlockedEmails = `UPDATE blocked_addresses b SET email = x.new FROM unnest($1::bigint[], $2::text[], $3::text[]) AS x(acct, old, new)
WHERE b.account_id = x.acct AND b.email = x.old`

	selectNonASCIIUsers = `SELECT id, 0, email FROM users WHERE octet_length(email) <> char_length(email) ORDER BY id`
	updateUserEmails    = `UPDATE users u SET email = x.new FROM unnest($1::bigint[], $2::text[]) AS x(id, new)
WHERE u.id = x.id AND NOT EXISTS (SELECT 1 FROM users o WHERE lower(o.email) = lower(x.new))`
)

// emailChange is one stored address whose form changes.
type emailChange struct {
	id, account int64
	old, new    string
}

// emailChanges reads the rows of sel (id, account, address) whose address
// changes, split into the first row of each new form per account (first in
// sel's order) and the rows that would repeat a form already taken by one
// of them.
func emailChanges(ctx context.Context, tx *sql.Tx, sel string) (first, repeat []emailChange, err error) {
	rows, err := tx.QueryContext(ctx, sel)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	type key struct {
		account int64
		email   string
	}
	taken := map[key]bool{}
	for rows.Next() {
		var c emailChange
		if err := rows.Scan(&c.id, &c.account, &c.old); err != nil {
			return nil, nil, err
		}
		n, perr := ParseEmail(c.old)
		if perr != nil || n == c.old {
			continue
		}
		c.new = n
		if k := (key{c.account, n}); taken[k] {
			repeat = append(repeat, c)
		} else {
			taken[k] = true
			first = append(first, c)
		}
	}
	return first, repeat, rows.Err()
}

func columns(cs []emailChange) (ids, accounts pq.Int64Array, old, repl pq.StringArray) {
	for _, c := range cs {
		ids, accounts = append(ids, c.id), append(accounts, c.account)
		old, repl = append(old, c.old), append(repl, c.new)
	}
	return ids, accounts, old, repl
}

func migrateEmailForms(ctx context.Context, tx *sql.Tx) error {
	// Contacts and users: the first of each new form moves unless the form
	// is taken; the others keep their address.
	for _, s := range []struct{ what, sel, update string }{
		{"contact", selectNonASCIIContacts, updateContactEmails},
		{"user", selectNonASCIIUsers, updateUserEmails},
	} {
		first, _, err := emailChanges(ctx, tx, s.sel)
		if err != nil {
			return fmt.Errorf("store: migrate %s addresses: %w", s.what, err)
		}
		ids, _, _, repl := columns(first)
		if len(ids) == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, s.update, ids, repl); err != nil {
			return fmt.Errorf("store: migrate %s addresses: %w", s.what, err)
		}
	}
	// Blocked addresses: a row whose new form is blocked already, or is
	// taken by an earlier row, goes; the rest move.
	first, repeat, err := emailChanges(ctx, tx, selectNonASCIIBlocked)
	if err != nil {
		return fmt.Errorf("store: migrate blocked addresses: %w", err)
	}
	if len(first) == 0 {
		return nil
	}
	_, accts, old, repl := columns(first)
	if _, err := tx.ExecContext(ctx, deleteBlockedShadowed, accts, old, repl); err != nil {
		return fmt.Errorf("store: migrate blocked addresses: %w", err)
	}
	if len(repeat) > 0 {
		_, raccts, rold, _ := columns(repeat)
		if _, err := tx.ExecContext(ctx, deleteBlockedEmails, raccts, rold); err != nil {
			return fmt.Errorf("store: migrate blocked addresses: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, updateBlockedEmails, accts, old, repl); err != nil {
		return fmt.Errorf("store: migrate blocked addresses: %w", err)
	}
	return nil
}
