package store

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lib/pq"
)

// This file is the send queue: campaign_recipients rows claimed in batches
// with a lease, and their outcomes recorded in batches together with the
// email.sent / email.bounced events and the contacts' activities.

// Recipient statuses.
const (
	RecipientQueued  = "queued"
	RecipientSending = "sending"
	RecipientSent    = "sent"
	RecipientFailed  = "failed"
	RecipientSkipped = "skipped"
)

// Reasons recorded in a skipped recipient's error.
const (
	SkipBlocked       = "blocked"
	SkipNotSubscribed = "not_subscribed"
)

// QueuedRecipient is a claimed recipient with the personalisation of its
// contact (empty fields when it is no contact).
type QueuedRecipient struct {
	ID        int64
	ContactID int64 // 0: not a contact
	Email     string
	Attempts  int // including this one
	Variant   string

	// The contact's fields, empty for an address that is no contact.
	FirstName, LastName, Address, Zip, City, Phone, Note string
	// CustomFields is the contact's custom_fields as JSON ("{}" without).
	CustomFields []byte
	// Blocked: the address is on the account's blocked list at the time of
	// the claim (what BlockedAddresses would say), so that the worker's check
	// right before sending costs no statement of its own.
	Blocked bool
}

// The claim takes due rows after the worker's cursor in id order: queued rows
// whose retry is due, and rows whose lease ran out (their worker died). The
// cursor keeps each claim from walking over the rows already done, whatever
// index the planner picks; a worker sweeps from 0 when its cursor runs dry.
// Leases use the database clock, the one clock all processes share. Only a
// campaign that is sending gives out rows (not a paused one). The claim
// changes no indexed column (the queue index reads pending, which stays true
// from 'queued' to 'sending'; migration 00028), so on the table's half-empty
// pages its updates are HOT and write no index entries.
const claimRecipients = `WITH picked AS (
  SELECT id FROM campaign_recipients
  WHERE campaign_id = $1 AND id > $2 AND pending
    AND CASE WHEN status = 'queued' THEN next_attempt_at IS NULL OR next_attempt_at <= now() ELSE claimed_until < now() END
    AND EXISTS (SELECT 1 FROM campaigns WHERE id = $1 AND status = 'sending')
  ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE campaign_recipients r SET status = 'sending', claimed_until = now() + $4 * interval '1 millisecond',
    attempts = r.attempts + 1
  FROM picked WHERE r.id = picked.id
  RETURNING r.id, r.contact_id, r.email, r.attempts, r.variant
)
SELECT q.id, coalesce(q.contact_id, 0), q.email, q.attempts, coalesce(q.variant, ''),
  coalesce(c.first_name, ''), coalesce(c.last_name, ''), coalesce(c.address, ''), coalesce(c.zip, ''),
  coalesce(c.city, ''), coalesce(c.phone, ''), coalesce(c.note, ''), coalesce(c.custom_fields, '{}'),
  EXISTS (SELECT 1 FROM blocked_addresses b WHERE b.account_id = $5 AND b.email = lower(q.email))
FROM claimed q LEFT JOIN contacts c ON c.id = q.contact_id AND c.account_id = $5
ORDER BY q.id`

// ClaimRecipients claims up to limit due recipients of a campaign with ids
// above after, leasing them for lease: until then no other worker takes them;
// afterwards they are claimable again. dst is reused (reset to length 0). The
// claim is one statement on the send queue's pool (DB.queue), prepared once
// per connection, whose sessions keep it on an ordered scan of the queue
// index that stops after the batch.
func (db *DB) ClaimRecipients(ctx context.Context, accountID, campaignID, after int64, limit int, lease time.Duration, dst []QueuedRecipient) ([]QueuedRecipient, error) {
	dst = dst[:0]
	err := func() error {
		stmt, err := db.prepared(ctx, claimRecipients)
		if err != nil {
			return err
		}
		rows, err := stmt.QueryContext(ctx, campaignID, after, limit, lease.Milliseconds(), accountID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r QueuedRecipient
			if err := rows.Scan(&r.ID, &r.ContactID, &r.Email, &r.Attempts, &r.Variant, &r.FirstName, &r.LastName,
				&r.Address, &r.Zip, &r.City, &r.Phone, &r.Note, &r.CustomFields, &r.Blocked); err != nil {
				return err
			}
			dst = append(dst, r)
		}
		return rows.Err()
	}()
	if err != nil {
		return dst[:0], fmt.Errorf("store: claim recipients: %w", err)
	}
	return dst, nil
}

// renewRecipients extends the leases a live worker holds. A lease that already
// ran out is not renewed: its row may belong to another worker by now. Rows
// locked by another statement are skipped rather than waited for: they are
// being recorded or put back (leaving 'sending' anyway), or claimed by another
// worker after their lease ran out, and the worker's recorder must not queue
// behind its own heartbeat. The rows are fetched by primary key (status
// wrapped in an expression no index matches), as recordOutcomes does;
// claimed_until is in no index, so the update can stay on the row's page (HOT).
const renewRecipients = `UPDATE campaign_recipients r SET claimed_until = now() + $2 * interval '1 millisecond'
FROM (SELECT id FROM campaign_recipients WHERE id = ANY($1) AND status || '' = 'sending' AND claimed_until > now()
  FOR UPDATE SKIP LOCKED) held
WHERE r.id = held.id`

// RenewRecipients extends the leases of claimed recipients by lease from now:
// the heartbeat of a live worker, so that a claim can be short and the rows of
// a process that died are free again soon. Rows whose lease ran out, or that
// are no longer claimed, are left alone.
func (db *DB) RenewRecipients(ctx context.Context, ids []int64, lease time.Duration) error {
	if len(ids) == 0 {
		return nil
	}
	stmt, err := db.prepared(ctx, renewRecipients)
	if err != nil {
		return fmt.Errorf("store: renew recipients: %w", err)
	}
	if _, err := stmt.ExecContext(ctx, pq.Int64Array(ids), lease.Milliseconds()); err != nil {
		return fmt.Errorf("store: renew recipients: %w", err)
	}
	return nil
}

// releaseRecipients fetches its rows by primary key, as recordOutcomes does.
const releaseRecipients = `UPDATE campaign_recipients SET status = 'queued', claimed_until = NULL,
  next_attempt_at = CASE WHEN $3 > 0 THEN now() + $3 * interval '1 millisecond' END,
  attempts = CASE WHEN $4 THEN greatest(attempts - 1, 0) ELSE attempts END
WHERE id = ANY($2) AND campaign_id + 0 = $1 AND status || '' = 'sending'`

// ReleaseRecipients puts claimed recipients back into the queue without an
// outcome: due again after delay (0: at once). untried gives back the
// attempt the claim counted (the worker stopped before trying them).
func (db *DB) ReleaseRecipients(ctx context.Context, campaignID int64, ids []int64, delay time.Duration, untried bool) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := db.ExecContext(ctx, releaseRecipients, campaignID, pq.Int64Array(ids), delay.Milliseconds(), untried); err != nil {
		return fmt.Errorf("store: release recipients: %w", err)
	}
	return nil
}

// Outcome is what happened to one claimed recipient.
type Outcome struct {
	RecipientID int64
	ContactID   int64 // 0: no contact
	Email       string
	// Status is RecipientSent, RecipientFailed, RecipientSkipped, or
	// RecipientQueued for a transient failure to be retried after RetryIn.
	Status    string
	MessageID string
	Error     string // failed, skipped (reason) and retries
	At        time.Time
	RetryIn   time.Duration
	// Bounce marks a permanent rejection of the recipient: email.bounced.
	Bounce bool
	Code   int // the SMTP reply code of a bounce
	// Block marks a hard bounce (the address itself does not exist): the
	// address goes on the blocked list with source "bounce", so that no
	// later newsletter or follow-up is sent to it.
	Block bool
}

// recordOutcomes stores a batch of outcomes in one statement, so that a
// worker pays one round trip per batch. The rows are fetched by primary key
// (r.id = ANY): campaign_id and status are wrapped in expressions no index
// matches, because right after a large send was queued the statistics still
// say the campaign is tiny, and the planner would otherwise walk the whole
// campaign through the queue index for 25 rows. Each row finds its outcome in
// the parameter arrays by its position among the ids, which are sorted
// (recordArgs): width_bucket is a binary search. A join with the unnested
// arrays instead left the join order to the planner, and the generic plan,
// which guesses ten rows for either side, rescanned the whole batch for every
// row: 2.5 ms instead of 1 ms for 100 outcomes, 7.5 ms instead of 1.5 ms for
// 200. The rows still in 'sending' are updated (a row another worker already
// finished after a lease ran out is neither updated nor counted again), and
// only for those rows the events go into the outbox and the activities into
// the activity log, the same rows store.EmitAll and store.LogActivities
// write. The campaign's counters go to one of its stripes (campaign_counts,
// migration 00026), not to its row: the lanes of every process write outcomes
// at once, and on the campaign's row each waited for the one before it to
// commit. The campaign's status is read without a lock. Stripes and shards
// follow the connection (its backend's pid), so that two writes at the same
// time rarely share a counter row.
const recordOutcomes = `WITH upd AS (
  UPDATE campaign_recipients r SET status = ($3::text[])[width_bucket(r.id, $2::bigint[])],
    message_id = nullif(($4::text[])[width_bucket(r.id, $2::bigint[])], ''),
    error = nullif(($5::text[])[width_bucket(r.id, $2::bigint[])], ''),
    sent_at = CASE WHEN ($3::text[])[width_bucket(r.id, $2::bigint[])] = 'sent'
      THEN to_timestamp(($6::bigint[])[width_bucket(r.id, $2::bigint[])] / 1e6) END,
    claimed_until = NULL,
    next_attempt_at = CASE WHEN ($3::text[])[width_bucket(r.id, $2::bigint[])] = 'queued'
      THEN now() + ($7::bigint[])[width_bucket(r.id, $2::bigint[])] * interval '1 millisecond' END
  WHERE r.id = ANY($2) AND r.campaign_id + 0 = $1 AND r.status || '' = 'sending'
  RETURNING r.id, r.email, r.status, width_bucket(r.id, $2::bigint[]) AS i
), noted AS (
  SELECT u.id, u.email, u.status, ($4::text[])[u.i] AS mid, ($5::text[])[u.i] AS err,
    ($8::bigint[])[u.i] AS contact, ($9::int[])[u.i] AS code, ($11::text[])[u.i] AS evt, ($13::boolean[])[u.i] AS block,
    CASE WHEN u.status = 'sent' THEN 'email.sent' ELSE 'email.bounced' END AS event
  FROM upd u WHERE u.status = 'sent' OR (u.status = 'failed' AND ($10::boolean[])[u.i])
), ev AS (
  INSERT INTO events (account_id, public_id, name, payload)
  SELECT $12, n.evt, n.event, CASE WHEN n.status = 'sent'
    THEN jsonb_build_object('campaign_id', $1::bigint, 'contact_id', nullif(n.contact, 0), 'email', n.email, 'message_id', n.mid)
    ELSE jsonb_build_object('campaign_id', $1::bigint, 'email', n.email, 'code', n.code, 'reason', n.err) END
  FROM noted n ORDER BY n.id
), act AS (
  INSERT INTO activity_log (account_id, actor_type, actor_id, action, object_type, object_id, details)
  SELECT $12, 'system', NULL, n.event, 'contact', n.contact, CASE WHEN n.status = 'sent'
    THEN jsonb_build_object('campaign_id', $1::bigint, 'message_id', n.mid)
    ELSE jsonb_build_object('campaign_id', $1::bigint, 'code', n.code, 'reason', n.err) END
  FROM noted n WHERE n.contact <> 0 ORDER BY n.id
), agg AS (
  SELECT (now() AT TIME ZONE 'Europe/Berlin')::date AS day, (pg_backend_pid() % 16)::smallint AS shard,
    count(*) FILTER (WHERE u.status = 'sent') AS sent, count(*) FILTER (WHERE u.status = 'failed') AS failed,
    count(*) FILTER (WHERE u.status = 'failed' AND ($10::boolean[])[u.i]) AS bounces
  FROM upd u HAVING count(*) FILTER (WHERE u.status IN ('sent', 'failed')) > 0
), st AS (
  INSERT INTO campaign_stats AS s (account_id, campaign_id, day, shard, sent, failed, bounces)
  SELECT $12, $1, a.day, a.shard, a.sent, a.failed, a.bounces FROM agg a
  ON CONFLICT (campaign_id, day, shard) DO UPDATE SET sent = s.sent + EXCLUDED.sent, failed = s.failed + EXCLUDED.failed,
    bounces = s.bounces + EXCLUDED.bounces
), ast AS (
  INSERT INTO account_stats AS s (account_id, day, shard, sent, failed, bounces)
  SELECT $12, a.day, a.shard, a.sent, a.failed, a.bounces FROM agg a
  ON CONFLICT (account_id, day, shard) DO UPDATE SET sent = s.sent + EXCLUDED.sent, failed = s.failed + EXCLUDED.failed,
    bounces = s.bounces + EXCLUDED.bounces
), blk AS (
  INSERT INTO blocked_addresses (account_id, email, source, reason, campaign_id)
  SELECT DISTINCT $12::bigint, lower(btrim(n.email)), 'bounce', nullif(n.err, ''), $1::bigint
  FROM noted n WHERE n.status = 'failed' AND n.block ORDER BY 2
  ON CONFLICT (account_id, email) DO NOTHING RETURNING email, reason
), blkact AS (
  INSERT INTO activity_log (account_id, actor_type, actor_id, action, object_type, object_id, details)
  SELECT $12, 'system', NULL, 'address.blocked', 'blocked_address', NULL,
    jsonb_build_object('email', b.email, 'source', 'bounce', 'reason', b.reason, 'campaign_id', $1::bigint)
  FROM blk b ORDER BY b.email
), cnt AS (
  INSERT INTO campaign_counts AS k (campaign_id, stripe, account_id, sent, failed, skipped)
  SELECT $1, (pg_backend_pid() % 16)::smallint, $12, count(*) FILTER (WHERE u.status = 'sent'),
    count(*) FILTER (WHERE u.status = 'failed'), count(*) FILTER (WHERE u.status = 'skipped')
  FROM upd u HAVING count(*) FILTER (WHERE u.status IN ('sent', 'failed', 'skipped')) > 0
  ON CONFLICT (campaign_id, stripe) DO UPDATE SET sent = k.sent + EXCLUDED.sent, failed = k.failed + EXCLUDED.failed,
    skipped = k.skipped + EXCLUDED.skipped
)
SELECT status FROM campaigns WHERE id = $1`

// RecordOutcomes stores the outcomes of claimed recipients atomically: their
// rows (one UPDATE … FROM unnest), email.sent and email.bounced into the
// outbox, the contacts' "email.sent" / "email.bounced" activities (actor
// system), the campaign's counters and its day's campaign_stats, and for hard
// bounces (Outcome.Block) the address on the blocked list (source "bounce",
// activity "address.blocked"; the contact's status is left alone: it did not
// unsubscribe, and the blocked list alone keeps mail from it). The payloads are those of
// decisions.md: email.sent {campaign_id, contact_id, email, message_id},
// email.bounced {campaign_id, email, code, reason}. It returns the
// campaign's status afterwards, so a worker notices a pause.
//
// Concurrent calls for one campaign (the lanes of a send) share their
// statements (combine.go): the statement's own cost (its start-up, the three
// counter rows, the commit) is as large as that of some ten outcomes, and
// the lanes' handovers are small, so that each lane's crash bound stays
// small (mailer.WorkerOptions.FlushEvery). A call returns once its outcomes
// are committed, whichever statement carried them.
func (db *DB) RecordOutcomes(ctx context.Context, accountID, campaignID int64, outs []Outcome) (string, error) {
	if len(outs) == 0 {
		return "", nil
	}
	call := &outcomeCall{ctx: ctx, outs: outs}
	if err := db.outcomes.do(ctx, outcomeKey{accountID, campaignID}, call, 1, db.recordOutcomeBatch); err != nil {
		return "", fmt.Errorf("store: record outcomes: %w", err)
	}
	return call.status, call.err
}

// maxOutcomeBatch is the most outcomes calls that join a statement carry
// together (a call with more runs alone).
const maxOutcomeBatch = 200

// outcomeBatchTimeout bounds a statement of several calls, which runs
// detached from its leader's context.
const outcomeBatchTimeout = time.Minute

type outcomeKey struct{ accountID, campaignID int64 }

// outcomeCall is one RecordOutcomes call.
type outcomeCall struct {
	ctx    context.Context
	outs   []Outcome
	status string
	err    error
}

func (c *outcomeCall) joins(batch []*outcomeCall) bool {
	n := len(c.outs)
	for _, b := range batch {
		n += len(b.outs)
	}
	return n <= maxOutcomeBatch
}

func (c *outcomeCall) abandon() {
	c.err = errors.New("store: record outcomes: the batch it was in failed")
}

// recordOutcomeBatch stores a batch's outcomes in one statement. When that
// fails, each call's outcomes are tried on their own, so that no call
// carries another's failure.
func (db *DB) recordOutcomeBatch(key outcomeKey, batch []*outcomeCall) {
	if len(batch) > 1 {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(batch[0].ctx), outcomeBatchTimeout)
		defer cancel()
		var all []Outcome
		for _, c := range batch {
			all = append(all, c.outs...)
		}
		if status, err := db.recordOutcomes(ctx, key, all); err == nil {
			for _, c := range batch {
				c.status = status
			}
			return
		}
	}
	for _, c := range batch {
		c.status, c.err = db.recordOutcomes(c.ctx, key, c.outs)
	}
}

// recordOutcomes runs the statement recordOutcomes.
func (db *DB) recordOutcomes(ctx context.Context, key outcomeKey, outs []Outcome) (string, error) {
	stmt, err := db.prepared(ctx, recordOutcomes)
	if err != nil {
		return "", fmt.Errorf("store: record outcomes: %w", err)
	}
	var status string
	if err := stmt.QueryRowContext(ctx, recordArgs(key.accountID, key.campaignID, outs)...).Scan(&status); err != nil {
		return "", fmt.Errorf("store: record outcomes: %w", err)
	}
	return status, nil
}

// recordArgs are recordOutcomes' parameters for outs, in the order of their
// recipients' ids, in which the statement looks them up.
func recordArgs(accountID, campaignID int64, outs []Outcome) []any {
	outs = slices.Clone(outs)
	slices.SortStableFunc(outs, func(a, b Outcome) int { return cmp.Compare(a.RecipientID, b.RecipientID) })
	n := len(outs)
	ids, ats, retries, contacts := make(pq.Int64Array, n), make(pq.Int64Array, n), make(pq.Int64Array, n), make(pq.Int64Array, n)
	statuses, mids, errs, evts := make(pq.StringArray, n), make(pq.StringArray, n), make(pq.StringArray, n), make(pq.StringArray, n)
	codes, bounces, blocks := make(pq.Int64Array, n), make(pq.BoolArray, n), make(pq.BoolArray, n)
	for i, o := range outs {
		ids[i], statuses[i], mids[i], errs[i] = o.RecipientID, o.Status, o.MessageID, o.Error
		ats[i], retries[i], contacts[i] = o.At.UnixMicro(), o.RetryIn.Milliseconds(), o.ContactID
		codes[i], bounces[i], blocks[i] = int64(o.Code), o.Bounce, o.Bounce && o.Block
		if o.Status == RecipientSent || o.Bounce {
			evts[i] = newEventID()
		}
	}
	return []any{campaignID, ids, statuses, mids, errs, ats, retries, contacts, codes, bounces, evts, accountID, blocks}
}

// stmtCache keeps the server-side prepared statements of the send queue's
// hot statements, prepared on the queue's pool (DB.queue). lib/pq parses,
// analyses and plans an unnamed statement on every call; prepared there, the
// claim and recordOutcomes are planned once per connection, a plan that
// reaches every row through an index whatever the statistics said when it
// was made.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// prepared returns query prepared on the send queue's pool (database/sql
// prepares it again on each connection it runs on); the statements live as
// long as the pool.
func (db *DB) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	db.stmts.mu.Lock()
	defer db.stmts.mu.Unlock()
	if s := db.stmts.m[query]; s != nil {
		return s, nil
	}
	s, err := db.queue.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if db.stmts.m == nil {
		db.stmts.m = map[string]*sql.Stmt{}
	}
	db.stmts.m[query] = s
	return s, nil
}

// CampaignLink is a tracked link of a campaign.
type CampaignLink struct {
	ID           int64  `db:"id"`
	CampaignID   int64  `db:"campaign_id"`
	Position     int    `db:"position"`
	URL          string `db:"url"`
	Personalized bool   `db:"personalized"`
}

const selectCampaignLinks = `SELECT id, campaign_id, position, url, personalized FROM campaign_links WHERE campaign_id = $1 ORDER BY position`

// CampaignLinks returns a campaign's tracked links in document order.
func (db *DB) CampaignLinks(ctx context.Context, campaignID int64) ([]CampaignLink, error) {
	var out []CampaignLink
	if err := db.SelectContext(ctx, &out, selectCampaignLinks, campaignID); err != nil {
		return nil, fmt.Errorf("store: campaign links: %w", err)
	}
	return out, nil
}

const selectRecipient = `SELECT id, account_id, campaign_id, coalesce(contact_id, 0) AS contact_id, email, status, attempts,
  message_id, error, sent_at
FROM campaign_recipients WHERE id = $1`

// RecipientRow is one campaign_recipients row, as the tracking and
// unsubscribe pages look it up by the id their token names.
type RecipientRow struct {
	ID         int64      `db:"id"`
	AccountID  int64      `db:"account_id"`
	CampaignID int64      `db:"campaign_id"`
	ContactID  int64      `db:"contact_id"`
	Email      string     `db:"email"`
	Status     string     `db:"status"`
	Attempts   int        `db:"attempts"`
	MessageID  *string    `db:"message_id"`
	Error      *string    `db:"error"`
	SentAt     *time.Time `db:"sent_at"`
}

// Recipient returns a recipient row by id (ErrNotFound when there is none).
func (db *DB) Recipient(ctx context.Context, id int64) (RecipientRow, error) {
	var r RecipientRow
	if err := db.GetContext(ctx, &r, selectRecipient, id); err != nil {
		return RecipientRow{}, notFound("recipient", err)
	}
	return r, nil
}

// CustomFieldStrings decodes a claimed recipient's custom fields into the
// text values placeholders use (nil when there are none).
func (r *QueuedRecipient) CustomFieldStrings() (map[string]string, error) {
	if len(r.CustomFields) == 0 || string(r.CustomFields) == "{}" {
		return nil, nil
	}
	if out, ok := flatCustomFields(r.CustomFields); ok {
		return out, nil
	}
	var cf CustomFields
	if err := cf.Scan(r.CustomFields); err != nil {
		return nil, err
	}
	return cf.Strings(), nil
}

// flatCustomFields is CustomFields' Scan and Strings in one pass for the
// usual custom fields, an object of plain strings, numbers, booleans and
// nulls as jsonb prints it: the JSON decoder and its map of interfaces cost
// more per recipient than rendering the placeholders. ok is false for
// anything else (escapes, nested values, odd syntax), which the decoder
// handles.
func flatCustomFields(b []byte) (out map[string]string, ok bool) {
	i := skipJSONSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	out = make(map[string]string, 4)
	if i = skipJSONSpace(b, i+1); i < len(b) && b[i] == '}' {
		return out, skipJSONSpace(b, i+1) == len(b)
	}
	for {
		key, j, ok := plainJSONString(b, i)
		if !ok {
			return nil, false
		}
		if i = skipJSONSpace(b, j); i >= len(b) || b[i] != ':' {
			return nil, false
		}
		if i = skipJSONSpace(b, i+1); i >= len(b) {
			return nil, false
		}
		switch c := b[i]; {
		case c == '"':
			v, j, ok := plainJSONString(b, i)
			if !ok {
				return nil, false
			}
			out[key], i = v, j
		case c == 't' && bytes.HasPrefix(b[i:], []byte("true")):
			out[key], i = "true", i+4
		case c == 'f' && bytes.HasPrefix(b[i:], []byte("false")):
			out[key], i = "false", i+5
		case c == 'n' && bytes.HasPrefix(b[i:], []byte("null")):
			delete(out, key) // Strings leaves nulls out
			i += 4
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
				j++
			}
			if !json.Valid(b[i:j]) {
				return nil, false
			}
			out[key], i = string(b[i:j]), j
		default:
			return nil, false
		}
		switch i = skipJSONSpace(b, i); {
		case i < len(b) && b[i] == ',':
			i = skipJSONSpace(b, i+1)
		case i < len(b) && b[i] == '}':
			return out, skipJSONSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainJSONString reads the string starting at b[i] when it has no escapes
// and no control characters, and returns it with the index after it.
func plainJSONString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return string(b[i+1 : j]), j + 1, true
		case c == '\\' || c < 0x20:
			return "", 0, false
		}
	}
	return "", 0, false
}

// queueDepth counts unfinished recipients (queued, or claimed and not yet
// recorded) through campaign_recipients_queue_idx, whose predicate is exactly
// this one, and stops at the cap: the campaigns' counters would be cheaper, but
// recipients held back by an A/B test ('waiting') make them disagree with the
// queue. The ORDER BY is the index's own order: it keeps the planner on an
// index scan that stops at the LIMIT, where a bitmap scan would read every
// entry of the index first.
const queueDepth = `SELECT count(*) FROM (SELECT 1 FROM campaign_recipients WHERE pending
  ORDER BY campaign_id, id LIMIT $1) q`

// SendQueueDepth is the number of recipients waiting to be sent, over all
// accounts and processes, counted up to ScrapeCountCap.
func (db *DB) SendQueueDepth(ctx context.Context) (int64, error) {
	var n int64
	if err := db.GetContext(ctx, &n, queueDepth, ScrapeCountCap); err != nil {
		return 0, fmt.Errorf("store: send queue depth: %w", err)
	}
	return n, nil
}
