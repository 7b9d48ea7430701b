package store

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"github.com/rundbrief/rundbrief/store/secret"
)

// Encryption modes of an SMTP server.
const (
	EncryptionNone     = "none"     // plain SMTP; AUTH, if any, is sent unencrypted
	EncryptionSTARTTLS = "starttls" // plain connect, then STARTTLS is required
	EncryptionTLS      = "tls"      // implicit TLS from the first byte ("SMTPS")
)

// DefaultSMTPPort is the usual port of an encryption mode: 25, 587 or 465.
func DefaultSMTPPort(encryption string) int {
	switch encryption {
	case EncryptionNone:
		return 25
	case EncryptionTLS:
		return 465
	}
	return 587
}

// SMTPServer is one of an account's own SMTP servers. The password never leaves the
// store except through SMTPServerPassword; HasPassword says whether one is set.
type SMTPServer struct {
	ID            int64      `db:"id"`
	AccountID     int64      `db:"account_id"`
	Name          string     `db:"name"`
	Host          string     `db:"host"`
	Port          int        `db:"port"`
	Username      string     `db:"username"`
	HasPassword   bool       `db:"has_password"`
	Encryption    string     `db:"encryption"`
	FromEmail     string     `db:"from_email"`
	FromName      string     `db:"from_name"`
	IsDefault     bool       `db:"is_default"`
	RatePerSecond int        `db:"rate_per_second"`
	LastTestAt    *time.Time `db:"last_test_at"`
	LastTestCode  string     `db:"last_test_code"` // "" when never tested
	CreatedAt     time.Time  `db:"created_at"`
	UpdatedAt     time.Time  `db:"updated_at"`
}

// SMTPServerSettings are the fields of an SMTP server a user sets, apart from the
// password and the default flag.
type SMTPServerSettings struct {
	Name          string
	Host          string
	Port          int // 0: DefaultSMTPPort(Encryption)
	Username      string
	Encryption    string // "": starttls
	FromEmail     string
	FromName      string
	RatePerSecond int // messages per second; 0 = unlimited
}

// Limits of the settings.
const (
	maxSMTPNameLen     = 100
	maxSMTPPasswordLen = 1024
	maxSMTPRate        = 10000
)

// Validate normalises the settings and reports every invalid field in German.
func (s *SMTPServerSettings) Validate() error {
	errs := Errs{}
	s.Name = strings.TrimSpace(s.Name)
	switch {
	case s.Name == "":
		errs.Add("name", "Bitte einen Namen angeben.")
	case utf8.RuneCountInString(s.Name) > maxSMTPNameLen || smtpHasControl(s.Name):
		errs.Add("name", fmt.Sprintf("Der Name darf höchstens %d Zeichen lang sein und keine Steuerzeichen enthalten.", maxSMTPNameLen))
	}
	s.Host = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s.Host), "."))
	if s.Host == "" {
		errs.Add("host", "Bitte den Hostnamen des SMTP-Servers angeben, z. B. smtp.example.com.")
	} else if !validSMTPHost(s.Host) {
		errs.Add("host", "Kein gültiger Hostname und keine IP-Adresse (ohne Schema und Port, z. B. smtp.example.com).")
	}
	if s.Encryption == "" {
		s.Encryption = EncryptionSTARTTLS
	}
	switch s.Encryption {
	case EncryptionNone, EncryptionSTARTTLS, EncryptionTLS:
	default:
		errs.Add("encryption", "Erlaubt sind none, starttls und tls.")
	}
	if s.Port == 0 {
		s.Port = DefaultSMTPPort(s.Encryption)
	}
	if s.Port < 1 || s.Port > 65535 {
		errs.Add("port", "Der Port muss zwischen 1 und 65535 liegen.")
	}
	if len(s.Username) > 255 || strings.ContainsAny(s.Username, "\x00\r\n") {
		errs.Add("username", "Der Benutzername darf höchstens 255 Zeichen lang sein und keine Zeilenumbrüche enthalten.")
	}
	s.FromEmail = strings.TrimSpace(s.FromEmail)
	if !ValidEmail(s.FromEmail) {
		errs.Add("from_email", "Bitte eine gültige Absenderadresse angeben.")
	}
	s.FromName = strings.TrimSpace(s.FromName)
	if utf8.RuneCountInString(s.FromName) > maxSMTPNameLen || smtpHasControl(s.FromName) {
		errs.Add("from_name", fmt.Sprintf("Der Absendername darf höchstens %d Zeichen lang sein und keine Steuerzeichen enthalten.", maxSMTPNameLen))
	}
	if s.RatePerSecond < 0 || s.RatePerSecond > maxSMTPRate {
		errs.Add("rate_per_second", fmt.Sprintf("Erlaubt sind 0 (unbegrenzt) bis %d Nachrichten pro Sekunde.", maxSMTPRate))
	}
	return errs.Err()
}

// validPassword checks a new password; NUL would break SASL PLAIN.
func checkSMTPPassword(errs Errs, password string) {
	if len(password) > maxSMTPPasswordLen || strings.ContainsRune(password, 0) {
		errs.Add("password", fmt.Sprintf("Das Passwort darf höchstens %d Zeichen lang sein.", maxSMTPPasswordLen))
	}
}

// checkCredentials reports a username without password and the reverse.
func checkSMTPCredentials(errs Errs, username string, hasPassword bool) {
	switch {
	case username != "" && !hasPassword:
		errs.Add("password", "Mit Benutzername ist auch ein Passwort nötig.")
	case username == "" && hasPassword:
		errs.Add("username", "Ein Passwort ohne Benutzername wird nie verwendet: bitte den Benutzernamen angeben.")
	}
}

func smtpHasControl(s string) bool {
	return strings.ContainsFunc(s, unicode.IsControl)
}

// validHost accepts a DNS name (letters, digits, hyphens; labels of 1 to 63) or an
// IP address.
func validSMTPHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// NewSMTPServer is the input of CreateSMTPServer.
type NewSMTPServer struct {
	SMTPServerSettings
	Password  string
	IsDefault *bool // nil: true when the account has no default server yet
}

// SMTPServerPatch is a partial update: nil fields stay as they are. Password ""
// removes the password.
type SMTPServerPatch struct {
	Name          *string
	Host          *string
	Port          *int
	Username      *string
	Password      *string
	Encryption    *string
	FromEmail     *string
	FromName      *string
	IsDefault     *bool
	RatePerSecond *int
}

// Apply copies the set fields (except Password and IsDefault, which UpdateSMTPServer
// handles) onto s.
func (p SMTPServerPatch) Apply(s *SMTPServerSettings) {
	applyPtr(&s.Name, p.Name)
	applyPtr(&s.Host, p.Host)
	applyPtr(&s.Port, p.Port)
	applyPtr(&s.Username, p.Username)
	applyPtr(&s.Encryption, p.Encryption)
	applyPtr(&s.FromEmail, p.FromEmail)
	applyPtr(&s.FromName, p.FromName)
	applyPtr(&s.RatePerSecond, p.RatePerSecond)
}

func applyPtr[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// passwordPurpose binds a sealed password to its account (see package secret).
func passwordPurpose(accountID int64) string {
	return "smtp_servers.password:" + strconv.FormatInt(accountID, 10)
}

const smtpServerColumns = `id, account_id, name, host, port, username, password_sealed <> '' AS has_password, encryption,
from_email, from_name, is_default, rate_per_second, last_test_at, last_test_code, created_at, updated_at`

// lockAccountForSMTP serialises changes of an account's default server, so that
// "set one, unset the other" holds under concurrent requests.
const lockAccountForSMTP = `SELECT id FROM accounts WHERE id = $1 FOR NO KEY UPDATE`

const hasDefaultSMTPServer = `SELECT EXISTS (SELECT 1 FROM smtp_servers WHERE account_id = $1 AND is_default)`

const unsetDefaultSMTPServer = `UPDATE smtp_servers SET is_default = false, updated_at = now()
WHERE account_id = $1 AND is_default AND id <> $2`

const insertSMTPServer = `INSERT INTO smtp_servers (account_id, name, host, port, username, password_sealed, encryption,
from_email, from_name, is_default, rate_per_second)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING ` + smtpServerColumns

// CreateSMTPServer validates in, seals the password with box and stores the server.
// When it becomes the default, the previous default is unset in the same transaction.
func (db *DB) CreateSMTPServer(ctx context.Context, box *secret.Box, accountID int64, in NewSMTPServer) (SMTPServer, error) {
	errs := Errs{}
	if err := in.Validate(); err != nil {
		errs = err.(*ValidationError).Fields
	}
	checkSMTPPassword(errs, in.Password)
	checkSMTPCredentials(errs, in.Username, in.Password != "")
	if err := errs.Err(); err != nil {
		return SMTPServer{}, err
	}
	sealed := ""
	if in.Password != "" {
		var err error
		if sealed, err = box.Seal(passwordPurpose(accountID), []byte(in.Password)); err != nil {
			return SMTPServer{}, fmt.Errorf("store: create smtp server: %w", err)
		}
	}
	var srv SMTPServer
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var id int64
		if err := tx.GetContext(ctx, &id, lockAccountForSMTP, accountID); err != nil {
			return notFound("create smtp server", err)
		}
		isDefault := false
		if in.IsDefault != nil {
			isDefault = *in.IsDefault
		} else {
			var has bool
			if err := tx.GetContext(ctx, &has, hasDefaultSMTPServer, accountID); err != nil {
				return fmt.Errorf("store: create smtp server: %w", err)
			}
			isDefault = !has
		}
		if isDefault {
			if _, err := tx.ExecContext(ctx, unsetDefaultSMTPServer, accountID, 0); err != nil {
				return fmt.Errorf("store: create smtp server: %w", err)
			}
		}
		s := in.SMTPServerSettings
		err := tx.GetContext(ctx, &srv, insertSMTPServer, accountID, s.Name, s.Host, s.Port, s.Username, sealed,
			s.Encryption, s.FromEmail, s.FromName, isDefault, s.RatePerSecond)
		if err != nil {
			return fmt.Errorf("store: create smtp server: %w", err)
		}
		return nil
	})
	return srv, err
}

const selectSMTPServersCount = `SELECT count(*) FROM smtp_servers WHERE account_id = $1`

const selectSMTPServers = `SELECT ` + smtpServerColumns + ` FROM smtp_servers WHERE account_id = $1
ORDER BY id LIMIT $2 OFFSET $3`

// SMTPServers lists an account's SMTP servers, oldest first.
func (db *DB) SMTPServers(ctx context.Context, accountID int64, p Page) ([]SMTPServer, int, error) {
	var total int
	if err := db.GetContext(ctx, &total, selectSMTPServersCount, accountID); err != nil {
		return nil, 0, fmt.Errorf("store: smtp servers: %w", err)
	}
	var out []SMTPServer
	if err := db.SelectContext(ctx, &out, selectSMTPServers, accountID, p.PerPage, p.Offset()); err != nil {
		return nil, 0, fmt.Errorf("store: smtp servers: %w", err)
	}
	return out, total, nil
}

const selectSMTPServer = `SELECT ` + smtpServerColumns + ` FROM smtp_servers WHERE account_id = $1 AND id = $2`

// SMTPServer returns one SMTP server of the account.
func (db *DB) SMTPServer(ctx context.Context, accountID, id int64) (SMTPServer, error) {
	var s SMTPServer
	if err := db.GetContext(ctx, &s, selectSMTPServer, accountID, id); err != nil {
		return SMTPServer{}, notFound("smtp server", err)
	}
	return s, nil
}

const selectDefaultSMTPServer = `SELECT ` + smtpServerColumns + ` FROM smtp_servers WHERE account_id = $1 AND is_default`

// DefaultSMTPServer returns the account's default SMTP server, or ErrNotFound when
// it has none (mail then goes through the operator relay or the development outbox).
func (db *DB) DefaultSMTPServer(ctx context.Context, accountID int64) (SMTPServer, error) {
	var s SMTPServer
	if err := db.GetContext(ctx, &s, selectDefaultSMTPServer, accountID); err != nil {
		return SMTPServer{}, notFound("default smtp server", err)
	}
	return s, nil
}

const selectSMTPServerSealed = `SELECT password_sealed FROM smtp_servers WHERE account_id = $1 AND id = $2`

// SMTPServerPassword opens the stored password of a server ("" when none). Only the
// mailer calls it, to connect; the password must never be returned or logged.
func (db *DB) SMTPServerPassword(ctx context.Context, box *secret.Box, accountID, id int64) (string, error) {
	var sealed string
	if err := db.GetContext(ctx, &sealed, selectSMTPServerSealed, accountID, id); err != nil {
		return "", notFound("smtp server password", err)
	}
	if sealed == "" {
		return "", nil
	}
	plain, err := box.Open(passwordPurpose(accountID), sealed)
	if err != nil {
		return "", fmt.Errorf("store: smtp server password: %w", err)
	}
	return string(plain), nil
}

const selectSMTPServerForUpdate = `SELECT ` + smtpServerColumns + ` FROM smtp_servers WHERE account_id = $1 AND id = $2 FOR UPDATE`

const updateSMTPServer = `UPDATE smtp_servers SET name = $3, host = $4, port = $5, username = $6,
password_sealed = CASE WHEN $7 THEN $8 ELSE password_sealed END, encryption = $9, from_email = $10,
from_name = $11, is_default = $12, rate_per_second = $13,
last_test_at = CASE WHEN $14 THEN NULL ELSE last_test_at END,
last_test_code = CASE WHEN $14 THEN '' ELSE last_test_code END,
updated_at = now()
WHERE account_id = $1 AND id = $2 RETURNING ` + smtpServerColumns

// UpdateSMTPServer applies a partial update. A change of host, port, username,
// password or encryption clears the last test result, which no longer applies.
func (db *DB) UpdateSMTPServer(ctx context.Context, box *secret.Box, accountID, id int64, p SMTPServerPatch) (SMTPServer, error) {
	var out SMTPServer
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var lockID int64
		if err := tx.GetContext(ctx, &lockID, lockAccountForSMTP, accountID); err != nil {
			return notFound("update smtp server", err)
		}
		var cur SMTPServer
		if err := tx.GetContext(ctx, &cur, selectSMTPServerForUpdate, accountID, id); err != nil {
			return notFound("update smtp server", err)
		}
		s := SMTPServerSettings{Name: cur.Name, Host: cur.Host, Port: cur.Port, Username: cur.Username,
			Encryption: cur.Encryption, FromEmail: cur.FromEmail, FromName: cur.FromName, RatePerSecond: cur.RatePerSecond}
		p.Apply(&s)
		errs := Errs{}
		if err := s.Validate(); err != nil {
			errs = err.(*ValidationError).Fields
		}
		hasPassword := cur.HasPassword
		if p.Password != nil {
			checkSMTPPassword(errs, *p.Password)
			hasPassword = *p.Password != ""
		}
		checkSMTPCredentials(errs, s.Username, hasPassword)
		if err := errs.Err(); err != nil {
			return err
		}
		sealed := ""
		if p.Password != nil && *p.Password != "" {
			var err error
			if sealed, err = box.Seal(passwordPurpose(accountID), []byte(*p.Password)); err != nil {
				return fmt.Errorf("store: update smtp server: %w", err)
			}
		}
		isDefault := cur.IsDefault
		if p.IsDefault != nil {
			isDefault = *p.IsDefault
		}
		if isDefault && !cur.IsDefault {
			if _, err := tx.ExecContext(ctx, unsetDefaultSMTPServer, accountID, id); err != nil {
				return fmt.Errorf("store: update smtp server: %w", err)
			}
		}
		connChanged := p.Password != nil || s.Host != cur.Host || s.Port != cur.Port ||
			s.Username != cur.Username || s.Encryption != cur.Encryption
		err := tx.GetContext(ctx, &out, updateSMTPServer, accountID, id, s.Name, s.Host, s.Port, s.Username,
			p.Password != nil, sealed, s.Encryption, s.FromEmail, s.FromName, isDefault, s.RatePerSecond, connChanged)
		if err != nil {
			return fmt.Errorf("store: update smtp server: %w", err)
		}
		return nil
	})
	return out, err
}

const deleteSMTPServer = `DELETE FROM smtp_servers WHERE account_id = $1 AND id = $2 RETURNING is_default`

const promoteSMTPServer = `UPDATE smtp_servers SET is_default = true, updated_at = now()
WHERE id = (SELECT id FROM smtp_servers WHERE account_id = $1 ORDER BY id LIMIT 1)`

// DeleteSMTPServer deletes a server. When it was the default, the account's oldest
// remaining server becomes the default, so that an account with servers of its own
// keeps sending through them rather than falling back to the operator relay.
func (db *DB) DeleteSMTPServer(ctx context.Context, accountID, id int64) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var lockID int64
		if err := tx.GetContext(ctx, &lockID, lockAccountForSMTP, accountID); err != nil {
			return notFound("delete smtp server", err)
		}
		var wasDefault bool
		if err := tx.GetContext(ctx, &wasDefault, deleteSMTPServer, accountID, id); err != nil {
			return notFound("delete smtp server", err)
		}
		if wasDefault {
			if _, err := tx.ExecContext(ctx, promoteSMTPServer, accountID); err != nil {
				return fmt.Errorf("store: delete smtp server: %w", err)
			}
		}
		return nil
	})
}

const recordSMTPServerTest = `UPDATE smtp_servers SET last_test_at = $3, last_test_code = $4
WHERE account_id = $1 AND id = $2`

// RecordSMTPServerTest stores the outcome code of a connection test.
func (db *DB) RecordSMTPServerTest(ctx context.Context, accountID, id int64, at time.Time, code string) error {
	res, err := db.ExecContext(ctx, recordSMTPServerTest, accountID, id, at, code)
	if err != nil {
		return fmt.Errorf("store: record smtp server test: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrNotFound
	}
	return nil
}
