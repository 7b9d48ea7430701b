package portal_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

const base = "http://rundbrief.test"

func TestSignIn(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)

	// Signed out: the start page offers the sign-in, protected pages send there.
	home := c.get("/")
	wantStatus(t, home, http.StatusOK)
	if href, _ := home.find("home-sign-in").Attr("href"); href != "/login" {
		t.Errorf("start page sign-in link %q", href)
	}
	wantRedirect(t, c.get("/dashboard"), "/login?next=%2Fdashboard")

	empty := c.post("/login", url.Values{"email": {""}, "password": {""}})
	wantStatus(t, empty, http.StatusUnprocessableEntity)
	for _, field := range []string{"email", "password"} {
		// The message sits inside the field's own block, and the input points at it.
		msg := empty.find("field-" + field).Find(`[data-testid="error-` + field + `"]`)
		if msg.Length() != 1 || strings.TrimSpace(msg.Text()) == "" {
			t.Errorf("no error next to %s:\n%s", field, empty.Body)
		}
		input := empty.find("field-" + field).Find("input")
		if inv, _ := input.Attr("aria-invalid"); inv != "true" {
			t.Errorf("%s not marked invalid", field)
		}
		if by, _ := input.Attr("aria-describedby"); !strings.Contains(by, "field-"+field+"-error") {
			t.Errorf("%s aria-describedby %q", field, by)
		}
	}

	wrong := c.post("/login", url.Values{"email": {acct.Email}, "password": {"not the password"}})
	wantStatus(t, wrong, http.StatusUnauthorized)
	if got := text(wrong.find("form-alert")); got != "E-Mail-Adresse oder Passwort ist falsch." {
		t.Errorf("alert %q", got)
	}
	if v, _ := wrong.Doc.Find(`input[name="email"]`).Attr("value"); v != acct.Email {
		t.Errorf("email not kept in the form: %q", v)
	}
	if wrong.Doc.Find(`input[name="password"]`).AttrOr("value", "") != "" {
		t.Error("password echoed back")
	}
	if c.cookie != nil {
		t.Error("a failed sign-in set a session")
	}

	// Success: a session cookie with the right flags and a new token.
	r := c.post("/login", url.Values{"email": {"  " + strings.ToUpper(acct.Email) + " "}, "password": {acct.Password}})
	wantRedirect(t, r, "/dashboard")
	raw := r.Header.Get("Set-Cookie")
	for _, want := range []string{"rundbrief_session=", "HttpOnly", "SameSite=Lax", "Path=/"} {
		if !strings.Contains(raw, want) {
			t.Errorf("Set-Cookie %q lacks %s", raw, want)
		}
	}
	if strings.Contains(raw, "Secure") {
		t.Errorf("Set-Cookie %q: Secure over an http base URL would lose the session", raw)
	}
	dash := c.get("/dashboard")
	wantStatus(t, dash, http.StatusOK)
	if got := text(dash.find("account-name")); got != acct.Name {
		t.Errorf("account name %q, want %q", got, acct.Name)
	}
	if cc := dash.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("signed-in page Cache-Control %q", cc)
	}
	wantRedirect(t, c.get("/"), "/dashboard")
	wantRedirect(t, c.get("/login"), "/dashboard")

	// The sign-in returns to the page asked for, but never to another site.
	for next, want := range map[string]string{"/logs/api?status=401": "/logs/api?status=401", "//evil.example/": "/dashboard", "https://evil.example/": "/dashboard"} {
		other := newClient(t, s)
		page := other.get("/login?next=" + url.QueryEscape(next))
		got, _ := page.Doc.Find(`input[name="next"]`).Attr("value")
		r := other.post("/login", url.Values{"email": {acct.Email}, "password": {acct.Password}, "next": {got}})
		wantRedirect(t, r, want)
	}
}

func TestSecureCookieWithHTTPSBaseURL(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, "https://mail.example.com")
	acct := newAccount(t, s.db, "")
	r := newClient(t, s).post("/login", url.Values{"email": {acct.Email}, "password": {acct.Password}})
	wantStatus(t, r, http.StatusSeeOther)
	raw := r.Header.Get("Set-Cookie")
	for _, want := range []string{"__Host-rundbrief_session=", "Secure", "HttpOnly", "SameSite=Lax", "Path=/"} {
		if !strings.Contains(raw, want) {
			t.Errorf("Set-Cookie %q lacks %s", raw, want)
		}
	}
}

// Five failures lock the address for LoginWindow on every process: the sixth
// attempt is refused even with the right password, on another server too.
func TestSignInThrottleIsShared(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.URL(t)
	clk := &clock{}
	a, b := newServer(t, dbURL, clk, base), newServer(t, dbURL, clk, base)
	acct := newAccount(t, a.db, "")
	other := newAccount(t, a.db, "")

	ca := newClient(t, a)
	for i := range store.MaxLoginFailuresPerMail {
		r := ca.post("/login", url.Values{"email": {acct.Email}, "password": {"guess " + string(rune('a'+i))}})
		wantStatus(t, r, http.StatusUnauthorized)
	}
	for name, s := range map[string]*server{"same server": a, "second server": b} {
		r := newClient(t, s).post("/login", url.Values{"email": {acct.Email}, "password": {acct.Password}})
		wantStatus(t, r, http.StatusTooManyRequests)
		if got := text(r.find("form-alert")); !strings.Contains(got, "Zu viele fehlgeschlagene Anmeldeversuche") {
			t.Errorf("%s: alert %q", name, got)
		}
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", name)
		}
	}
	// The lock is per address: another user signs in from the same IP.
	newClient(t, b).signIn(other.Email, other.Password)

	// Refused attempts do not prolong the lock: once the failures leave the window,
	// the right password works again.
	clk.Advance(store.LoginWindow + time.Second)
	newClient(t, b).signIn(acct.Email, acct.Password)
}

// A session made by one process is valid on another, and ending it on one ends it
// on all.
func TestSessionSharedAcrossServers(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.URL(t)
	a, b := newServer(t, dbURL, nil, base), newServer(t, dbURL, nil, base)
	acct := newAccount(t, a.db, "")
	ca := newClient(t, a)
	ca.signIn(acct.Email, acct.Password)

	cb := ca.on(b)
	r := cb.get("/dashboard")
	wantStatus(t, r, http.StatusOK)
	if got := text(r.find("account-name")); got != acct.Name {
		t.Errorf("server B shows account %q", got)
	}

	wantRedirect(t, cb.post("/logout", nil), "/login")
	wantRedirect(t, ca.get("/dashboard"), "/login?next=%2Fdashboard")
}

func TestSignOut(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	stolen := c.cookie

	r := c.post("/logout", nil)
	wantRedirect(t, r, "/login")
	if !strings.Contains(r.Header.Get("Set-Cookie"), "rundbrief_session=") {
		t.Errorf("sign-out did not touch the cookie: %q", r.Header.Get("Set-Cookie"))
	}
	page := c.get("/login")
	if got := text(page.find("flash")); got != "Sie wurden abgemeldet." {
		t.Errorf("flash %q", got)
	}
	// The old cookie is dead on the server, not just removed from the browser.
	replay := newClient(t, s)
	replay.cookie = stolen
	wantRedirect(t, replay.get("/dashboard"), "/login?next=%2Fdashboard")
	// Sign-out needs a session.
	wantRedirect(t, newClient(t, s).post("/logout", nil), "/login")
}

func TestChangePassword(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	elsewhere := newClient(t, s)
	elsewhere.signIn(acct.Email, acct.Password)

	page := c.get("/account/password")
	wantStatus(t, page, http.StatusOK)
	if cur, _ := page.find("nav-password").Attr("aria-current"); cur != "page" {
		t.Error("sidebar does not mark the password page as current")
	}

	for _, tc := range []struct {
		name                  string
		current, next, repeat string
		field                 string
	}{
		{"wrong current", "wrong password!", "a brand new password", "a brand new password", "current_password"},
		{"too short", acct.Password, "short", "short", "new_password"},
		{"mismatch", acct.Password, "a brand new password", "a brand new passwort", "new_password_confirm"},
		{"unchanged", acct.Password, acct.Password, acct.Password, "new_password"},
	} {
		r := c.post("/account/password", url.Values{"current_password": {tc.current}, "new_password": {tc.next}, "new_password_confirm": {tc.repeat}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if msg := r.find("field-" + tc.field).Find(`[data-testid="error-` + tc.field + `"]`); strings.TrimSpace(msg.Text()) == "" {
			t.Errorf("%s: no error next to %s:\n%s", tc.name, tc.field, r.Body)
		}
	}

	r := c.post("/account/password", url.Values{"current_password": {acct.Password}, "new_password": {"a brand new password"}, "new_password_confirm": {"a brand new password"}})
	wantRedirect(t, r, "/account/password")
	if got := text(c.get("/account/password").find("flash")); !strings.Contains(got, "Passwort wurde geändert") {
		t.Errorf("flash %q", got)
	}
	wantStatus(t, c.get("/dashboard"), http.StatusOK)                        // this session goes on
	wantRedirect(t, elsewhere.get("/dashboard"), "/login?next=%2Fdashboard") // every other one ended
	wantStatus(t, newClient(t, s).post("/login", url.Values{"email": {acct.Email}, "password": {acct.Password}}), http.StatusUnauthorized)
	newClient(t, s).signIn(acct.Email, "a brand new password")
}

// A POST from another site is refused before it reaches a handler, whether the
// browser says so in Sec-Fetch-Site or only in Origin.
func TestCrossSiteRequestsRefused(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	for _, tc := range []struct {
		name   string
		header []string
	}{
		{"Sec-Fetch-Site cross-site", []string{"Sec-Fetch-Site", "cross-site"}},
		{"Sec-Fetch-Site same-site", []string{"Sec-Fetch-Site", "same-site"}},
		{"foreign Origin", []string{"Origin", "https://evil.example"}},
	} {
		for _, req := range []struct {
			path string
			form url.Values
		}{
			{"/api-keys/new", url.Values{"name": {"planted"}}},
			{"/logout", nil},
			{"/account/password", url.Values{"current_password": {acct.Password}, "new_password": {"attacker chosen pw"}, "new_password_confirm": {"attacker chosen pw"}}},
			{"/login", url.Values{"email": {acct.Email}, "password": {acct.Password}}},
		} {
			r := c.post(req.path, req.form, tc.header...)
			wantStatus(t, r, http.StatusForbidden)
			if got := text(r.find("error-title")); got != "Anfrage abgelehnt" {
				t.Errorf("%s %s: page title %q", tc.name, req.path, got)
			}
		}
	}
	// Nothing happened: no key, still signed in, the password unchanged.
	if keys, err := s.db.Keys(context.Background(), acct.ID); err != nil || len(keys) != 0 {
		t.Errorf("keys after refused requests: %v %v", keys, err)
	}
	wantStatus(t, c.get("/dashboard"), http.StatusOK)
	newClient(t, s).signIn(acct.Email, acct.Password)

	// The same requests from the portal itself pass.
	r := c.post("/api-keys/new", url.Values{"name": {"mine"}}, "Sec-Fetch-Site", "same-origin", "Origin", s.URL)
	wantRedirect(t, r, "/api-keys")
}
