package store

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Delivery states.
const (
	DeliveryPending   = "pending"   // not attempted yet
	DeliveryRetrying  = "retrying"  // an attempt failed; another one is scheduled
	DeliverySucceeded = "succeeded" // the receiver answered 2xx
	DeliveryFailed    = "failed"    // no attempt succeeded and none is left
)

// DeliveryIDPrefix starts every public delivery id (the X-Service-Delivery header).
const DeliveryIDPrefix = "whd_"

// WebhookDeliveryRetention is how long the delivery log is kept (store.Purge).
const WebhookDeliveryRetention = 30 * 24 * time.Hour

// SystemMailWebhookPaused is the kind of the owner's notification that a webhook
// was paused.
const SystemMailWebhookPaused = "webhook_paused"

// WebhookDelivery is one event (or test) for one webhook, with the outcome of its
// last attempt. Payload is the exact body POSTed on every attempt.
type WebhookDelivery struct {
	ID              int64      `db:"id"`
	PublicID        string     `db:"public_id"`
	AccountID       int64      `db:"account_id"`
	WebhookID       int64      `db:"webhook_id"`
	EventPublicID   string     `db:"event_public_id"`
	Event           string     `db:"event"`
	Payload         string     `db:"payload"`
	Test            bool       `db:"test"`
	Status          string     `db:"status"`
	Attempts        int        `db:"attempts"`
	NextAttemptAt   *time.Time `db:"next_attempt_at"`
	LastStatusCode  *int       `db:"last_status_code"`
	LastError       string     `db:"last_error"`
	ResponseExcerpt string     `db:"response_excerpt"`
	CreatedAt       time.Time  `db:"created_at"`
	UpdatedAt       time.Time  `db:"updated_at"`
}

// WebhookAttempt is one recorded attempt of a delivery.
type WebhookAttempt struct {
	ID              int64     `db:"id"`
	DeliveryID      int64     `db:"delivery_id"`
	Attempt         int       `db:"attempt"`
	StatusCode      *int      `db:"status_code"`
	Error           string    `db:"error"`
	ResponseExcerpt string    `db:"response_excerpt"`
	DurationMS      int       `db:"duration_ms"`
	AttemptedAt     time.Time `db:"attempted_at"`
}

// WebhookBody is the JSON body of a webhook request: id (evt_…), event,
// created_at (Europe/Berlin) and data, plus "test": true for a test send.
func WebhookBody(eventID, name string, createdAt time.Time, data json.RawMessage, test bool) ([]byte, error) {
	body := struct {
		ID        string          `json:"id"`
		Event     string          `json:"event"`
		CreatedAt EventTime       `json:"created_at"`
		Data      json.RawMessage `json:"data"`
		Test      bool            `json:"test,omitempty"`
	}{eventID, name, EventTime(createdAt), data, test}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return nil, fmt.Errorf("store: webhook body: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func newDeliveryID() string { return DeliveryIDPrefix + RandomString(24) }

// DispatchResult counts what one DispatchEvents call did.
type DispatchResult struct {
	Events     int // outbox events the fan-out passed
	Deliveries int // deliveries created
}

// selectActiveWebhooksOf holds the webhooks it reads until the fan-out commits:
// a pause waits for it and then parks the new deliveries too, and a fan-out
// waiting for a pause sees the webhook paused. No delivery is scheduled for a
// paused webhook.
const selectActiveWebhooksOf = `SELECT id, account_id, events FROM webhooks WHERE account_id = ANY($1) AND status = 'active'
ORDER BY id FOR SHARE`

const insertDeliveries = `INSERT INTO webhook_deliveries (public_id, account_id, webhook_id, event_id, event_public_id, event, payload,
status, next_attempt_at, created_at, updated_at)
SELECT x.public_id, x.account_id, x.webhook_id, x.event_id, x.event_public_id, x.event, x.payload, 'pending', $8, $8, $8
FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::text[])
  AS x(public_id, account_id, webhook_id, event_id, event_public_id, event, payload)
ON CONFLICT (webhook_id, event_id) WHERE event_id IS NOT NULL DO NOTHING`

// webhookAccountNames is the fan-out's ConsumerOptions.AccountNames: the
// events the account's active webhooks are subscribed to (NULL when one takes
// every event), so that the events of an account without webhooks are passed
// without being read.
const webhookAccountNames = `SELECT CASE WHEN bool_or(w.events @> '{` + WebhookAllEvents + `}') THEN NULL
  ELSE coalesce(array_agg(DISTINCT e.name), '{}') END
FROM webhooks w CROSS JOIN LATERAL unnest(w.events) AS e(name)
WHERE w.account_id = c.account_id AND w.status = 'active'`

// WebhookFanOut is the outbox consumer OutboxConsumerWebhooks: it turns each event
// into one pending delivery per active webhook of the account subscribed to it,
// in the transaction that moves its cursor, so a crash before the commit
// leaves the events for the next run, never an event without its deliveries.
// A delivery exists at most once per event and webhook; webhooks paused at the
// time get nothing. now stamps the deliveries (tests inject a clock); ctr, when
// not nil, counts the deliveries created.
func (db *DB) WebhookFanOut(now func() time.Time, ctr *int, opts ConsumerOptions) *Consumer {
	opts.AccountNames = webhookAccountNames
	return db.NewConsumer(OutboxConsumerWebhooks, func(ctx context.Context, tx *sqlx.Tx, events []StoredEvent) error {
		n, err := fanOut(ctx, tx, events, now())
		if ctr != nil {
			*ctr += n
		}
		return err
	}, opts)
}

// DispatchEvents runs the webhook fan-out over every event committed before the
// call (Consumer.CatchUp), at most limit events per transaction (see
// WebhookFanOut). Several processes may call it at once: each event is fanned
// out once, by one of them.
func (db *DB) DispatchEvents(ctx context.Context, now time.Time, limit int) (DispatchResult, error) {
	var res DispatchResult
	n, err := db.WebhookFanOut(func() time.Time { return now }, &res.Deliveries, ConsumerOptions{Batch: limit}).CatchUp(ctx)
	res.Events = n
	return res, err
}

// fanOut creates the deliveries of one batch of an account's events and
// returns how many it created.
func fanOut(ctx context.Context, tx *sqlx.Tx, events []StoredEvent, now time.Time) (int, error) {
	var accounts []int64
	for _, e := range events {
		if !slices.Contains(accounts, e.AccountID) {
			accounts = append(accounts, e.AccountID)
		}
	}
	var hooks []Webhook
	if err := tx.SelectContext(ctx, &hooks, selectActiveWebhooksOf, pq.Int64Array(accounts)); err != nil {
		return 0, fmt.Errorf("store: dispatch events: %w", err)
	}
	var (
		publicIDs, evPublic, names, payloads []string
		acctIDs, hookIDs, evIDs              []int64
	)
	for _, e := range events {
		var body []byte
		for _, h := range hooks {
			if h.AccountID != e.AccountID || !h.Subscribed(e.Name) {
				continue
			}
			if body == nil {
				var err error
				if body, err = WebhookBody(e.PublicID, e.Name, e.CreatedAt, e.Payload, false); err != nil {
					return 0, err
				}
			}
			publicIDs, acctIDs, hookIDs, evIDs = append(publicIDs, newDeliveryID()), append(acctIDs, e.AccountID), append(hookIDs, h.ID), append(evIDs, e.ID)
			evPublic, names, payloads = append(evPublic, e.PublicID), append(names, e.Name), append(payloads, string(body))
		}
	}
	if len(publicIDs) == 0 {
		return 0, nil
	}
	r, err := tx.ExecContext(ctx, insertDeliveries, pq.StringArray(publicIDs), pq.Int64Array(acctIDs), pq.Int64Array(hookIDs),
		pq.Int64Array(evIDs), pq.StringArray(evPublic), pq.StringArray(names), pq.StringArray(payloads), now)
	if err != nil {
		return 0, fmt.Errorf("store: dispatch events: %w", err)
	}
	n, _ := r.RowsAffected()
	return int(n), nil
}

// DeliveryJob is a claimed delivery: what a worker needs to make one attempt.
// The secrets are sealed; open them with OpenWebhookSecrets.
type DeliveryJob struct {
	ID            int64  `db:"id"`
	PublicID      string `db:"public_id"`
	AccountID     int64  `db:"account_id"`
	WebhookID     int64  `db:"webhook_id"`
	EventPublicID string `db:"event_public_id"`
	Event         string `db:"event"`
	Payload       string `db:"payload"`
	Test          bool   `db:"test"`
	// Status is the delivery's state before this attempt.
	Status string `db:"status"`
	// Attempt is the number of this attempt, from 1.
	Attempt       int    `db:"attempts"`
	URL           string `db:"url"`
	WebhookStatus string `db:"webhook_status"`
	// SecretSealed, PreviousSealed and PreviousExpires are the webhook's secrets.
	SecretSealed    string     `db:"secret_sealed"`
	PreviousSealed  string     `db:"previous_secret_sealed"`
	PreviousExpires *time.Time `db:"previous_secret_expires_at"`
}

// ClaimOptions bound one ClaimDeliveries call.
type ClaimOptions struct {
	Now   time.Time
	Lease time.Duration // how long the claim keeps other processes off the rows
	Limit int           // at most this many deliveries
	// PerWebhook caps the deliveries of one webhook in flight in this process;
	// Busy counts those already in flight per webhook id.
	PerWebhook int
	Busy       map[int64]int
}

const jobReturning = `d.id, d.public_id, d.account_id, d.webhook_id, d.event_public_id, d.event, d.payload, d.test, d.status,
d.attempts, w.url, w.status AS webhook_status, w.secret_sealed, w.previous_secret_sealed, w.previous_secret_expires_at`

// claimDeliveries takes the oldest due deliveries that no other process holds
// (SKIP LOCKED), at most PerWebhook per webhook minus those busy, and leases them:
// attempts counts the attempt now, locked_until keeps other processes off until
// the lease ends (a crashed process's rows come back then). The candidates come
// straight off the due index in its order (joining webhooks there lets the
// planner sort the whole backlog instead); a paused webhook has no due
// deliveries (see selectActiveWebhooksOf and pauseWebhookTx), and the update
// checks once more. It is the claim while no webhook is at its share ($3 is
// empty then): with one at its share, claimDeliveriesPastBusy.
const claimDeliveries = `WITH cand AS (
  SELECT d.id, d.webhook_id, d.next_attempt_at
  FROM webhook_deliveries d
  WHERE d.next_attempt_at <= $1 AND (d.locked_until IS NULL OR d.locked_until <= $1) AND NOT (d.webhook_id = ANY($3))
  ORDER BY d.next_attempt_at, d.id
  LIMIT $2
  FOR UPDATE SKIP LOCKED
)` + claimPick

// claimDeliveriesPastBusy is claimDeliveries for when webhooks are at their
// share ($3). Their deliveries are passed over, and a backlog of theirs at the
// head of the due index would be walked by every claim, so this one reads at
// most $8 due deliveries that no attempt holds, locking each candidate as it
// takes it (by id: the extra look-up is why claimDeliveries stays the claim
// without busy webhooks). claimDeliveriesPerHook finds what lies behind.
const claimDeliveriesPastBusy = `WITH cand AS (
  SELECT d.id, d.webhook_id, d.next_attempt_at
  FROM (
    SELECT id FROM webhook_deliveries WHERE next_attempt_at <= $1 AND (locked_until IS NULL OR locked_until <= $1)
    ORDER BY next_attempt_at, id LIMIT $8
  ) h
  CROSS JOIN LATERAL (
    SELECT d.id, d.webhook_id, d.next_attempt_at FROM webhook_deliveries d
    WHERE d.id = h.id AND d.next_attempt_at <= $1 AND (d.locked_until IS NULL OR d.locked_until <= $1)
      AND NOT (d.webhook_id = ANY($3))
    FOR UPDATE SKIP LOCKED
  ) d
  LIMIT $2
)` + claimPick

// claimPick leases the candidates (cand) within each webhook's free slots.
const claimPick = `, pick AS (
  SELECT c.id FROM (
    SELECT id, webhook_id, row_number() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at, id) AS n FROM cand
  ) c LEFT JOIN unnest($4::bigint[], $5::int[]) AS b(webhook_id, busy) ON b.webhook_id = c.webhook_id
  WHERE c.n <= $6 - coalesce(b.busy, 0)
)
UPDATE webhook_deliveries d SET locked_until = $7, attempts = d.attempts + 1, updated_at = $1
FROM pick, webhooks w
WHERE d.id = pick.id AND w.id = d.webhook_id AND w.status = 'active'
RETURNING ` + jobReturning

// claimDeliveriesPerHook is the claim's way past the webhooks at their share
// ($3): it visits each webhook with deliveries to make (a skip scan of
// webhook_deliveries_hook_due_idx, one step per webhook, however long its
// backlog) and takes the oldest due ones of each that is not at its share, up
// to its free slots, then the oldest $2 of those. Its cost grows with the
// number of webhooks that have deliveries to make, not with their backlogs.
const claimDeliveriesPerHook = `WITH RECURSIVE hooks(webhook_id) AS (
  (SELECT webhook_id FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL ORDER BY webhook_id LIMIT 1)
  UNION ALL
  SELECT (SELECT d.webhook_id FROM webhook_deliveries d
    WHERE d.next_attempt_at IS NOT NULL AND d.webhook_id > h.webhook_id ORDER BY d.webhook_id LIMIT 1)
  FROM hooks h WHERE h.webhook_id IS NOT NULL
), cand AS (
  SELECT c.id FROM hooks h
  LEFT JOIN unnest($4::bigint[], $5::int[]) AS b(webhook_id, busy) ON b.webhook_id = h.webhook_id
  CROSS JOIN LATERAL (
    SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
    WHERE d.webhook_id = h.webhook_id AND d.next_attempt_at <= $1 AND (d.locked_until IS NULL OR d.locked_until <= $1)
    ORDER BY d.next_attempt_at, d.id
    LIMIT greatest($6 - coalesce(b.busy, 0), 0)
    FOR UPDATE SKIP LOCKED
  ) c
  WHERE h.webhook_id IS NOT NULL AND NOT (h.webhook_id = ANY($3))
  ORDER BY c.next_attempt_at, c.id
  LIMIT $2
)
UPDATE webhook_deliveries d SET locked_until = $7, attempts = d.attempts + 1, updated_at = $1
FROM cand, webhooks w
WHERE d.id = cand.id AND w.id = d.webhook_id AND w.status = 'active'
RETURNING ` + jobReturning

// claimScan is how many due deliveries claimDeliveriesPastBusy reads at most
// for a claim of limit: enough to pass over the in-flight share of a few busy
// webhooks, few enough that a backlog behind them costs little.
func claimScan(limit int) int {
	return 4*limit + 64
}

// ClaimDeliveries leases due deliveries for attempts (see claimDeliveries). Each
// claimed delivery must be finished with RecordAttempts. With webhooks at their
// share the claim reads a bounded head of the due index
// (claimDeliveriesPastBusy), and when that finds nothing, a second claim looks
// behind their backlogs (claimDeliveriesPerHook). A claim that finds something
// costs one statement only; a delivery behind a backlog then waits until the
// webhooks whose deliveries the claims found are at their share too, or have
// nothing due.
func (db *DB) ClaimDeliveries(ctx context.Context, o ClaimOptions) ([]DeliveryJob, error) {
	if o.Limit <= 0 {
		return nil, nil
	}
	query, scan := firstClaim(o)
	jobs, err := db.runClaim(ctx, query, o, scan)
	if err != nil || len(jobs) > 0 || scan == 0 {
		return jobs, err
	}
	return db.runClaim(ctx, claimDeliveriesPerHook, o, 0)
}

// firstClaim is the claim statement ClaimDeliveries runs first for o, and
// its scan bound (claimDeliveriesPastBusy's $8; 0: the statement has none,
// and no webhook is at its share).
func firstClaim(o ClaimOptions) (query string, scan int) {
	if !o.anyAtShare() {
		return claimDeliveries, 0
	}
	return claimDeliveriesPastBusy, claimScan(o.Limit)
}

// anyAtShare reports whether a webhook has PerWebhook deliveries in flight.
func (o ClaimOptions) anyAtShare() bool {
	for _, n := range o.Busy {
		if n >= o.PerWebhook {
			return true
		}
	}
	return false
}

// runClaim runs one of the claim statements for up to o.Limit
// deliveries (scan: claimDeliveriesPastBusy's $8).
func (db *DB) runClaim(ctx context.Context, query string, o ClaimOptions, scan int) ([]DeliveryJob, error) {
	var jobs []DeliveryJob
	if err := db.SelectContext(ctx, &jobs, query, claimArgs(o, scan)...); err != nil {
		return nil, fmt.Errorf("store: claim deliveries: %w", err)
	}
	return jobs, nil
}

// claimArgs are the claim statements' parameters (claimDeliveriesPastBusy's $8
// only when scan is positive).
func claimArgs(o ClaimOptions, scan int) []any {
	saturated := []int64{}
	var busyIDs, busyN []int64
	for id, n := range o.Busy {
		busyIDs, busyN = append(busyIDs, id), append(busyN, int64(n))
		if n >= o.PerWebhook {
			saturated = append(saturated, id)
		}
	}
	args := []any{o.Now, o.Limit, pq.Int64Array(saturated), pq.Int64Array(nonNilIDs(busyIDs)), pq.Int64Array(nonNilIDs(busyN)),
		o.PerWebhook, o.Now.Add(o.Lease)}
	if scan > 0 {
		args = append(args, scan)
	}
	return args
}

const claimDeliveryForResend = `UPDATE webhook_deliveries d SET locked_until = $4, attempts = d.attempts + 1, updated_at = $3
FROM webhooks w
WHERE d.account_id = $1 AND d.id = $2 AND w.id = d.webhook_id AND (d.locked_until IS NULL OR d.locked_until <= $3)
RETURNING ` + jobReturning

const deliveryExists = `SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE account_id = $1 AND id = $2)`

// ClaimDeliveryForResend leases one delivery of the account for a manual attempt
// at now, whatever its state: the attempt keeps the delivery's id and body. A
// delivery another attempt holds right now is a *ConflictError
// (delivery_in_progress).
func (db *DB) ClaimDeliveryForResend(ctx context.Context, accountID, id int64, now time.Time, lease time.Duration) (DeliveryJob, error) {
	var j DeliveryJob
	err := db.GetContext(ctx, &j, claimDeliveryForResend, accountID, id, now, now.Add(lease))
	if err == nil {
		return j, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return DeliveryJob{}, fmt.Errorf("store: resend delivery: %w", err)
	}
	var exists bool
	if err := db.GetContext(ctx, &exists, deliveryExists, accountID, id); err != nil {
		return DeliveryJob{}, fmt.Errorf("store: resend delivery: %w", err)
	}
	if !exists {
		return DeliveryJob{}, ErrNotFound
	}
	return DeliveryJob{}, &ConflictError{Reason: "delivery_in_progress",
		Message: "Diese Zustellung wird gerade gesendet. Bitte in einigen Sekunden erneut versuchen."}
}

// TestDelivery is the input of CreateTestDelivery: a sample event's body.
type TestDelivery struct {
	EventPublicID string
	Event         string
	Payload       []byte
}

const insertTestDelivery = `WITH d AS (
  INSERT INTO webhook_deliveries (public_id, account_id, webhook_id, event_public_id, event, payload, test, status, attempts,
    locked_until, created_at, updated_at)
  SELECT $3, w.account_id, w.id, $4, $5, $6, true, 'pending', 1, $8, $7, $7
  FROM webhooks w WHERE w.account_id = $1 AND w.id = $2
  RETURNING *
)
SELECT ` + jobReturning + ` FROM d JOIN webhooks w ON w.id = d.webhook_id`

// CreateTestDelivery records a test send to one of the account's webhooks
// (paused ones too) and leases it for its one attempt at now; a test is never
// retried automatically, but can be resent.
func (db *DB) CreateTestDelivery(ctx context.Context, accountID, webhookID int64, t TestDelivery, now time.Time, lease time.Duration) (DeliveryJob, error) {
	var j DeliveryJob
	err := db.GetContext(ctx, &j, insertTestDelivery, accountID, webhookID, newDeliveryID(), t.EventPublicID, t.Event,
		string(t.Payload), now, now.Add(lease))
	if err != nil {
		return DeliveryJob{}, notFound("test delivery", err)
	}
	return j, nil
}

// AttemptResult is the outcome of one attempt of a claimed delivery.
type AttemptResult struct {
	DeliveryID int64
	AccountID  int64
	WebhookID  int64
	Attempt    int // DeliveryJob.Attempt
	At         time.Time
	Duration   time.Duration
	StatusCode int    // 0: no HTTP response
	Error      string // German, for the delivery log; "" on success
	Excerpt    string // the start of the response body
	Succeeded  bool
	// Gone means the receiver answered 410: the webhook is paused at once.
	Gone bool
	// NextAttemptAt schedules the next automatic attempt; nil: none.
	NextAttemptAt *time.Time
}

// PausedWebhook reports a webhook RecordAttempts paused.
type PausedWebhook struct {
	AccountID int64
	WebhookID int64
	URL       string
	Reason    string // PauseFailures or PauseGone
}

type webhookCount struct {
	ID       int64 `db:"id"`
	Failures int   `db:"consecutive_failures"`
}

const selectWebhookCounts = `SELECT id, consecutive_failures FROM webhooks WHERE id = ANY($1)`

const lockWebhooksByID = `SELECT id FROM webhooks WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`

const lockDeliveriesByID = `SELECT id FROM webhook_deliveries WHERE id = ANY($1) ORDER BY id FOR UPDATE`

// finishDeliveries applies results to deliveries whose attempt count still is the
// result's (a lease that ran out and was taken over leaves the newer attempt's
// state alone). A paused webhook gets no next attempt: the delivery waits.
const finishDeliveries = `UPDATE webhook_deliveries d SET
  status = CASE WHEN x.ok THEN 'succeeded' WHEN x.next IS NOT NULL THEN 'retrying' ELSE 'failed' END,
  next_attempt_at = CASE WHEN NOT x.ok AND w.status = 'active' THEN x.next END,
  locked_until = NULL,
  last_status_code = nullif(x.code, 0),
  last_error = x.err,
  response_excerpt = x.excerpt,
  updated_at = x.at
FROM unnest($1::bigint[], $2::int[], $3::bool[], $4::timestamptz[], $5::int[], $6::text[], $7::text[], $8::timestamptz[])
  AS x(id, attempt, ok, next, code, err, excerpt, at),
  webhooks w
WHERE d.id = x.id AND d.attempts = x.attempt AND w.id = d.webhook_id`

const insertAttempts = `INSERT INTO webhook_attempts (delivery_id, account_id, attempt, status_code, error, response_excerpt, duration_ms, attempted_at)
SELECT x.id, x.account_id, x.attempt, nullif(x.code, 0), x.err, x.excerpt, x.ms, x.at
FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::int[], $5::text[], $6::text[], $7::int[], $8::timestamptz[])
  AS x(id, account_id, attempt, code, err, excerpt, ms, at)
WHERE x.id = ANY($9)`

const countWebhookFailures = `UPDATE webhooks w SET
  consecutive_failures = CASE WHEN x.reset THEN x.n ELSE w.consecutive_failures + x.n END
FROM unnest($1::bigint[], $2::bool[], $3::int[]) AS x(hook_id, reset, n)
WHERE w.id = x.hook_id
RETURNING ` + webhookColumns

// RecordAttempts records finished attempts in one transaction: one attempt row
// each, the delivery's new state, and each webhook's count of failed attempts in
// a row (a success resets it). A webhook that reaches MaxWebhookFailures, or
// whose receiver answered 410 Gone, is paused in the same transaction, its
// outstanding deliveries wait, the activity log records it and the account owner
// gets a notification mail (system_mails). Results are taken in the order given,
// which should be the order the attempts finished.
func (db *DB) RecordAttempts(ctx context.Context, results []AttemptResult) ([]PausedWebhook, error) {
	if len(results) == 0 {
		return nil, nil
	}
	n := len(results)
	ids, acct := make([]int64, n), make([]int64, n)
	attempt, codes, ms := make([]int64, n), make([]int64, n), make([]int64, n)
	ok := make([]bool, n)
	next := make([]*time.Time, n)
	errs, excerpts := make([]string, n), make([]string, n)
	at := make([]time.Time, n)
	type tally struct {
		reset bool
		n     int
		gone  bool
		last  AttemptResult // the last failure
	}
	tallies := map[int64]*tally{}
	var hookIDs []int64
	for i, r := range results {
		ids[i], acct[i], attempt[i], codes[i] = r.DeliveryID, r.AccountID, int64(r.Attempt), int64(r.StatusCode)
		ok[i], next[i], errs[i], excerpts[i] = r.Succeeded, r.NextAttemptAt, cleanText(r.Error), cleanText(r.Excerpt)
		ms[i], at[i] = r.Duration.Milliseconds(), r.At
		t := tallies[r.WebhookID]
		if t == nil {
			t = &tally{}
			tallies[r.WebhookID] = t
			hookIDs = append(hookIDs, r.WebhookID)
		}
		if r.Succeeded {
			t.reset, t.n = true, 0
		} else {
			t.n++
			t.gone = t.gone || r.Gone
			t.last = r
		}
	}
	slices.Sort(hookIDs)
	var paused []PausedWebhook
	err := db.retryTx(ctx, func(tx *sqlx.Tx) error {
		paused = nil
		// Only webhooks whose count changes are locked and written: with every
		// attempt succeeding (the usual case) no webhook row is touched.
		var counts []webhookCount
		if err := tx.SelectContext(ctx, &counts, selectWebhookCounts, pq.Int64Array(hookIDs)); err != nil {
			return fmt.Errorf("store: record attempts: %w", err)
		}
		var change []int64
		for _, c := range counts {
			if t := tallies[c.ID]; t.n > 0 || (t.reset && c.Failures > 0) {
				change = append(change, c.ID)
			}
		}
		resets, ns := make([]bool, len(change)), make([]int64, len(change))
		for i, id := range change {
			resets[i], ns[i] = tallies[id].reset, int64(tallies[id].n)
		}
		if len(change) > 0 {
			if _, err := tx.ExecContext(ctx, lockWebhooksByID, pq.Int64Array(change)); err != nil {
				return fmt.Errorf("store: record attempts: %w", err)
			}
		}
		var existing []int64
		if err := tx.SelectContext(ctx, &existing, lockDeliveriesByID, pq.Int64Array(ids)); err != nil {
			return fmt.Errorf("store: record attempts: %w", err)
		}
		if _, err := tx.ExecContext(ctx, finishDeliveries, pq.Int64Array(ids), pq.Int64Array(attempt), pq.BoolArray(ok),
			pq.GenericArray{A: timeArray(next)}, pq.Int64Array(codes), pq.StringArray(errs), pq.StringArray(excerpts),
			pq.GenericArray{A: at}); err != nil {
			return fmt.Errorf("store: record attempts: %w", err)
		}
		if _, err := tx.ExecContext(ctx, insertAttempts, pq.Int64Array(ids), pq.Int64Array(acct), pq.Int64Array(attempt),
			pq.Int64Array(codes), pq.StringArray(errs), pq.StringArray(excerpts), pq.Int64Array(ms), pq.GenericArray{A: at},
			pq.Int64Array(nonNilIDs(existing))); err != nil {
			return fmt.Errorf("store: record attempts: %w", err)
		}
		if len(change) == 0 {
			return nil
		}
		var hooks []Webhook
		if err := tx.SelectContext(ctx, &hooks, countWebhookFailures, pq.Int64Array(change), pq.BoolArray(resets), pq.Int64Array(ns)); err != nil {
			return fmt.Errorf("store: record attempts: %w", err)
		}
		slices.SortFunc(hooks, func(a, b Webhook) int { return cmp.Compare(a.ID, b.ID) })
		for _, h := range hooks {
			t := tallies[h.ID]
			if h.Status != WebhookActive || (!t.gone && h.ConsecutiveFailures < MaxWebhookFailures) {
				continue
			}
			reason := PauseFailures
			if t.gone {
				reason = PauseGone
			}
			now := t.last.At
			if err := pauseWebhookTx(ctx, tx, Actor{Type: ActorSystem}, h, reason, now); err != nil {
				return err
			}
			if err := queuePausedMail(ctx, tx, h, reason, t.last); err != nil {
				return err
			}
			paused = append(paused, PausedWebhook{AccountID: h.AccountID, WebhookID: h.ID, URL: h.URL, Reason: reason})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return paused, nil
}

// timeArray turns optional times into values pq can send as timestamptz[].
func timeArray(ts []*time.Time) []any {
	out := make([]any, len(ts))
	for i, t := range ts {
		if t != nil {
			out[i] = *t
		}
	}
	return out
}

// cleanText makes text storable (PostgreSQL text holds no NUL) and valid UTF-8.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

const pausedMailSubject = "Ihr Webhook wurde pausiert"

// queuePausedMail queues the owner's notification that webhook h was paused.
func queuePausedMail(ctx context.Context, tx *sqlx.Tx, h Webhook, reason string, last AttemptResult) error {
	why := fmt.Sprintf("weil %d Zustellversuche nacheinander fehlgeschlagen sind", h.ConsecutiveFailures)
	if reason == PauseGone {
		why = "weil der Empfänger mit „410 Gone“ geantwortet hat (den Endpunkt gibt es nicht mehr)"
	}
	lastErr := last.Error
	if lastErr == "" && last.StatusCode != 0 {
		lastErr = fmt.Sprintf("HTTP %d", last.StatusCode)
	}
	text := fmt.Sprintf(`Hallo,

Ihr Webhook %s (ID %d) wurde pausiert, %s.
Letzter Fehler: %s

Solange der Webhook pausiert ist, sendet Rundbrief ihm keine Ereignisse; offene Wiederholungen warten.
Sobald der Empfänger wieder erreichbar ist, aktivieren Sie den Webhook erneut:
PATCH /v1/webhooks/%d mit {"status": "active"}.
Einzelne Zustellungen können Sie im Zustellprotokoll erneut senden (POST /v1/webhook-deliveries/{id}/resend).

Ihr Rundbrief
`, h.URL, h.ID, why, lastErr, h.ID)
	htmlBody := fmt.Sprintf(`<p>Hallo,</p>
<p>Ihr Webhook <strong>%s</strong> (ID %d) wurde pausiert, %s.<br>Letzter Fehler: %s</p>
<p>Solange der Webhook pausiert ist, sendet Rundbrief ihm keine Ereignisse; offene Wiederholungen warten.
Sobald der Empfänger wieder erreichbar ist, aktivieren Sie den Webhook erneut:
<code>PATCH /v1/webhooks/%d</code> mit <code>{"status": "active"}</code>.
Einzelne Zustellungen können Sie im Zustellprotokoll erneut senden.</p>
<p>Ihr Rundbrief</p>
`, html.EscapeString(h.URL), h.ID, html.EscapeString(why), html.EscapeString(lastErr), h.ID)
	return queueOwnerMail(ctx, tx, h.AccountID, SystemMailWebhookPaused, pausedMailSubject, text, htmlBody)
}

// DeliveryFilter narrows a webhook's delivery log; zero fields do not filter.
type DeliveryFilter struct {
	Status string
	Event  string
}

const deliveryColumns = `id, public_id, account_id, webhook_id, event_public_id, event, payload, test, status, attempts,
next_attempt_at, last_status_code, last_error, response_excerpt, created_at, updated_at`

const webhookExists = `SELECT EXISTS (SELECT 1 FROM webhooks WHERE account_id = $1 AND id = $2)`

// WebhookDeliveries lists a webhook's deliveries, newest first.
func (db *DB) WebhookDeliveries(ctx context.Context, accountID, webhookID int64, f DeliveryFilter, p Page) ([]WebhookDelivery, int, error) {
	var ok bool
	if err := db.GetContext(ctx, &ok, webhookExists, accountID, webhookID); err != nil {
		return nil, 0, fmt.Errorf("store: webhook deliveries: %w", err)
	}
	if !ok {
		return nil, 0, ErrNotFound
	}
	cond := "account_id = $1 AND webhook_id = $2 AND ($3 = '' OR status = $3) AND ($4 = '' OR event = $4)"
	args := []any{accountID, webhookID, f.Status, f.Event}
	var total int
	if err := db.GetContext(ctx, &total, `SELECT count(*) FROM webhook_deliveries WHERE `+cond, args...); err != nil {
		return nil, 0, fmt.Errorf("store: webhook deliveries: %w", err)
	}
	var out []WebhookDelivery
	q := `SELECT ` + deliveryColumns + ` FROM webhook_deliveries WHERE ` + cond + ` ORDER BY id DESC LIMIT $5 OFFSET $6`
	if err := db.SelectContext(ctx, &out, q, append(args, p.PerPage, p.Offset())...); err != nil {
		return nil, 0, fmt.Errorf("store: webhook deliveries: %w", err)
	}
	return out, total, nil
}

const selectDelivery = `SELECT ` + deliveryColumns + ` FROM webhook_deliveries WHERE account_id = $1 AND id = $2`

const selectAttempts = `SELECT id, delivery_id, attempt, status_code, error, response_excerpt, duration_ms, attempted_at
FROM webhook_attempts WHERE account_id = $1 AND delivery_id = $2 ORDER BY id`

// WebhookDelivery returns one delivery of the account with all its attempts.
func (db *DB) WebhookDelivery(ctx context.Context, accountID, id int64) (WebhookDelivery, []WebhookAttempt, error) {
	var d WebhookDelivery
	if err := db.GetContext(ctx, &d, selectDelivery, accountID, id); err != nil {
		return WebhookDelivery{}, nil, notFound("webhook delivery", err)
	}
	var attempts []WebhookAttempt
	if err := db.SelectContext(ctx, &attempts, selectAttempts, accountID, id); err != nil {
		return WebhookDelivery{}, nil, fmt.Errorf("store: webhook delivery: %w", err)
	}
	return d, attempts, nil
}

const selectAttemptsOf = `SELECT id, delivery_id, attempt, status_code, error, response_excerpt, duration_ms, attempted_at
FROM webhook_attempts WHERE account_id = $1 AND delivery_id = ANY($2) ORDER BY delivery_id, id`

// WebhookAttemptsOf returns the attempts of several deliveries of the account at
// once, by delivery id (the portal's delivery log shows them for a whole page).
func (db *DB) WebhookAttemptsOf(ctx context.Context, accountID int64, deliveryIDs []int64) (map[int64][]WebhookAttempt, error) {
	out := map[int64][]WebhookAttempt{}
	if len(deliveryIDs) == 0 {
		return out, nil
	}
	var rows []WebhookAttempt
	if err := db.SelectContext(ctx, &rows, selectAttemptsOf, accountID, pq.Int64Array(deliveryIDs)); err != nil {
		return nil, fmt.Errorf("store: webhook attempts: %w", err)
	}
	for _, a := range rows {
		out[a.DeliveryID] = append(out[a.DeliveryID], a)
	}
	return out, nil
}

// webhookBacklog counts deliveries with an outstanding attempt (new ones and
// scheduled retries) through webhook_deliveries_due_idx, which holds exactly
// those rows, and stops at the cap.
const webhookBacklog = `SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL LIMIT $1) b`

// WebhookBacklog is the number of webhook deliveries still to be attempted, over
// all accounts and processes, counted up to ScrapeCountCap.
func (db *DB) WebhookBacklog(ctx context.Context) (int64, error) {
	var n int64
	if err := db.GetContext(ctx, &n, webhookBacklog, ScrapeCountCap); err != nil {
		return 0, fmt.Errorf("store: webhook backlog: %w", err)
	}
	return n, nil
}
