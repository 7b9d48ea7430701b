package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Event names: the eight of api-v1.md and the nine of decisions.md.
const (
	EventContactCreated      = "contact.created"
	EventContactUpdated      = "contact.updated"
	EventContactDeleted      = "contact.deleted"
	EventContactUnsubscribed = "contact.unsubscribed"
	EventListJoined          = "list.joined"
	EventListLeft            = "list.left"
	EventEmailSent           = "email.sent"
	EventEmailOpened         = "email.opened"
	EventEmailClicked        = "email.clicked"
	EventEmailBounced        = "email.bounced"
	EventNewsletterSent      = "newsletter.sent"
	EventSequenceCompleted   = "sequence.completed"
	EventABTestCompleted     = "ab_test.completed"
	EventAppointmentBooked   = "appointment.booked"
	EventInboxReceived       = "inbox.received"
	EventInboxReplied        = "inbox.replied"
	EventOrderCompleted      = "order.completed"
)

// EventKinds returns the names of all 17 event kinds, in documentation order.
func EventKinds() []string {
	return []string{
		EventContactCreated, EventContactUpdated, EventContactDeleted, EventContactUnsubscribed,
		EventListJoined, EventListLeft, EventEmailSent, EventEmailOpened, EventEmailClicked,
		EventEmailBounced, EventNewsletterSent, EventSequenceCompleted, EventABTestCompleted,
		EventAppointmentBooked, EventInboxReceived, EventInboxReplied, EventOrderCompleted,
	}
}

// EventIDPrefix starts every public event id (evt_<token>).
const EventIDPrefix = "evt_"

// Event is one entry for the outbox: its name and the data object exactly as the
// webhook will send it (marshalled with encoding/json).
type Event struct {
	Name string
	Data any
}

// StoredEvent is a row of the outbox.
type StoredEvent struct {
	ID        int64           `db:"id"`
	AccountID int64           `db:"account_id"`
	PublicID  string          `db:"public_id"`
	Name      string          `db:"name"`
	Payload   json.RawMessage `db:"payload"`
	CreatedAt time.Time       `db:"created_at"`
	// XID is the inserting transaction's id (xid8, in decimal): consumers
	// follow the outbox in (XID, ID) order (outbox.go).
	XID string `db:"xid"`
}

// EventTime is a timestamp inside an event payload: ISO 8601 in Europe/Berlin with
// offset, the same form the API uses.
type EventTime time.Time

// MarshalJSON writes e.g. "2026-11-22T05:02:04+01:00".
func (t EventTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).In(Berlin).Format(time.RFC3339) + `"`), nil
}

func eventTimePtr(t *time.Time) *EventTime {
	if t == nil {
		return nil
	}
	v := EventTime(*t)
	return &v
}

func newEventID() string { return EventIDPrefix + RandomString(24) }

// insertEvents takes the payloads as one JSON array: no per-element quoting of an
// SQL array, and PostgreSQL parses the JSON once.
const insertEvents = `INSERT INTO events (account_id, public_id, name, payload)
SELECT $1, x.public_id, x.name, x.payload
FROM ROWS FROM (unnest($2::text[]), unnest($3::text[]), jsonb_array_elements($4::jsonb)) WITH ORDINALITY AS x(public_id, name, payload, n)
ORDER BY x.n`

// Emit writes one event into the outbox inside tx, so that it commits or rolls back
// with the change it reports. It returns the event's public id (evt_…). Every
// feature that emits events uses Emit or EmitAll; consumers (outbox.go) read the rows.
func Emit(ctx context.Context, tx *sqlx.Tx, accountID int64, name string, data any) (string, error) {
	ids, err := EmitAll(ctx, tx, accountID, []Event{{Name: name, Data: data}})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// EmitAll writes several events in one statement (in order) and returns their
// public ids. A bulk change emits through it, not through a loop of Emit. A Data
// that is a json.RawMessage is taken as it is (it must be valid JSON).
func EmitAll(ctx context.Context, tx *sqlx.Tx, accountID int64, events []Event) ([]string, error) {
	if len(events) == 0 {
		return nil, nil
	}
	ids, names, payloads, err := eventArgs(events)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, insertEvents, accountID, ids, names, payloads); err != nil {
		return nil, fmt.Errorf("store: emit events: %w", err)
	}
	return ids, nil
}

// eventArgs are the parameters $2, $3, $4 of insertEvents: new public ids, names,
// and the payloads as one JSON array.
func eventArgs(events []Event) (ids, names pq.StringArray, payloads string, err error) {
	ids = make(pq.StringArray, len(events))
	names = make(pq.StringArray, len(events))
	buf := make([]byte, 0, 1024*len(events))
	buf = append(buf, '[')
	for i, e := range events {
		b, ok := e.Data.(json.RawMessage)
		if !ok {
			if b, err = json.Marshal(e.Data); err != nil {
				return nil, nil, "", fmt.Errorf("store: emit %s: %w", e.Name, err)
			}
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, b...)
		ids[i], names[i] = newEventID(), e.Name
	}
	return ids, names, string(append(buf, ']')), nil
}

const selectEventsAfter = `SELECT id, account_id, public_id, name, payload, created_at, xid::text AS xid
FROM events WHERE account_id = $1 AND id > $2 ORDER BY id LIMIT $3`

// EventsAfter returns up to limit of an account's events with an id above afterID,
// oldest first. It is for tests: no index orders events by id (the outbox
// reads them in its own order, the key), so it sorts all of the account's
// events after afterID.
func (db *DB) EventsAfter(ctx context.Context, accountID, afterID int64, limit int) ([]StoredEvent, error) {
	var out []StoredEvent
	if err := db.SelectContext(ctx, &out, selectEventsAfter, accountID, afterID, limit); err != nil {
		return nil, fmt.Errorf("store: events: %w", err)
	}
	return out, nil
}

// ConsumerLag is how far one consumer of the events outbox is behind: the
// events it has not handled yet (counted up to ScrapeCountCap) and the age of
// the oldest of them.
type ConsumerLag struct {
	Events int64
	Age    time.Duration
}

// OutboxConsumerWebhooks names the outbox consumer of the webhook fan-out
// (WebhookFanOut, DispatchEvents); migration 00018 registers it.
const OutboxConsumerWebhooks = "webhooks"

// outboxLag counts, per registered consumer, the events past its cursors
// (an account without a cursor yet: all of its events), stopping at the cap,
// and the age of the oldest of the accounts' first unhandled events. Each
// account costs an index probe or two on the events' key (account_id, xid,
// id) per consumer.
const outboxLag = `SELECT c.name AS consumer,
  (SELECT count(*) FROM (
     SELECT 1 FROM accounts a
     LEFT JOIN outbox_cursors k ON k.consumer = c.name AND k.account_id = a.id
     CROSS JOIN LATERAL (
       SELECT 1 FROM events e
       WHERE e.account_id = a.id AND (e.xid, e.id) > (COALESCE(k.last_xid, '0'), COALESCE(k.last_id, 0))
       LIMIT $1) e
     LIMIT $1) p) AS events,
  COALESCE((SELECT EXTRACT(EPOCH FROM now() - min(f.created_at)) FROM accounts a
     LEFT JOIN outbox_cursors k ON k.consumer = c.name AND k.account_id = a.id
     CROSS JOIN LATERAL (
       SELECT e.created_at FROM events e
       WHERE e.account_id = a.id AND (e.xid, e.id) > (COALESCE(k.last_xid, '0'), COALESCE(k.last_id, 0))
       ORDER BY e.xid, e.id LIMIT 1) f), 0) AS seconds
FROM outbox_consumers c`

// OutboxLag reports, per registered consumer of the events outbox, how far it
// is behind.
func (db *DB) OutboxLag(ctx context.Context) (map[string]ConsumerLag, error) {
	var rows []struct {
		Consumer string  `db:"consumer"`
		Events   int64   `db:"events"`
		Seconds  float64 `db:"seconds"`
	}
	if err := db.SelectContext(ctx, &rows, outboxLag, ScrapeCountCap); err != nil {
		return nil, fmt.Errorf("store: outbox lag: %w", err)
	}
	out := make(map[string]ConsumerLag, len(rows))
	for _, r := range rows {
		out[r.Consumer] = ConsumerLag{Events: r.Events, Age: time.Duration(r.Seconds * float64(time.Second))}
	}
	return out, nil
}
