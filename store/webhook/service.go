// Package webhook delivers Rundbrief's events to the accounts' webhooks: it turns
// outbox events into deliveries, POSTs them signed (Stripe's scheme in
// X-Service-Signature plus the Standard Webhooks headers), retries failures after
// 1, 5, 30, 120 and 720 minutes, and keeps requests away from non-public
// addresses. Service is what the API calls; Worker is the background loop.
package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/secret"
)

// Config configures a Service.
type Config struct {
	// Box opens and seals the signing secrets (RUNDBRIEF_SECRET).
	Box *secret.Box
	// AllowPrivate lets webhooks target loopback and private addresses
	// (RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE; development and tests only).
	AllowPrivate bool
	// Resolver resolves target hosts; nil: the system resolver.
	Resolver Resolver
	// Now is the clock of signatures, schedules and records; nil: time.Now.
	Now func() time.Time
	// Timeout is how long a receiver may take; zero: DeliveryTimeout (4 s).
	Timeout time.Duration
	// Outcomes counts recorded attempts (metrics); nil: not counted.
	Outcomes OutcomeCounter
	Log      *slog.Logger
}

// OutcomeCounter counts recorded delivery attempts by their outcome:
// store.DeliverySucceeded, store.DeliveryRetrying (another attempt is
// scheduled) or store.DeliveryFailed (none is left). It is called after the
// attempts are stored, so a count never runs ahead of the database.
type OutcomeCounter interface {
	CountWebhookOutcomes(outcome string, n int)
}

// Service manages webhooks and sends deliveries on request (tests, resends).
type Service struct {
	db    *store.DB
	box   *secret.Box
	guard *Guard
	d     *deliverer
	now   func() time.Time
	count OutcomeCounter // nil: not counted
	log   *slog.Logger
}

// lease is how long a claimed delivery is kept from other processes: far longer
// than an attempt can take, short enough that a crashed process's deliveries are
// soon taken over.
const lease = 2 * time.Minute

// HintAllowPrivate is the operator hint (log only) of a webhook URL refused for a
// non-public address: in development the setting allows it.
const HintAllowPrivate = "the URL's host is not a public address; RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE=true allows loopback and private addresses (development and tests only)"

// New returns the webhook service.
func New(db *store.DB, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DeliveryTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	g := NewGuard(cfg.AllowPrivate, cfg.Resolver)
	return &Service{
		db: db, box: cfg.Box, guard: g, now: cfg.Now, count: cfg.Outcomes, log: cfg.Log,
		d: &deliverer{client: g.Client(cfg.Timeout), box: cfg.Box, now: cfg.Now, timeout: cfg.Timeout},
	}
}

// validate checks the settings and, when the URL is well-formed, that its host is
// a public address.
func (s *Service) validate(ctx context.Context, in *store.WebhookSettings) error {
	errs := store.Errs{}
	if err := in.Validate(); err != nil {
		var ve *store.ValidationError
		if !errors.As(err, &ve) {
			return err
		}
		errs = ve.Fields
	}
	if _, bad := errs["url"]; !bad {
		if msg, private := s.guard.checkURL(ctx, in.URL); msg != "" {
			errs.Add("url", msg)
			if private {
				return store.WithHint(errs.Err(), HintAllowPrivate)
			}
		}
	}
	return errs.Err()
}

// Create checks the settings (the URL's host must be public) and creates an
// active webhook; it returns the webhook and its secret, shown only now.
func (s *Service) Create(ctx context.Context, accountID int64, actor store.Actor, in store.WebhookSettings) (store.Webhook, string, error) {
	if err := s.validate(ctx, &in); err != nil {
		return store.Webhook{}, "", err
	}
	return s.db.CreateWebhook(ctx, s.box, accountID, actor, in)
}

// Update applies a partial update; a new URL is checked like at creation.
// Status "active" re-activates a paused webhook, "paused" pauses it.
func (s *Service) Update(ctx context.Context, accountID int64, actor store.Actor, id int64, p store.WebhookPatch) (store.Webhook, error) {
	if p.URL != nil {
		in := store.WebhookSettings{URL: *p.URL, Events: []string{store.WebhookAllEvents}}
		if err := s.validate(ctx, &in); err != nil {
			return store.Webhook{}, err
		}
	}
	return s.db.UpdateWebhook(ctx, accountID, actor, id, p, s.now())
}

// Delete deletes a webhook and its delivery log.
func (s *Service) Delete(ctx context.Context, accountID int64, actor store.Actor, id int64) error {
	return s.db.DeleteWebhook(ctx, accountID, actor, id)
}

// RotateSecret replaces the webhook's secret and returns the new one (shown only
// now); the old one keeps signing for 24 hours.
func (s *Service) RotateSecret(ctx context.Context, accountID int64, actor store.Actor, id int64) (store.Webhook, string, error) {
	return s.db.RotateWebhookSecret(ctx, s.box, accountID, actor, id, s.now())
}

// Test sends a sample of event (any of the 17; "" means the webhook's first
// subscribed kind) to the webhook at once, paused or not, records it as a
// delivery marked test and returns it with its attempt. A failed test is not
// retried automatically.
func (s *Service) Test(ctx context.Context, accountID, id int64, event string) (store.WebhookDelivery, []store.WebhookAttempt, error) {
	w, err := s.db.Webhook(ctx, accountID, id)
	if err != nil {
		return store.WebhookDelivery{}, nil, err
	}
	if event == "" {
		event = store.EventContactCreated
		if len(w.Events) > 0 && w.Events[0] != store.WebhookAllEvents {
			event = w.Events[0]
		}
	}
	kind, ok := Kind(event)
	if !ok {
		return store.WebhookDelivery{}, nil, store.Invalid("event", fmt.Sprintf("Unbekanntes Ereignis %q: GET /v1/webhooks/events listet alle 17.", event))
	}
	now := s.now()
	data, err := json.Marshal(kind.Sample(now))
	if err != nil {
		return store.WebhookDelivery{}, nil, fmt.Errorf("webhook: test sample: %w", err)
	}
	eventID := store.EventIDPrefix + store.RandomString(24)
	body, err := store.WebhookBody(eventID, event, now, data, true)
	if err != nil {
		return store.WebhookDelivery{}, nil, err
	}
	job, err := s.db.CreateTestDelivery(ctx, accountID, id, store.TestDelivery{EventPublicID: eventID, Event: event, Payload: body}, now, lease)
	if err != nil {
		return store.WebhookDelivery{}, nil, err
	}
	return s.sendNow(ctx, job, false)
}

// Resend makes one more attempt of a delivery at once, with the same delivery id,
// event id and body, and returns the delivery with all its attempts. A delivery
// that had succeeded or failed for good gets no automatic retries after it; one
// still retrying keeps its schedule.
func (s *Service) Resend(ctx context.Context, accountID, deliveryID int64) (store.WebhookDelivery, []store.WebhookAttempt, error) {
	job, err := s.db.ClaimDeliveryForResend(ctx, accountID, deliveryID, s.now(), lease)
	if err != nil {
		return store.WebhookDelivery{}, nil, err
	}
	return s.sendNow(ctx, job, true)
}

func (s *Service) sendNow(ctx context.Context, job store.DeliveryJob, manual bool) (store.WebhookDelivery, []store.WebhookAttempt, error) {
	res := s.d.attempt(ctx, job, manual)
	// Recorded even if the client went away meanwhile: the attempt happened.
	paused, err := s.db.RecordAttempts(context.WithoutCancel(ctx), []store.AttemptResult{res})
	if err != nil {
		return store.WebhookDelivery{}, nil, err
	}
	s.recorded([]store.AttemptResult{res}, paused)
	return s.db.WebhookDelivery(ctx, job.AccountID, job.ID)
}

// recorded reports attempts that were just stored: the webhooks they paused to
// the log, their outcomes to the counter.
func (s *Service) recorded(results []store.AttemptResult, paused []store.PausedWebhook) {
	s.logPaused(paused)
	if s.count == nil {
		return
	}
	var succeeded, retrying, failed int
	for _, r := range results {
		switch {
		case r.Succeeded:
			succeeded++
		case r.NextAttemptAt != nil:
			retrying++
		default:
			failed++
		}
	}
	for _, c := range []struct {
		outcome string
		n       int
	}{{store.DeliverySucceeded, succeeded}, {store.DeliveryRetrying, retrying}, {store.DeliveryFailed, failed}} {
		if c.n > 0 {
			s.count.CountWebhookOutcomes(c.outcome, c.n)
		}
	}
}

func (s *Service) logPaused(paused []store.PausedWebhook) {
	for _, p := range paused {
		s.log.Warn("webhook paused", "account_id", p.AccountID, "webhook_id", p.WebhookID, "url", p.URL, "reason", p.Reason)
	}
}
