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
	"github.com/rundbrief/rundbrief/store/services"
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
	aiConfig, err := aiProviders(cfg, log)
	if err != nil {
		return err
	}
	transport, err := mailTransport(cfg, log)
	if err != nil {
		return err
	}
	if cfg.WebhookAllowPrivate {
		log.Warn("RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE is on: webhooks may target loopback and private addresses (development only)")
	}
	if cfg.SMTPAllowPrivate {
		log.Warn("RUNDBRIEF_SMTP_ALLOW_PRIVATE is on: accounts' SMTP servers may be on loopback and private addresses (development only)")
	}
	// Metrics and /healthz, /readyz; refuses to run beside a process with
	// other private-address settings.
	operations, err := newOperations(ctx, db.DB, cfg, log)
	if err != nil {
		return err
	}
	set, err := services.New(db.DB, services.Config{
		DatabaseURL: db.url, BaseURL: cfg.BaseURL, Secret: cfg.Secret, Transport: transport, AI: aiConfig,
		WebhookAllowPrivate: cfg.WebhookAllowPrivate, SMTPAllowPrivate: cfg.SMTPAllowPrivate,
		SendOutcomes: operations.metrics, WebhookOutcomes: operations.metrics, APILogLosses: operations.metrics, Log: log,
		SendLanes: cfg.SendLanes, SendBatchSize: cfg.SendBatchSize,
	})
	if err != nil {
		return err
	}

	warmDatabase(ctx, db.DB, log)

	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var workers sync.WaitGroup
	for _, w := range append(set.Workers(), services.Worker{Name: "process registry", Run: operations.process.Run}) {
		workers.Go(func() {
			if err := w.Run(workCtx); err != nil {
				log.Error("worker stopped", "worker", w.Name, "err", err)
				operations.metrics.WorkerStopped(w.Name)
			}
		})
	}

	portalApp, err := portal.New(set, portal.Config{BaseURL: cfg.BaseURL, UpgradeURL: cfg.UpgradeURL})
	if err != nil {
		return err
	}
	publicPages, err := public.New(set, public.Config{BaseURL: cfg.BaseURL})
	if err != nil {
		return err
	}
	app := handlers.New(api.New(set, api.Config{BaseURL: cfg.BaseURL, RateLimit: cfg.RateLimit}), portalApp, publicPages,
		handlers.WithOps(operations.handler))
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

// warmDatabase readies the contact write path's connections before the
// first request (store.DB.Warm). A failure is no reason not to serve: the
// first requests then pay for what it would have done.
func warmDatabase(ctx context.Context, db *store.DB, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := db.Warm(ctx); err != nil {
		log.Warn("warming the database connections failed", "err", err)
		return
	}
	log.Info("database connections warmed", "took", time.Since(start).Round(time.Millisecond))
}

// aiProviders configures the AI providers the configuration names:
// Anthropic's Messages API when a key is set, the OpenAI-compatible fallback
// when a URL is set. With neither, generation answers 503 and nothing is
// charged.
func aiProviders(cfg Config, log *slog.Logger) (ai.Config, error) {
	var c ai.Config
	for name, raw := range map[string]string{"RUNDBRIEF_AI_ANTHROPIC_URL": cfg.AIAnthropicURL, "RUNDBRIEF_AI_FALLBACK_URL": cfg.AIFallbackURL} {
		if u, err := url.Parse(raw); raw != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			return ai.Config{}, fmt.Errorf("%s %q: expected an http(s) URL", name, raw)
		}
	}
	if cfg.AIAnthropicKey != "" {
		c.Primary = ai.NewAnthropic(cfg.AIAnthropicURL, cfg.AIAnthropicKey)
	}
	if cfg.AIFallbackURL != "" {
		if cfg.AIFallbackModel == "" {
			return ai.Config{}, errors.New("RUNDBRIEF_AI_FALLBACK_URL is set: RUNDBRIEF_AI_FALLBACK_MODEL must name the model (e.g. llama3.1:8b)")
		}
		c.Fallback = ai.NewOpenAI(cfg.AIFallbackURL, cfg.AIFallbackKey, cfg.AIFallbackModel)
	}
	log.Info("ai providers", "anthropic", c.Primary != nil, "fallback", c.Fallback != nil, "fallback_model", cfg.AIFallbackModel)
	return c, nil
}

// mailTransport configures the mail transports: the operator relay from
// RUNDBRIEF_SMTP_URL, and without one the development outbox.
func mailTransport(cfg Config, log *slog.Logger) (mailer.TransportOptions, error) {
	opts := mailer.TransportOptions{DefaultFrom: mailer.DefaultFrom(cfg.BaseURL), HELO: mailer.HELOName(cfg.BaseURL),
		PublicServersOnly: !cfg.SMTPAllowPrivate}
	if cfg.SMTPURL != "" {
		relay, err := mailer.ParseRelayURL(cfg.SMTPURL, opts.DefaultFrom)
		if err != nil {
			return mailer.TransportOptions{}, err
		}
		opts.Relay = &relay
		log.Info("mail goes through the operator relay", "relay", relay.Server, "from", relay.From.Email)
	} else {
		log.Warn("RUNDBRIEF_SMTP_URL is not set: mail of accounts without an own SMTP server is captured in the development outbox, not sent")
	}
	return opts, nil
}
