package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// Roles of portal users. Owners and admins manage API keys and settings; members
// work with contacts and campaigns.
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// MinPasswordLength is the shortest password a user may set (in characters).
const MinPasswordLength = 10

// Sign-in throttle: more failed attempts than these within LoginWindow refuse
// further sign-ins for that address or from that IP until older attempts leave the
// window. The IP limit is higher because several people may share one address.
const (
	LoginWindow             = 15 * time.Minute
	MaxLoginFailuresPerMail = 5
	MaxLoginFailuresPerIP   = 20
)

// loginAttemptRetention is how long attempt rows are kept after their window, for
// looking into an attack afterwards.
const loginAttemptRetention = 24 * time.Hour

var (
	// ErrInvalidLogin means the address or the password is wrong (which one is not told).
	ErrInvalidLogin = errors.New("store: wrong email or password")
	// ErrLoginThrottled means too many failed sign-ins for the address or from the IP.
	ErrLoginThrottled = errors.New("store: too many failed sign-ins")
	// ErrAccountBlocked means the credentials are right but the account is blocked.
	ErrAccountBlocked = errors.New("store: account blocked")
)

// dummyPasswordHash is checked when an address belongs to nobody, so that a sign-in
// takes as long for unknown addresses as for known ones. Its password is not secret:
// no user has this hash.
const dummyPasswordHash = "$argon2id$v=19$m=65536,t=3,p=2$jmXEORxm51S3h85NWvQJzw$z43ef6h1hrOpggZjYwYvKd4MdDbtKEEDEDKN6LHJUc4"

// CanManageKeys reports whether the user may see and change the account's API keys
// and other admin settings.
func (u User) CanManageKeys() bool { return u.Role == RoleOwner || u.Role == RoleAdmin }

// Credentials are the input of SignIn.
type Credentials struct {
	Email    string
	Password string
	IP       string // the client's address, for the per-IP throttle
}

const userColumns = `id, account_id, email, name, role, created_at`

const selectUserForLogin = `SELECT u.id, u.account_id, u.email, u.name, u.role, u.created_at, u.password_hash,
  a.blocked_at IS NOT NULL AS blocked
FROM users u JOIN accounts a ON a.id = u.account_id WHERE lower(u.email) = lower($1)`

const insertLoginAttempt = `INSERT INTO login_attempts (email, ip, account_id, created_at) VALUES ($1, $2, $3, $4) RETURNING id`

// countLoginAttempts counts the attempts in the window, the caller's own included.
const countLoginAttempts = `SELECT count(*) FILTER (WHERE email = $1) AS by_email, count(*) FILTER (WHERE ip = $2) AS by_ip
FROM login_attempts WHERE created_at > $3 AND (email = $1 OR ip = $2)`

const deleteLoginAttempt = `DELETE FROM login_attempts WHERE id = $1`

const clearLoginFailures = `DELETE FROM login_attempts WHERE email = $1`

// SignIn checks an address and password under the sign-in throttle, which every
// process on the database shares. Errors: ErrLoginThrottled (nothing was checked),
// ErrInvalidLogin, ErrAccountBlocked (only after the right password).
func (db *DB) SignIn(ctx context.Context, c Credentials, now time.Time) (User, error) {
	email := strings.ToLower(strings.TrimSpace(c.Email))
	var row struct {
		User
		PasswordHash string `db:"password_hash"`
		Blocked      bool   `db:"blocked"`
	}
	known := true
	if err := db.GetContext(ctx, &row, selectUserForLogin, email); err != nil {
		if err = notFound("sign in", err); !errors.Is(err, ErrNotFound) {
			return User{}, err
		}
		known, row.PasswordHash = false, dummyPasswordHash
	}
	var accountID *int64
	if known {
		accountID = &row.AccountID
	}
	if _, err := db.beginLoginAttempt(ctx, email, c.IP, accountID, now); err != nil {
		return User{}, err
	}
	ok, err := CheckPassword(row.PasswordHash, c.Password)
	if err != nil {
		return User{}, err
	}
	if !ok || !known {
		return User{}, ErrInvalidLogin // the attempt row stays: a failure
	}
	if _, err := db.ExecContext(ctx, clearLoginFailures, email); err != nil {
		return User{}, fmt.Errorf("store: sign in: %w", err)
	}
	if row.Blocked {
		return User{}, ErrAccountBlocked
	}
	return row.User, nil
}

// beginLoginAttempt records an attempt before the password is checked and counts it
// with the attempts already in the window. Because every attempt is committed before
// it is counted, even parallel guesses get at most MaxLoginFailuresPerMail tries per
// address. A refused attempt is removed again: it checked nothing, so it is no
// failure, and the lock ends when the earlier failures leave the window.
func (db *DB) beginLoginAttempt(ctx context.Context, email, ip string, accountID *int64, now time.Time) (int64, error) {
	var id int64
	if err := db.GetContext(ctx, &id, insertLoginAttempt, email, ip, accountID, now); err != nil {
		return 0, fmt.Errorf("store: login attempt: %w", err)
	}
	var n struct {
		ByEmail int `db:"by_email"`
		ByIP    int `db:"by_ip"`
	}
	if err := db.GetContext(ctx, &n, countLoginAttempts, email, ip, now.Add(-LoginWindow)); err != nil {
		return 0, fmt.Errorf("store: login attempt: %w", err)
	}
	if n.ByEmail > MaxLoginFailuresPerMail || n.ByIP > MaxLoginFailuresPerIP {
		if _, err := db.ExecContext(ctx, deleteLoginAttempt, id); err != nil {
			return 0, fmt.Errorf("store: login attempt: %w", err)
		}
		return 0, ErrLoginThrottled
	}
	return id, nil
}

const purgeLoginAttempts = `DELETE FROM login_attempts WHERE created_at < $1`

// purgeLoginAttempts deletes attempt rows that no longer count for anything.
func (db *DB) purgeLoginAttempts(ctx context.Context, now time.Time) error {
	if _, err := db.ExecContext(ctx, purgeLoginAttempts, now.Add(-LoginWindow-loginAttemptRetention)); err != nil {
		return fmt.Errorf("store: purge login attempts: %w", err)
	}
	return nil
}

// Viewer is a signed-in portal user with their account and its plan: what every
// portal request loads once and filters on.
type Viewer struct {
	User    User    `db:"user"`
	Account Account `db:"account"`
	Plan    Plan    `db:"plan"`
}

const selectViewer = `SELECT
  u.id AS "user.id", u.account_id AS "user.account_id", u.email AS "user.email", u.name AS "user.name",
  u.role AS "user.role", u.created_at AS "user.created_at",
  a.id AS "account.id", a.name AS "account.name", a.plan AS "account.plan", a.blocked_at AS "account.blocked_at",
  a.created_at AS "account.created_at",
  p.name AS "plan.name", p.features AS "plan.features", p.max_contacts AS "plan.max_contacts", p.max_lists AS "plan.max_lists",
  p.max_sends_per_day AS "plan.max_sends_per_day", p.max_storage_bytes AS "plan.max_storage_bytes",
  p.max_webhooks AS "plan.max_webhooks", p.max_api_keys AS "plan.max_api_keys", p.upgrade_url AS "plan.upgrade_url"
FROM users u JOIN accounts a ON a.id = u.account_id JOIN plans p ON p.name = a.plan
WHERE u.account_id = $1 AND u.id = $2`

// Viewer returns the user userID of account accountID with the account and plan,
// or ErrNotFound when the user is gone or belongs to another account.
func (db *DB) Viewer(ctx context.Context, accountID, userID int64) (Viewer, error) {
	var v Viewer
	if err := db.GetContext(ctx, &v, selectViewer, accountID, userID); err != nil {
		return Viewer{}, notFound("viewer", err)
	}
	return v, nil
}

// NewUser is the input of CreateUser.
type NewUser struct {
	Email    string
	Name     string
	Role     string // owner, admin or member
	Password string
}

const insertAccountUser = `INSERT INTO users (account_id, email, name, role, password_hash) VALUES ($1, $2, $3, $4, $5)
RETURNING ` + userColumns

// CreateUser adds a user to an existing account.
func (db *DB) CreateUser(ctx context.Context, accountID int64, in NewUser) (User, error) {
	in.Email = strings.ToLower(strings.TrimSpace(in.Email))
	in.Name = strings.TrimSpace(in.Name)
	errs := Errs{}
	if !ValidEmail(in.Email) {
		errs.Add("email", "Bitte eine gültige E-Mail-Adresse angeben.")
	}
	if !slices.Contains([]string{RoleOwner, RoleAdmin, RoleMember}, in.Role) {
		errs.Add("role", "Unbekannte Rolle (erlaubt: owner, admin, member).")
	}
	if len([]rune(in.Password)) < MinPasswordLength {
		errs.Add("password", fmt.Sprintf("Das Passwort muss mindestens %d Zeichen lang sein.", MinPasswordLength))
	}
	if err := errs.Err(); err != nil {
		return User{}, err
	}
	hash, err := HashPassword(in.Password)
	if err != nil {
		return User{}, err
	}
	var u User
	err = db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var taken bool
		if err := tx.GetContext(ctx, &taken, selectUserEmailTaken, in.Email); err != nil {
			return fmt.Errorf("store: create user: %w", err)
		}
		if taken {
			return Invalid("email", "Diese E-Mail-Adresse gehört schon zu einem Benutzer.")
		}
		if err := tx.GetContext(ctx, &u, insertAccountUser, accountID, in.Email, in.Name, in.Role, hash); err != nil {
			return fmt.Errorf("store: create user: %w", err)
		}
		return nil
	})
	return u, err
}

const selectPasswordHash = `SELECT email, password_hash FROM users WHERE account_id = $1 AND id = $2`

const updatePasswordHash = `UPDATE users SET password_hash = $3, updated_at = now() WHERE account_id = $1 AND id = $2`

// PasswordChange is the input of ChangePassword.
type PasswordChange struct {
	Current string
	New     string
	IP      string // a wrong current password counts as a failed sign-in of the user's address
}

// ChangePassword replaces a user's password after checking the current one, under
// the sign-in throttle (so a stolen session cannot guess the password to take the
// account over). Field errors: current_password (missing or wrong), new_password (too
// short or unchanged); ErrLoginThrottled. It ends no sessions: the caller decides
// which (see EndUserSessions).
func (db *DB) ChangePassword(ctx context.Context, accountID, userID int64, c PasswordChange, now time.Time) error {
	errs := Errs{}
	if c.Current == "" {
		errs.Add("current_password", "Bitte das aktuelle Passwort angeben.")
	}
	if len([]rune(c.New)) < MinPasswordLength {
		errs.Add("new_password", fmt.Sprintf("Das neue Passwort muss mindestens %d Zeichen lang sein.", MinPasswordLength))
	} else if c.New == c.Current {
		errs.Add("new_password", "Das neue Passwort muss sich vom aktuellen unterscheiden.")
	}
	if err := errs.Err(); err != nil {
		return err
	}
	var row struct {
		Email        string `db:"email"`
		PasswordHash string `db:"password_hash"`
	}
	if err := db.GetContext(ctx, &row, selectPasswordHash, accountID, userID); err != nil {
		return notFound("change password", err)
	}
	email := strings.ToLower(row.Email)
	attempt, err := db.beginLoginAttempt(ctx, email, c.IP, &accountID, now)
	if err != nil {
		return err
	}
	ok, err := CheckPassword(row.PasswordHash, c.Current)
	if err != nil {
		return err
	}
	if !ok {
		return Invalid("current_password", "Das aktuelle Passwort stimmt nicht.")
	}
	if _, err := db.ExecContext(ctx, deleteLoginAttempt, attempt); err != nil {
		return fmt.Errorf("store: change password: %w", err)
	}
	hash, err := HashPassword(c.New)
	if err != nil {
		return err
	}
	res, err := db.ExecContext(ctx, updatePasswordHash, accountID, userID, hash)
	if err != nil {
		return fmt.Errorf("store: change password: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}
