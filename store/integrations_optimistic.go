package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Optimistic purchases.
//
// The locked purchase (applyPurchase through applyOps) is one transaction of
// eleven round trips: BEGIN, the order, the lists, the contact's lock, its
// insert, the memberships, their counts, the records, the order's events,
// COMMIT. With sixteen provider calls at once on two cores every round trip is
// a wake-up on both sides, and each transaction held its row locks (the
// contact, counter stripes) and its share locks on the account, integration
// and list rows (taken by the foreign keys, so shared by all of them as
// multixacts) across all of them: PostgreSQL spent twice the CPU per call it
// needs alone.
//
// Most purchases are plain: a new order of a buyer whose contact needs no
// confirmation mail and no block. Those take two round trips here besides the
// integration's look-up (which brings the lists along), and no transaction
// block: the unlocked read of the contact the optimistic contact write uses
// (readUnlocked), and purchaseSQL, one statement that records the order, logs
// the call, writes the contact at the version read, its memberships, events,
// activities and counters, and checks at its end that what it read still
// held. One statement commits as a whole or not at all, so the guarantees of
// the locked path stay: the unique key of the order items decides which call
// processes an item (a replay, concurrent or not, logs duplicate and changes
// nothing else), events commit with the change, the plan's contact limit is
// kept by require_account_contacts. When the check fails (a concurrent call
// created the contact or recorded the items first, the contact changed, a
// list went away) the statement fails, takes back every row it wrote, and the
// call takes the locked path, which decides it again under locks.

// purchaseSQL applies a plain purchase. $1 account, $2 integration, $3
// provider, $4 order id, $5/$6 products and amounts, $7 currency, $8 email,
// $9 received at; $10-$14 the call's event type, provider event id, error,
// payload and content type (the log); $15 the contact as planned, $28 its id
// (0: a new contact) and $29 the version it was read at, $30 whether it
// changes; $16-$18 the events (contact, lists, order.completed), $19/$20 the
// actor, $21-$23 the activities, all of them about the contact, whose id they
// get from the row written; $24/$25 tag count changes; $26 the lists to join;
// $27 the clock of the read (contact_days).
//
// The order items are inserted first, with the contact's id (a new contact's
// comes from the sequence here): whether any was new decides whether anything
// else is written, as the unique key decides it, concurrent calls included.
// The contact is written by its id, never by a join, and "(account_id = $1)
// IS TRUE" keeps its look-up on the primary key: the generic plan is made
// once per connection, and one made while the table was nearly empty took
// the account's index (contacts_name_idx) with the id as a filter, a walk of
// all the account's contacts on every call. It returns whether the items were new
// (processed) or all recorded before (duplicate: only the log is written).
const purchaseSQL = `WITH cid AS (
  SELECT CASE WHEN $28::bigint > 0 THEN $28::bigint ELSE nextval('contacts_id_seq') END AS id
), ord AS (
  INSERT INTO integration_orders (account_id, integration_id, provider, order_id, product, amount, currency, email,
    contact_id, created_at)
  SELECT $1, $2, $3, $4, p.product, p.amount, $7, $8, cid.id, $9
  FROM cid, unnest($5::text[], $6::numeric[]) AS p(product, amount)
  ON CONFLICT (integration_id, order_id, product) DO NOTHING
  RETURNING id
), st AS (
  SELECT count(*) AS n FROM ord
), x AS (
  SELECT x.* FROM st, jsonb_to_record($15::jsonb) AS x(email text, first_name text, last_name text, address text, zip text,
    city text, phone text, note text, tags text[], status text, source text, custom_fields jsonb, unsubscribed_at timestamptz,
    created_at timestamptz, updated_at timestamptz)
  WHERE st.n > 0
), ins AS (
  INSERT INTO contacts AS c (id, account_id, email, first_name, last_name, address, zip, city, phone, note,
    tags, status, source, custom_fields, unsubscribed_at, created_at, updated_at)
  SELECT cid.id, $1, x.email, x.first_name, x.last_name, x.address, x.zip, x.city, x.phone, x.note,
    x.tags, x.status, x.source, x.custom_fields, x.unsubscribed_at, x.created_at, x.updated_at
  FROM x, cid WHERE $28::bigint = 0
  ON CONFLICT (account_id, email) DO NOTHING
  RETURNING c.id
), upd AS (
  UPDATE contacts c SET email = x.email, first_name = x.first_name, last_name = x.last_name,
    address = x.address, zip = x.zip, city = x.city, phone = x.phone, note = x.note, tags = x.tags,
    status = x.status, source = x.source, custom_fields = x.custom_fields,
    unsubscribed_at = x.unsubscribed_at, updated_at = x.updated_at
  FROM x WHERE $30::boolean AND c.id = $28::bigint AND (c.account_id = $1) IS TRUE AND c.xmin = $29::bigint::text::xid
  RETURNING c.id
), w AS (
  SELECT id FROM ins
  UNION ALL SELECT id FROM upd
  UNION ALL SELECT c.id FROM contacts c, st
  WHERE NOT $30::boolean AND st.n > 0 AND c.id = $28::bigint AND (c.account_id = $1) IS TRUE AND c.xmin = $29::bigint::text::xid
), lg AS (
  INSERT INTO integration_events (account_id, integration_id, status, event_type, provider_event_id, order_id, email, error,
    payload, content_type, received_at)
  SELECT $1, $2, CASE WHEN st.n > 0 THEN 'processed' ELSE 'duplicate' END, $10, $11, $4, $8, $12, $13, $14, $9 FROM st
), mem AS (
  INSERT INTO list_members (list_id, contact_id, account_id)
  SELECT l.id, w.id, $1 FROM w, unnest($26::bigint[]) AS l(id) ORDER BY l.id
  ON CONFLICT DO NOTHING
  RETURNING list_id
), cnt AS (
  INSERT INTO list_member_counts AS s (list_id, stripe, account_id, members)
  SELECT m.list_id, pg_backend_pid() % 32, $1, count(*) FROM mem m GROUP BY m.list_id ORDER BY m.list_id
  ON CONFLICT (list_id, stripe) DO UPDATE SET members = s.members + excluded.members
), ev AS (
  INSERT INTO events (account_id, public_id, name, payload)
  SELECT $1, e.public_id, e.name, jsonb_set(e.payload, '{contact,id}', to_jsonb(w.id))
  FROM w, ROWS FROM (unnest($16::text[]), unnest($17::text[]), jsonb_array_elements($18::jsonb))
    WITH ORDINALITY AS e(public_id, name, payload, n)
  ORDER BY e.n
), act AS (
  INSERT INTO activity_log (account_id, actor_type, actor_id, action, object_type, object_id, details)
  SELECT $1, $19, $20, a.action, a.object_type, w.id, a.details::jsonb
  FROM w, unnest($21::text[], $22::text[], $23::text[]) WITH ORDINALITY AS a(action, object_type, details, n)
  ORDER BY a.n
), tags AS (
  INSERT INTO contact_tag_counts AS t (account_id, tag, stripe, contacts)
  SELECT $1, g.tag, pg_backend_pid() % 32, g.d FROM w, unnest($24::text[], $25::bigint[]) AS g(tag, d)
  ORDER BY g.tag
  ON CONFLICT (account_id, tag, stripe) DO UPDATE SET contacts = t.contacts + excluded.contacts
), days AS (
  INSERT INTO contact_days AS d (account_id, day, stripe, contacts)
  SELECT $1, ($27::timestamptz AT TIME ZONE 'Europe/Berlin')::date, pg_backend_pid() % 32, i.n
  FROM (SELECT count(*) AS n FROM ins) i WHERE i.n > 0
  ON CONFLICT (account_id, day, stripe) DO UPDATE SET contacts = d.contacts + excluded.contacts
)
SELECT st.n > 0 AS fresh,
  require_true(CASE st.n
      WHEN 0 THEN true
      WHEN cardinality($5::text[]) THEN (SELECT count(*) FROM w) = 1 AND (SELECT count(*) FROM mem) = cardinality($26::bigint[])
      ELSE false END, 'purchase changed since it was read')
    AND require_account_contacts($1, (SELECT count(*) FROM ins)) AS ok
FROM st`

// purchaseReadSQL is readUnlockedSQL for one buyer ($1 account, $2 address),
// with, on every row, how many of the purchase's items ($5) of order $4 of
// integration $3 are recorded already: all of them, and the call is a replay,
// which this statement logs as duplicate ($6-$12: event type, provider event
// id, email, error, payload, content type, received at) without reading the
// buyer (the row with an empty email alone comes back), so a replay is one
// statement.
//
// Its generic plan is made once per connection of the contact write path,
// and on a new installation that is while the tables are empty or not yet
// analysed; so every look-up here has a shape whose plan cannot depend on
// those statistics. The buyer is found by the account's unique address key:
// with "email = ANY ($2) OR id = ANY ($3)", as readUnlockedSQL reads many,
// the empty-table plan took the account's name index with the address as a
// filter, and a later one a sequential scan, so that every call walked all of
// the account's contacts until the background ANALYZE. Plain equalities on
// both columns are not enough: on an empty table every index of the account
// promises one row at the same cost, and the name index won. The row
// comparisons say the same as the equalities, but only the address key
// (account_id, email) can take them as its bounds, which decides for it
// whatever the statistics. A buyer's lists are read per membership by the
// list's primary key (a join was planned as a hash of every list of every
// account). "(account_id = $1) IS TRUE" keeps the count on the items' unique
// key.
const purchaseReadSQL = `WITH rec AS (
  SELECT count(*) AS n FROM integration_orders o
  WHERE o.integration_id = $3 AND o.order_id = $4 AND o.product = ANY ($5::text[]) AND (o.account_id = $1) IS TRUE
), lg AS (
  INSERT INTO integration_events (account_id, integration_id, status, event_type, provider_event_id, order_id, email, error,
    payload, content_type, received_at)
  SELECT $1, $3, 'duplicate', $6, $7, $4, $8, $9, $10, $11, $12 FROM rec WHERE rec.n = cardinality($5::text[])
), l AS (
  SELECT ` + contactColumns + `,
    ARRAY(SELECT (SELECT l.id::text || ',' || l.color || ',' || l.name FROM lists l WHERE l.id = m.list_id)
      FROM list_members m WHERE m.contact_id = c.id ORDER BY m.list_id) AS lists,
    c.xmin::text::bigint AS version
  FROM contacts c WHERE c.account_id = $1 AND c.email = $2::text
    AND (c.account_id, c.email) >= ($1, $2::text) AND (c.account_id, c.email) <= ($1, $2::text)
    AND (SELECT n FROM rec) < cardinality($5::text[])
)
SELECT l.*, now()::timestamptz(0), (SELECT n FROM rec) FROM l
UNION ALL
SELECT 0, $1, e.email, '', '', '', '', '', '', '', '{}'::text[], '', '', '{}'::jsonb, NULL::timestamptz, NULL::timestamptz,
  now(), now(), '{}'::text[], 0, now()::timestamptz(0), (SELECT n FROM rec)
FROM (
  SELECT b.email FROM blocked_addresses b WHERE b.account_id = $1 AND b.email = $2::text
    AND (SELECT n FROM rec) < cardinality($5::text[])
  UNION ALL SELECT ''
) e`

// readPurchase reads what readUnlocked reads for the buyer of a purchase, and
// how many of its items are recorded already; when all are, it has logged the
// call as duplicate. It runs on tx's connection when tx is not nil.
func (db *DB) readPurchase(ctx context.Context, tx *sqlx.Tx, i Integration, email, orderID string, products pq.StringArray, call IntegrationEvent) (readSet, map[string]bool, time.Time, int, error) {
	rows, err := db.stmtOn(ctx, tx, purchaseReadSQL).QueryContext(ctx, i.AccountID, email, i.ID, orderID, products,
		clip(call.EventType, 200), clip(call.ProviderEventID, 200), clip(email, 320), clip(call.Error, 1000),
		clip(call.Payload, maxEventPayload), clip(call.ContentType, 200), call.ReceivedAt)
	if err != nil {
		return readSet{}, nil, time.Time{}, 0, fmt.Errorf("store: read purchase: %w", err)
	}
	defer rows.Close()
	var recorded int
	s, blocked, now, err := scanReadSet(rows, &recorded)
	if err != nil {
		return s, nil, now, 0, fmt.Errorf("store: read purchase: %w", err)
	}
	return s, blocked, now, recorded, nil
}

// applyPurchaseOptimistic applies a purchase as purchaseSQL (see above) and
// reports whether it did; false (with no error) leaves the call to the locked
// path: a purchase that is not plain, or whose statement failed because what
// it read changed meanwhile (or for any other reason PostgreSQL refused it,
// such as the plan's contact limit, which the locked path reports). Its
// statements run on tx's connection when tx is not nil (the warm-up, warm.go).
func (db *DB) applyPurchaseOptimistic(ctx context.Context, tx *sqlx.Tx, ig InboundIntegration, ev ProviderEvent, call IntegrationEvent) (string, bool, error) {
	products, amounts := orderItems(ev)
	if len(products) == 0 || ev.Email == "" {
		return "", false, nil
	}
	i := ig.Integration
	lists := make(map[int64]listInfo, len(ig.Lists))
	listIDs := make([]int64, 0, len(ig.Lists))
	for _, l := range ig.Lists {
		lists[l.ID] = l
		listIDs = append(listIDs, l.ID)
	}
	orderID := clip(ev.OrderID, maxOrderIDLen)
	read, blocked, now, recorded, err := db.readPurchase(ctx, tx, i, ev.Email, orderID, products, call)
	if err != nil {
		return "", false, err
	}
	if recorded == len(products) {
		// A replay: every item is recorded (and stays so), nothing changes;
		// the read logged it.
		return IntegrationDuplicate, true, nil
	}
	cur := read.byEmail[ev.Email]

	// The contact input of the locked path (applyPurchase), every item new.
	in := ContactInput{Email: ev.Email, Tags: slices.Clone([]string(i.Tags)), ListIDs: listIDs}
	if v := strings.TrimSpace(ev.FirstName); v != "" && (cur == nil || cur.FirstName == "") {
		in.FirstName = &v
	}
	if v := strings.TrimSpace(ev.LastName); v != "" && (cur == nil || cur.LastName == "") {
		in.LastName = &v
	}
	for _, p := range products {
		if p != "" {
			if t := productTag(p); !slices.Contains(in.Tags, t) {
				in.Tags = append(in.Tags, t)
			}
		}
	}
	op := &contactOp{in: in, newSource: SourceIntegration}
	if op.in.Normalize() != nil {
		return "", false, nil // the locked path reports it, unless the order is a duplicate
	}
	decideOps([]*contactOp{op}, read.lockedSet, blocked, lists)
	if op.err != nil || op.needDOI || op.block || op.unsubNow || len(op.leave) > 0 {
		return "", false, nil
	}

	write := op.writesRow()
	var id, version int64
	if op.cur != nil {
		id, version = op.cur.ID, read.version[op.cur.ID]
	}
	var row plainRow
	if write {
		row = finishPlain(op, lists, now)
	} else {
		op.final = op.cur.Contact // nothing to change: the contact as read
	}

	events, acts, err := appendOpRecords(nil, nil, op, lists)
	if err != nil {
		return "", false, err
	}
	contact := op.final.Data()
	currency := strings.ToUpper(ev.Currency)
	for n, p := range products {
		events = append(events, Event{Name: EventOrderCompleted, Data: OrderCompletedData{
			Integration: OrderIntegrationRef{ID: i.ID, Name: i.Name, Provider: i.Provider},
			Order:       OrderRef{Provider: i.Provider, OrderID: ev.OrderID, Product: p, Amount: amounts[n], Currency: currency},
			Contact:     contact,
		}})
	}
	var before []string
	if op.cur != nil {
		before = op.cur.Tags
	}
	tags := tagDeltas{}
	tags.change(before, op.final.Tags)
	tagNames, tagCounts := tags.args()

	b, err := json.Marshal(row)
	if err != nil {
		return "", false, fmt.Errorf("store: purchase: %w", err)
	}
	evIDs, evNames, payloads, err := eventArgs(events)
	if err != nil {
		return "", false, err
	}
	actions, types, _, details, err := activityArgs(acts)
	if err != nil {
		return "", false, err
	}
	actor := Actor{Type: ActorSystem}
	var fresh, ok bool
	err = db.stmtOn(ctx, tx, purchaseSQL).QueryRowContext(ctx, i.AccountID, i.ID, i.Provider, orderID,
		products, amounts, currency, ev.Email, call.ReceivedAt,
		clip(call.EventType, 200), clip(call.ProviderEventID, 200), clip(call.Error, 1000), clip(call.Payload, maxEventPayload),
		clip(call.ContentType, 200), string(b), evIDs, evNames, payloads, actor.Type, actor.idOrNil(),
		actions, types, details, tagNames, tagCounts, pq.Int64Array(nonNilIDs(op.join)), now, id, version, write).Scan(&fresh, &ok)
	if err != nil {
		var pqErr *pq.Error
		if errors.As(err, &pqErr) && ctx.Err() == nil {
			return "", false, nil // nothing was written: the locked path decides again
		}
		return "", false, fmt.Errorf("store: purchase: %w", err)
	}
	if fresh {
		if op.created && tx == nil { // a warm-up's contact is rolled back
			db.contactsGrew(1, false)
		}
		return IntegrationProcessed, true, nil
	}
	return IntegrationDuplicate, true, nil
}
