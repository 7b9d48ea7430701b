package store

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// The blocked-address check: every path that may mail or enrol an address
// (upserts, sign-ups, sends, single emails) asks it here. The blocked list
// itself (GET/POST/DELETE /unsubscribes) is unsubscribes.go's.

const selectBlocked = `SELECT email FROM blocked_addresses WHERE account_id = $1 AND email = ANY($2)`

// blockedIn reports which of the normalised emails are on the account's
// blocked list.
func blockedIn(ctx context.Context, q sqlx.QueryerContext, accountID int64, emails []string) (map[string]bool, error) {
	out := make(map[string]bool)
	if len(emails) == 0 {
		return out, nil
	}
	var rows []string
	if err := sqlx.SelectContext(ctx, q, &rows, selectBlocked, accountID, pq.StringArray(emails)); err != nil {
		return nil, fmt.Errorf("store: blocked addresses: %w", err)
	}
	for _, e := range rows {
		out[e] = true
	}
	return out, nil
}

// BlockedAddresses reports which of emails are on the account's blocked list,
// keyed by the normalised address (NormalizeEmail). The campaign send worker
// gets the same answer without a statement of its own: its claim of a batch
// of recipients reads it for each (QueuedRecipient.Blocked), right before
// sending.
func (db *DB) BlockedAddresses(ctx context.Context, accountID int64, emails []string) (map[string]bool, error) {
	norm := make([]string, len(emails))
	for i, e := range emails {
		norm[i] = NormalizeEmail(e)
	}
	return blockedIn(ctx, db, accountID, norm)
}

// IsBlocked reports whether one address is on the account's blocked list.
func (db *DB) IsBlocked(ctx context.Context, accountID int64, email string) (bool, error) {
	m, err := db.BlockedAddresses(ctx, accountID, []string{email})
	if err != nil {
		return false, err
	}
	return m[NormalizeEmail(email)], nil
}
