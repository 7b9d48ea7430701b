package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestMoney(t *testing.T) {
	for in, want := range map[string]store.Money{
		"25": 250000, "12.50": 125000, "12,5": 125000, "0.0001": 1, ".5": 5000, "7.": 70000, " 3 ": 30000, "100000": 100_000 * store.EUR,
	} {
		got, err := store.ParseMoney(in)
		if err != nil || got != want {
			t.Errorf("ParseMoney(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", ".", "-5", "1.23456", "1e3", "12.50 EUR", "1,000.00", "abc", "9999999999999"} {
		if _, err := store.ParseMoney(in); err == nil {
			t.Errorf("ParseMoney(%q) accepted", in)
		}
	}
	for m, want := range map[store.Money]string{0: "0.00", 1: "0.0001", 34: "0.0034", 125000: "12.50", 125010: "12.501", -33: "-0.0033", 10 * store.EUR: "10.00"} {
		if got := m.String(); got != want {
			t.Errorf("Money(%d).String() = %q, want %q", int64(m), got, want)
		}
	}
	if store.Money(34).Float() != 0.0034 {
		t.Errorf("Float %v", store.Money(34).Float())
	}
}

func TestAILedger(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct, other := newAccount(t, db, "pro"), newAccount(t, db, "pro")

	if b, err := db.AIBalance(ctx, acct); err != nil || b != 0 {
		t.Fatalf("new account: %s %v", b, err)
	}
	for _, bad := range []store.Money{0, -1, store.MaxAITopUp + 1} {
		var ve *store.ValidationError
		if _, err := db.AITopUp(ctx, acct, bad); !errors.As(err, &ve) || ve.Fields["amount"] == "" {
			t.Errorf("top-up %s: %v", bad, err)
		}
	}
	if _, err := db.AITopUp(ctx, 999999, store.EUR); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown account: %v", err)
	}
	if b, err := db.AITopUp(ctx, acct, 25*store.EUR); err != nil || b != 25*store.EUR {
		t.Fatalf("top-up: %s %v", b, err)
	}
	if _, err := db.AITopUp(ctx, other, 5*store.EUR); err != nil {
		t.Fatal(err)
	}
	b, err := db.AIDebit(ctx, acct, store.AICharge{Action: "improve", Model: "claude-haiku-4-5", Provider: "anthropic",
		TokensIn: 1000, TokensOut: 500, Cost: 34, RequestID: "req_1"})
	if err != nil || b != 25*store.EUR-34 {
		t.Fatalf("debit: %s %v", b, err)
	}
	if _, err := db.AIDebit(ctx, acct, store.AICharge{Cost: -1}); err == nil {
		t.Error("a negative cost would credit the account")
	}
	if _, err := db.AIDebit(ctx, acct, store.AICharge{Action: "fix", Model: "llama3.1:8b", Provider: "openai", FallbackUsed: true, Cost: 0}); err != nil {
		t.Fatal(err)
	}

	rows, total, err := db.AILedger(ctx, acct, store.AILedgerFilter{}, store.Page{Page: 1, PerPage: 2})
	if err != nil || total != 3 || len(rows) != 2 {
		t.Fatalf("ledger: %d of %d, %v", len(rows), total, err)
	}
	if r := rows[1]; r.Kind != "debit" || r.Amount != -34 || r.Action != "improve" || r.Model != "claude-haiku-4-5" || r.Provider != "anthropic" ||
		r.TokensIn != 1000 || r.TokensOut != 500 || r.FallbackUsed || r.RequestID != "req_1" || r.CreatedAt.IsZero() {
		t.Errorf("debit row %+v", r)
	}
	if r := rows[0]; !r.FallbackUsed || r.Provider != "openai" || r.Amount != 0 {
		t.Errorf("newest first: %+v", r)
	}
	rows, total, err = db.AILedger(ctx, acct, store.AILedgerFilter{}, store.Page{Page: 2, PerPage: 2})
	if err != nil || total != 3 || len(rows) != 1 || rows[0].Kind != "topup" || rows[0].Amount != 25*store.EUR {
		t.Errorf("page 2: %+v %d %v", rows, total, err)
	}
	if rows, total, _ := db.AILedger(ctx, acct, store.AILedgerFilter{Kind: "topup"}, store.Page{Page: 1, PerPage: 10}); total != 1 || len(rows) != 1 {
		t.Errorf("top-ups only: %d", total)
	}
	var ve *store.ValidationError
	if _, _, err := db.AILedger(ctx, acct, store.AILedgerFilter{Kind: "refund"}, store.Page{Page: 1, PerPage: 10}); !errors.As(err, &ve) {
		t.Errorf("unknown kind: %v", err)
	}
	// Another account sees only its own rows and balance.
	if rows, total, _ := db.AILedger(ctx, other, store.AILedgerFilter{}, store.Page{Page: 1, PerPage: 10}); total != 1 || rows[0].Amount != 5*store.EUR {
		t.Errorf("other account: %+v", rows)
	}
	// store.Usage (GET /plan/limits) reads the same ledger.
	if u, err := db.Usage(ctx, acct, time.Now()); err != nil || u.AICreditEUR != (25*store.EUR-34).Float() {
		t.Errorf("usage ai_credit_eur %v %v", u.AICreditEUR, err)
	}
}

func TestAICreditMonth(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "pro")
	if _, err := db.AITopUp(ctx, acct, 10*store.EUR); err != nil {
		t.Fatal(err)
	}
	for _, cost := range []store.Money{100, 250, 5000} {
		if _, err := db.AIDebit(ctx, acct, store.AICharge{Action: "improve", Cost: cost}); err != nil {
			t.Fatal(err)
		}
	}
	// The 0.50 EUR debit happened at 23:30 on 31 October in Berlin (22:30 UTC): last
	// month. The others happened today, 22 November.
	if _, err := db.ExecContext(ctx, `UPDATE ai_ledger SET created_at = '2026-10-31 22:30:00+00' WHERE account_id = $1 AND amount_eur = -0.5`, acct); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	if _, err := db.ExecContext(ctx, `UPDATE ai_ledger SET created_at = $2 WHERE account_id = $1 AND amount_eur <> -0.5`, acct, now); err != nil {
		t.Fatal(err)
	}
	c, err := db.AICredit(ctx, acct, now)
	if err != nil {
		t.Fatal(err)
	}
	want := store.AICredit{Balance: 10*store.EUR - 5350, SpentMonth: 350, RequestsMonth: 2, TopUpsTotal: 10 * store.EUR}
	if c.Balance != want.Balance || c.SpentMonth != want.SpentMonth || c.RequestsMonth != want.RequestsMonth || c.TopUpsTotal != want.TopUpsTotal {
		t.Errorf("credit %+v, want %+v", c, want)
	}
	if got := c.MonthStart.In(store.Berlin).Format(time.RFC3339); got != "2026-11-01T00:00:00+01:00" {
		t.Errorf("month start %s", got)
	}
	// At 00:30 on 1 December in Berlin (23:30 UTC on 30 November) a new month began.
	if c, _ := db.AICredit(ctx, acct, time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC)); c.SpentMonth != 0 || c.RequestsMonth != 0 {
		t.Errorf("December: %+v", c)
	}
}

// TestAIDebitsSerialise runs debits from several pools (processes) at once: every
// debit reports a distinct balance, and the final balance is exact.
func TestAIDebitsSerialise(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	pools := []*store.DB{dbtest.Open(t, url), dbtest.Open(t, url), dbtest.Open(t, url)}
	acct := newAccount(t, pools[0], "pro")
	if _, err := pools[0].AITopUp(ctx, acct, store.EUR); err != nil {
		t.Fatal(err)
	}
	const n = 30
	var (
		mu       sync.Mutex
		balances []store.Money
		wg       sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			b, err := pools[i%len(pools)].AIDebit(ctx, acct, store.AICharge{Action: "improve", Cost: 7})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			balances = append(balances, b)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(balances)
	for i, b := range balances {
		if want := store.EUR - n*7 + store.Money(i)*7; b != want {
			t.Fatalf("balances %v: position %d is %s, want %s (two debits saw the same balance)", balances, i, b, want)
		}
	}
	if b, _ := pools[1].AIBalance(ctx, acct); b != store.EUR-n*7 {
		t.Errorf("final balance %s", b)
	}
}
