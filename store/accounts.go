package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// Account is a tenant: every other object belongs to exactly one account.
type Account struct {
	ID        int64      `db:"id"`
	Name      string     `db:"name"`
	Plan      string     `db:"plan"`
	BlockedAt *time.Time `db:"blocked_at"`
	CreatedAt time.Time  `db:"created_at"`
}

// User is a person who signs in to the portal on behalf of an account.
type User struct {
	ID        int64     `db:"id"`
	AccountID int64     `db:"account_id"`
	Email     string    `db:"email"`
	Name      string    `db:"name"`
	Role      string    `db:"role"`
	CreatedAt time.Time `db:"created_at"`
}

// NewAccount is the input of CreateAccount.
type NewAccount struct {
	Name     string
	Email    string // the owner's sign-in address
	Password string // empty: one is generated and returned
	Plan     string // empty: business
}

// CreatedAccount is the result of CreateAccount. Password is set only when it was generated.
type CreatedAccount struct {
	Account  Account
	Owner    User
	Password string
}

// DefaultPlan is the plan of an account created without one.
const DefaultPlan = "business"

const insertAccount = `INSERT INTO accounts (name, plan) VALUES ($1, $2) RETURNING id, name, plan, blocked_at, created_at`

const insertAccountUsage = `INSERT INTO account_usage (account_id) VALUES ($1)`

const insertUser = `INSERT INTO users (account_id, email, name, role, password_hash) VALUES ($1, $2, $3, 'owner', $4)
RETURNING id, account_id, email, name, role, created_at`

const selectUserEmailTaken = `SELECT EXISTS (SELECT 1 FROM users WHERE lower(email) = lower($1))`

// CreateAccount creates an account and its owner user in one transaction.
func (db *DB) CreateAccount(ctx context.Context, in NewAccount) (CreatedAccount, error) {
	in.Name = strings.TrimSpace(in.Name)
	if in.Plan == "" {
		in.Plan = DefaultPlan
	}
	errs := Errs{}
	if in.Name == "" {
		errs.Add("name", "Bitte einen Namen angeben.")
	}
	normEmail(errs, "email", &in.Email)
	generated := ""
	if in.Password == "" {
		generated = RandomString(20)
		in.Password = generated
	} else if len([]rune(in.Password)) < 10 {
		errs.Add("password", "Das Passwort muss mindestens 10 Zeichen lang sein.")
	}
	if _, err := db.Plan(ctx, in.Plan); err == ErrNotFound {
		errs.Add("plan", "Diesen Tarif gibt es nicht.")
	} else if err != nil {
		return CreatedAccount{}, err
	}
	if err := errs.Err(); err != nil {
		return CreatedAccount{}, err
	}
	hash, err := hashPassword(db.passwords, in.Password)
	if err != nil {
		return CreatedAccount{}, err
	}
	var out CreatedAccount
	err = db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var taken bool
		if err := tx.GetContext(ctx, &taken, selectUserEmailTaken, in.Email); err != nil {
			return fmt.Errorf("store: create account: %w", err)
		}
		if taken {
			return Invalid("email", "Diese E-Mail-Adresse gehört schon zu einem Benutzer.")
		}
		if err := tx.GetContext(ctx, &out.Account, insertAccount, in.Name, in.Plan); err != nil {
			return fmt.Errorf("store: create account: %w", err)
		}
		if _, err := tx.ExecContext(ctx, insertAccountUsage, out.Account.ID); err != nil {
			return fmt.Errorf("store: create account usage: %w", err)
		}
		if err := tx.GetContext(ctx, &out.Owner, insertUser, out.Account.ID, in.Email, in.Name, hash); err != nil {
			return fmt.Errorf("store: create owner: %w", err)
		}
		return nil
	})
	if err != nil {
		return CreatedAccount{}, err
	}
	out.Password = generated
	return out, nil
}

const updateAccountPlan = `UPDATE accounts SET plan = $2, updated_at = now() WHERE id = $1`

// SetPlan moves an account to another plan; API keys of the account see it at once.
func (db *DB) SetPlan(ctx context.Context, accountID int64, plan string) error {
	if _, err := db.Plan(ctx, plan); err == ErrNotFound {
		return Invalid("plan", "Diesen Tarif gibt es nicht.")
	} else if err != nil {
		return err
	}
	return db.changeKeys(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, updateAccountPlan, accountID, plan)
		if err != nil {
			return fmt.Errorf("store: set plan: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return nil
	})
}

const selectAccount = `SELECT id, name, plan, blocked_at, created_at FROM accounts WHERE id = $1`

// Account returns the account with id.
func (db *DB) Account(ctx context.Context, id int64) (Account, error) {
	var a Account
	if err := db.GetContext(ctx, &a, selectAccount, id); err != nil {
		return Account{}, notFound("account", err)
	}
	return a, nil
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// RandomString returns n characters from A-Z, a-z, 0-9, drawn uniformly from crypto/rand.
func RandomString(n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, n*2)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			panic(fmt.Sprintf("store: crypto/rand failed: %v", err))
		}
		for _, b := range buf {
			// 248 = 4*62: rejecting larger bytes keeps every character equally likely.
			if b < 248 && len(out) < n {
				out = append(out, alnum[int(b)%62])
			}
		}
	}
	return string(out)
}
