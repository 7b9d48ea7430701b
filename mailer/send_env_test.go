package mailer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/secret"
)

// sendSecret keys the secret box and the link tokens of these tests.
const sendSecret = "send pipeline test secret, 32+ characters long"

const testBaseURL = "https://rb.test"

var systemActor = store.Actor{Type: store.ActorSystem}

// sendEnv is one account on a fresh database whose default SMTP server is a
// real test SMTP server.
type sendEnv struct {
	tb         testing.TB
	url        string
	db         *store.DB
	acct       int64
	srv        *smtptest.Server
	serverID   int64
	box        *secret.Box
	tokens     *mailer.Tokens
	links      mailer.LinkBuilder
	transports *mailer.Transports
}

func newSendEnv(tb testing.TB, opts smtptest.Options) *sendEnv {
	tb.Helper()
	ctx := context.Background()
	url := dbtest.URL(tb)
	db := dbtest.Open(tb, url)
	res, err := db.CreateAccount(ctx, store.NewAccount{Name: "Acme", Email: "owner-" + store.RandomString(6) + "@acme.test", Plan: "business"})
	if err != nil {
		tb.Fatal(err)
	}
	e := &sendEnv{tb: tb, url: url, db: db, acct: res.Account.ID}
	e.srv = smtptest.Start(tb, opts)
	box, err := secret.NewBox(sendSecret)
	if err != nil {
		tb.Fatal(err)
	}
	e.box = box
	s, err := db.CreateSMTPServer(ctx, box, e.acct, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "Test", Host: e.srv.Host, Port: e.srv.Port, Encryption: "none", FromEmail: "news@acme.test", FromName: "Acme News",
	}})
	if err != nil {
		tb.Fatal(err)
	}
	e.serverID = s.ID
	if e.tokens, err = mailer.NewTokens(sendSecret); err != nil {
		tb.Fatal(err)
	}
	e.links = mailer.LinkBuilder{BaseURL: testBaseURL, Tokens: e.tokens}
	e.transports = e.newTransports(db, box)
	return e
}

// newTransports is one process's SMTP pool on db.
func (e *sendEnv) newTransports(db *store.DB, box *secret.Box) *mailer.Transports {
	if box == nil {
		var err error
		if box, err = secret.NewBox(sendSecret); err != nil {
			e.tb.Fatal(err)
		}
	}
	return mailer.NewTransports(db, box, mailer.TransportOptions{HELO: "rundbrief.test", DefaultFrom: mailer.DefaultFrom(testBaseURL)})
}

// worker is a send worker of one process on db with the given options.
func (e *sendEnv) worker(db *store.DB, op mailer.Opener, opts mailer.WorkerOptions) *mailer.Worker {
	opts.Links = e.links
	if opts.PollInterval == 0 {
		opts.PollInterval = 20 * time.Millisecond
	}
	return mailer.NewWorker(db, op, opts)
}

func (e *sendEnv) campaigns(w *mailer.Worker) *campaign.Service {
	return campaign.New(e.db, e.transports, w, campaign.Options{Links: e.links})
}

// exec runs SQL or fails the test.
func (e *sendEnv) exec(q string, args ...any) {
	e.tb.Helper()
	if _, err := e.db.ExecContext(context.Background(), q, args...); err != nil {
		e.tb.Fatalf("%s: %v", q, err)
	}
}

// seedList creates a list with n subscribed contacts user<i>@example.com
// (i from 1), with first and last names, a city and a custom field, in a
// few set-based statements.
func (e *sendEnv) seedList(name string, n int) int64 {
	e.tb.Helper()
	ctx := context.Background()
	l, err := e.db.CreateList(ctx, e.acct, systemActor, store.ListInput{Name: &name})
	if err != nil {
		e.tb.Fatal(err)
	}
	e.exec(`INSERT INTO contacts (account_id, email, first_name, last_name, city, custom_fields)
SELECT $1, $3 || g || '@example.com', 'Vorname' || g, 'Nachname' || g, 'Stadt' || (g % 100),
  jsonb_build_object('kundennummer', 'K-' || g)
FROM generate_series(1, $2::int) AS g`, e.acct, n, name+"-user")
	e.exec(`INSERT INTO list_members (list_id, contact_id, account_id)
SELECT $1, id, account_id FROM contacts WHERE account_id = $2 AND email LIKE $3`, l.ID, e.acct, name+"-user%")
	e.exec(`UPDATE lists SET member_count = (SELECT count(*) FROM list_members WHERE list_id = $1) WHERE id = $1`, l.ID)
	e.exec(`UPDATE account_usage SET contacts = (SELECT count(*) FROM contacts WHERE account_id = $1) WHERE account_id = $1`, e.acct)
	e.exec(`ANALYZE contacts`)
	e.exec(`ANALYZE list_members`)
	return l.ID
}

// newsletterHTML has five placeholders and four tracked links (one
// personalised), like a real newsletter.
const newsletterHTML = `<!DOCTYPE html><html><head><meta charset="utf-8"><title>Neuigkeiten</title></head>
<body style="font-family:Arial,sans-serif">
<h1>Hallo {{vorname}} {{nachname}},</h1>
<p>hier sind die Neuigkeiten des Monats für Sie in {{ort|Ihrer Stadt}}. Ihre Kundennummer: {{kundennummer}}.</p>
<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna
aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.
Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur.</p>
<p><a href="https://shop.example.com/angebote?utm_source=newsletter&amp;utm_medium=email">Zu den Angeboten</a></p>
<p>Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt mollit anim id est laborum.
Sed ut perspiciatis unde omnis iste natus error sit voluptatem accusantium doloremque laudantium, totam rem aperiam.</p>
<p><a href="https://blog.example.com/artikel/1">Artikel lesen</a> · <a href='https://example.com/konto?email={{email}}'>Ihr Konto</a></p>
<p>Nemo enim ipsam voluptatem quia voluptas sit aspernatur aut odit aut fugit, sed quia consequuntur magni dolores eos
qui ratione voluptatem sequi nesciunt. Neque porro quisquam est, qui dolorem ipsum quia dolor sit amet.</p>
<p><a href="https://www.example.com/impressum">Impressum</a> · <a href="mailto:info@example.com">Kontakt</a></p>
</body></html>`

// newsletter creates a draft newsletter to lists with the test HTML.
func (e *sendEnv) newsletter(lists ...int64) store.Campaign {
	e.tb.Helper()
	return e.newsletterWith(newsletterHTML, lists...)
}

// newsletterWith creates a draft newsletter to lists with the given HTML.
func (e *sendEnv) newsletterWith(html string, lists ...int64) store.Campaign {
	e.tb.Helper()
	name, subject := "Monatsbrief", "Neuigkeiten für {{vorname}}"
	c, err := e.db.CreateNewsletter(context.Background(), e.acct, systemActor, store.NewsletterInput{
		Name: &name, Subject: &subject, HTML: &html, ListIDs: &lists,
	})
	if err != nil {
		e.tb.Fatal(err)
	}
	return c
}

// waitStatus waits until the campaign has one of the statuses, or fails
// after a minute.
func (e *sendEnv) waitStatus(id int64, statuses ...string) store.Campaign {
	e.tb.Helper()
	limit := 2 * time.Minute
	if _, bench := e.tb.(*testing.B); bench {
		limit = 30 * time.Minute // a benchmark may send 100,000 attached mails
	}
	deadline := time.Now().Add(limit)
	for {
		c, err := e.db.CampaignByID(context.Background(), id)
		if err != nil {
			e.tb.Fatal(err)
		}
		for _, s := range statuses {
			if c.Status == s {
				return c
			}
		}
		if time.Now().After(deadline) {
			e.tb.Fatalf("campaign %d: status %s after %s, want %v", id, c.Status, limit, statuses)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// running runs fn until the returned stop is called; stop waits for it.
func running(fn func(ctx context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = fn(ctx) })
	return func() {
		cancel()
		wg.Wait()
	}
}

// rcptCounts counts the messages the test server got per recipient.
func rcptCounts(msgs []smtptest.Message) map[string]int {
	out := map[string]int{}
	for _, m := range msgs {
		for _, to := range m.To {
			out[to]++
		}
	}
	return out
}

func userEmail(list string, i int) string { return fmt.Sprintf("%s-user%d@example.com", list, i) }
