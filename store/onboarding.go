package store

import (
	"context"
	"fmt"
)

// Onboarding is what a new account has done of its first steps, read from the
// data itself, so that a step is ticked the moment it is true and never by a
// click on the checklist.
type Onboarding struct {
	Sender     bool `db:"sender"`      // a postal address for the imprint (account settings)
	SMTPServer bool `db:"smtp_server"` // an SMTP server of its own
	Audience   bool `db:"audience"`    // a contact or a sign-up form
	Newsletter bool `db:"newsletter"`  // a newsletter, draft or sent
	Sent       bool `db:"sent"`        // any mail handed to SMTP, a test mail included
}

const selectOnboarding = `SELECT
  EXISTS (SELECT 1 FROM account_settings WHERE account_id = $1 AND postal_address <> '') AS sender,
  EXISTS (SELECT 1 FROM smtp_servers WHERE account_id = $1) AS smtp_server,
  EXISTS (SELECT 1 FROM contacts WHERE account_id = $1) OR EXISTS (SELECT 1 FROM forms WHERE account_id = $1) AS audience,
  EXISTS (SELECT 1 FROM campaigns WHERE account_id = $1 AND kind = 'newsletter') AS newsletter,
  EXISTS (SELECT 1 FROM send_counters WHERE account_id = $1 AND count > 0) AS sent`

// Onboarding reads the account's first steps in one statement (each part an
// index probe, so it stays cheap at a million contacts).
func (db *DB) Onboarding(ctx context.Context, accountID int64) (Onboarding, error) {
	var o Onboarding
	if err := db.GetContext(ctx, &o, selectOnboarding, accountID); err != nil {
		return Onboarding{}, fmt.Errorf("store: onboarding: %w", err)
	}
	return o, nil
}
