package portal_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestKeysPageLifecycle(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	empty := c.get("/api-keys")
	wantStatus(t, empty, http.StatusOK)
	if empty.find("keys-empty").Length() != 1 || empty.find("keys-table").Length() != 0 {
		t.Fatalf("no empty state on an account without keys:\n%s", empty.Body)
	}
	if cur, _ := empty.find("nav-api-keys").Attr("aria-current"); cur != "page" {
		t.Error("sidebar does not mark API keys as current")
	}

	// Every invalid field is reported next to the field, and what was typed stays.
	bad := c.post("/api-keys/new", url.Values{
		"name": {"Shop"}, "scopes": {"read", "root"}, "allowed_ips": {"10.0.0.0/8\nnot-an-ip"},
		"allowed_origins": {"ftp://x"}, "rate_limit": {"viele"},
	})
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	for _, field := range []string{"scopes", "allowed_ips", "allowed_origins", "rate_limit"} {
		if msg := bad.find("field-" + field).Find(`[data-testid="error-` + field + `"]`); strings.TrimSpace(msg.Text()) == "" {
			t.Errorf("no error next to %s", field)
		}
	}
	if !strings.Contains(text(bad.find("error-allowed_ips")), "not-an-ip") {
		t.Errorf("IP error does not name the entry: %q", text(bad.find("error-allowed_ips")))
	}
	if got := bad.Doc.Find(`textarea[name="allowed_ips"]`).Text(); got != "10.0.0.0/8\nnot-an-ip" {
		t.Errorf("typed IPs not kept: %q", got)
	}
	if keys, _ := s.db.Keys(context.Background(), acct.ID); len(keys) != 0 {
		t.Fatalf("invalid form created %d keys", len(keys))
	}

	// Create: the list shows the full key exactly once.
	r := c.post("/api-keys/new", url.Values{
		"name": {"Shop"}, "scopes": {"read", "write"}, "allowed_ips": {"127.0.0.1, 10.0.0.0/8"},
		"allowed_origins": {"https://shop.example.com"}, "rate_limit": {"60"},
	})
	wantRedirect(t, r, "/api-keys")
	// Between the POST and the page that shows it, the key rides in the session,
	// which lives in PostgreSQL: only sealed.
	var sessionData [][]byte
	if err := s.db.SelectContext(context.Background(), &sessionData, `SELECT data FROM sessions`); err != nil || len(sessionData) == 0 {
		t.Fatalf("sessions: %d rows, %v", len(sessionData), err)
	}
	list := c.get("/api-keys")
	full, _ := list.find("new-key").Attr("value")
	if !strings.HasPrefix(full, store.KeyPrefix) || len(full) != len(store.KeyPrefix)+40 {
		t.Fatalf("new key %q", full)
	}
	for _, data := range sessionData {
		if bytes.Contains(data, []byte(full)) || bytes.Contains(data, []byte(full[len(store.KeyPrefix):])) {
			t.Fatal("the new key was stored in the sessions table in plain text")
		}
	}
	if list.Header.Get("Cache-Control") != "no-store" {
		t.Error("the page with the key may be cached")
	}
	row := list.find("key-row")
	if row.Length() != 1 || text(row.Find(`[data-testid="key-name"]`)) != "Shop" ||
		text(row.Find(`[data-testid="key-ips"]`)) != "127.0.0.1/32, 10.0.0.0/8" ||
		text(row.Find(`[data-testid="key-rate-limit"]`)) != "60/min" ||
		!strings.HasPrefix(full, strings.TrimSuffix(text(row.Find(`[data-testid="key-prefix"]`)), "…")) {
		t.Errorf("row: %s", text(row))
	}
	if again := c.get("/api-keys"); again.find("new-key").Length() != 0 || strings.Contains(again.Body, full) {
		t.Fatal("the full key is shown a second time")
	}
	if st := meStatus(t, s, full); st != http.StatusOK {
		t.Fatalf("new key: GET /v1/me %d", st)
	}
	id := row.AttrOr("data-key-id", "")

	// Edit the restrictions: the form shows the current ones, errors keep the key unchanged.
	edit := c.get("/api-keys/" + id + "/edit")
	wantStatus(t, edit, http.StatusOK)
	if got := edit.Doc.Find(`input[name="rate_limit"]`).AttrOr("value", ""); got != "60" {
		t.Errorf("edit form rate limit %q", got)
	}
	if n := edit.Doc.Find(`input[name="scopes"][checked]`).Length(); n != 2 {
		t.Errorf("edit form has %d scopes checked", n)
	}
	wantStatus(t, c.post("/api-keys/"+id+"/edit", url.Values{"name": {"Shop"}, "rate_limit": {"0"}}), http.StatusUnprocessableEntity)
	r = c.post("/api-keys/"+id+"/edit", url.Values{"name": {"Shop 2"}, "scopes": {"read"}, "rate_limit": {""}})
	wantRedirect(t, r, "/api-keys")
	list = c.get("/api-keys")
	if got := text(list.find("flash")); !strings.Contains(got, "Shop 2") {
		t.Errorf("flash after edit %q", got)
	}
	if got := text(list.find("key-scopes")); got != "read" {
		t.Errorf("scopes after edit %q", got)
	}
	if got := text(list.find("key-ips")); got != "jede IP" {
		t.Errorf("IPs after edit %q", got)
	}

	// Renew: a confirmation first (a page without JavaScript), then a new key shown once.
	confirm := c.get("/api-keys/" + id + "/renew")
	wantStatus(t, confirm, http.StatusOK)
	if confirm.Doc.Find("html").Length() != 1 || confirm.find("confirm-renew").Length() != 1 {
		t.Fatalf("renew confirmation page:\n%s", confirm.Body)
	}
	wantRedirect(t, c.post("/api-keys/"+id+"/renew", nil), "/api-keys")
	list = c.get("/api-keys")
	renewed, _ := list.find("new-key").Attr("value")
	if renewed == "" || renewed == full {
		t.Fatalf("renewed key %q", renewed)
	}
	if meStatus(t, s, full) != http.StatusUnauthorized || meStatus(t, s, renewed) != http.StatusOK {
		t.Error("after renewal the old key must be dead and the new one work")
	}
	newID := list.find("key-row").First().AttrOr("data-key-id", "")
	wantStatus(t, c.get("/api-keys/"+id+"/edit"), http.StatusNotFound) // revoked keys are not editable

	// Revoke with htmx: the row turns into a confirmation, then into the revoked row.
	hx := []string{"HX-Request", "true"}
	frag := c.get("/api-keys/"+newID+"/revoke", hx...).rows(t)
	wantStatus(t, frag, http.StatusOK)
	if strings.Contains(frag.Body, "<html") || frag.find("key-confirm-row").Length() != 1 {
		t.Fatalf("htmx confirmation is not a row fragment:\n%s", frag.Body)
	}
	if action, _ := frag.Doc.Find("form").Attr("hx-post"); action != "/api-keys/"+newID+"/revoke" {
		t.Errorf("confirmation posts to %q", action)
	}
	done := c.post("/api-keys/"+newID+"/revoke", nil, hx...).rows(t)
	wantStatus(t, done, http.StatusOK)
	if strings.Contains(done.Body, "<html") || !strings.HasPrefix(text(done.find("key-status")), "Widerrufen am") ||
		done.find("key-revoke").Length() != 0 {
		t.Fatalf("htmx revoke response:\n%s", done.Body)
	}
	if oob, _ := done.Doc.Find("#flash").Attr("hx-swap-oob"); oob != "true" || !strings.Contains(text(done.find("flash")), "widerrufen") {
		t.Errorf("no out-of-band flash:\n%s", done.Body)
	}
	if st := meStatus(t, s, renewed); st != http.StatusUnauthorized {
		t.Errorf("revoked key: GET /v1/me %d", st)
	}
	wantStatus(t, c.post("/api-keys/"+newID+"/revoke", nil), http.StatusNotFound) // already revoked
}

// The plan's key limit is a form error, not a failure.
func TestKeyLimitShownOnForm(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	if _, err := s.db.ExecContext(context.Background(), `UPDATE plans SET max_api_keys = 1 WHERE name = 'business'`); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	wantRedirect(t, c.post("/api-keys/new", url.Values{"name": {"one"}}), "/api-keys")
	r := c.post("/api-keys/new", url.Values{"name": {"two"}})
	wantStatus(t, r, http.StatusConflict)
	if got := text(r.find("form-alert")); !strings.Contains(got, "höchstens 1 aktive API-Schlüssel") {
		t.Errorf("alert %q", got)
	}
}

// A user of account A can neither see nor touch account B's keys: every id of B is
// "not found" for A, and B's key keeps working.
func TestAccountIsolation(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	a, b := newAccount(t, s.db, ""), newAccount(t, s.db, "")
	bKey, bFull, err := s.db.CreateKey(context.Background(), b.ID, store.KeySettings{Name: "B secret key"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.db.CreateKey(context.Background(), a.ID, store.KeySettings{Name: "A key"}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.signIn(a.Email, a.Password)

	list := c.get("/api-keys")
	if strings.Contains(list.Body, "B secret key") || list.find("key-row").Length() != 1 {
		t.Errorf("A's list shows B's key:\n%s", list.Body)
	}
	id := fmt.Sprint(bKey.ID)
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/api-keys/" + id + "/edit"},
		{http.MethodGet, "/api-keys/" + id + "/revoke"},
		{http.MethodGet, "/api-keys/" + id + "/renew"},
		{http.MethodPost, "/api-keys/" + id + "/edit"},
		{http.MethodPost, "/api-keys/" + id + "/revoke"},
		{http.MethodPost, "/api-keys/" + id + "/renew"},
	} {
		var r *response
		if req.method == http.MethodGet {
			r = c.get(req.path)
		} else {
			r = c.post(req.path, url.Values{"name": {"hijacked"}})
		}
		wantStatus(t, r, http.StatusNotFound)
		if got := text(r.find("error-title")); got != "Nicht gefunden" {
			t.Errorf("%s %s: %q", req.method, req.path, got)
		}
	}
	// The API log filter by B's key shows nothing of B either.
	if st := meStatus(t, s, bFull); st != http.StatusOK {
		t.Fatalf("B's key after A's attempts: %d", st)
	}
	if err := s.apiLog.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := c.get("/logs/api?key_id=" + id); r.find("log-row").Length() != 0 {
		t.Error("A sees B's API log")
	}
	keys, err := s.db.Keys(context.Background(), b.ID)
	if err != nil || keys[0].Name != "B secret key" || keys[0].RevokedAt != nil {
		t.Errorf("B's key changed: %+v %v", keys, err)
	}
}

// Members work with the account but do not manage its keys.
func TestMemberCannotManageKeys(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	if _, err := s.db.CreateUser(context.Background(), acct.ID, store.NewUser{Email: "member@example.com", Role: store.RoleMember, Password: "member password"}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.signIn("member@example.com", "member password")
	dash := c.get("/dashboard")
	wantStatus(t, dash, http.StatusOK)
	if dash.find("nav-api-keys").Length() != 0 || dash.find("nav-api-log").Length() != 1 {
		t.Error("sidebar: members must not see API keys, but the API log")
	}
	for _, path := range []string{"/api-keys", "/api-keys/new"} {
		r := c.get(path)
		wantStatus(t, r, http.StatusForbidden)
		if r.find("sidebar").Length() != 1 {
			t.Errorf("%s: the error page is not shown inside the app", path)
		}
	}
	wantStatus(t, c.post("/api-keys/new", url.Values{"name": {"x"}}), http.StatusForbidden)
	wantStatus(t, c.get("/logs/api"), http.StatusOK)
}
