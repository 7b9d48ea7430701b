package mailer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/secret"
)

const testSecret = "mailer-test-secret-0123456789-abcdefghij"

func newAccount(t *testing.T, db *store.DB) int64 {
	t.Helper()
	res, err := db.CreateAccount(context.Background(), store.NewAccount{
		Name: "Acme", Email: store.RandomString(8) + "@example.com", Password: "a long password",
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.Account.ID
}

func newBox(t *testing.T) *secret.Box {
	t.Helper()
	box, err := secret.NewBox(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	return box
}

func TestDevOutboxCaptures(t *testing.T) {
	db := dbtest.NewDB(t)
	acct := newAccount(t, db)
	ctx := context.Background()
	out := mailer.NewDevOutbox(db, acct)
	m := newsletter()
	if err := out.Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	list, total, err := db.DevOutbox(ctx, acct, store.Page{Page: 1, PerPage: 10})
	if err != nil || total != 1 || len(list) != 1 {
		t.Fatalf("dev outbox: %d of %d (%v)", len(list), total, err)
	}
	got := list[0]
	if got.MessageID != m.MessageID || got.FromEmail != m.From.Email || got.ToEmail != m.To.Email || got.Subject != m.Subject || got.Size == 0 {
		t.Fatalf("captured %+v", got)
	}
	full, err := db.DevOutboxMail(ctx, acct, got.ID)
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, full.Raw)
	if decodeHeader(t, p.header.Get("Subject")) != m.Subject || len(p.parts) != 2 || p.parts[1].body != m.HTML {
		t.Fatal("the stored raw message is not the message")
	}
	// Another account sees nothing of it.
	other := newAccount(t, db)
	if _, n, _ := db.DevOutbox(ctx, other, store.Page{Page: 1, PerPage: 10}); n != 0 {
		t.Fatalf("other account sees %d captured mails", n)
	}
	if _, err := db.DevOutboxMail(ctx, other, got.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("other account reads the mail: %v", err)
	}
	// An invalid message is refused before it is stored.
	bad := newsletter()
	bad.To.Email = "nope"
	if err := out.Send(ctx, bad); !errors.Is(err, mailer.ErrInvalidMessage) {
		t.Fatalf("invalid message: %v", err)
	}
}

func TestTransportsRoutes(t *testing.T) {
	db := dbtest.NewDB(t)
	box := newBox(t)
	acct := newAccount(t, db)
	ctx := context.Background()
	own := smtptest.Start(t, smtptest.Options{TLS: smtptest.STARTTLS, Username: "own@acme.test", Password: "own-password"})
	relaySrv := smtptest.Start(t, smtptest.Options{})

	dev := mailer.NewTransports(db, box, mailer.TransportOptions{DefaultFrom: mailer.Address{Name: "Rundbrief", Email: "noreply@localhost"}})
	if !dev.DevOutboxEnabled() {
		t.Fatal("no relay: the dev outbox must be enabled")
	}
	// No server of its own, no relay: the dev outbox.
	s, route, err := dev.Open(ctx, acct, 0)
	if err != nil || route.Kind != mailer.RouteDevOutbox || route.From.Email != "noreply@localhost" {
		t.Fatalf("Open = %+v, %v; want the dev outbox", route, err)
	}
	if err := s.Send(ctx, smallMessage(1, "x@example.org")); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if _, n, _ := db.DevOutbox(ctx, acct, store.Page{Page: 1, PerPage: 10}); n != 1 {
		t.Fatalf("dev outbox has %d mails, want 1", n)
	}

	relay, err := mailer.ParseRelayURL("smtp://"+relaySrv.Addr()+"?from=relay@rundbrief.test", mailer.Address{})
	if err != nil {
		t.Fatal(err)
	}
	tr := mailer.NewTransports(db, box, mailer.TransportOptions{Relay: &relay, TLSConfig: own.ClientTLSConfig(), HELO: "rundbrief.test"})
	if tr.DevOutboxEnabled() {
		t.Fatal("with a relay the dev outbox must be off")
	}
	s, route, err = tr.Open(ctx, acct, 0)
	if err != nil || route.Kind != mailer.RouteRelay || route.From.Email != "relay@rundbrief.test" {
		t.Fatalf("Open = %+v, %v; want the relay", route, err)
	}
	if err := s.Send(ctx, smallMessage(2, "x@example.org")); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if relaySrv.Count() != 1 {
		t.Fatalf("relay got %d messages", relaySrv.Count())
	}

	// The account's default server wins; its stored password is opened to log in.
	srv, err := db.CreateSMTPServer(ctx, box, acct, store.NewSMTPServer{
		SMTPServerSettings: store.SMTPServerSettings{Name: "Eigener", Host: own.Host, Port: own.Port, Username: "own@acme.test",
			Encryption: store.EncryptionSTARTTLS, FromEmail: "news@acme.test", FromName: "Acme News", RatePerSecond: 50},
		Password: "own-password",
	})
	if err != nil {
		t.Fatal(err)
	}
	s, route, err = tr.Open(ctx, acct, 0)
	if err != nil || route.Kind != mailer.RouteServer || route.ServerID != srv.ID || route.From != (mailer.Address{Name: "Acme News", Email: "news@acme.test"}) || route.RatePerSecond != 50 {
		t.Fatalf("Open = %+v, %v; want the own server", route, err)
	}
	for i := range 3 {
		if err := s.Send(ctx, smallMessage(i, "x@example.org")); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Close()
	// The next Open reuses the pooled connection.
	s, _, _ = tr.Open(ctx, acct, srv.ID)
	if err := s.Send(ctx, smallMessage(9, "x@example.org")); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if msgs := own.Messages(); len(msgs) != 4 || msgs[0].User != "own@acme.test" || !msgs[0].TLS || own.Connections() != 1 {
		t.Fatalf("own server: %d messages, %d connections", len(msgs), own.Connections())
	}
	// System mail always takes the relay.
	if _, route, _ := tr.OpenSystem(acct); route.Kind != mailer.RouteRelay {
		t.Fatalf("OpenSystem route %s", route.Kind)
	}
	// Another account cannot use this server.
	if _, _, err := tr.Open(ctx, newAccount(t, db), srv.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("foreign server: %v", err)
	}

	// The connection test records its outcome on the server.
	res, err := tr.TestServer(ctx, acct, srv.ID)
	if err != nil || !res.OK || res.Code != mailer.TestOK || res.TestedAt.IsZero() {
		t.Fatalf("TestServer = %+v, %v", res, err)
	}
	wrong := "wrong"
	if _, err := db.UpdateSMTPServer(ctx, box, acct, srv.ID, store.SMTPServerPatch{Password: &wrong}); err != nil {
		t.Fatal(err)
	}
	res, err = tr.TestServer(ctx, acct, srv.ID)
	if err != nil || res.OK || res.Code != mailer.TestAuthFailed {
		t.Fatalf("TestServer with a wrong password = %+v, %v", res, err)
	}
	got, _ := db.SMTPServer(ctx, acct, srv.ID)
	if got.LastTestCode != mailer.TestAuthFailed || got.LastTestAt == nil || time.Since(*got.LastTestAt) > time.Minute {
		t.Fatalf("recorded test: %q at %v", got.LastTestCode, got.LastTestAt)
	}

	// In production (PublicServersOnly) the accounts' servers are dialled only
	// on public addresses, here refused on loopback; the operator's relay is
	// the operator's choice and stays reachable.
	public := mailer.NewTransports(db, box, mailer.TransportOptions{Relay: &relay, TLSConfig: own.ClientTLSConfig(), HELO: "rundbrief.test", PublicServersOnly: true})
	s, route, err = public.Open(ctx, acct, srv.ID)
	if err != nil || route.Kind != mailer.RouteServer {
		t.Fatalf("Open = %+v, %v", route, err)
	}
	var se *mailer.SendError
	if err := s.Send(ctx, smallMessage(10, "x@example.org")); !errors.As(err, &se) || se.Stage != mailer.StageConnect {
		t.Fatalf("send over a loopback server with PublicServersOnly: %v", err)
	}
	_ = s.Close()
	if res, err := public.TestServer(ctx, acct, srv.ID); err != nil || res.Code != mailer.TestConnectFailed || !strings.Contains(res.Message, "keine öffentliche Adresse") {
		t.Fatalf("TestServer with PublicServersOnly = %+v, %v", res, err)
	}
	s, _, _ = public.OpenSystem(acct)
	if err := s.Send(ctx, smallMessage(11, "x@example.org")); err != nil {
		t.Fatalf("relay with PublicServersOnly: %v", err)
	}
	_ = s.Close()
}
