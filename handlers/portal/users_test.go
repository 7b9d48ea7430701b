package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestUserPages(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	ctx := context.Background()
	hx := []string{"HX-Request", "true"}

	list := c.get("/users")
	wantStatus(t, list, http.StatusOK)
	me := list.find("user-row")
	if me.Length() != 1 || text(me.Find(`[data-testid="user-email"]`)) != acct.Email || !strings.Contains(text(me), "Sie") ||
		me.Find(`[data-testid="user-role-form"]`).Length() != 0 || me.Find(`[data-testid="user-remove"]`).Length() != 0 {
		t.Fatalf("own row must show the owner without role form or remove: %s", text(me))
	}

	// A typed initial password: errors next to the fields, never sent back.
	bad := c.post("/users/new", url.Values{"email": {"kein-mail"}, "role": {"member"}, "password": {"kurz"}})
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	if text(bad.find("error-email")) == "" || text(bad.find("error-password")) == "" {
		t.Fatalf("no field errors:\n%s", bad.Body)
	}
	if bad.Doc.Find(`input[name="password"]`).AttrOr("value", "") != "" {
		t.Error("the typed password is sent back")
	}
	const chosen = "anfangs-passwort-123"
	wantRedirect(t, c.post("/users/new", url.Values{"email": {"Admin@Baeckerei.test"}, "name": {"Anna"}, "role": {"admin"}, "password": {chosen}}), "/users")
	list = c.get("/users")
	noSecret(t, list, chosen)
	if list.find("user-password").Length() != 0 {
		t.Error("a typed password is revealed")
	}
	other := newClient(t, s)
	other.signIn("admin@baeckerei.test", chosen)

	// A generated password is shown once and works.
	wantRedirect(t, c.post("/users/new", url.Values{"email": {"mitglied@baeckerei.test"}, "role": {"member"}}), "/users")
	list = c.get("/users")
	generated := list.find("user-password").AttrOr("value", "")
	if len(generated) != 20 || list.find("user-password-copy").Length() != 1 {
		t.Fatalf("generated password %q", generated)
	}
	if strings.Contains(c.get("/users").Body, generated) {
		t.Fatal("the generated password is shown twice")
	}
	member := newClient(t, s)
	member.signIn("mitglied@baeckerei.test", generated)
	var memberID int64
	list.find("user-row").Each(func(_ int, row *goquery.Selection) {
		if text(row.Find(`[data-testid="user-email"]`)) == "mitglied@baeckerei.test" {
			memberID = mustID(t, row.AttrOr("data-user-id", ""))
		}
	})
	if list.find("user-row").Length() != 3 || memberID == 0 {
		t.Fatalf("list: %s", text(list.find("users-table")))
	}
	mid := fmt.Sprint(memberID)

	// Members are refused the admin pages (and the role takes effect at once).
	for _, path := range []string{"/users", "/users/new", "/smtp-servers", "/webhooks", "/api-keys"} {
		wantStatus(t, member.get(path), http.StatusForbidden)
	}
	wantStatus(t, member.post("/users/"+mid+"/role", url.Values{"role": {"owner"}}), http.StatusForbidden)

	// Change the role with htmx: the row comes back with the message.
	row := c.post("/users/"+mid+"/role", url.Values{"role": {"admin"}}, hx...).rows(t)
	wantStatus(t, row, http.StatusOK)
	if row.find("user-row").Length() != 1 || row.Doc.Find(`select[name="role"] option[selected]`).AttrOr("value", "") != "admin" ||
		!strings.Contains(text(row.Doc.Find("#flash")), "Administrator") {
		t.Fatalf("role fragment:\n%s", row.Body)
	}
	wantStatus(t, member.get("/smtp-servers"), http.StatusOK) // an admin now

	// The new admin may not hand out the owner role, nor touch the owner; the form
	// offers it neither.
	adminList := member.get("/users")
	if adminList.Doc.Find(`option[value="owner"]`).Length() != 0 {
		t.Error("an admin is offered the owner role")
	}
	var ownerID string
	adminList.find("user-row").Each(func(_ int, r *goquery.Selection) {
		if text(r.Find(`[data-testid="user-email"]`)) == acct.Email {
			ownerID = r.AttrOr("data-user-id", "")
			if r.Find(`[data-testid="user-remove"]`).Length() != 0 {
				t.Error("an admin may remove the owner")
			}
		}
	})
	refused := member.post("/users/"+ownerID+"/role", url.Values{"role": {"member"}}, hx...).rows(t)
	if !strings.Contains(text(refused.Doc.Find("#flash")), "Nur Inhaber") || refused.Doc.Find(`[data-testid="user-role"]`).Length() != 1 {
		t.Errorf("admin demotes owner:\n%s", refused.Body)
	}
	wantRedirect(t, member.post("/users/"+ownerID+"/remove", nil), "/users")
	if f := member.get("/users").find("flash"); f.AttrOr("data-kind", "") != "error" {
		t.Errorf("removing the owner: flash %q", text(f))
	}
	// Nobody changes themselves; the last owner stays.
	wantRedirect(t, c.post("/users/"+ownerID+"/role", url.Values{"role": {"member"}}), "/users")
	if f := c.get("/users").find("flash"); !strings.Contains(text(f), "eigene Rolle") {
		t.Errorf("own role: flash %q", text(f))
	}
	if u, _ := s.db.Viewer(ctx, acct.ID, mustID(t, ownerID)); u.User.Role != store.RoleOwner {
		t.Fatal("the owner lost the role")
	}

	// Remove: confirm row, then the user's sessions end at once.
	if conf := c.get("/users/"+mid+"/remove", hx...).rows(t); conf.find("confirm-remove").Length() != 1 {
		t.Fatalf("remove confirmation:\n%s", conf.Body)
	}
	wantRedirect(t, c.post("/users/"+mid+"/remove", nil), "/users")
	if r := member.get("/dashboard"); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/login") {
		t.Errorf("removed user still signed in: %d %s", r.StatusCode, r.Header.Get("Location"))
	}
	wantStatus(t, c.post("/users/"+mid+"/remove", nil), http.StatusNotFound)
}

// Another account's users are not listed and not found.
func TestUserIsolation(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	a, b := newAccount(t, s.db, ""), newAccount(t, s.db, "")
	bu, err := s.db.CreateUser(context.Background(), b.ID, store.NewUser{Email: "b-admin@example.com", Role: store.RoleAdmin, Password: "b admin password"})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.signIn(a.Email, a.Password)
	if l := c.get("/users"); strings.Contains(l.Body, b.Email) || strings.Contains(l.Body, "b-admin@") || l.find("user-row").Length() != 1 {
		t.Fatal("A sees B's users")
	}
	id := fmt.Sprint(bu.ID)
	wantStatus(t, c.get("/users/"+id+"/remove"), http.StatusNotFound)
	wantStatus(t, c.post("/users/"+id+"/remove", nil), http.StatusNotFound)
	wantStatus(t, c.post("/users/"+id+"/role", url.Values{"role": {"member"}}), http.StatusNotFound)
	if v, err := s.db.Viewer(context.Background(), b.ID, bu.ID); err != nil || v.User.Role != store.RoleAdmin {
		t.Errorf("B's user changed: %+v %v", v.User, err)
	}
}

// State-changing admin requests from another site are refused before anything
// happens.
func TestAdminPagesRefuseCrossSitePosts(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	rc := newReceiver(t)
	for _, req := range []struct {
		path string
		form url.Values
	}{
		{"/users/new", url.Values{"email": {"eindringling@example.com"}, "role": {"owner"}, "password": {"lang genug 12345"}}},
		{"/webhooks/new", url.Values{"url": {rc.URL}, "events": {"*"}}},
		{"/smtp-servers/new", smtpForm()},
	} {
		for _, h := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "https://evil.example"}} {
			r := c.post(req.path, req.form, h...)
			wantStatus(t, r, http.StatusForbidden)
			if got := text(r.find("error-title")); got != "Anfrage abgelehnt" {
				t.Errorf("%s with %s: %q", req.path, h[0], got)
			}
		}
	}
	ctx := context.Background()
	users, _ := s.db.AccountUsers(ctx, acct.ID)
	hooks, _, _ := s.db.Webhooks(ctx, acct.ID, store.Page{Page: 1, PerPage: 10})
	servers, _, _ := s.db.SMTPServers(ctx, acct.ID, store.Page{Page: 1, PerPage: 10})
	if len(users) != 1 || len(hooks) != 0 || len(servers) != 0 {
		t.Errorf("cross-site posts changed the account: %d users, %d webhooks, %d servers", len(users), len(hooks), len(servers))
	}
}
