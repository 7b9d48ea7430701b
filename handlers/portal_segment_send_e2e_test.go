package handlers_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
)

// TestPortalSegmentSendEndToEnd saves a filter as a segment in the browser,
// chooses it as a newsletter's audience and sends: exactly the segment's
// subscribed contacts receive the mail at a real SMTP server (the
// unsubscribed match and the contacts outside the filter do not).
func TestPortalSegmentSendEndToEnd(t *testing.T) {
	t.Parallel()
	srv, db, box := sendingServer(t)
	smtp := smtptest.Start(t, smtptest.Options{})
	bg := context.Background()
	acct, err := db.CreateAccount(bg, store.NewAccount{Name: "Weingut Sonnenhang", Email: "winzerin@sonnenhang.test", Password: "riesling-vom-steilhang", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	sys := store.Actor{Type: store.ActorSystem}
	if _, err := db.CreateSMTPServer(bg, box, acct.Account.ID, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "Versand", Host: smtp.Host, Port: smtp.Port, Encryption: "none", FromEmail: "post@sonnenhang.test", FromName: "Weingut Sonnenhang"}}); err != nil {
		t.Fatal(err)
	}
	unsubscribed := store.StatusUnsubscribed
	for _, c := range []store.ContactInput{
		{Email: "vera@example.com", Tags: []string{"vip"}},
		{Email: "vinzenz@example.com", Tags: []string{"vip", "weinprobe"}},
		{Email: "valerie@example.com", Tags: []string{"vip"}, Status: &unsubscribed},
		{Email: "otto@example.com", Tags: []string{"weinprobe"}},
		{Email: "olga@example.com"},
	} {
		if _, err := db.UpsertContact(bg, acct.Account.ID, sys, c); err != nil {
			t.Fatal(err)
		}
	}

	b := newTab(t, 1440, 1000, 120*time.Second)
	do, read := b.do, b.read
	b.signIn(srv.URL, "winzerin@sonnenhang.test", "riesling-vom-steilhang")

	do("save the VIP filter as a segment",
		chromedp.Navigate(srv.URL+"/contacts?tag=vip"),
		chromedp.WaitVisible(tid("save-segment-form")),
		chromedp.SendKeys(chromedp.CSS(`#field-segment-name`), "Stammkunden VIP"),
		chromedp.Click(tid("save-segment")),
		chromedp.WaitVisible(tid("segments-table")),
	)
	segs, _, err := db.Segments(bg, acct.Account.ID, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(segs) != 1 {
		t.Fatalf("segments %v, %v", segs, err)
	}
	segID := segs[0].ID

	do("write a newsletter for the segment",
		chromedp.Navigate(srv.URL+"/newsletters/new"),
		chromedp.WaitVisible(tid("newsletter-form")),
		chromedp.SendKeys(chromedp.CSS(`#field-name`), "Jahrgangsvorstellung"),
		chromedp.SendKeys(chromedp.CSS(`#field-subject`), "Der neue Jahrgang ist da"),
		chromedp.SendKeys(chromedp.CSS(`#field-content`), "# Jahrgang 2026\n\nFür unsere Stammkunden vorab."),
		chromedp.SetValue(chromedp.CSS(`#field-segment_id`), strconv.FormatInt(segID, 10)),
		chromedp.Click(tid("newsletter-save")),
		chromedp.WaitVisible(tid("flash")),
	)
	do("send after the confirmation",
		chromedp.Click(tid("newsletter-send")),
		chromedp.WaitVisible(tid("send-confirm")),
		screenshot(t, b.dir, "portal-segment-send-confirm"),
		chromedp.Click(tid("send-confirm-button")),
		chromedp.WaitVisible(tid("newsletter-status-panel")),
		until(`document.querySelector('[data-testid="newsletter-status-panel"]').dataset.status === 'sent'`),
	)
	if got := strings.TrimSpace(read("progress", chromedp.Text(tid("progress-text")))); got != "2 von 2 E-Mails verschickt" {
		t.Errorf("progress %q", got)
	}
	var to []string
	for _, m := range smtp.Messages() {
		to = append(to, m.To...)
	}
	slices.Sort(to)
	if want := []string{"vera@example.com", "vinzenz@example.com"}; !slices.Equal(to, want) {
		t.Fatalf("the SMTP server got mail for %v, want %v", to, want)
	}
}
