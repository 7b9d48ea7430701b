package mailer

import (
	"context"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// TestAddressNotAllowed is the connection test's code for a server whose host
// is loopback or in a private network: the test refuses without connecting.
const TestAddressNotAllowed = "address_not_allowed"

// SMTPGuard keeps the SMTP servers of accounts off loopback, private,
// link-local and other non-public addresses, as webhooks are kept
// (webhook.Guard, PublicAddr): otherwise an account could make the service
// connect into the operator's own network, with its connection test and with
// its sends. The API and the portal save and test servers through it.
// RUNDBRIEF_SMTP_ALLOW_PRIVATE (allowPrivate) turns it off for development
// and tests. The operator relay is never checked.
type SMTPGuard struct {
	db           *store.DB
	mail         *Transports
	guard        *webhook.Guard
	allowPrivate bool
}

// NewSMTPGuard returns the guard; resolver nil is the system resolver.
func NewSMTPGuard(db *store.DB, mail *Transports, allowPrivate bool, resolver webhook.Resolver) *SMTPGuard {
	return &SMTPGuard{db: db, mail: mail, guard: webhook.NewGuard(allowPrivate, resolver), allowPrivate: allowPrivate}
}

// CheckHost returns a ValidationError for the field "host" when host resolves
// to a non-public address. A name that does not resolve passes: the
// connection fails later and says so.
func (g *SMTPGuard) CheckHost(ctx context.Context, host string) error {
	if msg := g.guard.CheckHost(ctx, strings.TrimSpace(host)); msg != "" {
		return store.Invalid("host", msg)
	}
	return nil
}

// TestServer runs the connection test of one of the account's servers
// (Transports.TestServer), unless its host is not public: then it records
// and returns TestAddressNotAllowed without connecting.
func (g *SMTPGuard) TestServer(ctx context.Context, accountID, serverID int64) (TestResult, error) {
	srv, err := g.db.SMTPServer(ctx, accountID, serverID)
	if err != nil {
		return TestResult{}, err
	}
	if msg := g.guard.CheckHost(ctx, srv.Host); msg != "" {
		now := time.Now()
		if err := g.db.RecordSMTPServerTest(ctx, accountID, serverID, now, TestAddressNotAllowed); err != nil {
			return TestResult{}, err
		}
		return TestResult{Code: TestAddressNotAllowed, Message: msg, Detail: "RUNDBRIEF_SMTP_ALLOW_PRIVATE is off", TestedAt: now}, nil
	}
	return g.mail.TestServer(ctx, accountID, serverID)
}

// Opener wraps an Opener (Transports) so that mail, too, goes only to public
// SMTP servers: a route to one of the account's servers whose host is not
// public is refused with a ValidationError on smtp_server_id. Starting a send
// reports it as a 422 (Campaigns checks the route first); a running send's
// lanes pause the route and try again later. The operator relay and the
// development outbox are not checked. A name whose address changes after
// this check (DNS rebinding) is caught when connecting: serve sets
// TransportOptions.PublicServersOnly, which checks the dialled address.
func (g *SMTPGuard) Opener(o Opener) Opener { return &guardedOpener{Opener: o, g: g} }

type guardedOpener struct {
	Opener
	g *SMTPGuard
}

func (o *guardedOpener) Open(ctx context.Context, accountID, serverID int64) (Sender, Route, error) {
	sender, route, err := o.Opener.Open(ctx, accountID, serverID)
	if err != nil || route.Kind != RouteServer || o.g.allowPrivate {
		return sender, route, err
	}
	srv, err := o.g.db.SMTPServer(ctx, accountID, route.ServerID)
	if err == nil {
		if msg := o.g.guard.CheckHost(ctx, srv.Host); msg != "" {
			err = store.Invalid("smtp_server_id", msg)
		}
	}
	if err != nil {
		_ = sender.Close()
		return nil, Route{}, err
	}
	return sender, route, nil
}
