package mailer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/smtpserver"
)

// TestGuardedOpenerKeepsMailOffPrivateServers: with the guard on (production:
// RUNDBRIEF_SMTP_ALLOW_PRIVATE unset), a newsletter over an SMTP server on
// loopback does not start (422 on smtp_server_id) and nothing reaches the
// server; with private addresses allowed the same send goes out.
func TestGuardedOpenerKeepsMailOffPrivateServers(t *testing.T) {
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{})
	nl := e.newsletter(e.seedList("guard", 3))

	deny := smtpserver.New(e.db, smtpserver.Config{Mail: e.transports, AllowPrivate: false}).Opener(e.transports)
	_, err := campaign.New(e.db, deny, nil, campaign.Options{Links: e.links}).SendNewsletter(ctx, e.acct, systemActor, nl.ID)
	var ve *store.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(ve.Fields["smtp_server_id"], "nicht öffentlich") {
		t.Fatalf("send over a loopback server: %v", err)
	}
	if c, _ := e.db.Newsletter(ctx, e.acct, nl.ID); c.Status != store.CampaignDraft || e.srv.Connections() != 0 {
		t.Fatalf("status %s, %d connections", c.Status, e.srv.Connections())
	}

	allow := smtpserver.New(e.db, smtpserver.Config{Mail: e.transports, AllowPrivate: true}).Opener(e.transports)
	w := e.worker(e.db, allow, mailer.WorkerOptions{})
	if _, err := campaign.New(e.db, allow, w, campaign.Options{Links: e.links}).SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}
	stop := running(w.Run)
	e.waitStatus(nl.ID, store.CampaignSent)
	stop()
	if e.srv.Count() != 3 {
		t.Errorf("%d messages, want 3", e.srv.Count())
	}
}
