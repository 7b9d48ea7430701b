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

// BlockedAddress is an address the account must never mail again.
type BlockedAddress struct {
	Email      string    `db:"email"`
	Source     string    `db:"source"` // link, one_click, manual, api, import, bounce, complaint
	Reason     *string   `db:"reason"`
	CampaignID *int64    `db:"campaign_id"`
	CreatedAt  time.Time `db:"created_at"`
}

const blockedColumns = `email, source, reason, campaign_id, created_at`

const insertBlockedReturning = `WITH ins AS (
  INSERT INTO blocked_addresses (account_id, email, source, reason, campaign_id)
  SELECT $1, e, $3, nullif($4, ''), nullif($5, 0) FROM unnest($2::text[]) AS e ORDER BY e
  ON CONFLICT (account_id, email) DO NOTHING RETURNING email, source, campaign_id
), ` + countUnsubscribes + `
SELECT email FROM ins`

// countUnsubscribes is a CTE after "ins" (the inserted blocked_addresses
// rows, $1 the account) that counts the addresses blocked from a campaign of
// the account as its unsubscribes of the day (campaign_stats). Hard bounces
// (source bounce) are no unsubscribes.
const countUnsubscribes = `unsub_agg AS (
  SELECT i.campaign_id, (now() AT TIME ZONE 'Europe/Berlin')::date AS day, count(*) AS n
  FROM ins i JOIN campaigns c ON c.id = i.campaign_id AND c.account_id = $1
  WHERE i.source <> 'bounce' GROUP BY i.campaign_id
), unsubs AS (
  INSERT INTO campaign_stats AS s (account_id, campaign_id, day, shard, unsubscribes)
  SELECT $1, u.campaign_id, u.day, 0, u.n FROM unsub_agg u
  ON CONFLICT (campaign_id, day, shard) DO UPDATE SET unsubscribes = s.unsubscribes + EXCLUDED.unsubscribes
), unsubs_account AS (
  INSERT INTO account_stats AS s (account_id, day, shard, unsubscribes)
  SELECT $1, u.day, 0, sum(u.n) FROM unsub_agg u GROUP BY u.day
  ON CONFLICT (account_id, day, shard) DO UPDATE SET unsubscribes = s.unsubscribes + EXCLUDED.unsubscribes
)`

const selectBlockedRows = `SELECT ` + blockedColumns + ` FROM blocked_addresses WHERE account_id = $1 AND email = ANY($2) ORDER BY email`

// BlockAddresses puts addresses on the blocked list (at most MaxBatch) and
// unsubscribes the contacts that have them (contact.unsubscribed). Addresses
// already blocked keep their entry. It returns the entries of all given addresses.
func (db *DB) BlockAddresses(ctx context.Context, accountID int64, actor Actor, emails []string, u Unsubscribe) ([]BlockedAddress, error) {
	errs := Errs{}
	if len(emails) == 0 {
		errs.Add("emails", "Bitte mindestens eine E-Mail-Adresse angeben.")
	}
	if len(emails) > MaxBatch {
		errs.Add("emails", fmt.Sprintf("Höchstens %d Adressen pro Anfrage.", MaxBatch))
	}
	norm := make([]string, 0, len(emails))
	for _, e := range emails {
		addr, err := ParseEmail(e)
		if err != nil {
			errs.Add("emails", emailProblem(e, err))
			continue
		}
		e = addr
		if !slices.Contains(norm, e) {
			norm = append(norm, e)
		}
	}
	if err := validateUnsub(&u); err != nil {
		for k, v := range err.(*ValidationError).Fields {
			errs.Add(k, v)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if err := actor.valid(); err != nil {
		return nil, err
	}
	ops := make([]*contactOp, len(norm))
	for i, e := range norm {
		st := StatusUnsubscribed
		ops[i] = &contactOp{in: ContactInput{Email: e, Status: &st}, noCreate: true, unsub: u}
	}
	var out []BlockedAddress
	err := db.retryTx(ctx, func(tx *sqlx.Tx) error {
		var added []string
		if err := tx.SelectContext(ctx, &added, insertBlockedReturning, accountID, pq.StringArray(norm), u.Source, u.Reason, u.CampaignID); err != nil {
			return fmt.Errorf("store: block addresses: %w", err)
		}
		for _, op := range ops {
			op.reset()
		}
		if err := applyOps(ctx, tx, accountID, actor, ops, true); err != nil {
			return err
		}
		acts := make([]ActivityEntry, len(added))
		for i, e := range added {
			acts[i] = ActivityEntry{Action: "address.blocked", ObjectType: ObjectBlockedAddress,
				Details: map[string]any{"email": e, "source": u.Source, "reason": u.Reason}}
		}
		if err := LogActivities(ctx, tx, accountID, actor, acts); err != nil {
			return err
		}
		out = nil
		if err := tx.SelectContext(ctx, &out, selectBlockedRows, accountID, pq.StringArray(norm)); err != nil {
			return fmt.Errorf("store: block addresses: %w", err)
		}
		return nil
	})
	return out, err
}

const deleteBlocked = `DELETE FROM blocked_addresses WHERE account_id = $1 AND email = $2`

// UnblockAddress removes an address from the blocked list. Its contact stays
// unsubscribed, but may be subscribed again afterwards.
func (db *DB) UnblockAddress(ctx context.Context, accountID int64, actor Actor, email string) error {
	email = NormalizeEmail(email)
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, deleteBlocked, accountID, email)
		if err != nil {
			return fmt.Errorf("store: unblock address: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "address.unblocked",
			ObjectType: ObjectBlockedAddress, Details: map[string]any{"email": email}})
	})
}

// BlockedList lists an account's blocked addresses, newest first; query keeps
// addresses containing it.
func (db *DB) BlockedList(ctx context.Context, accountID int64, query string, p Page) ([]BlockedAddress, int, error) {
	cond, args := "account_id = $1", []any{accountID}
	if q := strings.TrimSpace(query); q != "" {
		var match string
		match, args = likeSearch("email", q, args)
		cond += " AND " + match
	}
	var out []BlockedAddress
	var total int
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &total, `SELECT count(*) FROM blocked_addresses WHERE `+cond, args...); err != nil {
			return fmt.Errorf("store: blocked addresses: %w", err)
		}
		q := fmt.Sprintf(`SELECT %s FROM blocked_addresses WHERE %s ORDER BY created_at DESC, email LIMIT $%d OFFSET $%d`,
			blockedColumns, cond, len(args)+1, len(args)+2)
		if err := tx.SelectContext(ctx, &out, q, append(args, p.PerPage, p.Offset())...); err != nil {
			return fmt.Errorf("store: blocked addresses: %w", err)
		}
		return nil
	})
	return out, total, err
}
