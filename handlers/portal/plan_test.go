package portal_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// upgradeURL calls GET /v1/me with key and returns the upgrade_url of its 402.
func upgradeURL(t *testing.T, s *server, key string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body struct {
		Error struct {
			Code       string `json:"code"`
			UpgradeURL string `json:"upgrade_url"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || resp.StatusCode != http.StatusPaymentRequired || body.Error.UpgradeURL == "" {
		t.Fatalf("GET /v1/me on a plan without the API: %d %s", resp.StatusCode, raw)
	}
	return body.Error.UpgradeURL
}

// TestUpgradeURLIsThePlanPage: the upgrade_url of a 402 is a portal page that
// answers 200 for a signed-in user (issue 27, item 8), of any role, with the
// plan's features, its limits with usage, and how to change the plan.
func TestUpgradeURLIsThePlanPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "free")
	_, key, err := s.db.CreateKey(ctx, acct.ID, store.KeySettings{Name: "Shop"})
	if err != nil {
		t.Fatal(err)
	}
	up, err := url.Parse(upgradeURL(t, s, key))
	if err != nil || up.String() != base+"/settings/plan" {
		t.Fatalf("upgrade_url %v %v", up, err)
	}

	// Signed out: the sign-in page first.
	if r := newClient(t, s).get(up.Path); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/login") {
		t.Errorf("signed out: %d %s", r.StatusCode, r.Header.Get("Location"))
	}

	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	r := c.get(up.Path)
	wantStatus(t, r, http.StatusOK)
	if r.find("plan-page").Length() != 1 || !strings.Contains(text(r.Doc.Find("h1")), "Tarif") {
		t.Fatalf("plan page:\n%s", r.Body)
	}
	if got := text(r.find("usage-contacts").Find(`[data-testid="limit"]`)); got != "500" {
		t.Errorf("contact limit %q, want 500 (plan free)", got)
	}
	if r.find("usage-lists").Length() != 1 || r.find("no-features").Length() != 1 {
		t.Errorf("limits or features missing:\n%s", r.Body)
	}
	// Without RUNDBRIEF_UPGRADE_URL the page names the operator and the account.
	if op := text(r.find("plan-operator")); !strings.Contains(op, "Betreiber") || !strings.Contains(op, "„Kostenlos“") ||
		r.find("plan-change-link").Length() != 0 {
		t.Errorf("how to change the plan: %q", op)
	}
	if r.find("nav-plan").Length() != 1 {
		t.Error("the plan page is not in the navigation")
	}
	// The dashboard's usage panel links to it.
	if href, _ := c.get("/dashboard").find("upgrade-link").Attr("href"); href != up.Path {
		t.Errorf("dashboard's upgrade link %q", href)
	}

	// A member sees it too.
	if _, err := s.db.CreateUser(ctx, acct.ID, store.NewUser{Email: "m@example.com", Role: store.RoleMember, Password: "another long password"}); err != nil {
		t.Fatal(err)
	}
	m := newClient(t, s)
	m.signIn("m@example.com", "another long password")
	wantStatus(t, m.get(up.Path), http.StatusOK)

	// With RUNDBRIEF_UPGRADE_URL the page links there.
	s2 := newServerWith(t, dbtest.URL(t), nil, base, serverOptions{UpgradeURL: "https://betreiber.example/tarife"})
	acct2 := newAccount(t, s2.db, "pro")
	c2 := newClient(t, s2)
	c2.signIn(acct2.Email, acct2.Password)
	r = c2.get(up.Path)
	wantStatus(t, r, http.StatusOK)
	if href, _ := r.find("plan-change-link").Attr("href"); href != "https://betreiber.example/tarife" || r.find("features").Length() != 1 {
		t.Errorf("change link %q\n%s", href, r.Body)
	}
}
