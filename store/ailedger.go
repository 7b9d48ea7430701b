package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// Money is an amount in euros counted in ten-thousandths (0.0001 EUR), the precision
// of the AI ledger's numeric(14,4): sums and costs stay exact integers.
type Money int64

// EUR is one euro.
const EUR Money = 10000

// MaxAITopUp bounds one top-up, so that a typo (an extra zero or two) is refused.
const MaxAITopUp = 100_000 * EUR

// Float is the amount in euros as a JSON number, e.g. 0.0013.
func (m Money) Float() float64 { return float64(m) / float64(EUR) }

// String formats the amount with at least two and at most four decimals: "12.50", "0.0013".
func (m Money) String() string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	frac := fmt.Sprintf("%04d", int64(m%EUR))
	for len(frac) > 2 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	return sign + strconv.FormatInt(int64(m/EUR), 10) + "." + frac
}

// ParseMoney reads a non-negative euro amount such as "25", "12.50" or "12,5"
// (German decimal comma) with at most four decimals.
func ParseMoney(s string) (Money, error) {
	s = strings.TrimSpace(s)
	whole, frac, _ := strings.Cut(strings.Replace(s, ",", ".", 1), ".")
	if whole == "" && frac == "" || len(frac) > 4 || len(whole) > 12 || !digits(whole) || !digits(frac) {
		return 0, fmt.Errorf("store: %q is not an amount in euros (e.g. 25 or 12.50)", s)
	}
	w, _ := strconv.ParseInt("0"+whole, 10, 64)
	f, _ := strconv.ParseInt((frac + "0000")[:4], 10, 64)
	return Money(w)*EUR + Money(f), nil
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// AILedgerEntry is one row of an account's AI credit ledger: a top-up by the operator
// (positive Amount) or the debit of one generation (negative Amount).
type AILedgerEntry struct {
	ID           int64     `db:"id"`
	Kind         string    `db:"kind"` // "topup" or "debit"
	Amount       Money     `db:"amount"`
	Action       string    `db:"action"`
	Model        string    `db:"model"`
	Provider     string    `db:"provider"`
	TokensIn     int       `db:"tokens_in"`
	TokensOut    int       `db:"tokens_out"`
	FallbackUsed bool      `db:"fallback_used"`
	RequestID    string    `db:"request_id"`
	CreatedAt    time.Time `db:"created_at"`
}

// AICharge is what one generation costs and what produced it.
type AICharge struct {
	Action       string
	Model        string // the model that answered, e.g. "claude-haiku-4-5"
	Provider     string // "anthropic" or "openai"
	TokensIn     int
	TokensOut    int
	FallbackUsed bool
	Cost         Money // ≥ 0; recorded as a negative amount
	RequestID    string
	// Respond, if set, is called last in the debit's transaction with the
	// balance after it: the AI service stores the request's idempotent
	// response there (RecordIdempotent), so that it commits with the charge.
	Respond func(ctx context.Context, tx *sqlx.Tx, balance Money) error
}

// lockAccountCredit serialises the credit changes of one account. FOR NO KEY UPDATE
// does not conflict with the key-share locks that inserts referencing the account
// take, so other features are not held up.
const lockAccountCredit = `SELECT id FROM accounts WHERE id = $1 FOR NO KEY UPDATE`

const selectAIBalance = `SELECT (coalesce(sum(amount_eur), 0) * 10000)::bigint FROM ai_ledger WHERE account_id = $1`

const insertAILedger = `INSERT INTO ai_ledger
  (account_id, amount_eur, kind, action, model, provider, tokens_in, tokens_out, fallback_used, request_id)
VALUES ($1, $2::bigint / 10000.0, $3, $4, $5, $6, $7, $8, $9, $10)`

// AIBalance is the account's AI credit: top-ups minus debits. It may be slightly
// negative (see AIDebit).
func (db *DB) AIBalance(ctx context.Context, accountID int64) (Money, error) {
	var m Money
	if err := db.GetContext(ctx, &m, selectAIBalance, accountID); err != nil {
		return 0, fmt.Errorf("store: ai balance: %w", err)
	}
	return m, nil
}

// AITopUp adds amount (> 0, at most MaxAITopUp) to the account's AI credit and
// returns the new balance.
func (db *DB) AITopUp(ctx context.Context, accountID int64, amount Money) (Money, error) {
	switch {
	case amount <= 0:
		return 0, Invalid("amount", "Der Betrag muss größer als 0 sein.")
	case amount > MaxAITopUp:
		return 0, Invalid("amount", "Höchstens "+MaxAITopUp.String()+" € pro Aufladung.")
	}
	return db.addAILedger(ctx, accountID, "topup", amount, AICharge{})
}

// AIDebit records one generation and returns the balance after it. The debit row
// and the balance it leaves are one transaction, serialised per account.
//
// The cost of a generation is known only after the provider answered, so the caller
// checks for a positive balance before the call and debits the actual cost after it;
// the balance can therefore drop below zero by at most the cost of the calls that
// were in flight when it ran out (bounded by the AI rate limit). The next top-up
// covers it, and no further call starts while the balance is not positive.
func (db *DB) AIDebit(ctx context.Context, accountID int64, c AICharge) (Money, error) {
	if c.Cost < 0 {
		return 0, fmt.Errorf("store: ai debit: negative cost %d", c.Cost)
	}
	return db.addAILedger(ctx, accountID, "debit", -c.Cost, c)
}

func (db *DB) addAILedger(ctx context.Context, accountID int64, kind string, amount Money, c AICharge) (Money, error) {
	var balance Money
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var id int64
		if err := tx.GetContext(ctx, &id, lockAccountCredit, accountID); err != nil {
			return notFound("ai ledger: lock account", err)
		}
		if _, err := tx.ExecContext(ctx, insertAILedger, accountID, int64(amount), kind, c.Action, c.Model, c.Provider,
			c.TokensIn, c.TokensOut, c.FallbackUsed, c.RequestID); err != nil {
			return fmt.Errorf("store: ai ledger: %w", err)
		}
		if err := tx.GetContext(ctx, &balance, selectAIBalance, accountID); err != nil {
			return fmt.Errorf("store: ai ledger: %w", err)
		}
		if c.Respond != nil {
			return c.Respond(ctx, tx, balance)
		}
		return nil
	})
	return balance, err
}

// AILedgerFilter narrows GET /ai/usage; Kind "" lists both kinds.
type AILedgerFilter struct {
	Kind string // "", "debit" or "topup"
}

const aiLedgerColumns = `id, kind, (amount_eur * 10000)::bigint AS amount, action, model, provider, tokens_in, tokens_out,
  fallback_used, request_id, created_at`

const countAILedger = `SELECT count(*) FROM ai_ledger WHERE account_id = $1 AND ($2 = '' OR kind = $2)`

const selectAILedger = `SELECT ` + aiLedgerColumns + ` FROM ai_ledger
WHERE account_id = $1 AND ($2 = '' OR kind = $2) ORDER BY id DESC LIMIT $3 OFFSET $4`

// AILedger lists an account's ledger, newest first, with the total row count.
func (db *DB) AILedger(ctx context.Context, accountID int64, f AILedgerFilter, p Page) ([]AILedgerEntry, int, error) {
	if f.Kind != "" && f.Kind != "debit" && f.Kind != "topup" {
		return nil, 0, Invalid("kind", "Erlaubt sind debit und topup.")
	}
	var total int
	if err := db.GetContext(ctx, &total, countAILedger, accountID, f.Kind); err != nil {
		return nil, 0, fmt.Errorf("store: ai ledger: %w", err)
	}
	var out []AILedgerEntry
	if err := db.SelectContext(ctx, &out, selectAILedger, accountID, f.Kind, p.PerPage, p.Offset()); err != nil {
		return nil, 0, fmt.Errorf("store: ai ledger: %w", err)
	}
	return out, total, nil
}

// AICredit is an account's AI credit and what it spent in the current month.
type AICredit struct {
	Balance       Money     `db:"balance"`
	SpentMonth    Money     `db:"spent_month"`    // debits since MonthStart, as a positive amount
	RequestsMonth int64     `db:"requests_month"` // generations since MonthStart
	TopUpsTotal   Money     `db:"topups_total"`   // all top-ups ever
	MonthStart    time.Time `db:"-"`              // the first of the month, 00:00 Europe/Berlin
}

const selectAICredit = `SELECT
  (coalesce(sum(amount_eur), 0) * 10000)::bigint AS balance,
  (coalesce(-sum(amount_eur) FILTER (WHERE kind = 'debit' AND created_at >= $2), 0) * 10000)::bigint AS spent_month,
  count(*) FILTER (WHERE kind = 'debit' AND created_at >= $2) AS requests_month,
  (coalesce(sum(amount_eur) FILTER (WHERE kind = 'topup'), 0) * 10000)::bigint AS topups_total
FROM ai_ledger WHERE account_id = $1`

// AICredit returns the balance and this month's spending (months in Europe/Berlin).
func (db *DB) AICredit(ctx context.Context, accountID int64, now time.Time) (AICredit, error) {
	local := now.In(Berlin)
	start := time.Date(local.Year(), local.Month(), 1, 0, 0, 0, 0, Berlin)
	var c AICredit
	if err := db.GetContext(ctx, &c, selectAICredit, accountID, start); err != nil {
		return AICredit{}, fmt.Errorf("store: ai credit: %w", err)
	}
	c.MonthStart = start
	return c, nil
}
