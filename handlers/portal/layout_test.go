package portal_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store/dbtest"
)

// Errors are pages in German; htmx gets the message alone, aimed at the main area.
func TestErrorPages(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)

	missing := c.get("/no-such-page")
	wantStatus(t, missing, http.StatusNotFound)
	if got := text(missing.find("error-title")); got != "Nicht gefunden" {
		t.Errorf("404 title %q", got)
	}

	huge := c.post("/login", url.Values{"email": {strings.Repeat("a", 100<<10)}, "password": {"x"}})
	wantStatus(t, huge, http.StatusBadRequest)

	c.signIn(acct.Email, acct.Password)
	inApp := c.get("/api-keys/999999/edit")
	wantStatus(t, inApp, http.StatusNotFound)
	if inApp.find("sidebar").Length() != 1 {
		t.Error("a signed-in user's error page lacks the app shell")
	}
	hx := c.get("/api-keys/999999/revoke", "HX-Request", "true")
	wantStatus(t, hx, http.StatusNotFound)
	if hx.Header.Get("HX-Retarget") != "#main" || strings.Contains(hx.Body, "<html") || text(hx.find("error-title")) != "Nicht gefunden" {
		t.Errorf("htmx error: %v\n%s", hx.Header, hx.Body)
	}
	// An unknown path keeps the app shell for a signed-in user too.
	lost := c.get("/no-such-page")
	wantStatus(t, lost, http.StatusNotFound)
	if lost.find("sidebar").Length() != 1 || text(lost.find("error-title")) != "Nicht gefunden" {
		t.Errorf("a signed-in user's unknown path:\n%s", lost.Body)
	}
	if missing.find("sidebar").Length() != 0 {
		t.Error("the signed-out 404 shows the app shell")
	}
	for _, id := range []string{"0", "-1", "abc"} {
		wantStatus(t, c.get("/api-keys/"+id+"/edit"), http.StatusNotFound)
	}
	// Portal pages may not be framed by other sites.
	if h := c.get("/dashboard").Header; h.Get("X-Frame-Options") != "DENY" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("framing headers %v", h)
	}
}
