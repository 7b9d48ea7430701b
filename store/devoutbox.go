package store

import (
	"context"
	"fmt"
	"time"
)

// DevOutboxMail is a message captured by the development outbox instead of being
// sent (no own SMTP server and no RUNDBRIEF_SMTP_URL).
type DevOutboxMail struct {
	ID        int64     `db:"id"`
	AccountID int64     `db:"account_id"`
	MessageID string    `db:"message_id"` // without angle brackets
	FromEmail string    `db:"from_email"`
	ToEmail   string    `db:"to_email"`
	Subject   string    `db:"subject"`
	Size      int64     `db:"size"` // bytes of Raw
	Raw       []byte    `db:"raw"`  // the whole RFC 5322 message; only DevOutboxMail fills it
	CreatedAt time.Time `db:"created_at"`
}

// devOutboxKeep is how many captured mails an account keeps: the outbox is for
// looking at recent mail in development, not an archive.
const devOutboxKeep = 1000

const insertDevOutboxMail = `INSERT INTO dev_outbox (account_id, message_id, from_email, to_email, subject, raw)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id, account_id, message_id, from_email, to_email, subject, octet_length(raw) AS size, created_at`

const pruneDevOutbox = `DELETE FROM dev_outbox WHERE account_id = $1 AND id <= (
    SELECT id FROM dev_outbox WHERE account_id = $1 ORDER BY id DESC OFFSET $2 LIMIT 1)`

// AddDevOutboxMail stores a captured message and drops the account's oldest ones
// beyond the last 1000.
func (db *DB) AddDevOutboxMail(ctx context.Context, m DevOutboxMail) (DevOutboxMail, error) {
	var out DevOutboxMail
	if err := db.GetContext(ctx, &out, insertDevOutboxMail, m.AccountID, m.MessageID, m.FromEmail, m.ToEmail, m.Subject, m.Raw); err != nil {
		return DevOutboxMail{}, fmt.Errorf("store: add dev outbox mail: %w", err)
	}
	if out.ID%100 == 0 { // pruning now and then is enough to bound the table
		if _, err := db.ExecContext(ctx, pruneDevOutbox, m.AccountID, devOutboxKeep); err != nil {
			return DevOutboxMail{}, fmt.Errorf("store: prune dev outbox: %w", err)
		}
	}
	return out, nil
}

const countDevOutbox = `SELECT count(*) FROM dev_outbox WHERE account_id = $1`

const selectDevOutbox = `SELECT id, account_id, message_id, from_email, to_email, subject, octet_length(raw) AS size, created_at
FROM dev_outbox WHERE account_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3`

// DevOutbox lists an account's captured mails, newest first, without their raw
// content.
func (db *DB) DevOutbox(ctx context.Context, accountID int64, p Page) ([]DevOutboxMail, int, error) {
	var total int
	if err := db.GetContext(ctx, &total, countDevOutbox, accountID); err != nil {
		return nil, 0, fmt.Errorf("store: dev outbox: %w", err)
	}
	var out []DevOutboxMail
	if err := db.SelectContext(ctx, &out, selectDevOutbox, accountID, p.PerPage, p.Offset()); err != nil {
		return nil, 0, fmt.Errorf("store: dev outbox: %w", err)
	}
	return out, total, nil
}

const selectDevOutboxMail = `SELECT id, account_id, message_id, from_email, to_email, subject, octet_length(raw) AS size, raw, created_at
FROM dev_outbox WHERE account_id = $1 AND id = $2`

// DevOutboxMail returns one captured mail with its raw content.
func (db *DB) DevOutboxMail(ctx context.Context, accountID, id int64) (DevOutboxMail, error) {
	var m DevOutboxMail
	if err := db.GetContext(ctx, &m, selectDevOutboxMail, accountID, id); err != nil {
		return DevOutboxMail{}, notFound("dev outbox mail", err)
	}
	return m, nil
}
