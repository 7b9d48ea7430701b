package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/rundbrief/rundbrief/handlers"
	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/portal"
	"github.com/rundbrief/rundbrief/handlers/public"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/botguard"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// serve runs the HTTP server and the background workers until ctx ends, then shuts
// down in order: stop accepting and drain requests, stop the workers, close the
// database, stop the private cluster.
func serve(ctx context.Context, cfg Config, log *slog.Logger) error {
	if err := cfg.ensureSecret(log); err != nil {
		return err
	}
	db, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.close()
	// Checked before any worker starts, so that a configuration error ends cleanly.
	aiService, err := newAIService(db.DB, cfg, log)
	if err != nil {
		return err
	}
	box, mail, err := newMailTransports(db.DB, cfg, log)
	if err != nil {
		return err
	}
	// Metrics and /healthz, /readyz; refuses to run beside a process with other private-address settings.
	operations, err := newOperations(ctx, db.DB, cfg, log)
	if err != nil {
		return err
	}

	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var workers sync.WaitGroup
	startWorker := func(name string, run func(context.Context) error) {
		workers.Go(func() {
			if err := run(workCtx); err != nil {
				log.Error("worker stopped", "worker", name, "err", err)
				operations.metrics.WorkerStopped(name)
			}
		})
	}
	startWorker("process registry", operations.process.Run)
	apiLog := store.NewAPILogWriter(db.DB, log)
	startWorker("api log", apiLog.Run)
	startWorker("retention", func(ctx context.Context) error { return db.RunRetention(ctx, time.Hour, log) })
	startWorker("contact index merge", func(ctx context.Context) error {
		return db.RunContactIndexMerge(ctx, store.ContactIndexMergeInterval, log)
	})
	startWorker("key changes", func(ctx context.Context) error { return db.ListenKeyChanges(ctx, db.url, log) })
	startWorker("smtp pool", mail.Run)
	// System mail (double opt-in, owner notifications) and webhook deliveries.
	startWorker("system mail", mailer.NewSystemMailWorker(db.DB, mail, mailer.SystemMailOptions{BaseURL: cfg.BaseURL, Log: log}).Run)
	if cfg.WebhookAllowPrivate {
		log.Warn("RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE is on: webhooks may target loopback and private addresses (development only)")
	}
	webhooks := webhook.New(db.DB, webhook.Config{Box: box, AllowPrivate: cfg.WebhookAllowPrivate, Outcomes: operations.metrics, Log: log})
	startWorker("webhooks", webhooks.Worker(webhook.WorkerOptions{}).Run)

	// Newsletters and single emails: the send worker's lanes claim queued
	// recipients (shared with every other serve process through PostgreSQL),
	// the scheduler starts due sends. Links in mails carry tokens signed with
	// a key derived from RUNDBRIEF_SECRET.
	tokens, err := mailer.NewTokens(cfg.Secret)
	if err != nil {
		return err
	}
	links := mailer.LinkBuilder{BaseURL: cfg.BaseURL, Tokens: tokens}
	// The SMTP servers' messages-per-second settings hold for all serve
	// processes together (a budget shared through PostgreSQL), and mail goes
	// only to public SMTP servers (unless RUNDBRIEF_SMTP_ALLOW_PRIVATE).
	opener := mailer.SharedRate(mailer.NewSMTPGuard(db.DB, mail, cfg.SMTPAllowPrivate, nil).Opener(mail), store.NewSendRateLimiter(db.DB))
	sendWorker := mailer.NewWorker(db.DB, opener, mailer.WorkerOptions{Links: links, Outcomes: operations.metrics, Log: log})
	campaigns := mailer.NewCampaigns(db.DB, opener, sendWorker, mailer.CampaignsOptions{Links: links, Log: log})
	startWorker("campaign sender", sendWorker.Run)
	startWorker("campaign scheduler", mailer.NewScheduler(db.DB, campaigns, mailer.SchedulerOptions{Log: log}).Run)
	// A/B tests: the winner of a test is decided once wait_hours have passed,
	// by whichever process claims it first.
	abTests := mailer.NewABTests(db.DB, sendWorker, mailer.ABTestsOptions{Log: log})
	startWorker("a/b test winners", abTests.Run)

	// CSV imports of contacts: uploaded files and the jobs' progress live in
	// PostgreSQL, so any serve process runs (or resumes) any job.
	startWorker("contact import", store.NewImportWorker(db.DB, store.ImportWorkerOptions{Log: log}).Run)

	// Portal sessions live in PostgreSQL; this worker deletes expired ones.
	startWorker("session cleanup", store.NewSessionStore(db.DB, log).Run)
	portalApp, err := portal.New(portal.Deps{DB: db.DB, Box: box, Log: log, BaseURL: cfg.BaseURL, Mail: mail, Webhooks: webhooks, Campaigns: campaigns, ABTests: abTests,
		SMTPAllowPrivate: cfg.SMTPAllowPrivate})
	if err != nil {
		return err
	}

	// Bot protection of the public sign-up forms, keyed from RUNDBRIEF_SECRET.
	guard := botguard.New(cfg.Secret, time.Now)
	publicPages, err := public.New(public.Deps{DB: db.DB, Guard: guard, Tokens: tokens, Log: log, BaseURL: cfg.BaseURL})
	if err != nil {
		return err
	}

	if cfg.SMTPAllowPrivate {
		log.Warn("RUNDBRIEF_SMTP_ALLOW_PRIVATE is on: accounts' SMTP servers may be on loopback and private addresses (development only)")
	}
	app := handlers.New(
		api.New(api.Deps{DB: db.DB, APILog: apiLog, Log: log, AI: aiService, Box: box, Mail: mail, Webhooks: webhooks, Guard: guard, Campaigns: campaigns, ABTests: abTests},
			api.Config{BaseURL: cfg.BaseURL, RateLimit: cfg.RateLimit, SMTPAllowPrivate: cfg.SMTPAllowPrivate}),
		portalApp,
		publicPages,
		handlers.WithOps(operations.handler),
	)
	srv := &http.Server{
		Handler:           app,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	log.Info("rundbrief listening", "addr", ln.Addr().String(), "base_url", cfg.BaseURL, "managed_postgres", cfg.DatabaseURL == "")
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		stopWork()
		workers.Wait()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down: draining requests")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Error("shutdown", "err", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("serve", "err", err)
	}
	log.Info("shutting down: stopping workers")
	stopWork()
	workers.Wait()
	log.Info("stopped")
	return nil
}

// newAIService wires the AI providers the configuration names: Anthropic's Messages
// API when a key is set, the OpenAI-compatible fallback when a URL is set. With
// neither, generation answers 503 and nothing is charged.
func newAIService(db *store.DB, cfg Config, log *slog.Logger) (*ai.Service, error) {
	// The prompts carry what won in the account's past A/B tests.
	c := ai.Config{Log: log, Insights: store.ABInsightSource{DB: db}}
	for name, raw := range map[string]string{"RUNDBRIEF_AI_ANTHROPIC_URL": cfg.AIAnthropicURL, "RUNDBRIEF_AI_FALLBACK_URL": cfg.AIFallbackURL} {
		if u, err := url.Parse(raw); raw != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			return nil, fmt.Errorf("%s %q: expected an http(s) URL", name, raw)
		}
	}
	if cfg.AIAnthropicKey != "" {
		c.Primary = ai.NewAnthropic(cfg.AIAnthropicURL, cfg.AIAnthropicKey)
	}
	if cfg.AIFallbackURL != "" {
		if cfg.AIFallbackModel == "" {
			return nil, errors.New("RUNDBRIEF_AI_FALLBACK_URL is set: RUNDBRIEF_AI_FALLBACK_MODEL must name the model (e.g. llama3.1:8b)")
		}
		c.Fallback = ai.NewOpenAI(cfg.AIFallbackURL, cfg.AIFallbackKey, cfg.AIFallbackModel)
	}
	log.Info("ai providers", "anthropic", c.Primary != nil, "fallback", c.Fallback != nil, "fallback_model", cfg.AIFallbackModel)
	return ai.NewService(db, c), nil
}

// newMailTransports wires the mailer: the secret box that seals SMTP passwords
// (RUNDBRIEF_SECRET), the operator relay from RUNDBRIEF_SMTP_URL, and without one
// the development outbox.
func newMailTransports(db *store.DB, cfg Config, log *slog.Logger) (*secret.Box, *mailer.Transports, error) {
	box, err := secret.NewBox(cfg.Secret)
	if err != nil {
		return nil, nil, err
	}
	opts := mailer.TransportOptions{DefaultFrom: mailer.DefaultFrom(cfg.BaseURL), HELO: mailer.HELOName(cfg.BaseURL),
		PublicServersOnly: !cfg.SMTPAllowPrivate}
	if cfg.SMTPURL != "" {
		relay, err := mailer.ParseRelayURL(cfg.SMTPURL, opts.DefaultFrom)
		if err != nil {
			return nil, nil, err
		}
		opts.Relay = &relay
		log.Info("mail goes through the operator relay", "relay", relay.Server, "from", relay.From.Email)
	} else {
		log.Warn("RUNDBRIEF_SMTP_URL is not set: mail of accounts without an own SMTP server is captured in the development outbox, not sent")
	}
	return box, mailer.NewTransports(db, box, opts), nil
}
