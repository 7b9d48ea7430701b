package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestSMTPServerPagesRefusePrivateHosts: as in the API, a server on loopback
// or a private network cannot be saved without RUNDBRIEF_SMTP_ALLOW_PRIVATE,
// and the connection test of one stored before refuses without connecting.
func TestSMTPServerPagesRefusePrivateHosts(t *testing.T) {
	t.Parallel()
	s := newServerWith(t, dbtest.URL(t), nil, base, serverOptions{SMTPDenyPrivate: true})
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	for _, host := range []string{"127.0.0.1", "10.0.0.8"} {
		r := c.post("/smtp-servers/new", smtpForm("host", host, "port", "25"))
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if msg := text(r.find("error-host")); !strings.Contains(msg, "nicht öffentlich") {
			t.Errorf("%s: error at host %q", host, msg)
		}
	}

	srv := smtptest.Start(t, smtptest.Options{})
	stored, err := s.db.CreateSMTPServer(context.Background(), testBox(t), acct.ID, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "alt", Host: srv.Host, Port: srv.Port, Encryption: "none", FromEmail: "news@baeckerei.test"}})
	if err != nil {
		t.Fatal(err)
	}
	r := c.post(fmt.Sprintf("/smtp-servers/%d/test", stored.ID), nil)
	if r.StatusCode != http.StatusSeeOther && r.StatusCode != http.StatusFound {
		t.Fatalf("test: %d\n%s", r.StatusCode, r.Body)
	}
	if srv.Connections() != 0 {
		t.Errorf("the test connected %d times", srv.Connections())
	}
	got, err := s.db.SMTPServer(context.Background(), acct.ID, stored.ID)
	if err != nil || got.LastTestCode != "address_not_allowed" {
		t.Errorf("recorded %q, %v", got.LastTestCode, err)
	}
}
