package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

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

// dummyPasswordHash is the hash checked for unknown addresses: one of the same
// cost as the DB's own hashes, so that the two take equally long.
func (db *DB) dummyPasswordHash() string {
	db.dummyHashOnce.Do(func() {
		db.dummyHash = dummyPasswordHash
		if db.passwords != (PasswordParams{}) {
			if h, err := hashPassword(db.passwords, "no user has this password"); err == nil {
				db.dummyHash = h
			}
		}
	})
	return db.dummyHash
}

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
	email := NormalizeEmail(c.Email)
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
		known, row.PasswordHash = false, db.dummyPasswordHash()
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
	return db.createUser(ctx, accountID, in, nil)
}

// createUser validates in and inserts the user; then, in the same transaction,
// runs after (when set) with the new user.
func (db *DB) createUser(ctx context.Context, accountID int64, in NewUser, after func(*sqlx.Tx, User) error) (User, error) {
	in.Name = strings.TrimSpace(in.Name)
	errs := Errs{}
	normEmail(errs, "email", &in.Email)
	if !slices.Contains(Roles(), in.Role) {
		errs.Add("role", "Unbekannte Rolle (erlaubt: owner, admin, member).")
	}
	if len([]rune(in.Password)) < MinPasswordLength {
		errs.Add("password", fmt.Sprintf("Das Passwort muss mindestens %d Zeichen lang sein.", MinPasswordLength))
	}
	if utf8.RuneCountInString(in.Name) > maxUserNameLen {
		errs.Add("name", fmt.Sprintf("Der Name darf höchstens %d Zeichen lang sein.", maxUserNameLen))
	}
	if err := errs.Err(); err != nil {
		return User{}, err
	}
	hash, err := hashPassword(db.passwords, in.Password)
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
		if after != nil {
			return after(tx, u)
		}
		return nil
	})
	return u, err
}

// Roles are the roles of account users, most rights first.
func Roles() []string { return []string{RoleOwner, RoleAdmin, RoleMember} }

// ObjectUser is the activity log's object type of account users.
const ObjectUser = "user"

// maxUserNameLen bounds a user's display name.
const maxUserNameLen = 100

const selectAccountUsers = `SELECT ` + userColumns + ` FROM users WHERE account_id = $1
ORDER BY CASE role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END, lower(email)`

// AccountUsers lists an account's users: owners first, then admins, then members,
// each by address.
func (db *DB) AccountUsers(ctx context.Context, accountID int64) ([]User, error) {
	var out []User
	if err := db.SelectContext(ctx, &out, selectAccountUsers, accountID); err != nil {
		return nil, fmt.Errorf("store: account users: %w", err)
	}
	return out, nil
}

// Reasons of the *ConflictError that AddUser, ChangeUserRole and RemoveUser return.
const (
	ReasonNotAdmin  = "not_admin"  // the acting user is a member
	ReasonOwnerOnly = "owner_only" // only owners grant, change or remove the owner role
	ReasonSelf      = "self"       // nobody changes their own role or removes themselves
	ReasonLastOwner = "last_owner" // an account keeps at least one owner
)

// checkManager checks that by (a user of accountID) may manage users, and may
// touch the owner role when owner is true.
func checkManager(accountID int64, by User, owner bool) error {
	if by.AccountID != accountID || !by.CanManageKeys() {
		return &ConflictError{Reason: ReasonNotAdmin, Message: "Nur Inhaber und Administratoren verwalten die Benutzer des Kontos."}
	}
	if owner && by.Role != RoleOwner {
		return &ConflictError{Reason: ReasonOwnerOnly, Message: "Nur Inhaber können die Rolle „Inhaber“ vergeben, ändern oder entziehen."}
	}
	return nil
}

// AddUser adds a user to the account on behalf of by (an owner or admin; only an
// owner adds owners) and records it in the activity log. Field errors as
// CreateUser; *ConflictError when by may not.
func (db *DB) AddUser(ctx context.Context, accountID int64, by User, in NewUser) (User, error) {
	if err := checkManager(accountID, by, in.Role == RoleOwner); err != nil {
		return User{}, err
	}
	return db.createUser(ctx, accountID, in, func(tx *sqlx.Tx, u User) error {
		return LogActivity(ctx, tx, accountID, Actor{Type: ActorUser, ID: by.ID}, ActivityEntry{Action: "user.created",
			ObjectType: ObjectUser, ObjectID: u.ID, Details: map[string]any{"email": u.Email, "role": u.Role}})
	})
}

// lockAccountUsers serialises changes of an account's users, so that two owners
// demoting each other at once cannot leave the account without one.
const lockAccountUsers = `SELECT id FROM accounts WHERE id = $1 FOR NO KEY UPDATE`

const selectUserForUpdate = `SELECT ` + userColumns + ` FROM users WHERE account_id = $1 AND id = $2 FOR UPDATE`

const countOwners = `SELECT count(*) FROM users WHERE account_id = $1 AND role = 'owner'`

const updateUserRole = `UPDATE users SET role = $3, updated_at = now() WHERE account_id = $1 AND id = $2 RETURNING ` + userColumns

const deleteAccountUser = `DELETE FROM users WHERE account_id = $1 AND id = $2`

// changeUser locks the account and the user id, checks the rules every change
// of a user shares (by may manage users, not themselves, owners only by owners,
// the last owner stays) and runs change.
func (db *DB) changeUser(ctx context.Context, accountID int64, by User, id int64, newRole string,
	change func(tx *sqlx.Tx, cur User) error) error {
	if err := checkManager(accountID, by, false); err != nil {
		return err
	}
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var lockID int64
		if err := tx.GetContext(ctx, &lockID, lockAccountUsers, accountID); err != nil {
			return notFound("change user", err)
		}
		// The actor's role as of now, under the lock: a manager demoted a moment
		// ago manages nobody.
		var me User
		if err := tx.GetContext(ctx, &me, selectUserForUpdate, accountID, by.ID); err != nil {
			if err := notFound("change user", err); !errors.Is(err, ErrNotFound) {
				return err
			}
			me = User{}
		}
		by = me
		var cur User
		if err := tx.GetContext(ctx, &cur, selectUserForUpdate, accountID, id); err != nil {
			return notFound("change user", err)
		}
		if cur.ID == by.ID {
			return &ConflictError{Reason: ReasonSelf, Message: "Ihre eigene Rolle und Ihren eigenen Zugang ändert ein anderer Inhaber oder Administrator."}
		}
		if err := checkManager(accountID, by, cur.Role == RoleOwner || newRole == RoleOwner); err != nil {
			return err
		}
		if cur.Role == RoleOwner && newRole != RoleOwner {
			var owners int
			if err := tx.GetContext(ctx, &owners, countOwners, accountID); err != nil {
				return fmt.Errorf("store: change user: %w", err)
			}
			if owners <= 1 {
				return &ConflictError{Reason: ReasonLastOwner, Message: "Ein Konto braucht mindestens einen Inhaber."}
			}
		}
		return change(tx, cur)
	})
}

// ChangeUserRole gives user id of the account a new role on behalf of by and
// records it in the activity log. Nobody changes their own role; only owners
// grant or take the owner role; the last owner keeps it (*ConflictError). The
// change applies from the user's next request.
func (db *DB) ChangeUserRole(ctx context.Context, accountID int64, by User, id int64, role string) (User, error) {
	if !slices.Contains(Roles(), role) {
		return User{}, Invalid("role", "Unbekannte Rolle (erlaubt: owner, admin, member).")
	}
	var out User
	err := db.changeUser(ctx, accountID, by, id, role, func(tx *sqlx.Tx, cur User) error {
		if err := tx.GetContext(ctx, &out, updateUserRole, accountID, id, role); err != nil {
			return fmt.Errorf("store: change user role: %w", err)
		}
		if cur.Role == role {
			return nil
		}
		return LogActivity(ctx, tx, accountID, Actor{Type: ActorUser, ID: by.ID}, ActivityEntry{Action: "user.role_changed",
			ObjectType: ObjectUser, ObjectID: id, Details: map[string]any{"email": cur.Email, "from": cur.Role, "to": role}})
	})
	return out, err
}

// RemoveUser deletes user id from the account on behalf of by, with the same
// rules as ChangeUserRole (not oneself, owners only by owners, never the last
// owner). The user's sessions end with it (sessions.user_id cascades).
func (db *DB) RemoveUser(ctx context.Context, accountID int64, by User, id int64) (User, error) {
	var removed User
	err := db.changeUser(ctx, accountID, by, id, "", func(tx *sqlx.Tx, cur User) error {
		if _, err := tx.ExecContext(ctx, deleteAccountUser, accountID, id); err != nil {
			return fmt.Errorf("store: remove user: %w", err)
		}
		removed = cur
		return LogActivity(ctx, tx, accountID, Actor{Type: ActorUser, ID: by.ID}, ActivityEntry{Action: "user.removed",
			ObjectType: ObjectUser, ObjectID: id, Details: map[string]any{"email": cur.Email, "role": cur.Role}})
	})
	return removed, err
}

// NewPassword returns a random initial password for a user someone else adds:
// 20 letters and digits (about 119 bits), shown once to be handed over.
func NewPassword() string { return RandomString(20) }

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
	hash, err := hashPassword(db.passwords, c.New)
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
