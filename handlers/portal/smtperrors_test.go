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

// TestTestMailSMTPErrorInGerman: a test mail the SMTP server refuses shows
// where the user is, as a German sentence, with the server's own reply kept
// as the detail.
func TestTestMailSMTPErrorInGerman(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	e := &newsletterEnv{s: s, acct: newAccount(t, s.db, "business"),
		smtp: smtptest.Start(t, smtptest.Options{Reject: map[string]int{"niemand@baeckerei.test": 550}})}
	if _, err := s.db.CreateSMTPServer(context.Background(), testBox(t), e.acct.ID, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "Versand", Host: e.smtp.Host, Port: e.smtp.Port, Encryption: "none", FromEmail: "news@baeckerei.test", FromName: "Bäckerei"}}); err != nil {
		t.Fatal(err)
	}
	e.listID, e.emails = makeList(t, s.db, e.acct.ID, "Stammkunden", 1)
	e.c = newClient(t, s)
	e.c.signIn(e.acct.Email, e.acct.Password)
	id := e.createDraft(t, draftForm(e.listID, "Hallo", "Hallo"))
	form := draftForm(e.listID, "Hallo", "Hallo")
	form.Set("action", "test")
	form.Set("test_to", "niemand@baeckerei.test")
	r := e.c.post(fmt.Sprintf("/newsletters/%d", id), form)
	wantStatus(t, r, http.StatusOK)
	res := r.find("test-result")
	if res.AttrOr("data-sent", "") != "false" {
		t.Fatalf("result %q", text(res))
	}
	if got := text(res); !strings.Contains(got, "Fehler: Die Empfängeradresse gibt es nicht") {
		t.Errorf("result %q, want the German sentence", got)
	}
	if got := text(res.Find(`[data-testid="smtp-error-detail"]`)); !strings.HasPrefix(got, "550") {
		t.Errorf("detail %q, want the server's reply", got)
	}
}
