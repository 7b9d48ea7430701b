package api_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/services"
	"github.com/rundbrief/rundbrief/store/smtpserver"
)

// mailEnv is one account with a key, served by an API whose mailer trusts the test
// SMTP servers' certificate.
type mailEnv struct {
	db     *store.DB
	acct   int64
	c      *apitest.Client
	cert   *tls.Certificate // the test SMTP servers' certificate, which the mailer trusts
	secret []string         // passwords that must never show up in a response
}

func newMailEnv(t *testing.T, relay *mailer.Relay) *mailEnv {
	t.Helper()
	db := dbtest.NewDB(t)
	res, err := db.CreateAccount(context.Background(), store.NewAccount{Name: "Acme GmbH", Email: "owner@acme.test", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := db.CreateKey(context.Background(), res.Account.ID, store.KeySettings{Name: "default"})
	if err != nil {
		t.Fatal(err)
	}
	cert, roots, err := smtptest.NewCertificate("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.NewBox("api-test-secret-0123456789-abcdefghijklmn")
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig := &tls.Config{RootCAs: roots} // production: nil, the system roots
	mail := mailer.NewTransports(db, box, mailer.TransportOptions{Relay: relay, TLSConfig: tlsConfig, HELO: "rundbrief.test"})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := api.New(&services.Set{DB: db, APILog: store.NewAPILogWriter(db, log), Log: log, Box: box, Mail: mail, SMTPServers: smtpserver.New(db, smtpserver.Config{Box: box, Mail: mail, AllowPrivate: true})}, api.Config{BaseURL: "https://rundbrief.test"})
	r := chi.NewRouter()
	r.Mount("/v1", a.Handler())
	c := apitest.NewClient(t, r, apitest.NewValidator(t, api.OpenAPIDocument()))
	c.Header.Set("Authorization", "Bearer "+key)
	return &mailEnv{db: db, acct: res.Account.ID, c: c, cert: &cert}
}

// do sends a request and checks the status and that no stored password leaks.
func (e *mailEnv) do(t *testing.T, method, path string, body any, status int) *apitest.Response {
	t.Helper()
	r := e.c.Request(method, path, body)
	if r.Status != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, status, r.Body)
	}
	for _, s := range e.secret {
		if strings.Contains(string(r.Body), s) {
			t.Fatalf("%s %s: the password %q is in the response: %s", method, path, s, r.Body)
		}
	}
	return r
}

type smtpServerJSON struct {
	ID             int64   `json:"id"`
	Name           string  `json:"name"`
	Host           string  `json:"host"`
	Port           int     `json:"port"`
	Username       string  `json:"username"`
	HasPassword    bool    `json:"has_password"`
	Password       *string `json:"password"`
	Encryption     string  `json:"encryption"`
	FromEmail      string  `json:"from_email"`
	FromName       string  `json:"from_name"`
	IsDefault      bool    `json:"is_default"`
	RatePerSecond  int     `json:"rate_per_second"`
	LastTestAt     *string `json:"last_test_at"`
	LastTestResult *string `json:"last_test_result"`
}

func TestSMTPServersAPI(t *testing.T) {
	t.Parallel()
	e := newMailEnv(t, nil)
	e.secret = []string{"Erstes-Passwort-123", "Zweites-Passwort-456"}

	r := e.do(t, http.MethodPost, "/v1/smtp-servers", map[string]any{
		"name": "Hauptserver", "host": "smtp.example.com", "port": 587, "username": "news@example.com",
		"password": e.secret[0], "encryption": "starttls", "from_email": "news@example.com", "from_name": "Acme News",
		"rate_per_second": 14,
	}, http.StatusCreated)
	var a smtpServerJSON
	r.Data(t, &a)
	if !a.HasPassword || a.Password != nil || !a.IsDefault || a.RatePerSecond != 14 || a.LastTestResult != nil || a.FromName != "Acme News" {
		t.Fatalf("created: %+v", a)
	}

	r = e.do(t, http.MethodPost, "/v1/smtp-servers", map[string]any{
		"name": "Zweiter", "host": "mail.example.net", "encryption": "tls", "from_email": "info@example.net", "is_default": true,
		"username": "info", "password": e.secret[1],
	}, http.StatusCreated)
	var b smtpServerJSON
	r.Data(t, &b)
	if !b.IsDefault || b.Port != 465 {
		t.Fatalf("second: %+v", b)
	}
	r = e.do(t, http.MethodGet, fmt.Sprintf("/v1/smtp-servers/%d", a.ID), nil, http.StatusOK)
	r.Data(t, &a)
	if a.IsDefault {
		t.Fatal("making the second server the default must unset the first")
	}

	r = e.do(t, http.MethodGet, "/v1/smtp-servers?per_page=1", nil, http.StatusOK)
	var list []smtpServerJSON
	r.Data(t, &list)
	if len(list) != 1 || list[0].ID != a.ID || !strings.Contains(string(r.Body), `"total":2`) {
		t.Fatalf("list: %s", r.Body)
	}

	// PATCH: null and absent keep, "" removes the password (with the username).
	r = e.do(t, http.MethodPatch, fmt.Sprintf("/v1/smtp-servers/%d", a.ID), map[string]any{"from_name": "Neu", "password": nil}, http.StatusOK)
	r.Data(t, &a)
	if a.FromName != "Neu" || !a.HasPassword || a.Host != "smtp.example.com" {
		t.Fatalf("patched: %+v", a)
	}
	r = e.do(t, http.MethodPatch, fmt.Sprintf("/v1/smtp-servers/%d", a.ID), map[string]any{"password": "", "username": ""}, http.StatusOK)
	r.Data(t, &a)
	if a.HasPassword || a.Username != "" {
		t.Fatalf("credentials not removed: %+v", a)
	}

	// Validation: 422 naming the fields, in German.
	r = e.do(t, http.MethodPost, "/v1/smtp-servers", map[string]any{"name": "", "host": "smtp://x", "encryption": "ssl", "from_email": "x", "port": 0}, http.StatusUnprocessableEntity)
	for _, f := range []string{"name", "host", "encryption", "from_email"} {
		if !strings.Contains(string(r.Body), `"`+f+`":`) {
			t.Errorf("validation error lacks %s: %s", f, r.Body)
		}
	}
	e.do(t, http.MethodPatch, fmt.Sprintf("/v1/smtp-servers/%d", a.ID), map[string]any{"port": "587"}, http.StatusUnprocessableEntity)
	e.do(t, http.MethodPatch, fmt.Sprintf("/v1/smtp-servers/%d", b.ID), map[string]any{"username": "", "password": nil}, http.StatusUnprocessableEntity)

	// Nothing of the passwords in the database in plain text.
	var rows []string
	if err := e.db.SelectContext(context.Background(), &rows, `SELECT t::text FROM smtp_servers t`); err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		for _, s := range e.secret {
			if strings.Contains(row, s) {
				t.Fatalf("password in plain text in the database: %s", row)
			}
		}
	}

	e.do(t, http.MethodDelete, fmt.Sprintf("/v1/smtp-servers/%d", b.ID), nil, http.StatusNoContent)
	e.do(t, http.MethodGet, fmt.Sprintf("/v1/smtp-servers/%d", b.ID), nil, http.StatusNotFound)
	e.do(t, http.MethodDelete, fmt.Sprintf("/v1/smtp-servers/%d", b.ID), nil, http.StatusNotFound)
	r = e.do(t, http.MethodGet, fmt.Sprintf("/v1/smtp-servers/%d", a.ID), nil, http.StatusOK)
	r.Data(t, &a)
	if !a.IsDefault {
		t.Fatal("deleting the default must promote the remaining server")
	}
	e.do(t, http.MethodGet, "/v1/smtp-servers/abc", nil, http.StatusNotFound)
}

func TestSMTPServerConnectionTest(t *testing.T) {
	t.Parallel()
	e := newMailEnv(t, nil)
	e.secret = []string{"richtiges-Passwort"}
	good := smtptest.Start(t, smtptest.Options{TLS: smtptest.STARTTLS, Certificate: e.cert, Username: "news", Password: e.secret[0]})
	plain := smtptest.Start(t, smtptest.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()

	cases := []struct {
		name     string
		port     int
		enc      string
		password string
		code     string
		says     string
	}{
		{"works", good.Port, "starttls", e.secret[0], "ok", "erfolgreich"},
		{"connection refused", closedPort, "starttls", e.secret[0], "connect_failed", "abgelehnt"},
		{"tls failure", plain.Port, "starttls", e.secret[0], "tls_failed", "STARTTLS"},
		{"auth failure", good.Port, "starttls", "falsches-Passwort", "auth_failed", "Passwort"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, http.MethodPost, "/v1/smtp-servers", map[string]any{
				"name": c.name, "host": "127.0.0.1", "port": c.port, "encryption": c.enc, "username": "news",
				"password": c.password, "from_email": "news@example.com",
			}, http.StatusCreated)
			var s smtpServerJSON
			r.Data(t, &s)
			r = e.do(t, http.MethodPost, fmt.Sprintf("/v1/smtp-servers/%d/test", s.ID), nil, http.StatusOK)
			var res struct {
				OK      bool   `json:"ok"`
				Code    string `json:"code"`
				Message string `json:"message"`
				Detail  string `json:"detail"`
			}
			r.Data(t, &res)
			if res.OK != (c.code == "ok") || res.Code != c.code || !strings.Contains(res.Message, c.says) {
				t.Fatalf("test result %+v, want code %s and a German message with %q", res, c.code, c.says)
			}
			if c.code != "ok" && res.Detail == "" {
				t.Fatal("a failed test names the server's reply or the network error in detail")
			}
			r = e.do(t, http.MethodGet, fmt.Sprintf("/v1/smtp-servers/%d", s.ID), nil, http.StatusOK)
			r.Data(t, &s)
			if s.LastTestResult == nil || *s.LastTestResult != c.code || s.LastTestAt == nil {
				t.Fatalf("recorded result %v at %v, want %s", s.LastTestResult, s.LastTestAt, c.code)
			}
		})
	}
	e.do(t, http.MethodPost, "/v1/smtp-servers/999999/test", nil, http.StatusNotFound)
	if good.Count() != 0 {
		t.Fatal("the connection test must not send a message")
	}
}

func TestDevOutboxAPI(t *testing.T) {
	t.Parallel()
	e := newMailEnv(t, nil)
	out := mailer.NewDevOutbox(e.db, e.acct)
	m := &mailer.Message{
		From: mailer.Address{Name: "Rundbrief", Email: "noreply@rundbrief.test"}, To: mailer.Address{Email: "anna@example.org"},
		Subject: "Bitte bestätigen Sie Ihre Anmeldung", HTML: `<p><a href="https://rundbrief.test/confirm/abc">Bestätigen</a></p>`,
	}
	if err := out.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	r := e.do(t, http.MethodGet, "/v1/dev/outbox", nil, http.StatusOK)
	var list []struct {
		ID        int64   `json:"id"`
		MessageID string  `json:"message_id"`
		From      string  `json:"from"`
		To        string  `json:"to"`
		Subject   string  `json:"subject"`
		Raw       *string `json:"raw"`
	}
	r.Data(t, &list)
	if len(list) != 1 || list[0].To != "anna@example.org" || list[0].Subject != m.Subject || list[0].MessageID != m.MessageID || list[0].Raw != nil {
		t.Fatalf("outbox: %s", r.Body)
	}
	r = e.do(t, http.MethodGet, fmt.Sprintf("/v1/dev/outbox/%d", list[0].ID), nil, http.StatusOK)
	var one struct {
		Raw string `json:"raw"`
	}
	r.Data(t, &one)
	if !strings.Contains(one.Raw, "https://rundbrief.test/confirm/abc") || !strings.Contains(one.Raw, "Message-ID: <"+m.MessageID+">") {
		t.Fatalf("raw message: %s", one.Raw)
	}
	e.do(t, http.MethodGet, "/v1/dev/outbox/999999", nil, http.StatusNotFound)

	// With an operator relay there is no dev outbox.
	relay, err := mailer.ParseRelayURL("smtp://relay.example.com", mailer.Address{Email: "noreply@rundbrief.test"})
	if err != nil {
		t.Fatal(err)
	}
	prod := newMailEnv(t, &relay)
	prod.do(t, http.MethodGet, "/v1/dev/outbox", nil, http.StatusNotFound)
	prod.do(t, http.MethodGet, "/v1/dev/outbox/1", nil, http.StatusNotFound)
}

// TestDevOutboxAPIDecodesMail: GET /dev/outbox/{id} returns the subject, text
// and HTML decoded, not only the quoted-printable MIME of raw.
func TestDevOutboxAPIDecodesMail(t *testing.T) {
	t.Parallel()
	e := newMailEnv(t, nil)
	m := &mailer.Message{
		From: mailer.Address{Name: "Rundbrief", Email: "noreply@rundbrief.test"}, To: mailer.Address{Email: "jürgen@example.org"},
		Subject: "Grüße aus Köln: Ihre Bestätigung wartet = fast fertig",
		Text:    "Hallo Jürgen,\nbitte bestätigen Sie Ihre Anmeldung über diesen Link, der länger ist als eine Zeile in Quoted-Printable: https://rundbrief.test/confirm/abc?x=1",
		HTML:    `<p style="color:#333">Hallo Jürgen, <a href="https://rundbrief.test/confirm/abc?x=1">bitte bestätigen</a> – danke schön!</p>`,
	}
	if err := mailer.NewDevOutbox(e.db, e.acct).Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	var list []struct {
		ID   int64   `json:"id"`
		Text *string `json:"text"`
		HTML *string `json:"html"`
	}
	e.do(t, http.MethodGet, "/v1/dev/outbox", nil, http.StatusOK).Data(t, &list)
	if len(list) != 1 || list[0].Text != nil || list[0].HTML != nil {
		t.Fatalf("the list carries no bodies: %+v", list)
	}
	var one struct {
		Subject string `json:"subject"`
		Raw     string `json:"raw"`
		Text    string `json:"text"`
		HTML    string `json:"html"`
	}
	e.do(t, http.MethodGet, fmt.Sprintf("/v1/dev/outbox/%d", list[0].ID), nil, http.StatusOK).Data(t, &one)
	if strings.Contains(one.Raw, "Jürgen") {
		t.Fatal("raw is expected to be transfer-encoded; the test proves nothing otherwise")
	}
	if one.Subject != m.Subject {
		t.Errorf("subject %q, want %q", one.Subject, m.Subject)
	}
	if strings.TrimRight(one.Text, "\r\n") != m.Text {
		t.Errorf("text %q, want %q", one.Text, m.Text)
	}
	if !strings.Contains(one.HTML, m.HTML) {
		t.Errorf("html %q, want it to contain %q", one.HTML, m.HTML)
	}
}

// TestSMTPServerPrivateAddresses: without RUNDBRIEF_SMTP_ALLOW_PRIVATE an
// account's SMTP server cannot be on loopback or a private network: saving
// such a host is a 422, and the connection test of one stored earlier refuses
// without connecting.
func TestSMTPServerPrivateAddresses(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	ctx := context.Background()
	res, err := db.CreateAccount(ctx, store.NewAccount{Name: "Acme GmbH", Email: "owner@acme.test", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := db.CreateKey(ctx, res.Account.ID, store.KeySettings{Name: "default"})
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.NewBox("api-test-secret-0123456789-abcdefghijklmn")
	if err != nil {
		t.Fatal(err)
	}
	mail := mailer.NewTransports(db, box, mailer.TransportOptions{HELO: "rundbrief.test"})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := api.New(&services.Set{DB: db, APILog: store.NewAPILogWriter(db, log), Log: log, Box: box, Mail: mail, SMTPServers: smtpserver.New(db, smtpserver.Config{Box: box, Mail: mail, AllowPrivate: false})}, api.Config{BaseURL: "https://rundbrief.test"})
	r := chi.NewRouter()
	r.Mount("/v1", a.Handler())
	e := &mailEnv{db: db, acct: res.Account.ID, c: apitest.NewClient(t, r, apitest.NewValidator(t, api.OpenAPIDocument()))}
	e.c.Header.Set("Authorization", "Bearer "+key)

	for _, host := range []string{"127.0.0.1", "localhost", "10.1.2.3", "192.168.0.10", "169.254.169.254", "::1"} {
		r := e.do(t, http.MethodPost, "/v1/smtp-servers", map[string]any{"name": "intern", "host": host, "port": 25,
			"encryption": "none", "from_email": "news@example.com"}, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.Body), `"host"`) || !strings.Contains(string(r.Body), "nicht öffentlich") {
			t.Errorf("%s: %s", host, r.Body)
		}
	}
	// A public address literal is accepted (nothing connects on save) …
	var s smtpServerJSON
	e.do(t, http.MethodPost, "/v1/smtp-servers", map[string]any{"name": "extern", "host": "203.0.114.7", "port": 587,
		"encryption": "starttls", "from_email": "news@example.com"}, http.StatusCreated).Data(t, &s)
	// … but cannot be moved inside.
	e.do(t, http.MethodPatch, fmt.Sprintf("/v1/smtp-servers/%d", s.ID), map[string]any{"host": "127.0.0.1"}, http.StatusUnprocessableEntity)

	// A server stored before the rule (or by other means) on loopback: the
	// test refuses without a connection.
	srv := smtptest.Start(t, smtptest.Options{})
	stored, err := db.CreateSMTPServer(ctx, box, e.acct, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "alt", Host: srv.Host, Port: srv.Port, Encryption: "none", FromEmail: "news@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		OK      bool   `json:"ok"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	e.do(t, http.MethodPost, fmt.Sprintf("/v1/smtp-servers/%d/test", stored.ID), nil, http.StatusOK).Data(t, &tr)
	if tr.OK || tr.Code != "address_not_allowed" || !strings.Contains(tr.Message, "127.0.0.1") {
		t.Errorf("test: %+v", tr)
	}
	if n := srv.Connections(); n != 0 {
		t.Errorf("the test connected %d times", n)
	}
	e.do(t, http.MethodGet, fmt.Sprintf("/v1/smtp-servers/%d", stored.ID), nil, http.StatusOK).Data(t, &s)
	if s.LastTestResult == nil || *s.LastTestResult != "address_not_allowed" {
		t.Errorf("recorded: %v", s.LastTestResult)
	}
}
