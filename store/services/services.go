// Package services builds every domain service of Rundbrief once and hands
// the same set to the API, the portal and the public pages, so that the
// surfaces never diverge in behaviour and a new feature adds its service here,
// not a field to each surface. It also lists the background workers that
// serve runs.
package services

import (
	"context"
	"log/slog"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/abtest"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/appointment"
	"github.com/rundbrief/rundbrief/store/botguard"
	"github.com/rundbrief/rundbrief/store/bulk"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/imports"
	"github.com/rundbrief/rundbrief/store/inbox"
	"github.com/rundbrief/rundbrief/store/integration"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/sequence"
	"github.com/rundbrief/rundbrief/store/smtpserver"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// Set is every service the surfaces call. New fills all of it; tests may
// fill only what they exercise: an endpoint whose service is nil answers 503.
type Set struct {
	// DB holds the data of every aggregate; for features whose rules all
	// hold inside their transaction (contacts, lists, tags, forms, users,
	// keys) its methods are their service, and it answers every read.
	DB     *store.DB
	APILog *store.APILogWriter
	Log    *slog.Logger
	// Box seals stored secrets and idempotent responses (RUNDBRIEF_SECRET).
	Box *secret.Box
	// Mail holds the operator relay, the development outbox and the
	// accounts' SMTP connections.
	Mail *mailer.Transports
	// Tokens signs the links in mails (unsubscribe, open, click).
	Tokens *mailer.Tokens
	// Guard checks the bot protection of public sign-ups.
	Guard *botguard.Guard

	AI          *ai.Service
	Webhooks    *webhook.Service
	Campaigns   *campaign.Service
	ABTests     *abtest.Service
	SMTPServers *smtpserver.Service
	Imports     *imports.Service
	// Bulk: bulk actions on contacts as background jobs (issue 24).
	Bulk *bulk.Service
	// Integrations: payment providers' inbound calls turn buyers into contacts.
	Integrations *integration.Service

	// Appointments is the appointment book with its booking page (issue 22).
	Appointments *appointment.Service
	Inbox        *inbox.Service
	// Sequences: story sequences and story emails (issue 20).
	Sequences *sequence.Service

	workers []Worker
}

// Worker is a named background loop; Run returns when ctx ends.
type Worker struct {
	Name string
	Run  func(ctx context.Context) error
}

// Workers are the background loops of the set, in start order.
func (s *Set) Workers() []Worker { return s.workers }

// Config is what New needs beyond the database.
type Config struct {
	// DatabaseURL is listened on for notifications (key changes, new events).
	DatabaseURL string
	// BaseURL is the public root URL used in links.
	BaseURL string
	// Secret is RUNDBRIEF_SECRET: key material of the box, the link tokens
	// and the bot guard.
	Secret string
	// Transport configures the mail transports (relay, outbox, HELO).
	Transport mailer.TransportOptions
	// AI configures the AI providers.
	AI ai.Config
	// WebhookAllowPrivate and SMTPAllowPrivate let webhooks and the accounts'
	// SMTP servers reach loopback and private addresses (development only).
	WebhookAllowPrivate, SMTPAllowPrivate bool
	// Resolver looks up the hosts of webhooks and of the accounts' SMTP
	// servers; nil: the system resolver.
	Resolver webhook.Resolver
	// SendOutcomes and WebhookOutcomes count the outcomes of sends and
	// webhook attempts (the metrics); nil: not counted.
	SendOutcomes    mailer.OutcomeCounter
	WebhookOutcomes webhook.OutcomeCounter
	// APILogLosses counts the API log rows that could not be stored (the
	// metrics); nil: only logged.
	APILogLosses store.APILogLossCounter
	// SendLanes and SendBatchSize tune the send worker (lanes, recipients
	// a lane claims at once); zero: the defaults.
	SendLanes, SendBatchSize int
	Log                      *slog.Logger
}

// New builds every service once over db.
func New(db *store.DB, cfg Config) (*Set, error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	box, err := secret.NewBox(cfg.Secret)
	if err != nil {
		return nil, err
	}
	tokens, err := mailer.NewTokens(cfg.Secret)
	if err != nil {
		return nil, err
	}
	mail := mailer.NewTransports(db, box, cfg.Transport)
	links := mailer.LinkBuilder{BaseURL: cfg.BaseURL, Tokens: tokens}
	cfg.AI.Log = log
	// The AI prompts carry what won in the account's past A/B tests.
	cfg.AI.Insights = store.ABInsightSource{DB: db}
	s := &Set{
		DB: db, APILog: store.NewAPILogWriter(db, log).CountLosses(cfg.APILogLosses), Log: log, Box: box, Mail: mail, Tokens: tokens,
		// Bot protection of the public sign-up forms, keyed from RUNDBRIEF_SECRET.
		Guard: botguard.New(cfg.Secret, time.Now),
		AI:    ai.NewService(db, cfg.AI),
		Webhooks: webhook.New(db, webhook.Config{Box: box, AllowPrivate: cfg.WebhookAllowPrivate, Outcomes: cfg.WebhookOutcomes,
			Resolver: cfg.Resolver, Log: log}),
		SMTPServers: smtpserver.New(db, smtpserver.Config{Box: box, Mail: mail, AllowPrivate: cfg.SMTPAllowPrivate, Resolver: cfg.Resolver}),
		Imports:     imports.New(db),
		Bulk:        bulk.New(db),
		// Payment-provider integrations; their event log is purged by the
		// retention worker after 90 days.
		Integrations: integration.New(db, integration.Config{Box: box, BaseURL: cfg.BaseURL, Log: log}),
	}
	// The SMTP servers' messages-per-second settings hold for all serve
	// processes together (a budget shared through PostgreSQL), and mail goes
	// only to public SMTP servers (unless RUNDBRIEF_SMTP_ALLOW_PRIVATE).
	opener := mailer.SharedRate(s.SMTPServers.Opener(mail), store.NewSendRateLimiter(db))
	// The send worker's lanes claim queued recipients, shared with every
	// other serve process through PostgreSQL.
	sender := mailer.NewWorker(db, opener, mailer.WorkerOptions{Links: links, Outcomes: cfg.SendOutcomes, Log: log,
		Concurrency: cfg.SendLanes, BatchSize: cfg.SendBatchSize})
	s.Campaigns = campaign.New(db, opener, sender, campaign.Options{Links: links, Log: log})
	s.ABTests = abtest.New(db, sender, abtest.Options{Log: log})
	// Story sequences and story emails (issue 20): days and story emails go
	// through the send queue above.
	s.Sequences = sequence.New(db, s.AI, s.Campaigns, opener, sender, sequence.Options{Log: log})

	// The connected IMAP inbox: replies go the accounts' mail route, the IMAP
	// host follows the SMTP servers' private-address rule on every dial.
	s.Inbox = inbox.New(db, inbox.Config{Box: box, Guard: s.SMTPServers, Opener: opener, AI: s.AI, Log: log})

	s.workers = []Worker{
		{"api log", s.APILog.Run},
		{"retention", func(ctx context.Context) error { return db.RunRetention(ctx, time.Hour, log) }},
		{"contact index merge", func(ctx context.Context) error {
			return db.RunContactIndexMerge(ctx, store.ContactIndexMergeInterval, log)
		}},
		// One connection listens for every NOTIFY: key changes, new events.
		{"notifications", func(ctx context.Context) error { return db.ListenNotifications(ctx, cfg.DatabaseURL, log) }},
		{"smtp pool", mail.Run},
		// System mail: double opt-in and owner notifications.
		{"system mail", mailer.NewSystemMailWorker(db, mail, mailer.SystemMailOptions{BaseURL: cfg.BaseURL, Log: log}).Run},
		{"webhooks", s.Webhooks.Worker(webhook.WorkerOptions{}).Run},
		{"campaign sender", sender.Run},
		{"campaign scheduler", campaign.NewScheduler(db, s.Campaigns, campaign.SchedulerOptions{Log: log}).Run},
		// The winner of a test is decided once wait_hours have passed, by
		// whichever process claims it first.
		{"a/b test winners", s.ABTests.Run},
		// CSV imports: files and progress live in PostgreSQL, so any process
		// runs (or resumes) any job.
		{"contact import", imports.NewWorker(db, imports.WorkerOptions{Log: log}).Run},
		{"contact bulk actions", bulk.NewWorker(db, bulk.WorkerOptions{Log: log}).Run},
		// Story sequences (issue 20): the due days into the send queue, and
		// the outbox consumer that enrols by list or tag and exits on
		// unsubscribe or delete. Both shared by every process.
		{"sequence days", sequence.NewWorker(db, sender, sequence.WorkerOptions{Log: log}).Run},
		{"sequence triggers", sequence.NewTriggerConsumer(db, store.ConsumerOptions{Log: log}).Run},
		// Custom field definitions (issue 24): the keys of written contacts
		// join the account's fields, from the outbox, not in the contact writes.
		{"contact fields", db.NewFieldConsumer(store.ConsumerOptions{Log: log}).Run},
		// Portal sessions live in PostgreSQL; this deletes expired ones.
		{"session cleanup", store.NewSessionStore(db, log).Run},
		// Inbox sync every 5 minutes per account, each claimed by one process.
		{"inbox sync", s.Inbox.Worker(inbox.WorkerOptions{}).Run},
	}

	// Appointments (issue 22): the book and its reminders, queued once across
	// processes (claimed with FOR UPDATE SKIP LOCKED) and sent as system mail.
	s.Appointments = appointment.New(db, appointment.Config{Guard: s.Guard, BaseURL: cfg.BaseURL, Log: log})
	s.workers = append(s.workers, Worker{"appointment reminders", appointment.NewWorker(db, appointment.WorkerOptions{Log: log}).Run})
	return s, nil
}
