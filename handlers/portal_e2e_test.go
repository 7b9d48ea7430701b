package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/rundbrief/rundbrief/handlers/webtest"
	"github.com/rundbrief/rundbrief/store"
)

// artifactsDir is where the end-to-end test saves its screenshots:
// $RUNDBRIEF_ARTIFACTS, or rundbrief-artifacts in the temporary directory.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("RUNDBRIEF_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "rundbrief-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshot saves the whole page as a PNG artifact and logs its path.
func screenshot(t *testing.T, dir, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		png, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			return err
		}
		t.Logf("screenshot %s: %s", name, path)
		return nil
	})
}

// brokenWords is a script that lists, as JSON, the words inside the elements
// matching selector that are broken across two lines (a word on two lines
// has two rectangles): labels and names a narrow box cut in the middle. A
// line may end after a hyphen ("Double-" / "Opt-in"), so each part of a
// hyphenated word counts as a word of its own.
func brokenWords(selector string) string {
	return `JSON.stringify([...new Set(Array.from(document.querySelectorAll(` + quoteJS(selector) + `)).flatMap(el => {
		const broken = [], texts = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
		for (let n; (n = texts.nextNode());) {
			for (const m of n.data.matchAll(/[^\s-]+-?/g)) {
				const r = document.createRange();
				r.setStart(n, m.index);
				r.setEnd(n, m.index + m[0].length);
				if (r.getClientRects().length > 1) broken.push(m[0]);
			}
		}
		return broken;
	}))])`
}

// tid selects the element with a data-testid.
func tid(id string) chromedp.CSS { return chromedp.CSS(`[data-testid="` + id + `"]`) }

// tab is the browser tab of one end-to-end test. A step that fails saves what
// the page showed as failed-<step>.png before it fails the test.
type tab struct {
	t       *testing.T
	ctx     context.Context // the tab, within the test's time limit
	browser context.Context // the tab without the limit: the failure screenshot still works after a timeout
	dir     string          // artifacts
}

// newTab opens headless Chromium at width×height for at most limit.
func newTab(t *testing.T, width, height int64, limit time.Duration) *tab {
	t.Helper()
	browserCtx := webtest.Browser(t, width, height)
	ctx, cancel := context.WithTimeout(browserCtx, limit)
	t.Cleanup(cancel)
	return &tab{t: t, ctx: ctx, browser: browserCtx, dir: artifactsDir(t)}
}

// do runs the actions of one named step.
func (b *tab) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		shotCtx, cancel := context.WithTimeout(b.browser, 10*time.Second)
		defer cancel()
		_ = chromedp.Do(shotCtx, screenshot(b.t, b.dir, "failed-"+strings.ReplaceAll(step, " ", "-")))
		b.t.Fatalf("%s: %v", step, err)
	}
}

// read runs a step that yields a string.
func (b *tab) read(step string, a chromedp.Action[string]) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v", step, err)
	}
	return v
}

// grantClipboard lets the pages of origin use the clipboard, so that tests can
// read what a copy button copied. The grant holds in the tab's own browser
// context (webtest.Browser gives each test one).
func (b *tab) grantClipboard(origin string) {
	b.t.Helper()
	for _, perm := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.CallBrowser(b.ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: perm}, Setting: browser.PermissionSettingGranted, Origin: origin,
			BrowserContextID: chromedp.FromContext(b.ctx).BrowserContextID,
		}); err != nil {
			b.t.Fatalf("grant %s: %v", perm, err)
		}
	}
}

// signIn signs in on the portal at base and waits for the signed-in layout.
func (b *tab) signIn(base, email, password string) {
	b.t.Helper()
	b.do("sign in",
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(tid("sign-in-form")),
		chromedp.SendKeys(chromedp.CSS(`#field-email`), email),
		chromedp.SendKeys(chromedp.CSS(`#field-password`), password),
		chromedp.Click(tid("sign-in-submit")),
		chromedp.WaitVisible(tid("sidebar")),
	)
}

// until waits (up to 20 s) for a JavaScript condition on the page.
func until(cond string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(20*time.Second))(ctx, tg)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", cond, err)
		}
		return nil
	})
}

// TestPortalEndToEnd drives the portal in a real browser: sign in, create an API key
// and read it once, use it, revoke it through the htmx confirmation, and see it
// refused by the API.
func TestPortalEndToEnd(t *testing.T) {
	t.Parallel()
	s := startServer(t, 1_000_000)
	b := newTab(t, 1360, 900, 90*time.Second)
	ctx, dir, do, read := b.ctx, b.dir, b.do, b.read
	bg := context.Background()
	acct, err := s.db.CreateAccount(bg, store.NewAccount{Name: "Bäckerei Müller", Email: "inhaber@baeckerei-mueller.de", Password: "sauerteig-seit-1923"})
	if err != nil {
		t.Fatal(err)
	}
	// Some usage, so that the dashboard's bars show something.
	if _, err := s.db.ExecContext(bg, `UPDATE account_usage SET contacts = 18250, lists = 7, storage_bytes = 1320000000 WHERE account_id = $1`, acct.Account.ID); err != nil {
		t.Fatal(err)
	}
	b.grantClipboard(s.URL)

	do("sign in",
		chromedp.Navigate(s.URL+"/login"),
		chromedp.WaitVisible(tid("sign-in-form")),
		screenshot(t, dir, "portal-sign-in"),
		chromedp.SendKeys(chromedp.CSS(`#field-email`), "inhaber@baeckerei-mueller.de"),
		chromedp.SendKeys(chromedp.CSS(`#field-password`), "sauerteig-seit-1923"),
		chromedp.Click(tid("sign-in-submit")),
		chromedp.WaitVisible(tid("usage-panel")),
		screenshot(t, dir, "portal-dashboard"),
	)
	if got := read("account name", chromedp.Text(tid("account-name"))); got != "Bäckerei Müller" {
		t.Errorf("header shows account %q", got)
	}
	// No navigation label is broken inside a word: "Anmeldeformulare" was
	// broken before its last letter once the navigation was taller than the
	// window and its scrollbar took width (a low window here). A word on two
	// lines has two rectangles.
	do("a low window", chromedp.EmulateViewport(1360, 480))
	if got := read("navigation words broken", evalString(brokenWords(`[data-testid="sidebar"] nav a`))); got != "[]" {
		t.Errorf("navigation words broken across lines: %s", got)
	}
	do("the window as before", chromedp.EmulateViewport(1360, 900))

	do("create a key",
		chromedp.Click(tid("nav-api-keys")),
		chromedp.WaitVisible(tid("keys-empty")),
		chromedp.Click(tid("new-key-link")),
		chromedp.WaitVisible(tid("key-form")),
		chromedp.SendKeys(chromedp.CSS(`#field-name`), "Onlineshop"),
		chromedp.Click(chromedp.CSS(`input[name="scopes"][value="read"]`)),
		chromedp.Click(chromedp.CSS(`input[name="scopes"][value="write"]`)),
		chromedp.SendKeys(chromedp.CSS(`#field-allowed_origins`), "https://shop.baeckerei-mueller.de"),
		chromedp.Click(tid("key-submit")),
		chromedp.WaitVisible(tid("new-key")),
	)
	full := read("read the key", chromedp.Value(tid("new-key")))
	if !strings.HasPrefix(full, store.KeyPrefix) || len(full) != len(store.KeyPrefix)+40 {
		t.Fatalf("key read from the page: %q", full)
	}
	do("copy", chromedp.Click(tid("copy-key")),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool](`document.querySelector('[data-testid="copy-status"]').textContent !== ""`,
				chromedp.WithPollingTimeout(5*time.Second))(ctx, tg)
			return err
		}),
		screenshot(t, dir, "portal-api-keys"),
	)
	if got := read("copy status", chromedp.Text(tid("copy-status"))); got != "In die Zwischenablage kopiert." {
		t.Errorf("copy button reports %q", got)
	}
	if clip, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise)); err != nil || clip != full {
		t.Errorf("clipboard holds %q (%v), want the key", clip, err)
	}
	if st := meStatusE2E(t, s.URL, full); st != http.StatusOK {
		t.Fatalf("the new key: GET /v1/me %d", st)
	}

	// A reload does not show the key again.
	do("reload", chromedp.Reload(), chromedp.WaitVisible(tid("keys-table")))
	shownAgain, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
		`document.querySelector('[data-testid="new-key"]') !== null || document.body.innerHTML.includes(`+quoteJS(full)+`)`))
	if err != nil || shownAgain {
		t.Fatalf("the full key is shown again after a reload (%v)", err)
	}
	// On a 1280 px laptop the keys table fits: its actions were cut off
	// behind a sideways scroll.
	do("a laptop window", chromedp.EmulateViewport(1280, 800))
	if over := read("keys table overflow", evalString(`(e => String(e.scrollWidth - e.clientWidth))(document.querySelector('[data-testid="keys-table"]').parentElement)`)); over != "0" {
		t.Errorf("the keys table scrolls sideways by %s px at 1280 px", over)
	}
	do("the window as before", chromedp.EmulateViewport(1360, 900))

	// Revoke through the inline (htmx) confirmation.
	do("revoke",
		chromedp.Click(tid("key-revoke")),
		chromedp.WaitVisible(tid("confirm-revoke")),
		screenshot(t, dir, "portal-api-keys-revoke"),
		chromedp.Click(tid("confirm-revoke")),
		chromedp.WaitVisible(chromedp.CSS(`tr.is-revoked`)),
	)
	if got := read("status", chromedp.Text(tid("key-status"))); !strings.HasPrefix(got, "Widerrufen am") {
		t.Errorf("status after revoking %q", got)
	}
	if got := read("flash", chromedp.Text(tid("flash"))); !strings.Contains(got, "widerrufen") {
		t.Errorf("flash %q", got)
	}
	if st := meStatusE2E(t, s.URL, full); st != http.StatusUnauthorized {
		t.Fatalf("the revoked key: GET /v1/me %d, want 401", st)
	}

	// The API log lists the request made with the key (written within 200 ms).
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, n, _, err := s.db.APILog(bg, acct.Account.ID, store.APILogFilter{}, store.Page{Page: 1, PerPage: 1}, store.APILogMaxCount); err == nil && n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the API log stayed empty")
		}
		time.Sleep(50 * time.Millisecond)
	}
	do("api log",
		chromedp.Click(tid("nav-api-log")),
		chromedp.WaitVisible(tid("log-table")),
		screenshot(t, dir, "portal-api-log"),
	)
	if got := read("log path", chromedp.Text(tid("log-path"))); got != "/v1/me" {
		t.Errorf("API log shows %q", got)
	}

	do("sign out", chromedp.Click(tid("sign-out")), chromedp.WaitVisible(tid("sign-in-form")))
	if got := read("location", chromedp.Location()); !strings.HasSuffix(got, "/login") {
		t.Errorf("after sign-out at %s", got)
	}
}

func meStatusE2E(t *testing.T, base, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func quoteJS(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }
