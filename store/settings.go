package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
)

// AccountSettings are the sender's identity: company and postal address (the
// law wants both in every marketing mail), the imprint text, the defaults
// of From name and Reply-To for mails that set none, and the address of the
// privacy policy that sign-up forms and the booking page link.
type AccountSettings struct {
	AccountID     int64      `db:"account_id"`
	Company       string     `db:"company"`
	PostalAddress string     `db:"postal_address"`
	Imprint       string     `db:"imprint"`
	FromName      string     `db:"from_name"`
	ReplyTo       string     `db:"reply_to"`
	PrivacyURL    string     `db:"privacy_url"`
	UpdatedAt     *time.Time `db:"updated_at"`
}

// ImprintText is what {{impressum}} stands for: the imprint as written, or
// without one the company and postal address; "" when none is set.
func (s AccountSettings) ImprintText() string {
	if t := strings.TrimSpace(s.Imprint); t != "" {
		return t
	}
	return strings.TrimSpace(strings.TrimSpace(s.Company) + "\n" + strings.TrimSpace(s.PostalAddress))
}

// Warnings are the send warnings of the settings, as codes: "no_postal_address"
// while the account has no postal address.
func (s AccountSettings) Warnings() []string {
	if strings.TrimSpace(s.PostalAddress) == "" {
		return []string{WarningNoPostalAddress}
	}
	return nil
}

// WarningNoPostalAddress says a marketing mail went out without the sender's
// postal address (CAN-SPAM, and the Impressum of German law).
const WarningNoPostalAddress = "no_postal_address"

// AccountSettingsInput is a PUT of the settings: every field is replaced,
// but PrivacyURL only when it is given. decisions.md pins the other five
// fields; privacy_url came later, and a client written against those five
// must not erase it with every PUT.
type AccountSettingsInput struct {
	Company       string
	PostalAddress string
	Imprint       string
	FromName      string
	ReplyTo       string
	PrivacyURL    *string // nil: keep the stored address
}

// Normalize trims and checks the input.
func (in *AccountSettingsInput) Normalize() error {
	errs := Errs{}
	normLine(errs, "company", &in.Company, maxNameLen)
	normLine(errs, "from_name", &in.FromName, maxFromNameLen)
	normReplyTo(errs, &in.ReplyTo)
	for field, v := range map[string]*string{"postal_address": &in.PostalAddress, "imprint": &in.Imprint} {
		*v = strings.TrimSpace(strings.ReplaceAll(*v, "\r\n", "\n"))
		if !utf8.ValidString(*v) || strings.ContainsRune(*v, 0) {
			errs.Add(field, "Der Text ist kein gültiges UTF-8.")
		}
	}
	if utf8.RuneCountInString(in.PostalAddress) > 500 {
		errs.Add("postal_address", "Höchstens 500 Zeichen.")
	}
	if utf8.RuneCountInString(in.Imprint) > 5000 {
		errs.Add("imprint", "Höchstens 5000 Zeichen.")
	}
	if in.PrivacyURL != nil {
		*in.PrivacyURL = strings.TrimSpace(*in.PrivacyURL)
		if u := *in.PrivacyURL; u != "" && !validWebURL(u) {
			errs.Add("privacy_url", "Bitte die vollständige Adresse der Datenschutzerklärung angeben, z. B. https://example.com/datenschutz, oder leer lassen.")
		}
	}
	return errs.Err()
}

const settingsColumns = `account_id, company, postal_address, imprint, from_name, reply_to, privacy_url, updated_at`

const selectSettings = `SELECT ` + settingsColumns + ` FROM account_settings WHERE account_id = $1`

// AccountSettings returns the account's settings; an account that never saved
// them has empty ones.
func (db *DB) AccountSettings(ctx context.Context, accountID int64) (AccountSettings, error) {
	return accountSettings(ctx, db, accountID)
}

func accountSettings(ctx context.Context, q sqlx.QueryerContext, accountID int64) (AccountSettings, error) {
	var s AccountSettings
	err := sqlx.GetContext(ctx, q, &s, selectSettings, accountID)
	if errors.Is(err, sql.ErrNoRows) {
		return AccountSettings{AccountID: accountID}, nil
	}
	if err != nil {
		return AccountSettings{}, fmt.Errorf("store: account settings: %w", err)
	}
	return s, nil
}

const upsertSettings = `INSERT INTO account_settings AS s (account_id, company, postal_address, imprint, from_name, reply_to, privacy_url)
VALUES ($1, $2, $3, $4, $5, $6, coalesce($7, ''))
ON CONFLICT (account_id) DO UPDATE SET company = excluded.company, postal_address = excluded.postal_address,
  imprint = excluded.imprint, from_name = excluded.from_name, reply_to = excluded.reply_to,
  privacy_url = coalesce($7, s.privacy_url), updated_at = now()
RETURNING ` + settingsColumns

// PutAccountSettings replaces the account's settings.
func (db *DB) PutAccountSettings(ctx context.Context, accountID int64, actor Actor, in AccountSettingsInput) (AccountSettings, error) {
	if err := in.Normalize(); err != nil {
		return AccountSettings{}, err
	}
	var out AccountSettings
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &out, upsertSettings, accountID, in.Company, in.PostalAddress, in.Imprint, in.FromName, in.ReplyTo, in.PrivacyURL); err != nil {
			return fmt.Errorf("store: put account settings: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "account.settings_updated", ObjectType: "account", ObjectID: accountID})
	})
	return out, err
}
