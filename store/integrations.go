package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/rundbrief/rundbrief/store/secret"
)

// Payment providers of integrations (decisions.md "Integrations").
const (
	ProviderStripe      = "stripe"
	ProviderDigistore24 = "digistore24"
	ProviderCopeCart    = "copecart"
	ProviderPayPal      = "paypal"
	ProviderGeneric     = "generic"
)

// IntegrationProviders lists the providers in the order the portal shows them.
func IntegrationProviders() []string {
	return []string{ProviderStripe, ProviderDigistore24, ProviderCopeCart, ProviderPayPal, ProviderGeneric}
}

// FeatureIntegrations is the plan feature integrations need.
const FeatureIntegrations = "integrations"

// ObjectIntegration is the activity log's object type of integrations.
const ObjectIntegration = "integration"

// Statuses of an inbound call in the integration's event log.
const (
	IntegrationProcessed = "processed" // verified; the purchase or refund took effect
	IntegrationDuplicate = "duplicate" // verified; a retry or replay of what took effect before
	IntegrationIgnored   = "ignored"   // verified; nothing to do (other event kind, inactive, no address)
	IntegrationRejected  = "rejected"  // not verified (401) or not allowed (402): nothing changed
)

// TagRefunded marks a contact whose order was refunded or charged back.
const TagRefunded = "refunded"

// ProductTagPrefix starts the tag a purchase adds per product: product:<name>.
const ProductTagPrefix = "product:"

// IntegrationEventRetention is how long the inbound event log is kept (Purge).
const IntegrationEventRetention = 90 * 24 * time.Hour

// IntegrationTokenLen is the length of an integration's inbound token.
const IntegrationTokenLen = 32

// Limits of an integration's settings and of what an inbound call records.
const (
	maxIntegrationNameLen   = 200
	maxIntegrationSecretLen = 1000
	maxProductLen           = 200
	maxOrderIDLen           = 200
	maxEventPayload         = 256 << 10
)

// Integration is an account's connection to a payment provider. The sealed
// secret leaves the store only to be opened for verification
// (OpenIntegrationSecret); answers show HasSecret.
type Integration struct {
	ID           int64          `db:"id"`
	AccountID    int64          `db:"account_id"`
	Provider     string         `db:"provider"`
	Name         string         `db:"name"`
	Token        string         `db:"token"`
	SecretSealed string         `db:"secret_sealed"`
	ListIDs      pq.Int64Array  `db:"list_ids"`
	Tags         pq.StringArray `db:"tags"`
	Active       bool           `db:"active"`
	CreatedAt    time.Time      `db:"created_at"`
	UpdatedAt    time.Time      `db:"updated_at"`
}

// HasSecret reports whether a signing secret is set; without one every
// inbound call is refused.
func (i Integration) HasSecret() bool { return i.SecretSealed != "" }

// IntegrationSettings are the fields of an integration a user sets. Secret nil
// keeps the stored secret, "" removes it.
type IntegrationSettings struct {
	Provider string
	Name     string
	Secret   *string
	ListIDs  []int64
	Tags     []string
	Active   bool
}

// Validate normalises the settings and reports every invalid field in German.
func (s *IntegrationSettings) Validate() error {
	errs := Errs{}
	s.Provider = strings.TrimSpace(s.Provider)
	if !slices.Contains(IntegrationProviders(), s.Provider) {
		errs.Add("provider", "Erlaubt sind stripe, digistore24, copecart, paypal und generic.")
	}
	s.Name = strings.TrimSpace(s.Name)
	if s.Name == "" {
		errs.Add("name", "Bitte einen Namen angeben.")
	}
	normText(errs, "name", &s.Name, maxIntegrationNameLen)
	if s.Secret != nil {
		v := strings.TrimSpace(*s.Secret)
		s.Secret = &v
		switch {
		case !ValidText(v):
			errs.Add("secret", "Der Schlüssel enthält unzulässige Zeichen.")
		case utf8.RuneCountInString(v) > maxIntegrationSecretLen:
			errs.Add("secret", fmt.Sprintf("Der Schlüssel darf höchstens %d Zeichen lang sein.", maxIntegrationSecretLen))
		}
	}
	s.Tags = normTags(errs, "tags", s.Tags)
	s.ListIDs = normListIDs(errs, "list_ids", s.ListIDs)
	return errs.Err()
}

// IntegrationPatch is a partial update: nil fields stay as they are. The
// provider cannot change (it is part of the inbound URL).
type IntegrationPatch struct {
	Name    *string
	Secret  *string
	ListIDs *[]int64
	Tags    *[]string
	Active  *bool
}

// integrationSecretPurpose binds a sealed secret to its account and integration.
func integrationSecretPurpose(accountID, id int64) string {
	return "integrations.secret:" + strconv.FormatInt(accountID, 10) + ":" + strconv.FormatInt(id, 10)
}

// OpenIntegrationSecret opens the integration's secret ("" when none is set).
// The value must never be logged or returned.
func OpenIntegrationSecret(box *secret.Box, i Integration) (string, error) {
	if i.SecretSealed == "" {
		return "", nil
	}
	b, err := box.Open(integrationSecretPurpose(i.AccountID, i.ID), i.SecretSealed)
	if err != nil {
		return "", fmt.Errorf("store: integration %d secret: %w", i.ID, err)
	}
	return string(b), nil
}

const integrationColumns = `id, account_id, provider, name, token, secret_sealed, list_ids, tags, active, created_at, updated_at`

const nextIntegrationID = `SELECT nextval(pg_get_serial_sequence('integrations', 'id'))`

const insertIntegration = `INSERT INTO integrations (id, account_id, provider, name, token, secret_sealed, list_ids, tags, active, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) RETURNING ` + integrationColumns

const countIntegrationLists = `SELECT count(*) FROM lists WHERE account_id = $1 AND id = ANY($2)`

// checkIntegrationLists reports list ids that are not the account's lists.
func checkIntegrationLists(ctx context.Context, tx *sqlx.Tx, accountID int64, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	var n int
	if err := tx.GetContext(ctx, &n, countIntegrationLists, accountID, pq.Int64Array(ids)); err != nil {
		return fmt.Errorf("store: integration lists: %w", err)
	}
	if n != len(ids) {
		return Invalid("list_ids", "Mindestens eine dieser Listen gibt es nicht.")
	}
	return nil
}

func sealIntegrationSecret(box *secret.Box, accountID, id int64, v *string) (string, error) {
	if v == nil || *v == "" {
		return "", nil
	}
	sealed, err := box.Seal(integrationSecretPurpose(accountID, id), []byte(*v))
	if err != nil {
		return "", fmt.Errorf("store: seal integration secret: %w", err)
	}
	return sealed, nil
}

// CreateIntegration validates s and stores a new integration with a new
// inbound token. The caller checks the plan feature (integration.Service).
func (db *DB) CreateIntegration(ctx context.Context, box *secret.Box, accountID int64, actor Actor, s IntegrationSettings, now time.Time) (Integration, error) {
	if err := s.Validate(); err != nil {
		return Integration{}, err
	}
	var out Integration
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if err := checkIntegrationLists(ctx, tx, accountID, s.ListIDs); err != nil {
			return err
		}
		var id int64
		if err := tx.GetContext(ctx, &id, nextIntegrationID); err != nil {
			return fmt.Errorf("store: create integration: %w", err)
		}
		sealed, err := sealIntegrationSecret(box, accountID, id, s.Secret)
		if err != nil {
			return err
		}
		if err := tx.GetContext(ctx, &out, insertIntegration, id, accountID, s.Provider, s.Name, RandomString(IntegrationTokenLen),
			sealed, pq.Int64Array(nonNilIDs(s.ListIDs)), pq.StringArray(nonNil(s.Tags)), s.Active, now); err != nil {
			return fmt.Errorf("store: create integration: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "integration.created", ObjectType: ObjectIntegration,
			ObjectID: out.ID, Details: map[string]any{"provider": out.Provider, "name": out.Name}})
	})
	return out, err
}

const countIntegrations = `SELECT count(*) FROM integrations WHERE account_id = $1`

const selectIntegrations = `SELECT ` + integrationColumns + ` FROM integrations WHERE account_id = $1 ORDER BY id LIMIT $2 OFFSET $3`

// Integrations lists an account's integrations, oldest first.
func (db *DB) Integrations(ctx context.Context, accountID int64, p Page) ([]Integration, int, error) {
	var total int
	if err := db.GetContext(ctx, &total, countIntegrations, accountID); err != nil {
		return nil, 0, fmt.Errorf("store: integrations: %w", err)
	}
	out := []Integration{}
	if err := db.SelectContext(ctx, &out, selectIntegrations, accountID, p.PerPage, p.Offset()); err != nil {
		return nil, 0, fmt.Errorf("store: integrations: %w", err)
	}
	return out, total, nil
}

const selectIntegration = `SELECT ` + integrationColumns + ` FROM integrations WHERE account_id = $1 AND id = $2`

// Integration returns one integration of the account.
func (db *DB) Integration(ctx context.Context, accountID, id int64) (Integration, error) {
	var i Integration
	if err := db.GetContext(ctx, &i, selectIntegration, accountID, id); err != nil {
		return Integration{}, notFound("integration", err)
	}
	return i, nil
}

// InboundIntegration is an integration found by its inbound token, with
// whether its account's plan includes integrations.
type InboundIntegration struct {
	Integration
	PlanAllows bool   `db:"plan_allows"`
	UpgradeURL string `db:"upgrade_url"`
	// Lists are those of the integration's lists that exist, in id order:
	// what a purchase joins, read with the integration so that the purchase
	// needs no round trip for them (ApplyOrder).
	Lists integrationLists `db:"lists"`
}

// integrationLists are lists as selectIntegrationByToken encodes them: one
// "id,double_opt_in,color,name" text each (a name may hold commas, so it comes
// last).
type integrationLists []listInfo

// Scan reads the encoded lists.
func (l *integrationLists) Scan(src any) error {
	var raw pq.StringArray
	if err := raw.Scan(src); err != nil {
		return fmt.Errorf("store: integration lists: %w", err)
	}
	out := make(integrationLists, 0, len(raw))
	for _, s := range raw {
		f := strings.SplitN(s, ",", 4)
		if len(f) != 4 {
			return fmt.Errorf("store: integration lists: malformed %q", s)
		}
		id, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return fmt.Errorf("store: integration lists: %w", err)
		}
		out = append(out, listInfo{ID: id, DoubleOptIn: f[1] == "true", Color: f[2], Name: f[3]})
	}
	*l = out
	return nil
}

const selectIntegrationByToken = `SELECT i.id, i.account_id, i.provider, i.name, i.token, i.secret_sealed, i.list_ids, i.tags,
  i.active, i.created_at, i.updated_at, 'integrations' = ANY (p.features) AS plan_allows, p.upgrade_url,
  ARRAY(SELECT l.id::text || ',' || l.double_opt_in::text || ',' || l.color || ',' || l.name
    FROM lists l WHERE l.account_id = i.account_id AND l.id = ANY (i.list_ids) ORDER BY l.id) AS lists
FROM integrations i JOIN accounts a ON a.id = i.account_id JOIN plans p ON p.name = a.plan
WHERE i.token = $1 AND i.provider = $2 AND a.blocked_at IS NULL`

// IntegrationByToken finds the integration of an inbound URL: the one lookup
// across accounts (the caller has nothing but the token, 32 random characters).
// Everything after it filters on the integration's account.
func (db *DB) IntegrationByToken(ctx context.Context, provider, token string) (InboundIntegration, error) {
	if len(token) != IntegrationTokenLen {
		return InboundIntegration{}, ErrNotFound
	}
	// Prepared: every provider call starts with it, and parsing and planning
	// the three-table join cost more than running it.
	if err := db.prepare(ctx, db.generic, selectIntegrationByToken); err != nil {
		return InboundIntegration{}, err
	}
	var i InboundIntegration
	if err := sqlx.GetContext(ctx, preparedDB{db}, &i, selectIntegrationByToken, token, provider); err != nil {
		return InboundIntegration{}, notFound("integration by token", err)
	}
	return i, nil
}

const selectEventStatusOfOrder = `SELECT status FROM integration_events
WHERE account_id = $1 AND integration_id = $2 AND order_id = $3 ORDER BY id DESC LIMIT 1`

// IntegrationEventStatus is the status the latest call of an integration
// about an order was logged with (ErrNotFound when none names the order).
func (db *DB) IntegrationEventStatus(ctx context.Context, accountID, integrationID int64, orderID string) (string, error) {
	var status string
	if err := db.GetContext(ctx, &status, selectEventStatusOfOrder, accountID, integrationID, orderID); err != nil {
		return "", notFound("integration event", err)
	}
	return status, nil
}

const lockIntegration = `SELECT ` + integrationColumns + ` FROM integrations WHERE account_id = $1 AND id = $2 FOR UPDATE`

const updateIntegration = `UPDATE integrations SET name = $3, secret_sealed = $4, list_ids = $5, tags = $6, active = $7, updated_at = $8
WHERE account_id = $1 AND id = $2 RETURNING ` + integrationColumns

// UpdateIntegration applies a partial update at now.
func (db *DB) UpdateIntegration(ctx context.Context, box *secret.Box, accountID int64, actor Actor, id int64, p IntegrationPatch, now time.Time) (Integration, error) {
	var out Integration
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var cur Integration
		if err := tx.GetContext(ctx, &cur, lockIntegration, accountID, id); err != nil {
			return notFound("update integration", err)
		}
		s := IntegrationSettings{Provider: cur.Provider, Name: cur.Name, Secret: p.Secret, ListIDs: cur.ListIDs, Tags: cur.Tags, Active: cur.Active}
		applyPtr(&s.Name, p.Name)
		applyPtr(&s.ListIDs, p.ListIDs)
		applyPtr(&s.Tags, p.Tags)
		applyPtr(&s.Active, p.Active)
		if err := s.Validate(); err != nil {
			return err
		}
		if err := checkIntegrationLists(ctx, tx, accountID, s.ListIDs); err != nil {
			return err
		}
		sealed := cur.SecretSealed
		if s.Secret != nil {
			var err error
			if sealed, err = sealIntegrationSecret(box, accountID, id, s.Secret); err != nil {
				return err
			}
		}
		if err := tx.GetContext(ctx, &out, updateIntegration, accountID, id, s.Name, sealed, pq.Int64Array(nonNilIDs(s.ListIDs)),
			pq.StringArray(nonNil(s.Tags)), s.Active, now); err != nil {
			return fmt.Errorf("store: update integration: %w", err)
		}
		var changed []string
		if p.Name != nil && s.Name != cur.Name {
			changed = append(changed, "name")
		}
		if s.Secret != nil {
			changed = append(changed, "secret")
		}
		if p.ListIDs != nil && !slices.Equal(s.ListIDs, []int64(cur.ListIDs)) {
			changed = append(changed, "list_ids")
		}
		if p.Tags != nil && !slices.Equal(s.Tags, []string(cur.Tags)) {
			changed = append(changed, "tags")
		}
		if s.Active != cur.Active {
			changed = append(changed, "active")
		}
		if len(changed) == 0 {
			return nil
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "integration.updated", ObjectType: ObjectIntegration,
			ObjectID: id, Details: map[string]any{"changed": changed}})
	})
	return out, err
}

const deleteIntegration = `DELETE FROM integrations WHERE account_id = $1 AND id = $2 RETURNING provider, name`

// DeleteIntegration deletes an integration with its orders and event log; its
// inbound URL answers 404 from now on. Contacts it created stay.
func (db *DB) DeleteIntegration(ctx context.Context, accountID int64, actor Actor, id int64) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var row struct {
			Provider string `db:"provider"`
			Name     string `db:"name"`
		}
		if err := tx.GetContext(ctx, &row, deleteIntegration, accountID, id); err != nil {
			return notFound("delete integration", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "integration.deleted", ObjectType: ObjectIntegration,
			ObjectID: id, Details: map[string]any{"provider": row.Provider, "name": row.Name}})
	})
}

// IntegrationEvent is one inbound call in an integration's event log.
type IntegrationEvent struct {
	ID              int64     `db:"id"`
	AccountID       int64     `db:"account_id"`
	IntegrationID   int64     `db:"integration_id"`
	Status          string    `db:"status"`
	EventType       string    `db:"event_type"`
	ProviderEventID string    `db:"provider_event_id"`
	OrderID         string    `db:"order_id"`
	Email           string    `db:"email"`
	Error           string    `db:"error"`
	Payload         string    `db:"payload"`
	ContentType     string    `db:"content_type"`
	ReceivedAt      time.Time `db:"received_at"`
}

const integrationEventColumns = `id, account_id, integration_id, status, event_type, provider_event_id, order_id, email, error,
payload, content_type, received_at`

const insertIntegrationEvent = `INSERT INTO integration_events (account_id, integration_id, status, event_type, provider_event_id,
  order_id, email, error, payload, content_type, received_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`

// clip cuts s to at most n bytes at a rune boundary and drops what PostgreSQL
// cannot store (NUL, invalid UTF-8): the log keeps whatever a caller sent.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func logIntegrationEvent(ctx context.Context, q sqlx.ExecerContext, e IntegrationEvent) error {
	if _, err := q.ExecContext(ctx, insertIntegrationEvent, e.AccountID, e.IntegrationID, e.Status, clip(e.EventType, 200),
		clip(e.ProviderEventID, 200), clip(e.OrderID, maxOrderIDLen), clip(e.Email, 320), clip(e.Error, 1000),
		clip(e.Payload, maxEventPayload), clip(e.ContentType, 200), e.ReceivedAt); err != nil {
		return fmt.Errorf("store: log integration event: %w", err)
	}
	return nil
}

// LogIntegrationEvent records an inbound call that changed nothing (rejected,
// ignored).
func (db *DB) LogIntegrationEvent(ctx context.Context, e IntegrationEvent) error {
	return logIntegrationEvent(ctx, db.DB, e)
}

const countIntegrationEvents = `SELECT count(*) FROM integration_events WHERE account_id = $1 AND integration_id = $2`

const selectIntegrationEvents = `SELECT ` + integrationEventColumns + ` FROM integration_events
WHERE account_id = $1 AND integration_id = $2 ORDER BY id DESC LIMIT $3 OFFSET $4`

// IntegrationEvents lists an integration's event log, newest first
// (ErrNotFound for an integration that is not the account's).
func (db *DB) IntegrationEvents(ctx context.Context, accountID, integrationID int64, p Page) ([]IntegrationEvent, int, error) {
	if _, err := db.Integration(ctx, accountID, integrationID); err != nil {
		return nil, 0, err
	}
	var total int
	if err := db.GetContext(ctx, &total, countIntegrationEvents, accountID, integrationID); err != nil {
		return nil, 0, fmt.Errorf("store: integration events: %w", err)
	}
	out := []IntegrationEvent{}
	if err := db.SelectContext(ctx, &out, selectIntegrationEvents, accountID, integrationID, p.PerPage, p.Offset()); err != nil {
		return nil, 0, fmt.Errorf("store: integration events: %w", err)
	}
	return out, total, nil
}

const selectIntegrationEvent = `SELECT ` + integrationEventColumns + ` FROM integration_events WHERE account_id = $1 AND id = $2`

// IntegrationEventByID returns one entry of the event log with its raw payload.
func (db *DB) IntegrationEventByID(ctx context.Context, accountID, id int64) (IntegrationEvent, error) {
	var e IntegrationEvent
	if err := db.GetContext(ctx, &e, selectIntegrationEvent, accountID, id); err != nil {
		return IntegrationEvent{}, notFound("integration event", err)
	}
	return e, nil
}

// OrderItem is one product of a provider's order.
type OrderItem struct {
	Product string
	Amount  float64 // in currency units, e.g. 49.0
}

// ProviderEvent is a verified inbound call, read into what Rundbrief needs.
type ProviderEvent struct {
	Kind            string // OrderPurchase, OrderRefund or "" (nothing to do)
	EventType       string // the provider's name of the event
	ProviderEventID string
	OrderID         string
	Email           string // normalised by the caller (ParseEmail) before applying
	FirstName       string
	LastName        string
	Currency        string
	Items           []OrderItem
}

// Kinds of a ProviderEvent.
const (
	OrderPurchase = "purchase"
	OrderRefund   = "refund"
)

// OrderCompletedData is the data of order.completed.
type OrderCompletedData struct {
	Integration OrderIntegrationRef `json:"integration"`
	Order       OrderRef            `json:"order"`
	Contact     ContactData         `json:"contact"`
}

// OrderIntegrationRef is the integration in order.completed.
type OrderIntegrationRef struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	Provider string `json:"provider"`
}

// OrderRef is the order item in order.completed.
type OrderRef struct {
	Provider string  `json:"provider"`
	OrderID  string  `json:"order_id"`
	Product  string  `json:"product"`
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// recordOrder records the order's items unique per (integration, order id,
// product), logs the call as processed when an item is new and as duplicate
// otherwise, and returns the new items with the names the buyer's contact has
// (empty when there is none) and which of the integration's lists still
// exist: one round trip for what a replay needs in all. ($10 to $14: the
// call's event type, provider event id, error, payload and content type;
// $15 the integration's lists.) A data-modifying WITH runs whether or not
// the query reads it. The buyer is found by the address key whatever the
// statistics were when the connection planned it (see purchaseReadSQL): the
// locked path takes every purchase into a list with double opt-in.
const recordOrder = `WITH ins AS (
  INSERT INTO integration_orders (account_id, integration_id, provider, order_id, product, amount, currency, email, created_at)
  SELECT $1, $2, $3, $4, x.product, x.amount, $7, $8, $9
  FROM unnest($5::text[], $6::numeric[]) AS x(product, amount)
  ON CONFLICT (integration_id, order_id, product) DO NOTHING
  RETURNING id, product, amount::float8 AS amount
), lg AS (
  INSERT INTO integration_events (account_id, integration_id, status, event_type, provider_event_id, order_id, email, error,
    payload, content_type, received_at)
  SELECT $1, $2, CASE WHEN EXISTS (SELECT 1 FROM ins) THEN 'processed' ELSE 'duplicate' END, $10, $11, $4, $8, $12, $13, $14, $9
)
SELECT ins.id, ins.product, ins.amount, coalesce(c.first_name, '') AS first_name, coalesce(c.last_name, '') AS last_name,
  (SELECT coalesce(array_agg(l.id ORDER BY l.id), '{}') FROM lists l WHERE l.account_id = $1 AND l.id = ANY($15)) AS list_ids
FROM ins LEFT JOIN contacts c ON c.account_id = $1 AND c.email = $8
  AND (c.account_id, c.email) >= ($1, $8) AND (c.account_id, c.email) <= ($1, $8)`

// finishOrder links the new order items to the buyer's contact and emits
// their order.completed events ($1 to $4 as insertEvents) in one statement:
// it runs after the contact write path, whose hot rows (list and account
// counters) stay locked until commit, so it is one round trip only.
const finishOrder = `WITH o AS (
  UPDATE integration_orders SET contact_id = $5 WHERE account_id = $1 AND id = ANY($6::bigint[])
) ` + insertEvents

// productTag is the tag of a product, cut to the length a tag may have.
func productTag(product string) string {
	t := ProductTagPrefix + product
	if utf8.RuneCountInString(t) > maxTagLen {
		t = string([]rune(t)[:maxTagLen])
	}
	return t
}

// ApplyOrder applies a verified purchase or refund in one transaction and logs
// the call (call carries the raw payload; its status is set here) in the same
// transaction. It returns the status it logged.
//
// A purchase records its items unique per (integration, order id, product):
// only items recorded now count, so retries, replays and concurrent duplicates
// change nothing more and are logged as duplicate. For new items the buyer is
// upserted as a contact (source integration for a new one; names only where the
// contact has none), joins the integration's lists (those that still exist)
// and gets its tags plus product:<product>; a blocked or unsubscribed address
// stays unsubscribed (an upsert without a status never resubscribes);
// order.completed is emitted once per new item.
//
// A refund marks the order's items refunded and tags the buyer refunded; a
// repeat finds nothing to change (duplicate); a buyer who is no contact is
// ignored.
//
// A purchase is first tried optimistically, as one statement outside a
// transaction block (applyPurchaseOptimistic); what that cannot apply as read
// takes the locked path, one transaction that locks what it changes.
func (db *DB) ApplyOrder(ctx context.Context, ig InboundIntegration, ev ProviderEvent, call IntegrationEvent) (string, error) {
	if err := db.prepare(ctx, db.generic, append(writePathStatements(), recordOrder, finishOrder, purchaseSQL, purchaseReadSQL)...); err != nil {
		return "", err
	}
	i := ig.Integration
	call.AccountID, call.IntegrationID = i.AccountID, i.ID
	call.EventType, call.ProviderEventID, call.OrderID, call.Email = ev.EventType, ev.ProviderEventID, ev.OrderID, ev.Email
	if ev.Kind != OrderRefund {
		status, ok, err := db.applyPurchaseOptimistic(ctx, nil, ig, ev, call)
		if err != nil || ok {
			return status, err
		}
	}
	var status string
	var created bool
	err := retryTxOn(ctx, db.generic, func(tx *sqlx.Tx) error {
		var err error
		if ev.Kind == OrderRefund {
			status, err = applyRefund(ctx, preparedTx{Tx: tx, db: db}, i, ev, call)
		} else {
			status, created, err = applyPurchase(ctx, preparedTx{Tx: tx, db: db}, i, ev, call)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	if created {
		db.contactsGrew(1, false)
	}
	return status, nil
}

// orderItems are the products of a purchase (clipped, each once: the unique
// key would refuse a statement with one twice) and their amounts.
func orderItems(ev ProviderEvent) (pq.StringArray, pq.Float64Array) {
	products := make(pq.StringArray, 0, len(ev.Items))
	amounts := make(pq.Float64Array, 0, len(ev.Items))
	for _, it := range ev.Items {
		p := clip(strings.TrimSpace(it.Product), maxProductLen)
		if slices.Contains(products, p) {
			continue
		}
		products = append(products, p)
		amounts = append(amounts, it.Amount)
	}
	return products, amounts
}

// applyPurchase applies a purchase in tx and reports whether it created the
// buyer's contact.
func applyPurchase(ctx context.Context, tx preparedTx, i Integration, ev ProviderEvent, call IntegrationEvent) (string, bool, error) {
	products, amounts := orderItems(ev)
	var items []struct {
		ID        int64         `db:"id"`
		Product   string        `db:"product"`
		Amount    float64       `db:"amount"`
		FirstName string        `db:"first_name"`
		LastName  string        `db:"last_name"`
		ListIDs   pq.Int64Array `db:"list_ids"`
	}
	if err := tx.SelectContext(ctx, &items, recordOrder, i.AccountID, i.ID, i.Provider, clip(ev.OrderID, maxOrderIDLen),
		products, amounts, strings.ToUpper(ev.Currency), ev.Email, call.ReceivedAt,
		clip(call.EventType, 200), clip(call.ProviderEventID, 200), clip(call.Error, 1000), clip(call.Payload, maxEventPayload),
		clip(call.ContentType, 200), i.ListIDs); err != nil {
		return "", false, fmt.Errorf("store: record order: %w", err)
	}
	if len(items) == 0 {
		return IntegrationDuplicate, false, nil
	}

	in := ContactInput{Email: ev.Email, Tags: slices.Clone([]string(i.Tags))}
	target := items[0]
	// The provider's names fill what the account does not know yet; they never
	// overwrite what it does.
	if v := strings.TrimSpace(ev.FirstName); v != "" && target.FirstName == "" {
		in.FirstName = &v
	}
	if v := strings.TrimSpace(ev.LastName); v != "" && target.LastName == "" {
		in.LastName = &v
	}
	ids := make(pq.Int64Array, len(items))
	for n, it := range items {
		ids[n] = it.ID
		if it.Product != "" {
			if t := productTag(it.Product); !slices.Contains(in.Tags, t) {
				in.Tags = append(in.Tags, t)
			}
		}
	}
	// Lists deleted since the integration was set up are left out.
	in.ListIDs = target.ListIDs
	op := &contactOp{in: in, newSource: SourceIntegration}
	if err := op.in.Normalize(); err != nil {
		return "", false, err
	}
	if err := applyOps(ctx, tx, i.AccountID, Actor{Type: ActorSystem}, []*contactOp{op}, false); err != nil {
		return "", false, err
	}
	res, err := op.result()
	if err != nil {
		return "", false, err
	}
	contact := res.Contact.Data()
	events := make([]Event, len(items))
	for n, it := range items {
		events[n] = Event{Name: EventOrderCompleted, Data: OrderCompletedData{
			Integration: OrderIntegrationRef{ID: i.ID, Name: i.Name, Provider: i.Provider},
			Order: OrderRef{Provider: i.Provider, OrderID: ev.OrderID, Product: it.Product, Amount: it.Amount,
				Currency: strings.ToUpper(ev.Currency)},
			Contact: contact,
		}}
	}
	evIDs, names, payloads, err := eventArgs(events)
	if err != nil {
		return "", false, err
	}
	if _, err := tx.ExecContext(ctx, finishOrder, i.AccountID, evIDs, names, payloads, res.Contact.ID, ids); err != nil {
		return "", false, fmt.Errorf("store: finish order: %w", err)
	}
	return IntegrationProcessed, res.Created, nil
}

const refundOrder = `UPDATE integration_orders SET refunded_at = $4
WHERE account_id = $1 AND integration_id = $2 AND order_id = $3 AND refunded_at IS NULL
RETURNING email`

const emailOfOrder = `SELECT email FROM integration_orders WHERE account_id = $1 AND integration_id = $2 AND order_id = $3 LIMIT 1`

func applyRefund(ctx context.Context, tx preparedTx, i Integration, ev ProviderEvent, call IntegrationEvent) (string, error) {
	status, err := refund(ctx, tx, i, ev, call.ReceivedAt)
	if err != nil {
		return "", err
	}
	call.Status = status
	if status == IntegrationIgnored && call.Error == "" {
		call.Error = "Kein Kontakt mit dieser Adresse: nichts zu erstatten."
	}
	return status, logIntegrationEvent(ctx, tx.Tx, call)
}

func refund(ctx context.Context, tx preparedTx, i Integration, ev ProviderEvent, now time.Time) (string, error) {
	var emails []string
	if err := tx.SelectContext(ctx, &emails, refundOrder, i.AccountID, i.ID, clip(ev.OrderID, maxOrderIDLen), now); err != nil {
		return "", fmt.Errorf("store: refund order: %w", err)
	}
	email := ev.Email
	if len(emails) > 0 {
		email = emails[0] // the buyer as recorded with the purchase
	} else if email == "" {
		switch err := tx.GetContext(ctx, &email, emailOfOrder, i.AccountID, i.ID, clip(ev.OrderID, maxOrderIDLen)); {
		case errors.Is(err, sql.ErrNoRows):
			return IntegrationIgnored, nil
		case err != nil:
			return "", fmt.Errorf("store: refund order: %w", err)
		}
	}
	if email == "" {
		return IntegrationIgnored, nil
	}
	op := &contactOp{in: ContactInput{Email: email, Tags: []string{TagRefunded}}, noCreate: true}
	if err := op.in.Normalize(); err != nil {
		return IntegrationIgnored, nil
	}
	if err := applyOps(ctx, tx, i.AccountID, Actor{Type: ActorSystem}, []*contactOp{op}, false); err != nil {
		return "", err
	}
	res, err := op.result()
	switch {
	case errors.Is(err, ErrNotFound):
		return IntegrationIgnored, nil
	case err != nil:
		return "", err
	}
	if len(emails) == 0 && len(res.Changed) == 0 {
		return IntegrationDuplicate, nil
	}
	return IntegrationProcessed, nil
}

// IntegrationOrder is a recorded order item.
type IntegrationOrder struct {
	ID            int64      `db:"id"`
	IntegrationID int64      `db:"integration_id"`
	Provider      string     `db:"provider"`
	OrderID       string     `db:"order_id"`
	Product       string     `db:"product"`
	Amount        float64    `db:"amount"`
	Currency      string     `db:"currency"`
	Email         string     `db:"email"`
	ContactID     *int64     `db:"contact_id"`
	RefundedAt    *time.Time `db:"refunded_at"`
	CreatedAt     time.Time  `db:"created_at"`
}

const selectIntegrationOrders = `SELECT id, integration_id, provider, order_id, product, amount::float8 AS amount, currency, email,
contact_id, refunded_at, created_at FROM integration_orders WHERE account_id = $1 AND integration_id = $2 ORDER BY id DESC LIMIT $3`

// IntegrationOrders returns an integration's latest order items, newest first.
func (db *DB) IntegrationOrders(ctx context.Context, accountID, integrationID int64, limit int) ([]IntegrationOrder, error) {
	out := []IntegrationOrder{}
	if err := db.SelectContext(ctx, &out, selectIntegrationOrders, accountID, integrationID, limit); err != nil {
		return nil, fmt.Errorf("store: integration orders: %w", err)
	}
	return out, nil
}

const selectIntegrationCert = `SELECT pem, fetched_at FROM integration_certs WHERE account_id = $1 AND url = $2`

// IntegrationCert returns a cached certificate (PEM) of url and when it was
// fetched; ErrNotFound when none is cached.
func (db *DB) IntegrationCert(ctx context.Context, accountID int64, url string) (string, time.Time, error) {
	var row struct {
		PEM       string    `db:"pem"`
		FetchedAt time.Time `db:"fetched_at"`
	}
	if err := db.GetContext(ctx, &row, selectIntegrationCert, accountID, url); err != nil {
		return "", time.Time{}, notFound("integration cert", err)
	}
	return row.PEM, row.FetchedAt, nil
}

const upsertIntegrationCert = `INSERT INTO integration_certs (account_id, url, pem, fetched_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (account_id, url) DO UPDATE SET pem = excluded.pem, fetched_at = excluded.fetched_at`

// SaveIntegrationCert caches a verified certificate (PEM) of url.
func (db *DB) SaveIntegrationCert(ctx context.Context, accountID int64, url, pem string, now time.Time) error {
	if _, err := db.ExecContext(ctx, upsertIntegrationCert, accountID, url, pem, now); err != nil {
		return fmt.Errorf("store: cache integration cert: %w", err)
	}
	return nil
}
