package public_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rundbrief/rundbrief/handlers/webtest"
	"github.com/rundbrief/rundbrief/store"
)

// TestEmbeddedFormInBrowser pastes the embed snippet of a form with proof of
// work into a page of another origin and signs up in headless Chromium:
// signup.js fetches the stamp and the challenge across origins, solves it with
// crypto.subtle, and the plain form post ends on the hosted thank-you page. Then
// the same on the hosted page itself.
func TestEmbeddedFormInBrowser(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	c := s.apiClient(t, s.key)
	r := c.Request(http.MethodPost, "/v1/forms", map[string]any{"name": "Blog", "proof_of_work": true,
		"double_opt_in": false, "fields": []string{"first_name"}, "success_message": "Danke fürs Mitlesen!"})
	var f struct {
		ID    int64  `json:"id"`
		Token string `json:"token"`
	}
	r.Data(t, &f)
	var embed struct {
		HTML string `json:"html"`
	}
	c.Request(http.MethodGet, fmt.Sprintf("/v1/forms/%d/embed", f.ID), nil).Data(t, &embed)

	// The customer's website: another origin (another port) than Rundbrief.
	customer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!DOCTYPE html><html lang="de"><head><meta charset="utf-8"><title>Blog</title></head><body><h1>Unser Blog</h1>`+
			embed.HTML+`</body></html>`)
	}))
	t.Cleanup(customer.Close)

	ctx := webtest.Browser(t, 1200, 900)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	ready := `(() => { const f = document.querySelector("form.rundbrief-signup");
		return !!f && f.querySelector("[name=_rb_ts]").value !== "" && f.querySelector("[name=altcha]").value !== ""; })()`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(customer.URL),
		chromedp.WaitVisible(css("form.rundbrief-signup input[name=email]")),
	); err != nil {
		t.Fatalf("open the customer's page: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](ready, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("signup.js did not fill stamp and solution: %v", err)
	}
	// The form's fill time passes (the guard's clock, instead of waiting).
	s.clock.Add(5 * time.Second)
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(css("form.rundbrief-signup input[name=email]"), "leserin@example.com"),
		chromedp.SendKeys(css("form.rundbrief-signup input[name=first_name]"), "Ida"),
		chromedp.Click(css("form.rundbrief-signup button[type=submit]")),
		chromedp.WaitVisible(css(tid("thanks"))),
	); err != nil {
		t.Fatalf("sign-up in the browser: %v", err)
	}
	location, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	thanks, err := chromedp.Run(ctx, chromedp.Text(css(tid("thanks"))))
	if err != nil {
		t.Fatal(err)
	}
	if location != s.url+"/subscribe/"+f.Token+"?danke=1" || !strings.Contains(thanks, "Danke fürs Mitlesen!") {
		t.Errorf("ended on %q with %q", location, thanks)
	}
	got, err := s.db.ContactByEmail(context.Background(), s.acct, "leserin@example.com")
	if err != nil || got.Status != store.StatusSubscribed || got.FirstName != "Ida" || got.Source != store.SourceForm {
		t.Errorf("contact = %+v, %v", got, err)
	}
	if n := s.count(t, `SELECT count(*) FROM used_challenges WHERE account_id = $1`, s.acct); n != 1 {
		t.Errorf("%d used challenges, want the browser's one", n)
	}

	// The hosted page of the same form runs signup.js on its own origin.
	hosted := `(() => { const f = document.querySelector("[data-testid=subscribe-form]");
		return !!f && f.querySelector("[name=_rb_ts]").value !== "" && f.querySelector("[name=altcha]").value !== ""; })()`
	if err := chromedp.Do(ctx, chromedp.Navigate(s.url+"/subscribe/"+f.Token), chromedp.WaitVisible(css("#field-email"))); err != nil {
		t.Fatalf("open the hosted page: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](hosted, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("signup.js did not solve on the hosted page: %v", err)
	}
	s.clock.Add(5 * time.Second)
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(css("#field-email"), "zweite@example.com"),
		chromedp.Click(css(tid("subscribe-submit"))),
		chromedp.WaitVisible(css(tid("thanks"))),
	); err != nil {
		t.Fatalf("sign-up on the hosted page: %v", err)
	}
	if _, err := s.db.ContactByEmail(context.Background(), s.acct, "zweite@example.com"); err != nil {
		t.Errorf("hosted sign-up: %v", err)
	}
}
