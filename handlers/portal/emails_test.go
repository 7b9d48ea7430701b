package portal_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestSingleEmailPages: compose a single email in the portal and have it
// delivered by a real SMTP server (a blocked address skipped), see its outcome
// and recipients; schedule another and call it off; both show in the
// campaigns overview; another account finds neither.
func TestSingleEmailPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	smtp := smtptest.Start(t, smtptest.Options{})
	if _, err := s.db.CreateSMTPServer(ctx, testBox(t), acct.ID, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "Test", Host: smtp.Host, Port: smtp.Port, Encryption: "none", FromEmail: "info@baeckerei.test"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.BlockAddresses(ctx, acct.ID, store.Actor{Type: store.ActorSystem}, []string{"gesperrt@example.com"}, store.Unsubscribe{Source: store.UnsubManual}); err != nil {
		t.Fatal(err)
	}

	if r := c.get("/emails"); r.find("emails-empty").Length() != 1 {
		t.Fatal("no empty state")
	}
	form := url.Values{"to": {"kunde@example.com\ngesperrt@example.com"}, "subject": {"Ihre Bestellung"},
		"html": {"<p>Hallo {{vorname}}, danke!</p>"}, "type": {store.TypeFollowUp}, "track_opens": {"1"}}
	bad := url.Values{}
	for k, v := range form {
		bad[k] = v
	}
	bad.Set("to", "kein-at-zeichen")
	r := c.post("/emails/new", bad)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if r.find("error-to").Length() != 1 {
		t.Errorf("an invalid address is not reported on its field:\n%s", text(r.find("email-form")))
	}

	r = c.post("/emails/new", form)
	if r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/emails/") {
		t.Fatalf("send: %d %s\n%s", r.StatusCode, r.Header.Get("Location"), r.Body)
	}
	detail := r.Header.Get("Location")
	deadline := time.Now().Add(10 * time.Second)
	for smtp.Count() < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	msgs := smtp.Messages()
	if len(msgs) != 1 || msgs[0].To[0] != "kunde@example.com" || !strings.Contains(string(msgs[0].Data), "Ihre Bestellung") {
		t.Fatalf("delivered: %d messages %v", len(msgs), msgs)
	}
	if f := text(c.get(detail).find("flash")); !strings.Contains(f, "gesperrt") {
		t.Errorf("flash does not mention the skipped address: %q", f)
	}
	var d *response
	for {
		d = c.get(detail)
		wantStatus(t, d, http.StatusOK)
		if strings.Contains(text(d.find("email-outcome")), "1 versendet") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := text(d.find("email-outcome")); got != "1 versendet, 0 fehlgeschlagen, 1 übersprungen" {
		t.Errorf("outcome %q", got)
	}
	if n := d.find("recipient-row").Length(); n != 2 {
		t.Errorf("%d recipient rows, want 2", n)
	}
	skipped := c.get(detail + "?outcome=skipped")
	if rows := skipped.find("recipient-row"); rows.Length() != 1 || !strings.Contains(text(rows), "gesperrt@example.com") {
		t.Errorf("skipped filter: %q", text(rows))
	}

	// Scheduled, then called off.
	form.Set("to", "spaeter@example.com")
	form.Set("scheduled_at", time.Now().In(store.Berlin).Add(48*time.Hour).Format("2006-01-02T15:04"))
	r = c.post("/emails/new", form)
	wantStatus(t, r, http.StatusSeeOther)
	later := r.Header.Get("Location")
	if c.get(later).find("email-cancel").Length() != 1 {
		t.Fatal("a scheduled email has no cancel button")
	}
	wantRedirect(t, c.post(later+"/cancel", nil), later)
	if got := c.get(later).find("email-status").Find("[data-status]").AttrOr("data-status", ""); got != store.CampaignCancelled {
		t.Errorf("after cancel: status %q", got)
	}

	// The overview: both, as single emails; none among newsletters.
	if n := c.get("/campaigns").find("campaign-row").Length(); n != 2 {
		t.Errorf("campaigns overview: %d rows, want 2", n)
	}
	if n := c.get("/campaigns?kind=newsletter").find("campaign-row").Length(); n != 0 {
		t.Errorf("newsletters filter shows %d single emails", n)
	}
	if n := c.get("/emails").find("email-row").Length(); n != 2 {
		t.Errorf("emails list: %d rows", n)
	}

	other := newAccount(t, s.db, "")
	oc := newClient(t, s)
	oc.signIn(other.Email, other.Password)
	wantStatus(t, oc.get(detail), http.StatusNotFound)
	wantStatus(t, oc.post(later+"/cancel", nil), http.StatusNotFound)
	if n := oc.get("/campaigns").find("campaign-row").Length(); n != 0 {
		t.Errorf("another account sees %d campaigns", n)
	}
}
