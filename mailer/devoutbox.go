package mailer

import (
	"context"

	"github.com/rundbrief/rundbrief/store"
)

// DevOutbox is the Sender of development, used when an account has no SMTP server
// of its own and no RUNDBRIEF_SMTP_URL is configured: it stores every message in
// PostgreSQL (table dev_outbox) instead of sending it. The portal and
// GET /v1/dev/outbox show the captured mail.
type DevOutbox struct {
	db        *store.DB
	accountID int64
}

// NewDevOutbox returns the development outbox of one account.
func NewDevOutbox(db *store.DB, accountID int64) *DevOutbox {
	return &DevOutbox{db: db, accountID: accountID}
}

// Send renders m and stores it. A database failure is a transient *SendError at
// StageData, so the pipeline retries as it would after a network error.
func (d *DevOutbox) Send(ctx context.Context, m *Message) error {
	raw, err := m.Bytes()
	if err != nil {
		return err
	}
	_, err = d.db.AddDevOutboxMail(ctx, store.DevOutboxMail{
		AccountID: d.accountID, MessageID: m.MessageID, FromEmail: m.From.Email, ToEmail: m.To.Email,
		Subject: cleanHeader(m.Subject), Raw: raw,
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return newSendError(StageData, err)
	}
	return nil
}

// Close does nothing: the outbox holds no connection.
func (d *DevOutbox) Close() error { return nil }
