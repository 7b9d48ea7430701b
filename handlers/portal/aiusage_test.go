package portal_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestAIUsagePage: the credit, this month's spending and every request with
// its German task name, model and cost; a plan without AI gets the plan page's
// pointer instead (402), and another account's ledger stays its own.
func TestAIUsagePage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	r := c.get("/ai/usage")
	wantStatus(t, r, http.StatusOK)
	if r.find("ai-empty").Length() != 1 || r.find("ai-no-credit").Length() != 1 {
		t.Fatal("a new account: no empty state or no hint on the missing credit")
	}

	if _, err := s.db.AITopUp(ctx, acct.ID, 10*store.EUR); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.AIDebit(ctx, acct.ID, store.AICharge{Action: "subject_ideas", Model: "claude-haiku-4-5", Provider: "anthropic",
		TokensIn: 1200, TokensOut: 300, Cost: 25 * store.EUR / 1000, RequestID: "req_1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.AIDebit(ctx, acct.ID, store.AICharge{Action: "fix", Model: "gpt-4o-mini", Provider: "openai",
		TokensIn: 800, TokensOut: 700, FallbackUsed: true, Cost: 5 * store.EUR / 1000, RequestID: "req_2"}); err != nil {
		t.Fatal(err)
	}
	r = c.get("/ai/usage")
	wantStatus(t, r, http.StatusOK)
	if got := text(r.find("ai-balance")); got != "9,97 €" {
		t.Errorf("balance %q, want 9,97 €", got)
	}
	if got := text(r.find("ai-requests-month")); got != "2" {
		t.Errorf("requests this month %q", got)
	}
	rows := r.find("ai-ledger-row").Map(func(_ int, s *goquery.Selection) string { return text(s) })
	if len(rows) != 3 || !strings.Contains(rows[0], "Rechtschreibung und Grammatik korrigieren") || !strings.Contains(rows[0], "Ersatzmodell") ||
		!strings.Contains(rows[1], "8 Betreffzeilen vorschlagen") || !strings.Contains(rows[1], "1.200 / 300") || !strings.Contains(rows[2], "Aufladung") {
		t.Errorf("ledger rows:\n%s", strings.Join(rows, "\n"))
	}
	if r.find("ai-no-credit").Length() != 0 {
		t.Error("the missing-credit hint shows with credit")
	}

	other := newAccount(t, s.db, "")
	oc := newClient(t, s)
	oc.signIn(other.Email, other.Password)
	if n := oc.get("/ai/usage").find("ai-ledger-row").Length(); n != 0 {
		t.Errorf("another account sees %d ledger rows", n)
	}

	// A plan without AI: the page says so and where to look.
	if err := s.db.SetPlan(ctx, acct.ID, "starter"); err != nil {
		t.Fatal(err)
	}
	r = c.get("/ai/usage")
	wantStatus(t, r, http.StatusPaymentRequired)
	if !strings.Contains(r.Body, "KI-Funktionen") || !strings.Contains(r.Body, "Tarif") {
		t.Errorf("the plan page's pointer is missing:\n%s", text(r.Doc.Find("main")))
	}
}
