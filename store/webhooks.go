package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/rundbrief/rundbrief/store/secret"
)

// Webhook states.
const (
	WebhookActive = "active"
	WebhookPaused = "paused"
)

// Reasons a webhook is paused (Webhook.PauseReason).
const (
	PauseManual   = "manual"   // the account paused it (PATCH status paused)
	PauseFailures = "failures" // MaxWebhookFailures attempts in a row failed
	PauseGone     = "gone"     // the receiver answered 410 Gone
)

// MaxWebhookFailures is the number of failed attempts in a row after which an
// active webhook is paused and the owner notified.
const MaxWebhookFailures = 20

// WebhookSecretGrace is how long the previous secret keeps signing after a rotation.
const WebhookSecretGrace = 24 * time.Hour

// WebhookSecretPrefix starts every signing secret: whsec_ + base64 of 32 random bytes.
const WebhookSecretPrefix = "whsec_"

// WebhookAllEvents subscribes a webhook to every event kind.
const WebhookAllEvents = "*"

// ObjectWebhook is the activity log's object type of webhooks.
const ObjectWebhook = "webhook"

// Limits of a webhook's settings.
const (
	maxWebhookURLLen         = 2000
	maxWebhookDescriptionLen = 500
)

// Webhook is an account's subscription to events. The signing secret never leaves
// the store except through CreateWebhook and RotateWebhookSecret (once, in full)
// and OpenWebhookSecrets (to sign).
type Webhook struct {
	ID                  int64          `db:"id"`
	AccountID           int64          `db:"account_id"`
	URL                 string         `db:"url"`
	Events              pq.StringArray `db:"events"` // names, or {"*"}
	Description         string         `db:"description"`
	Status              string         `db:"status"`
	ConsecutiveFailures int            `db:"consecutive_failures"`
	PausedAt            *time.Time     `db:"paused_at"`
	PauseReason         string         `db:"pause_reason"`
	// PreviousSecretExpiresAt is when the secret before the last rotation stops
	// signing; nil when there never was a rotation. It may lie in the past.
	PreviousSecretExpiresAt *time.Time `db:"previous_secret_expires_at"`
	CreatedAt               time.Time  `db:"created_at"`
	UpdatedAt               time.Time  `db:"updated_at"`
}

// Subscribed reports whether the webhook receives events called name.
func (w Webhook) Subscribed(name string) bool {
	return slices.Contains(w.Events, WebhookAllEvents) || slices.Contains(w.Events, name)
}

// WebhookSettings are the fields of a webhook a user sets.
type WebhookSettings struct {
	URL         string
	Events      []string // event names, or ["*"]
	Description string
}

// Validate normalises the settings and reports every invalid field in German. It
// checks the form of the URL only; whether its host is a public address is the
// webhook service's check (store/webhook), which resolves it.
func (s *WebhookSettings) Validate() error {
	errs := Errs{}
	s.URL = strings.TrimSpace(s.URL)
	if msg := checkWebhookURL(s.URL); msg != "" {
		errs.Add("url", msg)
	}
	events, msg := NormaliseWebhookEvents(s.Events)
	if msg != "" {
		errs.Add("events", msg)
	}
	s.Events = events
	normText(errs, "description", &s.Description, maxWebhookDescriptionLen)
	return errs.Err()
}

// checkWebhookURL returns a German message for a URL that cannot be a target.
func checkWebhookURL(raw string) string {
	if raw == "" {
		return "Bitte die URL angeben, an die die Ereignisse gesendet werden."
	}
	if len(raw) > maxWebhookURLLen {
		return fmt.Sprintf("Die URL darf höchstens %d Zeichen lang sein.", maxWebhookURLLen)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Opaque != "":
		return "Bitte eine vollständige http(s)-URL angeben, z. B. https://example.com/webhooks."
	case u.User != nil:
		// Credentials in the URL would be stored and shown in plain text; the
		// signature is how a receiver authenticates us.
		return "Zugangsdaten in der URL sind nicht erlaubt: prüfen Sie stattdessen die Signatur (X-Service-Signature)."
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "Die URL darf keinen Anker (#…) enthalten."
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "Der Port der URL muss zwischen 1 und 65535 liegen."
		}
	}
	return ""
}

// NormaliseWebhookEvents checks a subscription list: every entry an event name of
// EventKinds or "*". It returns the names in documentation order without
// duplicates, or ["*"] when "*" is among them, and a German message when the list
// is empty or names an unknown event.
func NormaliseWebhookEvents(events []string) ([]string, string) {
	if len(events) == 0 {
		return nil, `Bitte mindestens ein Ereignis angeben oder ["*"] für alle.`
	}
	kinds := EventKinds()
	all := false
	for _, e := range events {
		if e == WebhookAllEvents {
			all = true
			continue
		}
		if !slices.Contains(kinds, e) {
			return nil, fmt.Sprintf("Unbekanntes Ereignis %q: GET /v1/webhooks/events listet alle 17.", e)
		}
	}
	if all {
		return []string{WebhookAllEvents}, ""
	}
	out := make([]string, 0, len(events))
	for _, k := range kinds {
		if slices.Contains(events, k) {
			out = append(out, k)
		}
	}
	return out, ""
}

// WebhookPatch is a partial update: nil fields stay as they are. Status "active"
// re-activates a paused webhook, "paused" pauses it.
type WebhookPatch struct {
	URL         *string
	Events      *[]string
	Description *string
	Status      *string
}

// Apply copies the set settings onto s (the status is handled by UpdateWebhook).
func (p WebhookPatch) Apply(s *WebhookSettings) {
	applyPtr(&s.URL, p.URL)
	applyPtr(&s.Events, p.Events)
	applyPtr(&s.Description, p.Description)
}

// NewWebhookSecret returns a new signing secret: whsec_ followed by the standard
// base64 of 32 random bytes (the Standard Webhooks form; Stripe's scheme keys with
// the whole string).
func NewWebhookSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("store: webhook secret: %w", err)
	}
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// webhookSecretPurpose binds a sealed secret to its account and webhook (see
// package secret): a sealed value copied into another row does not open.
func webhookSecretPurpose(accountID, webhookID int64) string {
	return "webhooks.secret:" + strconv.FormatInt(accountID, 10) + ":" + strconv.FormatInt(webhookID, 10)
}

// OpenWebhookSecrets opens the secrets a delivery at now is signed with: the
// current one first, then the previous one while it is within its grace period.
// The values must never be logged or returned.
func OpenWebhookSecrets(box *secret.Box, accountID, webhookID int64, sealed, previousSealed string, previousExpires *time.Time, now time.Time) ([]string, error) {
	purpose := webhookSecretPurpose(accountID, webhookID)
	cur, err := box.Open(purpose, sealed)
	if err != nil {
		return nil, fmt.Errorf("store: webhook %d secret: %w", webhookID, err)
	}
	out := []string{string(cur)}
	if previousSealed != "" && previousExpires != nil && now.Before(*previousExpires) {
		prev, err := box.Open(purpose, previousSealed)
		if err != nil {
			return nil, fmt.Errorf("store: webhook %d previous secret: %w", webhookID, err)
		}
		out = append(out, string(prev))
	}
	return out, nil
}

const webhookColumns = `id, account_id, url, events, description, status, consecutive_failures, paused_at, pause_reason,
previous_secret_expires_at, created_at, updated_at`

const nextWebhookID = `SELECT nextval(pg_get_serial_sequence('webhooks', 'id'))`

const addUsageWebhooks = `UPDATE account_usage u SET webhooks = u.webhooks + 1
FROM accounts a JOIN plans p ON p.name = a.plan
WHERE u.account_id = $1 AND a.id = u.account_id AND u.webhooks + 1 <= p.max_webhooks
RETURNING u.webhooks`

const decrementUsageWebhooks = `UPDATE account_usage SET webhooks = greatest(webhooks - 1, 0) WHERE account_id = $1`

const insertWebhook = `INSERT INTO webhooks (id, account_id, url, events, description, secret_sealed)
VALUES ($1, $2, $3, $4, $5, $6) RETURNING ` + webhookColumns

// CreateWebhook validates s and stores a new active webhook with a new secret,
// within the plan's webhook limit (*LimitError beyond it; account_usage.webhooks
// changes in the same transaction). It returns the webhook and its secret in full,
// which is never retrievable again. The caller checks that the URL's host is
// public (webhook.Service.Create does).
func (db *DB) CreateWebhook(ctx context.Context, box *secret.Box, accountID int64, actor Actor, s WebhookSettings) (Webhook, string, error) {
	if err := s.Validate(); err != nil {
		return Webhook{}, "", err
	}
	full, err := NewWebhookSecret()
	if err != nil {
		return Webhook{}, "", err
	}
	var w Webhook
	err = db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var n int64
		if err := tx.GetContext(ctx, &n, addUsageWebhooks, accountID); err != nil {
			if !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("store: create webhook: %w", err)
			}
			plan, err := accountPlan(ctx, tx, accountID)
			if err != nil {
				return err
			}
			return &LimitError{Limit: "webhooks", Max: plan.MaxWebhooks, UpgradeURL: plan.UpgradeURL}
		}
		var id int64
		if err := tx.GetContext(ctx, &id, nextWebhookID); err != nil {
			return fmt.Errorf("store: create webhook: %w", err)
		}
		sealed, err := box.Seal(webhookSecretPurpose(accountID, id), []byte(full))
		if err != nil {
			return fmt.Errorf("store: create webhook: %w", err)
		}
		if err := tx.GetContext(ctx, &w, insertWebhook, id, accountID, s.URL, pq.StringArray(s.Events), s.Description, sealed); err != nil {
			return fmt.Errorf("store: create webhook: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "webhook.created", ObjectType: ObjectWebhook,
			ObjectID: w.ID, Details: map[string]any{"url": w.URL, "events": s.Events}})
	})
	if err != nil {
		return Webhook{}, "", err
	}
	return w, full, nil
}

const countWebhooks = `SELECT count(*) FROM webhooks WHERE account_id = $1`

const selectWebhooks = `SELECT ` + webhookColumns + ` FROM webhooks WHERE account_id = $1 ORDER BY id LIMIT $2 OFFSET $3`

// Webhooks lists an account's webhooks, oldest first.
func (db *DB) Webhooks(ctx context.Context, accountID int64, p Page) ([]Webhook, int, error) {
	var total int
	if err := db.GetContext(ctx, &total, countWebhooks, accountID); err != nil {
		return nil, 0, fmt.Errorf("store: webhooks: %w", err)
	}
	var out []Webhook
	if err := db.SelectContext(ctx, &out, selectWebhooks, accountID, p.PerPage, p.Offset()); err != nil {
		return nil, 0, fmt.Errorf("store: webhooks: %w", err)
	}
	return out, total, nil
}

const selectWebhook = `SELECT ` + webhookColumns + ` FROM webhooks WHERE account_id = $1 AND id = $2`

// Webhook returns one webhook of the account.
func (db *DB) Webhook(ctx context.Context, accountID, id int64) (Webhook, error) {
	var w Webhook
	if err := db.GetContext(ctx, &w, selectWebhook, accountID, id); err != nil {
		return Webhook{}, notFound("webhook", err)
	}
	return w, nil
}

// lockWebhook takes the webhook row before its deliveries: every transaction that
// changes both locks in this order (webhooks, then deliveries), so they cannot
// deadlock. NO KEY UPDATE leaves the fan-out's inserts (foreign key checks) free.
const lockWebhook = `SELECT ` + webhookColumns + ` FROM webhooks WHERE account_id = $1 AND id = $2 FOR NO KEY UPDATE`

const updateWebhook = `UPDATE webhooks SET url = $3, events = $4, description = $5, updated_at = $6
WHERE account_id = $1 AND id = $2 RETURNING ` + webhookColumns

// UpdateWebhook applies a partial update at now. Pausing stops its outstanding
// deliveries (they wait, without next_attempt_at); re-activating resets the
// failure count and lets them continue at once. Pause and resume are recorded in
// the activity log. The caller checks a new URL's host (webhook.Service.Update).
func (db *DB) UpdateWebhook(ctx context.Context, accountID int64, actor Actor, id int64, p WebhookPatch, now time.Time) (Webhook, error) {
	if p.Status != nil && *p.Status != WebhookActive && *p.Status != WebhookPaused {
		return Webhook{}, Invalid("status", "Erlaubt sind active und paused.")
	}
	var out Webhook
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var cur Webhook
		if err := tx.GetContext(ctx, &cur, lockWebhook, accountID, id); err != nil {
			return notFound("update webhook", err)
		}
		s := WebhookSettings{URL: cur.URL, Events: cur.Events, Description: cur.Description}
		p.Apply(&s)
		if err := s.Validate(); err != nil {
			return err
		}
		if err := tx.GetContext(ctx, &out, updateWebhook, accountID, id, s.URL, pq.StringArray(s.Events), s.Description, now); err != nil {
			return fmt.Errorf("store: update webhook: %w", err)
		}
		var changed []string
		if s.URL != cur.URL {
			changed = append(changed, "url")
		}
		if !slices.Equal(s.Events, cur.Events) {
			changed = append(changed, "events")
		}
		if s.Description != cur.Description {
			changed = append(changed, "description")
		}
		if len(changed) > 0 {
			if err := LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "webhook.updated", ObjectType: ObjectWebhook,
				ObjectID: id, Details: map[string]any{"changed": changed, "url": s.URL}}); err != nil {
				return err
			}
		}
		switch {
		case p.Status == nil || *p.Status == cur.Status:
			return nil
		case *p.Status == WebhookPaused:
			err := pauseWebhookTx(ctx, tx, actor, out, PauseManual, now)
			out.Status, out.PausedAt, out.PauseReason = WebhookPaused, &now, PauseManual
			return err
		default:
			var err error
			out, err = resumeWebhookTx(ctx, tx, actor, out, now)
			return err
		}
	})
	if err != nil {
		return Webhook{}, err
	}
	return out, nil
}

const pauseWebhook = `UPDATE webhooks SET status = 'paused', paused_at = $3, pause_reason = $4, updated_at = $3
WHERE account_id = $1 AND id = $2`

// unscheduleDeliveries parks a paused webhook's outstanding deliveries; a delivery
// in flight keeps its lease and is recorded without a next attempt.
const unscheduleDeliveries = `UPDATE webhook_deliveries SET next_attempt_at = NULL, updated_at = $3
WHERE account_id = $1 AND webhook_id = $2 AND next_attempt_at IS NOT NULL`

// pauseWebhookTx pauses a locked, active webhook and logs it.
func pauseWebhookTx(ctx context.Context, tx *sqlx.Tx, actor Actor, w Webhook, reason string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, pauseWebhook, w.AccountID, w.ID, now, reason); err != nil {
		return fmt.Errorf("store: pause webhook: %w", err)
	}
	if _, err := tx.ExecContext(ctx, unscheduleDeliveries, w.AccountID, w.ID, now); err != nil {
		return fmt.Errorf("store: pause webhook: %w", err)
	}
	return LogActivity(ctx, tx, w.AccountID, actor, ActivityEntry{Action: "webhook.paused", ObjectType: ObjectWebhook,
		ObjectID: w.ID, Details: map[string]any{"url": w.URL, "reason": reason, "consecutive_failures": w.ConsecutiveFailures}})
}

const resumeWebhook = `UPDATE webhooks SET status = 'active', paused_at = NULL, pause_reason = '', consecutive_failures = 0,
updated_at = $3 WHERE account_id = $1 AND id = $2 RETURNING ` + webhookColumns

// rescheduleDeliveries lets the parked deliveries of a re-activated webhook go on.
const rescheduleDeliveries = `UPDATE webhook_deliveries SET next_attempt_at = $3, updated_at = $3
WHERE account_id = $1 AND webhook_id = $2 AND status IN ('pending', 'retrying') AND next_attempt_at IS NULL AND NOT test`

func resumeWebhookTx(ctx context.Context, tx *sqlx.Tx, actor Actor, w Webhook, now time.Time) (Webhook, error) {
	var out Webhook
	if err := tx.GetContext(ctx, &out, resumeWebhook, w.AccountID, w.ID, now); err != nil {
		return Webhook{}, fmt.Errorf("store: resume webhook: %w", err)
	}
	res, err := tx.ExecContext(ctx, rescheduleDeliveries, w.AccountID, w.ID, now)
	if err != nil {
		return Webhook{}, fmt.Errorf("store: resume webhook: %w", err)
	}
	n, _ := res.RowsAffected()
	err = LogActivity(ctx, tx, w.AccountID, actor, ActivityEntry{Action: "webhook.resumed", ObjectType: ObjectWebhook,
		ObjectID: w.ID, Details: map[string]any{"url": w.URL, "paused_reason": w.PauseReason, "resumed_deliveries": n}})
	return out, err
}

const deleteWebhook = `DELETE FROM webhooks WHERE account_id = $1 AND id = $2`

// DeleteWebhook deletes a webhook with its delivery log and frees its place in
// the plan's limit.
func (db *DB) DeleteWebhook(ctx context.Context, accountID int64, actor Actor, id int64) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var cur Webhook
		if err := tx.GetContext(ctx, &cur, lockWebhook, accountID, id); err != nil {
			return notFound("delete webhook", err)
		}
		if _, err := tx.ExecContext(ctx, deleteWebhook, accountID, id); err != nil {
			return fmt.Errorf("store: delete webhook: %w", err)
		}
		if _, err := tx.ExecContext(ctx, decrementUsageWebhooks, accountID); err != nil {
			return fmt.Errorf("store: delete webhook: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "webhook.deleted", ObjectType: ObjectWebhook,
			ObjectID: id, Details: map[string]any{"url": cur.URL}})
	})
}

const rotateWebhookSecret = `UPDATE webhooks SET previous_secret_sealed = secret_sealed, previous_secret_expires_at = $4,
secret_sealed = $3, updated_at = $5 WHERE account_id = $1 AND id = $2 RETURNING ` + webhookColumns

// RotateWebhookSecret gives the webhook a new secret at now and returns it in
// full (never retrievable again). The replaced secret keeps signing for
// WebhookSecretGrace, so every delivery in that time carries both signatures; a
// secret replaced earlier stops at once.
func (db *DB) RotateWebhookSecret(ctx context.Context, box *secret.Box, accountID int64, actor Actor, id int64, now time.Time) (Webhook, string, error) {
	full, err := NewWebhookSecret()
	if err != nil {
		return Webhook{}, "", err
	}
	sealed, err := box.Seal(webhookSecretPurpose(accountID, id), []byte(full))
	if err != nil {
		return Webhook{}, "", fmt.Errorf("store: rotate webhook secret: %w", err)
	}
	var w Webhook
	err = db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &w, rotateWebhookSecret, accountID, id, sealed, now.Add(WebhookSecretGrace), now); err != nil {
			return notFound("rotate webhook secret", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "webhook.secret_rotated", ObjectType: ObjectWebhook,
			ObjectID: id, Details: map[string]any{"previous_valid_until": EventTime(now.Add(WebhookSecretGrace))}})
	})
	if err != nil {
		return Webhook{}, "", err
	}
	return w, full, nil
}

const selectWebhookSealed = `SELECT secret_sealed, previous_secret_sealed, previous_secret_expires_at
FROM webhooks WHERE account_id = $1 AND id = $2`

// WebhookSecrets opens the secrets a delivery at now is signed with (see
// OpenWebhookSecrets). Only signing and tests call it.
func (db *DB) WebhookSecrets(ctx context.Context, box *secret.Box, accountID, id int64, now time.Time) ([]string, error) {
	var row struct {
		Sealed   string     `db:"secret_sealed"`
		Previous string     `db:"previous_secret_sealed"`
		Expires  *time.Time `db:"previous_secret_expires_at"`
	}
	if err := db.GetContext(ctx, &row, selectWebhookSealed, accountID, id); err != nil {
		return nil, notFound("webhook secrets", err)
	}
	return OpenWebhookSecrets(box, accountID, id, row.Sealed, row.Previous, row.Expires, now)
}
