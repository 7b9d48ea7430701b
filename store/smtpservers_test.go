package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/secret"
)

func testBox(t *testing.T) *secret.Box {
	t.Helper()
	box, err := secret.NewBox("store-test-secret-0123456789-abcdefghijkl")
	if err != nil {
		t.Fatal(err)
	}
	return box
}

func validServer(name string) store.NewSMTPServer {
	return store.NewSMTPServer{
		SMTPServerSettings: store.SMTPServerSettings{
			Name: name, Host: "smtp.example.com", Username: "news@example.com",
			FromEmail: "news@example.com", FromName: "Example News",
		},
		Password: "Pa$$wort-" + name,
	}
}

func smtpPtr[T any](v T) *T { return &v }

func TestSMTPServerValidation(t *testing.T) {
	db := dbtest.NewDB(t)
	box := testBox(t)
	acct := newAccount(t, db, "business")
	cases := []struct {
		name   string
		change func(s *store.NewSMTPServer)
		field  string
	}{
		{"no name", func(s *store.NewSMTPServer) { s.Name = " " }, "name"},
		{"no host", func(s *store.NewSMTPServer) { s.Host = "" }, "host"},
		{"host with scheme", func(s *store.NewSMTPServer) { s.Host = "smtp://smtp.example.com" }, "host"},
		{"host with port", func(s *store.NewSMTPServer) { s.Host = "smtp.example.com:587" }, "host"},
		{"host with CRLF", func(s *store.NewSMTPServer) { s.Host = "smtp.example.com\r\nRCPT" }, "host"},
		{"port too big", func(s *store.NewSMTPServer) { s.Port = 70000 }, "port"},
		{"unknown encryption", func(s *store.NewSMTPServer) { s.Encryption = "ssl" }, "encryption"},
		{"bad from", func(s *store.NewSMTPServer) { s.FromEmail = "news" }, "from_email"},
		{"from name with newline", func(s *store.NewSMTPServer) { s.FromName = "A\r\nBcc: x@y.z" }, "from_name"},
		{"negative rate", func(s *store.NewSMTPServer) { s.RatePerSecond = -1 }, "rate_per_second"},
		{"username without password", func(s *store.NewSMTPServer) { s.Password = "" }, "password"},
		{"password without username", func(s *store.NewSMTPServer) { s.Username = "" }, "username"},
		{"password with NUL", func(s *store.NewSMTPServer) { s.Password = "a\x00b" }, "password"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := validServer("x")
			c.change(&in)
			_, err := db.CreateSMTPServer(context.Background(), box, acct, in)
			var ve *store.ValidationError
			if !errors.As(err, &ve) || ve.Fields[c.field] == "" {
				t.Fatalf("error %v, want a validation error on %s", err, c.field)
			}
		})
	}
	// Defaults: starttls on 587, normalised host.
	in := validServer("defaults")
	in.Host = " SMTP.Example.COM. "
	s, err := db.CreateSMTPServer(context.Background(), box, acct, in)
	if err != nil {
		t.Fatal(err)
	}
	if s.Host != "smtp.example.com" || s.Port != 587 || s.Encryption != store.EncryptionSTARTTLS || !s.HasPassword {
		t.Fatalf("defaults: %+v", s)
	}
	in = validServer("tls")
	in.Encryption = store.EncryptionTLS
	if s, err = db.CreateSMTPServer(context.Background(), box, acct, in); err != nil || s.Port != 465 {
		t.Fatalf("tls default port: %d (%v)", s.Port, err)
	}
}

func TestSMTPServerPasswordIsSealed(t *testing.T) {
	db := dbtest.NewDB(t)
	box := testBox(t)
	acct := newAccount(t, db, "business")
	ctx := context.Background()
	in := validServer("a")
	in.Password = "Sehr-Geheimes-Passwort-4711"
	s, err := db.CreateSMTPServer(ctx, box, acct, in)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	if err := db.SelectContext(ctx, &rows, `SELECT t::text FROM smtp_servers t`); err != nil {
		t.Fatal(err)
	}
	var sealed string
	if err := db.GetContext(ctx, &sealed, `SELECT password_sealed FROM smtp_servers WHERE id = $1`, s.ID); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || strings.Contains(rows[0], "Geheimes") || !strings.HasPrefix(sealed, "v1.") {
		t.Fatalf("stored row %q, sealed %q: the password must be stored sealed only", rows, sealed)
	}
	got, err := db.SMTPServerPassword(ctx, box, acct, s.ID)
	if err != nil || got != in.Password {
		t.Fatalf("SMTPServerPassword = %q, %v", got, err)
	}
	// Another account cannot read it, and a sealed value copied to another
	// account's row does not open there.
	other := newAccount(t, db, "business")
	if _, err := db.SMTPServerPassword(ctx, box, other, s.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("foreign account: %v", err)
	}
	o, err := db.CreateSMTPServer(ctx, box, other, validServer("o"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE smtp_servers SET password_sealed = $1 WHERE id = $2`, sealed, o.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SMTPServerPassword(ctx, box, other, o.ID); !errors.Is(err, secret.ErrOpen) {
		t.Fatalf("copied sealed password opened: %v", err)
	}
}

func TestSMTPServerDefault(t *testing.T) {
	db := dbtest.NewDB(t)
	box := testBox(t)
	acct := newAccount(t, db, "business")
	ctx := context.Background()
	if _, err := db.DefaultSMTPServer(ctx, acct); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no servers: %v", err)
	}
	a, _ := db.CreateSMTPServer(ctx, box, acct, validServer("a"))
	b, _ := db.CreateSMTPServer(ctx, box, acct, validServer("b"))
	if !a.IsDefault || b.IsDefault {
		t.Fatalf("the first server becomes the default, the second not: %t %t", a.IsDefault, b.IsDefault)
	}
	cIn := validServer("c")
	cIn.IsDefault = smtpPtr(true)
	c, err := db.CreateSMTPServer(ctx, box, acct, cIn)
	if err != nil || !c.IsDefault {
		t.Fatal(err)
	}
	assertDefault := func(want int64) {
		t.Helper()
		d, err := db.DefaultSMTPServer(ctx, acct)
		if err != nil || d.ID != want {
			t.Fatalf("default = %d (%v), want %d", d.ID, err, want)
		}
		var n int
		_ = db.GetContext(ctx, &n, `SELECT count(*) FROM smtp_servers WHERE account_id = $1 AND is_default`, acct)
		if n != 1 {
			t.Fatalf("%d default servers", n)
		}
	}
	assertDefault(c.ID)
	if _, err := db.UpdateSMTPServer(ctx, box, acct, b.ID, store.SMTPServerPatch{IsDefault: smtpPtr(true)}); err != nil {
		t.Fatal(err)
	}
	assertDefault(b.ID)

	// Concurrent switches keep exactly one default.
	var wg sync.WaitGroup
	for i := range 20 {
		id := []int64{a.ID, b.ID, c.ID}[i%3]
		wg.Go(func() {
			if _, err := db.UpdateSMTPServer(ctx, box, acct, id, store.SMTPServerPatch{IsDefault: smtpPtr(true)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	d, _ := db.DefaultSMTPServer(ctx, acct)
	assertDefault(d.ID)

	// Deleting the default promotes the oldest remaining server.
	if err := db.DeleteSMTPServer(ctx, acct, d.ID); err != nil {
		t.Fatal(err)
	}
	list, total, err := db.SMTPServers(ctx, acct, store.Page{Page: 1, PerPage: 10})
	if err != nil || total != 2 {
		t.Fatal(err)
	}
	assertDefault(list[0].ID)
	// Unsetting the default explicitly leaves none.
	if _, err := db.UpdateSMTPServer(ctx, box, acct, list[0].ID, store.SMTPServerPatch{IsDefault: smtpPtr(false)}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DefaultSMTPServer(ctx, acct); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after unsetting: %v", err)
	}
}

func TestSMTPServerUpdate(t *testing.T) {
	db := dbtest.NewDB(t)
	box := testBox(t)
	acct := newAccount(t, db, "business")
	ctx := context.Background()
	s, err := db.CreateSMTPServer(ctx, box, acct, validServer("a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RecordSMTPServerTest(ctx, acct, s.ID, time.Now(), "ok"); err != nil {
		t.Fatal(err)
	}
	// Changing only the sender keeps the password and the test result.
	u, err := db.UpdateSMTPServer(ctx, box, acct, s.ID, store.SMTPServerPatch{FromName: smtpPtr("Neu"), RatePerSecond: smtpPtr(12)})
	if err != nil || u.FromName != "Neu" || u.RatePerSecond != 12 || !u.HasPassword || u.LastTestCode != "ok" || u.Name != "a" {
		t.Fatalf("update: %+v (%v)", u, err)
	}
	if pw, _ := db.SMTPServerPassword(ctx, box, acct, s.ID); pw != "Pa$$wort-a" {
		t.Fatalf("password changed to %q", pw)
	}
	// A new password replaces it and clears the test result.
	u, err = db.UpdateSMTPServer(ctx, box, acct, s.ID, store.SMTPServerPatch{Password: smtpPtr("neu-geheim")})
	if err != nil || u.LastTestCode != "" || u.LastTestAt != nil {
		t.Fatalf("update password: %+v (%v)", u, err)
	}
	if pw, _ := db.SMTPServerPassword(ctx, box, acct, s.ID); pw != "neu-geheim" {
		t.Fatalf("password = %q", pw)
	}
	// Removing the password needs removing the username too.
	if _, err := db.UpdateSMTPServer(ctx, box, acct, s.ID, store.SMTPServerPatch{Password: smtpPtr("")}); err == nil {
		t.Fatal("removed the password but kept the username")
	}
	u, err = db.UpdateSMTPServer(ctx, box, acct, s.ID, store.SMTPServerPatch{Password: smtpPtr(""), Username: smtpPtr("")})
	if err != nil || u.HasPassword || u.Username != "" {
		t.Fatalf("remove credentials: %+v (%v)", u, err)
	}
	if pw, err := db.SMTPServerPassword(ctx, box, acct, s.ID); pw != "" || err != nil {
		t.Fatalf("password after removal: %q, %v", pw, err)
	}
	// Invalid patches change nothing.
	if _, err := db.UpdateSMTPServer(ctx, box, acct, s.ID, store.SMTPServerPatch{Port: smtpPtr(0), Encryption: smtpPtr("tls"), Host: smtpPtr("bad host")}); err == nil {
		t.Fatal("accepted an invalid host")
	}
	// Other accounts cannot change or delete it.
	other := newAccount(t, db, "business")
	if _, err := db.UpdateSMTPServer(ctx, box, other, s.ID, store.SMTPServerPatch{Name: smtpPtr("x")}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("foreign update: %v", err)
	}
	if err := db.DeleteSMTPServer(ctx, other, s.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("foreign delete: %v", err)
	}
	if err := db.DeleteSMTPServer(ctx, acct, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SMTPServer(ctx, acct, s.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func TestDevOutboxIsBounded(t *testing.T) {
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	ctx := context.Background()
	for i := range 1250 {
		if _, err := db.AddDevOutboxMail(ctx, store.DevOutboxMail{AccountID: acct, MessageID: store.RandomString(10) + "@x.test",
			FromEmail: "a@x.test", ToEmail: "b@x.test", Subject: "s", Raw: []byte("Subject: s\r\n\r\nx")}); err != nil {
			t.Fatalf("mail %d: %v", i, err)
		}
	}
	_, total, err := db.DevOutbox(ctx, acct, store.Page{Page: 1, PerPage: 1})
	if err != nil || total < 1000 || total >= 1100 {
		t.Fatalf("dev outbox keeps %d mails (%v), want the last 1000 plus at most 99", total, err)
	}
}
