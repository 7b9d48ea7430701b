// Package smtpserver is the home of the accounts' own SMTP servers: its
// Service is the one entry the API and the portal call to save, delete and
// test a server, and it holds the rule that keeps those servers on public
// addresses, for saving, testing and sending alike. Rows and statements live
// in store (smtpservers.go); connecting and sending in mailer.
package smtpserver

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// TestAddressNotAllowed is the connection test's code for a server whose host
// is loopback or in a private network: the test refuses without connecting.
const TestAddressNotAllowed = "address_not_allowed"

// HintAllowPrivate is the operator hint (log only) of a server refused for a
// non-public address: in development the setting allows it.
const HintAllowPrivate = "the SMTP server's host is not a public address; RUNDBRIEF_SMTP_ALLOW_PRIVATE=true allows loopback and private addresses (development and tests only)"

// Config configures a Service.
type Config struct {
	// Box seals and opens the servers' passwords (RUNDBRIEF_SECRET); nil:
	// saving a server fails.
	Box *secret.Box
	// Mail runs connection tests; nil: tests fail.
	Mail *mailer.Transports
	// AllowPrivate lets servers be on loopback and private addresses
	// (RUNDBRIEF_SMTP_ALLOW_PRIVATE; development and tests only).
	AllowPrivate bool
	// Resolver resolves hosts; nil: the system resolver.
	Resolver webhook.Resolver
	// Now is the clock of refused tests; nil: time.Now.
	Now func() time.Time
}

// Service keeps the SMTP servers of accounts off loopback, private,
// link-local and other non-public addresses, as webhooks are kept
// (webhook.Guard, PublicAddr): otherwise an account could make the service
// connect into the operator's own network, with its connection test and with
// its sends. The operator relay is never checked.
type Service struct {
	db    *store.DB
	cfg   Config
	guard *webhook.Guard
}

// errNoBox and errNoMail are wiring errors: the API answers them as 500.
var (
	errNoBox  = errors.New("smtpserver: no secret box configured")
	errNoMail = errors.New("smtpserver: no mail transports configured")
)

// New returns the service.
func New(db *store.DB, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{db: db, cfg: cfg, guard: webhook.NewGuard(cfg.AllowPrivate, cfg.Resolver)}
}

// checkHost returns a ValidationError for the field "host" when host resolves
// to a non-public address. A name that does not resolve passes: the
// connection fails later and says so.
func (s *Service) checkHost(ctx context.Context, host string) error {
	if msg := s.guard.CheckHost(ctx, strings.TrimSpace(host)); msg != "" {
		return store.WithHint(store.Invalid("host", msg), HintAllowPrivate)
	}
	return nil
}

// CheckHost reports in German why host may not be connected to ("": it may).
// The inbox's IMAP host follows this same rule (RUNDBRIEF_SMTP_ALLOW_PRIVATE
// governs both), so it asks here rather than keeping a guard of its own.
func (s *Service) CheckHost(ctx context.Context, host string) string {
	return s.guard.CheckHost(ctx, strings.TrimSpace(host))
}

// DialContext connects to addr through the guard: the address actually dialled
// is checked again, so a name that resolves to a private address later (DNS
// rebinding) is refused on every connection (the inbox's IMAP connections).
func (s *Service) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return s.guard.DialContext(ctx, network, addr)
}

// Create saves a new server of the account, if its host is public.
func (s *Service) Create(ctx context.Context, accountID int64, in store.NewSMTPServer) (store.SMTPServer, error) {
	if s.cfg.Box == nil {
		return store.SMTPServer{}, errNoBox
	}
	if err := s.checkHost(ctx, in.Host); err != nil {
		return store.SMTPServer{}, err
	}
	return s.db.CreateSMTPServer(ctx, s.cfg.Box, accountID, in)
}

// Update changes a server of the account; a new host must be public.
func (s *Service) Update(ctx context.Context, accountID, id int64, p store.SMTPServerPatch) (store.SMTPServer, error) {
	if s.cfg.Box == nil {
		return store.SMTPServer{}, errNoBox
	}
	if p.Host != nil {
		if err := s.checkHost(ctx, *p.Host); err != nil {
			return store.SMTPServer{}, err
		}
	}
	return s.db.UpdateSMTPServer(ctx, s.cfg.Box, accountID, id, p)
}

// Delete deletes a server of the account.
func (s *Service) Delete(ctx context.Context, accountID, id int64) error {
	return s.db.DeleteSMTPServer(ctx, accountID, id)
}

// Test runs the connection test of one of the account's servers
// (Transports.TestServer), unless its host is not public: then it records
// and returns TestAddressNotAllowed without connecting.
func (s *Service) Test(ctx context.Context, accountID, serverID int64) (mailer.TestResult, error) {
	if s.cfg.Mail == nil {
		return mailer.TestResult{}, errNoMail
	}
	srv, err := s.db.SMTPServer(ctx, accountID, serverID)
	if err != nil {
		return mailer.TestResult{}, err
	}
	if msg := s.guard.CheckHost(ctx, srv.Host); msg != "" {
		now := s.cfg.Now()
		if err := s.db.RecordSMTPServerTest(ctx, accountID, serverID, now, TestAddressNotAllowed); err != nil {
			return mailer.TestResult{}, err
		}
		return mailer.TestResult{Code: TestAddressNotAllowed, Message: msg, Detail: "RUNDBRIEF_SMTP_ALLOW_PRIVATE is off", TestedAt: now}, nil
	}
	return s.cfg.Mail.TestServer(ctx, accountID, serverID)
}

// Opener wraps an Opener (Transports) so that mail, too, goes only to public
// SMTP servers: a route to one of the account's servers whose host is not
// public is refused with a ValidationError on smtp_server_id. Starting a send
// reports it as a 422 (the campaign service checks the route first); a
// running send's lanes pause the route and try again later. The operator
// relay and the development outbox are not checked. A name whose address
// changes after this check (DNS rebinding) is caught when connecting: serve
// sets TransportOptions.PublicServersOnly, which checks the dialled address.
func (s *Service) Opener(o mailer.Opener) mailer.Opener { return &guardedOpener{Opener: o, s: s} }

type guardedOpener struct {
	mailer.Opener
	s *Service
}

func (o *guardedOpener) Open(ctx context.Context, accountID, serverID int64) (mailer.Sender, mailer.Route, error) {
	sender, route, err := o.Opener.Open(ctx, accountID, serverID)
	if err != nil || route.Kind != mailer.RouteServer || o.s.cfg.AllowPrivate {
		return sender, route, err
	}
	srv, err := o.s.db.SMTPServer(ctx, accountID, route.ServerID)
	if err == nil {
		if msg := o.s.guard.CheckHost(ctx, srv.Host); msg != "" {
			err = store.WithHint(store.Invalid("smtp_server_id", msg), HintAllowPrivate)
		}
	}
	if err != nil {
		_ = sender.Close()
		return nil, mailer.Route{}, err
	}
	return sender, route, nil
}
