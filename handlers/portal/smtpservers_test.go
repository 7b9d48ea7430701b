package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// noSecret fails the test when a response shows a password.
func noSecret(t *testing.T, r *response, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(r.Body, s) {
			t.Fatalf("%s %s: the password %q is in the HTML", r.Request.Method, r.Request.URL, s)
		}
	}
}

func smtpForm(kv ...string) url.Values {
	v := url.Values{"name": {"Eigener Server"}, "host": {"127.0.0.1"}, "encryption": {"starttls"},
		"from_email": {"news@baeckerei.test"}, "from_name": {"Bäckerei"}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

func TestSMTPServerPages(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	const password, newPassword = "geheim-passwort-4711", "noch-geheimer-0815"
	smtp := smtptest.Start(t, smtptest.Options{TLS: smtptest.STARTTLS, Username: "mailer", Password: password, Certificate: s.cert})
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	ctx := context.Background()

	empty := c.get("/smtp-servers")
	wantStatus(t, empty, http.StatusOK)
	if empty.find("smtp-empty").Length() != 1 || empty.find("dev-outbox-link").Length() != 1 {
		t.Fatalf("empty state and dev outbox note:\n%s", empty.Body)
	}
	if cur, _ := empty.find("nav-smtp-servers").Attr("aria-current"); cur != "page" {
		t.Error("sidebar does not mark SMTP servers as current")
	}
	if newForm := c.get("/smtp-servers/new"); newForm.Doc.Find(`input[name="is_default"][checked]`).Length() != 1 {
		t.Error("the first server's form does not tick the default box")
	}

	// Every invalid field is reported next to it; the typed password is not sent back.
	bad := c.post("/smtp-servers/new", smtpForm("host", "smtp://x", "port", "viele", "from_email", "kein-absender",
		"username", "mailer", "password", password))
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	for _, field := range []string{"host", "port", "from_email"} {
		if msg := bad.find("field-" + field).Find(`[data-testid="error-` + field + `"]`); strings.TrimSpace(msg.Text()) == "" {
			t.Errorf("no error next to %s", field)
		}
	}
	if got := bad.Doc.Find(`input[name="host"]`).AttrOr("value", ""); got != "smtp://x" {
		t.Errorf("typed host not kept: %q", got)
	}
	noSecret(t, bad, password)
	// Username without password is the store's rule, reported at the password.
	nopw := c.post("/smtp-servers/new", smtpForm("username", "mailer"))
	wantStatus(t, nopw, http.StatusUnprocessableEntity)
	if text(nopw.find("error-password")) == "" {
		t.Error("no error at the password for a username without one")
	}

	r := c.post("/smtp-servers/new", smtpForm("port", strconv.Itoa(smtp.Port), "username", "mailer", "password", password, "is_default", "1"))
	wantRedirect(t, r, "/smtp-servers")
	list := c.get("/smtp-servers")
	noSecret(t, list, password)
	row := list.find("smtp-row")
	if row.Length() != 1 || text(row.Find(`[data-testid="smtp-server"] code`)) != fmt.Sprintf("127.0.0.1:%d", smtp.Port) ||
		text(row.Find(`[data-testid="smtp-server"] span`)) != "STARTTLS" ||
		!strings.Contains(text(row), "Standard") || row.Find(`[data-testid="smtp-has-password"]`).Length() != 1 ||
		text(row.Find(`[data-testid="smtp-test-cell"]`)) != "Noch nicht getestet" {
		t.Fatalf("row: %s", text(row))
	}
	if !strings.Contains(text(list.find("flash")), "Eigener Server") {
		t.Errorf("flash %q", text(list.find("flash")))
	}
	id := row.AttrOr("data-smtp-id", "")
	sid, _ := strconv.ParseInt(id, 10, 64)

	// The edit form shows everything but the password; leaving it empty keeps it.
	edit := c.get("/smtp-servers/" + id + "/edit")
	wantStatus(t, edit, http.StatusOK)
	noSecret(t, edit, password)
	if pw := edit.Doc.Find(`input[name="password"]`); pw.AttrOr("type", "") != "password" || pw.AttrOr("value", "") != "" {
		t.Errorf("password field %v", pw.Nodes)
	}
	if got := edit.Doc.Find(`input[name="username"]`).AttrOr("value", ""); got != "mailer" {
		t.Errorf("edit form username %q", got)
	}
	wantRedirect(t, c.post("/smtp-servers/"+id+"/edit", smtpForm("name", "Umbenannt", "port", strconv.Itoa(smtp.Port),
		"username", "mailer", "password", "", "is_default", "1")), "/smtp-servers")
	if got, err := s.db.SMTPServerPassword(ctx, testBox(t), acct.ID, sid); err != nil || got != password {
		t.Fatalf("an empty password field changed the stored one: %q %v", got, err)
	}

	// The connection test with htmx: the German result lands in the row.
	hx := []string{"HX-Request", "true"}
	ok := c.post("/smtp-servers/"+id+"/test", nil, hx...)
	wantStatus(t, ok, http.StatusOK)
	if strings.Contains(ok.Body, "<html") || ok.find("smtp-test-result").AttrOr("data-ok", "") != "true" ||
		text(ok.find("smtp-test-message")) != "Verbindung, Verschlüsselung und Anmeldung erfolgreich." {
		t.Fatalf("test result:\n%s", ok.Body)
	}
	if smtp.Connections() == 0 {
		t.Error("the test did not connect to the SMTP server")
	}

	// A wrong password fails at AUTH, in German, with the server's reply.
	wantRedirect(t, c.post("/smtp-servers/"+id+"/edit", smtpForm("name", "Umbenannt", "port", strconv.Itoa(smtp.Port),
		"username", "mailer", "password", newPassword, "is_default", "1")), "/smtp-servers")
	if got, _ := s.db.SMTPServerPassword(ctx, testBox(t), acct.ID, sid); got != newPassword {
		t.Fatalf("new password not stored: %q", got)
	}
	fail := c.post("/smtp-servers/"+id+"/test", nil, hx...)
	if fail.find("smtp-test-result").AttrOr("data-code", "") != "auth_failed" || !strings.Contains(text(fail.find("smtp-test-detail")), "535") {
		t.Fatalf("failed test:\n%s", fail.Body)
	}
	noSecret(t, fail, password, newPassword)
	// Without JavaScript the result comes back as the list's flash.
	wantRedirect(t, c.post("/smtp-servers/"+id+"/test", nil), "/smtp-servers")
	list = c.get("/smtp-servers")
	if f := list.find("flash"); f.AttrOr("data-kind", "") != "error" || !strings.Contains(text(f), "Umbenannt:") {
		t.Errorf("flash after the test %q", text(f))
	}
	if got := text(list.find("smtp-test-cell")); !strings.HasPrefix(got, "Anmeldung fehlgeschlagen") {
		t.Errorf("last test in the row %q", got)
	}
	noSecret(t, list, password, newPassword)

	// Removing the password needs the username gone too (the store's rule).
	wantRedirect(t, c.post("/smtp-servers/"+id+"/edit", smtpForm("name", "Umbenannt", "port", strconv.Itoa(smtp.Port),
		"username", "", "remove_password", "1", "is_default", "1")), "/smtp-servers")
	if srv, _ := s.db.SMTPServer(ctx, acct.ID, sid); srv.HasPassword || srv.Username != "" {
		t.Errorf("password not removed: %+v", srv)
	}

	// Delete: the htmx confirmation is a row; the confirmed delete goes back to the list.
	confirm := c.get("/smtp-servers/"+id+"/delete", hx...).rows(t)
	if confirm.find("confirm-row").Length() != 1 || confirm.Doc.Find("form").AttrOr("hx-post", "") != "/smtp-servers/"+id+"/delete" {
		t.Fatalf("delete confirmation:\n%s", confirm.Body)
	}
	page := c.get("/smtp-servers/" + id + "/delete")
	if page.find("sidebar").Length() != 1 || page.find("confirm-delete").Length() != 1 {
		t.Fatalf("delete confirmation page:\n%s", page.Body)
	}
	wantRedirect(t, c.post("/smtp-servers/"+id+"/delete", nil), "/smtp-servers")
	if _, err := s.db.SMTPServer(ctx, acct.ID, sid); err != store.ErrNotFound {
		t.Errorf("server after delete: %v", err)
	}
	wantStatus(t, c.post("/smtp-servers/"+id+"/delete", nil), http.StatusNotFound)
}

// Another account's server is not found on any page, and stays as it was.
func TestSMTPServerIsolation(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	a, b := newAccount(t, s.db, ""), newAccount(t, s.db, "")
	ctx := context.Background()
	srv, err := s.db.CreateSMTPServer(ctx, testBox(t), b.ID, store.NewSMTPServer{
		SMTPServerSettings: store.SMTPServerSettings{Name: "B geheim", Host: "smtp.b.test", Username: "b", FromEmail: "b@b.test"},
		Password:           "b-password-123",
	})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.signIn(a.Email, a.Password)
	if list := c.get("/smtp-servers"); strings.Contains(list.Body, "B geheim") || list.find("smtp-row").Length() != 0 {
		t.Fatal("A sees B's server")
	}
	id := fmt.Sprint(srv.ID)
	for _, path := range []string{"/edit", "/delete"} {
		wantStatus(t, c.get("/smtp-servers/"+id+path), http.StatusNotFound)
	}
	for _, path := range []string{"/edit", "/delete", "/test"} {
		wantStatus(t, c.post("/smtp-servers/"+id+path, smtpForm("name", "gekapert")), http.StatusNotFound)
	}
	if got, err := s.db.SMTPServer(ctx, b.ID, srv.ID); err != nil || got.Name != "B geheim" || got.LastTestAt != nil {
		t.Errorf("B's server changed: %+v %v", got, err)
	}
}

// The development outbox: captured mails with their headers, text, and the HTML
// in a sandboxed frame; it does not exist once an operator relay is configured.
func TestDevOutboxPages(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	s := newServer(t, url, nil, base)
	a, b := newAccount(t, s.db, ""), newAccount(t, s.db, "")
	ctx := context.Background()
	msg := &mailer.Message{
		From: mailer.Address{Name: "Bäckerei Müller", Email: "news@baeckerei.test"}, To: mailer.Address{Email: "erika@example.com"},
		Subject: "Frische Brötchen für Sie", HTML: `<p>Hallo <b>Erika</b></p><script>alert(1)</script><img src="https://tracker.test/p.gif">`,
		Text: "Hallo Erika, heute frisch: Dinkelbrötchen.",
	}
	if err := mailer.NewDevOutbox(s.db, a.ID).Send(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if err := mailer.NewDevOutbox(s.db, b.ID).Send(ctx, &mailer.Message{From: msg.From, To: mailer.Address{Email: "b@example.com"}, Subject: "B intern", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.signIn(a.Email, a.Password)
	list := c.get("/dev/outbox")
	wantStatus(t, list, http.StatusOK)
	if list.find("outbox-row").Length() != 1 || strings.Contains(list.Body, "B intern") {
		t.Fatalf("outbox list:\n%s", list.Body)
	}
	href := list.find("outbox-subject").AttrOr("href", "")
	if text(list.find("outbox-subject")) != "Frische Brötchen für Sie" {
		t.Errorf("subject %q", text(list.find("outbox-subject")))
	}
	mail := c.get(href)
	wantStatus(t, mail, http.StatusOK)
	headers := map[string]string{}
	mail.find("outbox-headers").Find("tr").Each(func(_ int, tr *goquery.Selection) {
		headers[text(tr.Find("th"))] = text(tr.Find("td"))
	})
	for name, want := range map[string]string{"Subject": "Frische Brötchen für Sie", "To": "<erika@example.com>", "From": "Bäckerei Müller <news@baeckerei.test>"} {
		if headers[name] != want {
			t.Errorf("header %s: %q, want %q", name, headers[name], want)
		}
	}
	if got := text(mail.find("outbox-text")); got != "Hallo Erika, heute frisch: Dinkelbrötchen." {
		t.Errorf("text part %q", got)
	}
	frame := mail.find("outbox-html-frame")
	if sb, ok := frame.Attr("sandbox"); !ok || sb != "" || frame.AttrOr("src", "") != href+"/html" {
		t.Fatalf("html frame %v", frame.Nodes)
	}
	if strings.Contains(mail.Body, "<script>alert") {
		t.Error("the mail's script is in the portal page itself")
	}
	html := c.get(href + "/html")
	wantStatus(t, html, http.StatusOK)
	csp := html.Header.Get("Content-Security-Policy")
	if !strings.Contains(html.Body, "<b>Erika</b>") || !strings.HasPrefix(csp, "sandbox;") || !strings.Contains(csp, "img-src data:;") ||
		!strings.Contains(csp, "frame-ancestors 'self'") || html.Header.Get("X-Frame-Options") != "SAMEORIGIN" {
		t.Errorf("html part: CSP %q, XFO %q\n%s", csp, html.Header.Get("X-Frame-Options"), html.Body)
	}
	// B's mail is not found for A.
	bMails, _, err := s.db.DevOutbox(ctx, b.ID, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(bMails) != 1 {
		t.Fatal(bMails, err)
	}
	wantStatus(t, c.get(fmt.Sprintf("/dev/outbox/%d", bMails[0].ID)), http.StatusNotFound)
	wantStatus(t, c.get(fmt.Sprintf("/dev/outbox/%d/html", bMails[0].ID)), http.StatusNotFound)

	// With an operator relay there is no outbox, as in the API.
	prod := newServerWith(t, url, nil, base, serverOptions{Relay: &mailer.Relay{
		Server: mailer.ServerConfig{Host: "127.0.0.1", Port: 25}, From: mailer.Address{Email: "relay@rundbrief.test"}}})
	pc := c.on(prod)
	wantStatus(t, pc.get("/dev/outbox"), http.StatusNotFound)
	wantStatus(t, pc.get(href), http.StatusNotFound)
	if l := pc.get("/smtp-servers"); l.find("dev-outbox-note").Length() != 0 {
		t.Error("the SMTP page points to an outbox that does not exist")
	}
	if pc.get("/dashboard").find("nav-dev-outbox").Length() != 0 {
		t.Error("the navigation offers an outbox that does not exist")
	}
}

// Members see neither the SMTP pages nor run tests.
func TestMemberCannotManageSMTP(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	if _, err := s.db.CreateUser(context.Background(), acct.ID, store.NewUser{Email: "member-smtp@example.com", Role: store.RoleMember, Password: "member password"}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.signIn("member-smtp@example.com", "member password")
	dash := c.get("/dashboard")
	if dash.find("nav-smtp-servers").Length() != 0 {
		t.Error("members see the SMTP entry")
	}
	// The development outbox is everyone's: members' test mails land there too.
	if dash.find("nav-dev-outbox").Length() != 1 {
		t.Error("members do not see the development outbox")
	}
	wantStatus(t, c.get("/dev/outbox"), http.StatusOK)
	for _, path := range []string{"/smtp-servers", "/smtp-servers/new", "/smtp-servers/1/edit"} {
		wantStatus(t, c.get(path), http.StatusForbidden)
	}
	wantStatus(t, c.post("/smtp-servers/new", smtpForm()), http.StatusForbidden)
	wantStatus(t, c.post("/smtp-servers/1/test", nil), http.StatusForbidden)
}
