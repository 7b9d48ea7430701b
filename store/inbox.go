package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/rundbrief/rundbrief/store/secret"
)

// The connected inbox (issue 21): settings, synced messages, replies, drafts,
// rules and metrics. The IMAP side (connecting, syncing, \Seen write-back,
// sending replies) lives in store/inbox; these are the rows and the rules that
// hold inside one transaction.

// FeatureInbox is the plan feature of the inbox.
const FeatureInbox = "inbox"

// Inbox message statuses of GET /inbox/messages.
const (
	InboxStatusUnread   = "unread"
	InboxStatusOpen     = "open"
	InboxStatusArchived = "archived"
	InboxStatusAll      = "all"
)

// Reply sources of inbox.replied.
const (
	ReplySourceUser = "user"
	ReplySourceAI   = "ai"
	ReplySourceRule = "rule"
)

// InboxSettings is the account's IMAP connection. The password never leaves
// the store except through InboxPassword.
type InboxSettings struct {
	AccountID    int64      `db:"account_id"`
	Host         string     `db:"host"`
	Port         int        `db:"port"`
	Username     string     `db:"username"`
	HasPassword  bool       `db:"has_password"`
	Encryption   string     `db:"encryption"`
	Folder       string     `db:"folder"`
	SMTPServerID *int64     `db:"smtp_server_id"`
	FromEmail    string     `db:"from_email"`
	FromName     string     `db:"from_name"`
	Signature    string     `db:"signature"`
	AutoDraft    bool       `db:"auto_draft"`
	UIDValidity  int64      `db:"uidvalidity"`
	LastUID      int64      `db:"last_uid"`
	LastSyncAt   *time.Time `db:"last_sync_at"`
	LastError    string     `db:"last_error"`
	CreatedAt    time.Time  `db:"created_at"`
	UpdatedAt    time.Time  `db:"updated_at"`
}

// InboxSettingsInput is the body of PUT /inbox/settings. Password nil keeps
// the stored one; "" removes it.
type InboxSettingsInput struct {
	Host         string
	Port         int // 0: 993 for tls, else 143
	Username     string
	Password     *string
	Encryption   string // "": tls
	Folder       string // "": INBOX
	SMTPServerID *int64
	FromEmail    string
	FromName     string
	Signature    string
	AutoDraft    bool
}

const maxSignatureLen = 5000

// Validate normalises the input and reports every invalid field in German.
func (in *InboxSettingsInput) Validate() error {
	errs := Errs{}
	in.Host = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(in.Host), "."))
	if in.Host == "" {
		errs.Add("host", "Bitte den Hostnamen des IMAP-Servers angeben, z. B. imap.example.com.")
	} else if !validSMTPHost(in.Host) {
		errs.Add("host", "Kein gültiger Hostname und keine IP-Adresse (ohne Schema und Port, z. B. imap.example.com).")
	}
	if in.Encryption == "" {
		in.Encryption = EncryptionTLS
	}
	switch in.Encryption {
	case EncryptionNone, EncryptionSTARTTLS, EncryptionTLS:
	default:
		errs.Add("encryption", "Erlaubt sind tls, starttls und none.")
	}
	if in.Port == 0 {
		in.Port = 143
		if in.Encryption == EncryptionTLS {
			in.Port = 993
		}
	}
	if in.Port < 1 || in.Port > 65535 {
		errs.Add("port", "Der Port muss zwischen 1 und 65535 liegen.")
	}
	if in.Username == "" {
		errs.Add("username", "Bitte den Benutzernamen des Postfachs angeben.")
	} else if len(in.Username) > 255 || strings.ContainsAny(in.Username, "\x00\r\n") {
		errs.Add("username", "Der Benutzername darf höchstens 255 Zeichen lang sein und keine Zeilenumbrüche enthalten.")
	}
	if in.Password != nil {
		checkSMTPPassword(errs, *in.Password)
	}
	in.Folder = strings.TrimSpace(in.Folder)
	if in.Folder == "" {
		in.Folder = "INBOX"
	}
	if len(in.Folder) > 255 || smtpHasControl(in.Folder) {
		errs.Add("folder", "Der Ordnername darf höchstens 255 Zeichen lang sein und keine Steuerzeichen enthalten.")
	}
	if in.SMTPServerID != nil && *in.SMTPServerID <= 0 {
		errs.Add("smtp_server_id", "Unbekannter SMTP-Server.")
	}
	in.FromEmail = strings.TrimSpace(in.FromEmail)
	if in.FromEmail != "" {
		if e, err := ParseEmail(in.FromEmail); err != nil {
			errs.Add("from_email", "Bitte eine gültige Absenderadresse angeben.")
		} else {
			in.FromEmail = e
		}
	}
	in.FromName = strings.TrimSpace(in.FromName)
	if utf8.RuneCountInString(in.FromName) > maxSMTPNameLen || smtpHasControl(in.FromName) {
		errs.Add("from_name", fmt.Sprintf("Der Absendername darf höchstens %d Zeichen lang sein und keine Steuerzeichen enthalten.", maxSMTPNameLen))
	}
	if utf8.RuneCountInString(in.Signature) > maxSignatureLen {
		errs.Add("signature", fmt.Sprintf("Die Signatur darf höchstens %d Zeichen lang sein.", maxSignatureLen))
	}
	return errs.Err()
}

// inboxPasswordPurpose binds a sealed IMAP password to its account.
func inboxPasswordPurpose(accountID int64) string {
	return "inbox_settings.password:" + strconv.FormatInt(accountID, 10)
}

const inboxSettingsColumns = `account_id, host, port, username, password_sealed <> '' AS has_password, encryption, folder,
smtp_server_id, from_email, from_name, signature, auto_draft, uidvalidity, last_uid, last_sync_at, last_error, created_at, updated_at`

const selectInboxSettings = `SELECT ` + inboxSettingsColumns + ` FROM inbox_settings WHERE account_id = $1`

// InboxSettings returns the account's connection; ErrNotFound when none is set.
func (db *DB) InboxSettings(ctx context.Context, accountID int64) (InboxSettings, error) {
	var s InboxSettings
	if err := db.GetContext(ctx, &s, selectInboxSettings, accountID); err != nil {
		return InboxSettings{}, notFound("inbox settings", err)
	}
	return s, nil
}

const selectInboxSealed = `SELECT password_sealed FROM inbox_settings WHERE account_id = $1`

// InboxPassword opens the stored IMAP password ("" when none is stored).
func (db *DB) InboxPassword(ctx context.Context, box *secret.Box, accountID int64) (string, error) {
	var sealed string
	if err := db.GetContext(ctx, &sealed, selectInboxSealed, accountID); err != nil {
		return "", notFound("inbox password", err)
	}
	if sealed == "" {
		return "", nil
	}
	plain, err := box.Open(inboxPasswordPurpose(accountID), sealed)
	if err != nil {
		return "", fmt.Errorf("store: open inbox password: %w", err)
	}
	return string(plain), nil
}

const smtpServerOfAccount = `SELECT EXISTS (SELECT 1 FROM smtp_servers WHERE account_id = $1 AND id = $2)`

// upsertInboxSettings keeps the sync position unless the place it counts in
// (host, user, folder) changed.
const upsertInboxSettings = `INSERT INTO inbox_settings (account_id, host, port, username, password_sealed, encryption, folder,
  smtp_server_id, from_email, from_name, signature, auto_draft)
VALUES ($1, $2, $3, $4, COALESCE($5, ''), $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (account_id) DO UPDATE SET
  uidvalidity = CASE WHEN (inbox_settings.host, inbox_settings.username, inbox_settings.folder) = (EXCLUDED.host, EXCLUDED.username, EXCLUDED.folder)
    THEN inbox_settings.uidvalidity ELSE 0 END,
  last_uid = CASE WHEN (inbox_settings.host, inbox_settings.username, inbox_settings.folder) = (EXCLUDED.host, EXCLUDED.username, EXCLUDED.folder)
    THEN inbox_settings.last_uid ELSE 0 END,
  host = EXCLUDED.host, port = EXCLUDED.port, username = EXCLUDED.username,
  password_sealed = COALESCE($5, inbox_settings.password_sealed), encryption = EXCLUDED.encryption,
  folder = EXCLUDED.folder, smtp_server_id = EXCLUDED.smtp_server_id, from_email = EXCLUDED.from_email,
  from_name = EXCLUDED.from_name, signature = EXCLUDED.signature, auto_draft = EXCLUDED.auto_draft,
  last_error = '', next_sync_at = now(), updated_at = now()
RETURNING ` + inboxSettingsColumns

// SaveInboxSettings stores the (validated) connection, sealing a new password.
func (db *DB) SaveInboxSettings(ctx context.Context, box *secret.Box, accountID int64, in InboxSettingsInput) (InboxSettings, error) {
	var sealed *string
	if in.Password != nil {
		v := ""
		if *in.Password != "" {
			s, err := box.Seal(inboxPasswordPurpose(accountID), []byte(*in.Password))
			if err != nil {
				return InboxSettings{}, fmt.Errorf("store: seal inbox password: %w", err)
			}
			v = s
		}
		sealed = &v
	}
	var out InboxSettings
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if in.SMTPServerID != nil {
			var ok bool
			if err := tx.GetContext(ctx, &ok, smtpServerOfAccount, accountID, *in.SMTPServerID); err != nil {
				return fmt.Errorf("store: inbox smtp server: %w", err)
			}
			if !ok {
				return Invalid("smtp_server_id", "Unbekannter SMTP-Server.")
			}
		}
		return tx.GetContext(ctx, &out, upsertInboxSettings, accountID, in.Host, in.Port, in.Username, sealed, in.Encryption,
			in.Folder, in.SMTPServerID, in.FromEmail, in.FromName, in.Signature, in.AutoDraft)
	})
	if err != nil {
		return InboxSettings{}, err
	}
	return out, nil
}

// ---- sync lease ----

// InboxSyncInterval is how often each connected account is synced.
const InboxSyncInterval = 5 * time.Minute

// claimDueInbox takes the lease of the account whose sync is due longest.
const claimDueInbox = `UPDATE inbox_settings SET sync_lease_until = now() + $2 * interval '1 millisecond', sync_lease_owner = $1
WHERE account_id = (
  SELECT s.account_id FROM inbox_settings s
  WHERE s.next_sync_at <= now() AND (s.sync_lease_until IS NULL OR s.sync_lease_until < now())
    AND EXISTS (SELECT 1 FROM accounts a JOIN plans p ON p.name = a.plan WHERE a.id = s.account_id AND 'inbox' = ANY(p.features))
  ORDER BY s.next_sync_at LIMIT 1 FOR UPDATE OF s SKIP LOCKED)
RETURNING account_id`

// ClaimDueInbox leases the sync of one account that is due (and whose plan
// still has the inbox) to owner for lease; ok false when none is due or all
// due ones are leased.
func (db *DB) ClaimDueInbox(ctx context.Context, owner string, lease time.Duration) (accountID int64, ok bool, err error) {
	err = db.GetContext(ctx, &accountID, claimDueInbox, owner, lease.Milliseconds())
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: claim inbox sync: %w", err)
	}
	return accountID, true, nil
}

const claimInbox = `UPDATE inbox_settings SET sync_lease_until = now() + $3 * interval '1 millisecond', sync_lease_owner = $2
WHERE account_id = $1 AND (sync_lease_until IS NULL OR sync_lease_until < now() OR sync_lease_owner = $2)
RETURNING account_id`

// ClaimInbox leases the sync of one account (or renews owner's lease); ok
// false when another owner holds it.
func (db *DB) ClaimInbox(ctx context.Context, accountID int64, owner string, lease time.Duration) (bool, error) {
	var id int64
	err := db.GetContext(ctx, &id, claimInbox, accountID, owner, lease.Milliseconds())
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: claim inbox: %w", err)
	}
	return true, nil
}

const releaseInbox = `UPDATE inbox_settings SET sync_lease_until = NULL, sync_lease_owner = '',
  next_sync_at = now() + $3 * interval '1 millisecond', last_sync_at = now(), last_error = $4
WHERE account_id = $1 AND sync_lease_owner = $2`

// ReleaseInbox ends owner's lease, records the outcome and schedules the next sync.
func (db *DB) ReleaseInbox(ctx context.Context, accountID int64, owner string, next time.Duration, lastError string) error {
	if _, err := db.ExecContext(ctx, releaseInbox, accountID, owner, next.Milliseconds(), lastError); err != nil {
		return fmt.Errorf("store: release inbox: %w", err)
	}
	return nil
}

const requestInboxSync = `UPDATE inbox_settings SET next_sync_at = now() WHERE account_id = $1`

// RequestInboxSync makes the account's sync due now (POST /inbox/sync).
func (db *DB) RequestInboxSync(ctx context.Context, accountID int64) error {
	res, err := db.ExecContext(ctx, requestInboxSync, accountID)
	if err != nil {
		return fmt.Errorf("store: request inbox sync: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

const setInboxValidity = `UPDATE inbox_settings SET uidvalidity = $3, last_uid = 0 WHERE account_id = $1 AND sync_lease_owner = $2`

// ResetInboxValidity records a new UIDVALIDITY: the UIDs counted so far mean
// nothing any more, the sync starts from the first message (Message-IDs keep
// known messages from being stored twice).
func (db *DB) ResetInboxValidity(ctx context.Context, accountID int64, owner string, validity int64) error {
	if _, err := db.ExecContext(ctx, setInboxValidity, accountID, owner, validity); err != nil {
		return fmt.Errorf("store: inbox uidvalidity: %w", err)
	}
	return nil
}

// ---- messages ----

// InboxAddress is a sender or recipient.
type InboxAddress struct {
	Email string `json:"email"`
	Name  string `json:"name"`
}

// InboxAttachment is what is kept of an attachment: its metadata.
type InboxAttachment struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
}

// NewInboxMessage is a parsed message from the server.
type NewInboxMessage struct {
	UID         int64
	MessageID   string // without angle brackets; "" when the message has none
	InReplyTo   string
	References  []string
	From        InboxAddress
	To          []InboxAddress
	Subject     string
	Text        string
	HTML        string // sanitised
	Attachments []InboxAttachment
	Automated   bool // Auto-Submitted, List-Id or Precedence bulk/list/junk
	ReceivedAt  time.Time
	Seen        bool
}

// ThreadKey is the id that groups a message with its thread: the first
// reference (the thread's root), else In-Reply-To, else its own Message-ID.
func (m NewInboxMessage) ThreadKey() string {
	switch {
	case len(m.References) > 0:
		return m.References[0]
	case m.InReplyTo != "":
		return m.InReplyTo
	}
	return m.MessageID
}

// InboxMessage is a stored message.
type InboxMessage struct {
	ID          int64          `db:"id"`
	AccountID   int64          `db:"account_id"`
	Folder      string         `db:"folder"`
	UIDValidity int64          `db:"uidvalidity"`
	UID         int64          `db:"uid"`
	MessageID   sql.NullString `db:"message_id"`
	InReplyTo   string         `db:"in_reply_to"`
	References  pq.StringArray `db:"refs"`
	ThreadKey   string         `db:"thread_key"`
	FromEmail   string         `db:"from_email"`
	FromName    string         `db:"from_name"`
	ToJSON      []byte         `db:"to_addrs"`
	Subject     string         `db:"subject"`
	Text        string         `db:"text_body"`
	HTML        string         `db:"html_body"`
	AttachJSON  []byte         `db:"attachments"`
	Automated   bool           `db:"automated"`
	ReceivedAt  time.Time      `db:"received_at"`
	Read        bool           `db:"read"`
	Archived    bool           `db:"archived"`
	Labels      pq.StringArray `db:"labels"`
	ContactID   *int64         `db:"contact_id"`
	RepliedAt   *time.Time     `db:"replied_at"`
	SeenSynced  bool           `db:"seen_synced"`
}

// To decodes the recipients.
func (m InboxMessage) To() []InboxAddress {
	var out []InboxAddress
	_ = json.Unmarshal(m.ToJSON, &out)
	if out == nil {
		out = []InboxAddress{}
	}
	return out
}

// Attachments decodes the attachments' metadata.
func (m InboxMessage) Attachments() []InboxAttachment {
	var out []InboxAttachment
	_ = json.Unmarshal(m.AttachJSON, &out)
	if out == nil {
		out = []InboxAttachment{}
	}
	return out
}

// inboxSummaryColumns leave out the bodies: the list shows none.
const inboxSummaryColumns = `id, account_id, folder, uidvalidity, uid, message_id, in_reply_to, refs, thread_key, from_email, from_name,
to_addrs, subject, ''::text AS text_body, ''::text AS html_body, attachments, automated, received_at, read, archived, labels,
contact_id, replied_at, seen_synced`

const inboxMessageColumns = `id, account_id, folder, uidvalidity, uid, message_id, in_reply_to, refs, thread_key, from_email, from_name,
to_addrs, subject, text_body, html_body, attachments, automated, received_at, read, archived, labels,
contact_id, replied_at, seen_synced`

// InboxReceivedEvent is the data of inbox.received.
type InboxReceivedEvent struct {
	Message InboxReceivedMessage `json:"message"`
}

// InboxReceivedMessage is the message inside inbox.received; from is the
// sender's address, as the webhook catalogue's example shows it.
type InboxReceivedMessage struct {
	ID         int64     `json:"id"`
	From       string    `json:"from"`
	Subject    string    `json:"subject"`
	ReceivedAt EventTime `json:"received_at"`
}

// insertInboxMessages stores a batch; a message already stored (by place or
// Message-ID) is skipped, so only the new ones come back, and only they get
// an event and a pending entry, in this same transaction.
const insertInboxMessages = `INSERT INTO inbox_messages (account_id, folder, uidvalidity, uid, message_id, in_reply_to, refs, thread_key,
  from_email, from_name, to_addrs, subject, text_body, html_body, attachments, automated, received_at, read, contact_id, search)
SELECT $1, $2, $3, x.uid, NULLIF(x.message_id, ''), x.in_reply_to, ARRAY(SELECT jsonb_array_elements_text(x.refs)), x.thread_key,
  x.from_email, x.from_name, x.to_addrs, x.subject, x.text_body, x.html_body, x.attachments, x.automated, x.received_at, x.seen,
  (SELECT c.id FROM contacts c WHERE c.account_id = $1 AND c.email = x.from_email),
  lower(x.subject || ' ' || x.from_email || ' ' || x.from_name || ' ' || left(x.text_body, 4000))
FROM jsonb_to_recordset($4::jsonb) AS x(uid bigint, message_id text, in_reply_to text, refs jsonb, thread_key text,
  from_email text, from_name text, to_addrs jsonb, subject text, text_body text, html_body text, attachments jsonb,
  automated boolean, received_at timestamptz, seen boolean, n int)
ORDER BY x.n
ON CONFLICT DO NOTHING
RETURNING id, from_email, from_name, subject, received_at`

const insertInboxPending = `INSERT INTO inbox_pending (message_id, account_id) SELECT unnest($2::bigint[]), $1`

const advanceInbox = `UPDATE inbox_settings SET last_uid = GREATEST(last_uid, $3), sync_lease_until = now() + $4 * interval '1 millisecond'
WHERE account_id = $1 AND sync_lease_owner = $2`

type inboxRow struct {
	UID         int64             `json:"uid"`
	MessageID   string            `json:"message_id"`
	InReplyTo   string            `json:"in_reply_to"`
	Refs        []string          `json:"refs"`
	ThreadKey   string            `json:"thread_key"`
	FromEmail   string            `json:"from_email"`
	FromName    string            `json:"from_name"`
	To          []InboxAddress    `json:"to_addrs"`
	Subject     string            `json:"subject"`
	Text        string            `json:"text_body"`
	HTML        string            `json:"html_body"`
	Attachments []InboxAttachment `json:"attachments"`
	Automated   bool              `json:"automated"`
	ReceivedAt  time.Time         `json:"received_at"`
	Seen        bool              `json:"seen"`
	N           int               `json:"n"`
}

// ErrLeaseLost means another process took over a sync whose lease ran out.
var ErrLeaseLost = errors.New("store: inbox sync lease lost")

// StoreInboxMessages stores a batch of synced messages in one transaction:
// the new ones (by place and Message-ID), an inbox.received event for each
// and its pending entry for rules, and the sync position up to lastUID. It
// returns the ids of the messages that were new. The transaction moves the
// position only while owner holds the lease (else ErrLeaseLost, nothing stored
// by this call).
func (db *DB) StoreInboxMessages(ctx context.Context, accountID int64, owner, folder string, validity, lastUID int64, lease time.Duration, msgs []NewInboxMessage) ([]int64, error) {
	rows := make([]inboxRow, len(msgs))
	for i, m := range msgs {
		refs := m.References
		if refs == nil {
			refs = []string{}
		}
		to := m.To
		if to == nil {
			to = []InboxAddress{}
		}
		att := m.Attachments
		if att == nil {
			att = []InboxAttachment{}
		}
		rows[i] = inboxRow{UID: m.UID, MessageID: m.MessageID, InReplyTo: m.InReplyTo, Refs: refs, ThreadKey: m.ThreadKey(),
			FromEmail: m.From.Email, FromName: m.From.Name, To: to, Subject: m.Subject, Text: m.Text, HTML: m.HTML,
			Attachments: att, Automated: m.Automated, ReceivedAt: m.ReceivedAt, Seen: m.Seen, N: i}
	}
	payload, err := json.Marshal(rows)
	if err != nil {
		return nil, fmt.Errorf("store: inbox batch: %w", err)
	}
	var ids []int64
	err = db.WithTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, advanceInbox, accountID, owner, lastUID, lease.Milliseconds())
		if err != nil {
			return fmt.Errorf("store: advance inbox: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrLeaseLost
		}
		if len(rows) == 0 {
			return nil
		}
		rs, err := tx.QueryxContext(ctx, insertInboxMessages, accountID, folder, validity, string(payload))
		if err != nil {
			return fmt.Errorf("store: insert inbox messages: %w", err)
		}
		var events []Event
		for rs.Next() {
			var (
				id       int64
				from     InboxAddress
				subject  string
				received time.Time
			)
			if err := rs.Scan(&id, &from.Email, &from.Name, &subject, &received); err != nil {
				rs.Close()
				return fmt.Errorf("store: insert inbox messages: %w", err)
			}
			ids = append(ids, id)
			events = append(events, Event{Name: EventInboxReceived, Data: InboxReceivedEvent{Message: InboxReceivedMessage{
				ID: id, From: from.Email, Subject: subject, ReceivedAt: EventTime(received)}}})
		}
		if err := rs.Close(); err != nil {
			return err
		}
		if err := rs.Err(); err != nil {
			return fmt.Errorf("store: insert inbox messages: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, insertInboxPending, accountID, pq.Array(ids)); err != nil {
			return fmt.Errorf("store: inbox pending: %w", err)
		}
		_, err = EmitAll(ctx, tx, accountID, events)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// InboxFilter filters GET /inbox/messages.
type InboxFilter struct {
	Status string // unread, open, archived, all ("": open)
	Q      string
	Label  string
}

// Validate checks the filter.
func (f *InboxFilter) Validate() error {
	errs := Errs{}
	if f.Status == "" {
		f.Status = InboxStatusOpen
	}
	switch f.Status {
	case InboxStatusUnread, InboxStatusOpen, InboxStatusArchived, InboxStatusAll:
	default:
		errs.Add("status", "Erlaubt sind unread, open, archived und all.")
	}
	f.Q = strings.TrimSpace(f.Q)
	if utf8.RuneCountInString(f.Q) > 200 {
		errs.Add("q", "Der Suchbegriff darf höchstens 200 Zeichen lang sein.")
	}
	if utf8.RuneCountInString(f.Label) > 100 {
		errs.Add("label", "Das Label darf höchstens 100 Zeichen lang sein.")
	}
	return errs.Err()
}

// InboxCountCap is how many messages a listing counts for its total (the API
// log's rule): an exact count of a large mailbox would cost every page more
// than the page itself. A total at the cap reads "at least".
const InboxCountCap = 10_000

// InboxSearchCountCap is the cap of a searched or labelled listing: its
// matches are found by reading rows, not an index's order, so counting 10,000
// of them would cost more than the 50 ms a page may take.
const InboxSearchCountCap = 1_000

// InboxMessages lists one page of the account's messages, newest first; the
// total stops at InboxCountCap (InboxSearchCountCap with q or label).
func (db *DB) InboxMessages(ctx context.Context, accountID int64, f InboxFilter, p Page) ([]InboxMessage, int, error) {
	conds := []string{"account_id = $1"}
	args := []any{accountID}
	switch f.Status {
	case InboxStatusUnread:
		conds = append(conds, "NOT read AND NOT archived")
	case InboxStatusOpen, "":
		conds = append(conds, "NOT archived")
	case InboxStatusArchived:
		conds = append(conds, "archived")
	}
	if f.Q != "" {
		var match string
		match, args = likeSearch("search", f.Q, args)
		conds = append(conds, match)
	}
	countCond := strings.Join(conds, " AND ")
	if f.Label != "" {
		// The page walks the newest-first index and filters (= ANY), which for
		// a common label finds 50 rows long before sorting all of them would;
		// the count takes the labels' GIN index (@>) instead of a table scan.
		args = append(args, f.Label)
		conds = append(conds, fmt.Sprintf("$%d = ANY(labels)", len(args)))
		countCond += fmt.Sprintf(" AND labels @> ARRAY[$%d::text]", len(args))
	}
	cond := strings.Join(conds, " AND ")
	countCap := InboxCountCap
	if f.Q != "" || f.Label != "" {
		countCap = InboxSearchCountCap
	}
	total, _, err := countUpTo(ctx, db, "inbox_messages", countCond, args, countCap)
	if err != nil {
		return nil, 0, fmt.Errorf("store: inbox messages: %w", err)
	}
	out := make([]InboxMessage, 0, p.capacity())
	q := fmt.Sprintf(`SELECT %s FROM inbox_messages WHERE %s ORDER BY received_at DESC, id DESC LIMIT $%d OFFSET $%d`,
		inboxSummaryColumns, cond, len(args)+1, len(args)+2)
	if err := db.SelectContext(ctx, &out, q, append(args, p.PerPage, p.Offset())...); err != nil {
		return nil, 0, fmt.Errorf("store: inbox messages: %w", err)
	}
	return out, total, nil
}

const selectInboxMessage = `SELECT ` + inboxMessageColumns + ` FROM inbox_messages WHERE account_id = $1 AND id = $2`

// InboxMessage returns one message of the account.
func (db *DB) InboxMessage(ctx context.Context, accountID, id int64) (InboxMessage, error) {
	var m InboxMessage
	if err := db.GetContext(ctx, &m, selectInboxMessage, accountID, id); err != nil {
		return InboxMessage{}, notFound("inbox message", err)
	}
	return m, nil
}

const selectInboxThread = `SELECT ` + inboxMessageColumns + ` FROM inbox_messages
WHERE account_id = $1 AND (thread_key = $2 OR message_id = $2) ORDER BY received_at, id LIMIT 50`

// InboxThread returns the messages of m's thread (References/In-Reply-To),
// oldest first, m included.
func (db *DB) InboxThread(ctx context.Context, accountID int64, m InboxMessage) ([]InboxMessage, error) {
	if m.ThreadKey == "" {
		return []InboxMessage{m}, nil
	}
	var out []InboxMessage
	if err := db.SelectContext(ctx, &out, selectInboxThread, accountID, m.ThreadKey); err != nil {
		return nil, fmt.Errorf("store: inbox thread: %w", err)
	}
	return out, nil
}

// InboxPatch is PATCH /inbox/messages/{id}: nil fields stay.
type InboxPatch struct {
	Read     *bool
	Archived *bool
	Labels   *[]string
}

// Validate checks the labels.
func (p *InboxPatch) Validate() error {
	if p.Labels == nil {
		return nil
	}
	errs := Errs{}
	seen := map[string]bool{}
	var out []string
	for _, l := range *p.Labels {
		l = strings.TrimSpace(l)
		if l == "" || utf8.RuneCountInString(l) > 100 || smtpHasControl(l) {
			errs.Add("labels", "Labels sind 1 bis 100 Zeichen lang, ohne Steuerzeichen.")
			break
		}
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	if len(out) > 50 {
		errs.Add("labels", "Höchstens 50 Labels je Nachricht.")
	}
	if out == nil {
		out = []string{}
	}
	*p.Labels = out
	return errs.Err()
}

// A changed read flag is marked for write-back (seen_synced false) in the same
// statement.
const patchInboxMessage = `UPDATE inbox_messages SET
  seen_synced = CASE WHEN $3::boolean IS NOT NULL AND $3::boolean <> read THEN false ELSE seen_synced END,
  read = COALESCE($3, read), archived = COALESCE($4, archived), labels = COALESCE($5, labels)
WHERE account_id = $1 AND id = $2
RETURNING ` + inboxMessageColumns

// PatchInboxMessage changes a message's flags.
func (db *DB) PatchInboxMessage(ctx context.Context, accountID, id int64, p InboxPatch) (InboxMessage, error) {
	var labels any
	if p.Labels != nil {
		labels = pq.Array(*p.Labels)
	}
	var m InboxMessage
	if err := db.GetContext(ctx, &m, patchInboxMessage, accountID, id, p.Read, p.Archived, labels); err != nil {
		return InboxMessage{}, notFound("patch inbox message", err)
	}
	return m, nil
}

const addInboxLabel = `UPDATE inbox_messages SET labels = CASE WHEN $3 = ANY(labels) THEN labels ELSE array_append(labels, $3) END
WHERE account_id = $1 AND id = $2`

// AddInboxLabel adds one label (rules).
func (db *DB) AddInboxLabel(ctx context.Context, accountID, id int64, label string) error {
	if _, err := db.ExecContext(ctx, addInboxLabel, accountID, id, label); err != nil {
		return fmt.Errorf("store: inbox label: %w", err)
	}
	return nil
}

// UnsyncedSeen is a read flag that waits to be written to the server.
type UnsyncedSeen struct {
	ID          int64  `db:"id"`
	Folder      string `db:"folder"`
	UIDValidity int64  `db:"uidvalidity"`
	UID         int64  `db:"uid"`
	Read        bool   `db:"read"`
}

const selectUnsyncedSeen = `SELECT id, folder, uidvalidity, uid, read FROM inbox_messages
WHERE account_id = $1 AND NOT seen_synced ORDER BY id LIMIT $2`

// UnsyncedSeen returns read flags that wait for write-back.
func (db *DB) UnsyncedSeen(ctx context.Context, accountID int64, limit int) ([]UnsyncedSeen, error) {
	var out []UnsyncedSeen
	if err := db.SelectContext(ctx, &out, selectUnsyncedSeen, accountID, limit); err != nil {
		return nil, fmt.Errorf("store: unsynced seen: %w", err)
	}
	return out, nil
}

const markSeenSynced = `UPDATE inbox_messages SET seen_synced = true WHERE account_id = $1 AND id = $2 AND read = $3`

// MarkSeenSynced records that the server has the read flag read (unless it
// changed again meanwhile).
func (db *DB) MarkSeenSynced(ctx context.Context, accountID, id int64, read bool) error {
	if _, err := db.ExecContext(ctx, markSeenSynced, accountID, id, read); err != nil {
		return fmt.Errorf("store: seen synced: %w", err)
	}
	return nil
}

// ---- replies ----

// InboxReply is a reply sent from the inbox.
type InboxReply struct {
	ID        int64     `db:"id"`
	AccountID int64     `db:"account_id"`
	MessageID int64     `db:"message_id"`
	ToEmail   string    `db:"to_email"`
	Subject   string    `db:"subject"`
	Text      string    `db:"text_body"`
	HTML      string    `db:"html_body"`
	Source    string    `db:"source"`
	MailID    string    `db:"mail_id"`
	SentAt    time.Time `db:"sent_at"`
}

// InboxRepliedEvent is the data of inbox.replied.
type InboxRepliedEvent struct {
	MessageID int64  `json:"message_id"`
	ReplyID   int64  `json:"reply_id"`
	To        string `json:"to"`
	Subject   string `json:"subject"`
	Source    string `json:"source"`
}

const insertInboxReply = `INSERT INTO inbox_replies (account_id, message_id, to_email, subject, text_body, html_body, source, mail_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING id, account_id, message_id, to_email, subject, text_body, html_body, source, mail_id, sent_at`

const markInboxReplied = `UPDATE inbox_messages SET replied_at = $3, first_replied_at = COALESCE(first_replied_at, $3)
WHERE account_id = $1 AND id = $2`

const approveInboxDraft = `UPDATE inbox_drafts SET reply_id = $3 WHERE account_id = $1 AND id = $2`

// RecordInboxReply records a sent reply: the row, replied_at and inbox.replied
// in one transaction; draftID (when not 0) is linked to it.
func (db *DB) RecordInboxReply(ctx context.Context, r InboxReply, draftID int64) (InboxReply, error) {
	var out InboxReply
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &out, insertInboxReply, r.AccountID, r.MessageID, r.ToEmail, r.Subject, r.Text, r.HTML, r.Source, r.MailID); err != nil {
			return fmt.Errorf("store: inbox reply: %w", err)
		}
		if _, err := tx.ExecContext(ctx, markInboxReplied, r.AccountID, r.MessageID, out.SentAt); err != nil {
			return fmt.Errorf("store: inbox replied: %w", err)
		}
		if draftID != 0 {
			if _, err := tx.ExecContext(ctx, approveInboxDraft, r.AccountID, draftID, out.ID); err != nil {
				return fmt.Errorf("store: inbox draft reply: %w", err)
			}
		}
		_, err := Emit(ctx, tx, r.AccountID, EventInboxReplied, InboxRepliedEvent{
			MessageID: r.MessageID, ReplyID: out.ID, To: out.ToEmail, Subject: out.Subject, Source: out.Source})
		return err
	})
	return out, err
}

const claimAutoReply = `INSERT INTO inbox_auto_replies (account_id, email, day) VALUES ($1, $2, (now() AT TIME ZONE 'Europe/Berlin')::date)
ON CONFLICT DO NOTHING`

// ClaimAutoReply takes the one automatic reply of the day (Europe/Berlin) to
// email; false when it was taken already, by any process.
func (db *DB) ClaimAutoReply(ctx context.Context, accountID int64, email string) (bool, error) {
	res, err := db.ExecContext(ctx, claimAutoReply, accountID, email)
	if err != nil {
		return false, fmt.Errorf("store: claim auto reply: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

const releaseAutoReply = `DELETE FROM inbox_auto_replies WHERE account_id = $1 AND email = $2 AND day = (now() AT TIME ZONE 'Europe/Berlin')::date`

// ReleaseAutoReply gives the day's claim back after a failed send.
func (db *DB) ReleaseAutoReply(ctx context.Context, accountID int64, email string) error {
	if _, err := db.ExecContext(ctx, releaseAutoReply, accountID, email); err != nil {
		return fmt.Errorf("store: release auto reply: %w", err)
	}
	return nil
}

// ---- pending (rules) ----

const claimInboxPending = `UPDATE inbox_pending SET run_at = now() + interval '10 minutes', attempts = attempts + 1
WHERE message_id IN (
  SELECT message_id FROM inbox_pending WHERE run_at <= now() AND ($1 = 0 OR account_id = $1)
  ORDER BY message_id LIMIT $2 FOR UPDATE SKIP LOCKED)
RETURNING message_id, account_id, attempts`

// PendingInbox is a new message whose rules have yet to run.
type PendingInbox struct {
	MessageID int64 `db:"message_id"`
	AccountID int64 `db:"account_id"`
	Attempts  int   `db:"attempts"`
}

// ClaimInboxPending leases up to limit new messages (of one account, or any
// when accountID is 0) for their rules for ten minutes.
func (db *DB) ClaimInboxPending(ctx context.Context, accountID int64, limit int) ([]PendingInbox, error) {
	var out []PendingInbox
	if err := db.SelectContext(ctx, &out, claimInboxPending, accountID, limit); err != nil {
		return nil, fmt.Errorf("store: claim inbox pending: %w", err)
	}
	return out, nil
}

const deleteInboxPending = `DELETE FROM inbox_pending WHERE message_id = ANY($1)`

// DoneInboxPending removes processed messages from the pending set.
func (db *DB) DoneInboxPending(ctx context.Context, messageIDs []int64) error {
	if len(messageIDs) == 0 {
		return nil
	}
	if _, err := db.ExecContext(ctx, deleteInboxPending, pq.Array(messageIDs)); err != nil {
		return fmt.Errorf("store: inbox pending done: %w", err)
	}
	return nil
}

// ---- rules ----

// InboxRule is a rule applied in order to each new message.
type InboxRule struct {
	ID              int64     `db:"id"`
	AccountID       int64     `db:"account_id"`
	Position        int       `db:"position"`
	Name            string    `db:"name"`
	FromContains    string    `db:"from_contains"`
	SubjectContains string    `db:"subject_contains"`
	BodyContains    string    `db:"body_contains"`
	Action          string    `db:"action"`
	Value           string    `db:"value"`
	Text            string    `db:"text"`
	CreatedAt       time.Time `db:"created_at"`
}

// Rule actions.
const (
	RuleLabel    = "label"
	RuleArchive  = "archive"
	RuleMarkRead = "mark_read"
	RuleReply    = "reply"
	RuleAIDraft  = "ai_draft"
)

// Matches reports whether every given condition holds for m (case-insensitive).
func (r InboxRule) Matches(m InboxMessage) bool {
	has := func(hay, needle string) bool {
		return needle == "" || strings.Contains(strings.ToLower(hay), strings.ToLower(needle))
	}
	return has(m.FromEmail+" "+m.FromName, r.FromContains) && has(m.Subject, r.SubjectContains) && has(m.Text, r.BodyContains)
}

// NewInboxRule is the body of POST /inbox/rules.
type NewInboxRule struct {
	Name            string
	FromContains    string
	SubjectContains string
	BodyContains    string
	Action          string
	Value           string
	Text            string
	Position        *int // nil: last
}

// Validate reports every invalid field in German.
func (r *NewInboxRule) Validate() error {
	errs := Errs{}
	r.Name = strings.TrimSpace(r.Name)
	if r.Name == "" || utf8.RuneCountInString(r.Name) > 100 {
		errs.Add("name", "Bitte einen Namen mit höchstens 100 Zeichen angeben.")
	}
	for field, v := range map[string]string{"match.from_contains": r.FromContains, "match.subject_contains": r.SubjectContains, "match.body_contains": r.BodyContains} {
		if utf8.RuneCountInString(v) > 200 {
			errs.Add(field, "Höchstens 200 Zeichen.")
		}
	}
	switch r.Action {
	case RuleLabel:
		r.Value = strings.TrimSpace(r.Value)
		if r.Value == "" || utf8.RuneCountInString(r.Value) > 100 || smtpHasControl(r.Value) {
			errs.Add("value", "Bitte das Label angeben (höchstens 100 Zeichen).")
		}
	case RuleReply:
		if strings.TrimSpace(r.Text) == "" || utf8.RuneCountInString(r.Text) > 20000 {
			errs.Add("text", "Bitte den Antworttext angeben (höchstens 20.000 Zeichen).")
		}
	case RuleArchive, RuleMarkRead, RuleAIDraft:
	default:
		errs.Add("action", "Erlaubt sind label, archive, mark_read, reply und ai_draft.")
	}
	if r.Position != nil && *r.Position < 1 {
		errs.Add("position", "Die Position beginnt bei 1.")
	}
	return errs.Err()
}

const inboxRuleColumns = `id, account_id, position, name, from_contains, subject_contains, body_contains, action, value, text, created_at`

const selectInboxRules = `SELECT ` + inboxRuleColumns + ` FROM inbox_rules WHERE account_id = $1 ORDER BY position, id`

// InboxRules returns the account's rules in order.
func (db *DB) InboxRules(ctx context.Context, accountID int64) ([]InboxRule, error) {
	out := []InboxRule{}
	if err := db.SelectContext(ctx, &out, selectInboxRules, accountID); err != nil {
		return nil, fmt.Errorf("store: inbox rules: %w", err)
	}
	return out, nil
}

const lockInboxRules = `SELECT id FROM accounts WHERE id = $1 FOR NO KEY UPDATE`

const shiftInboxRules = `UPDATE inbox_rules SET position = position + 1 WHERE account_id = $1 AND position >= $2`

const nextInboxRulePosition = `SELECT COALESCE(max(position), 0) + 1 FROM inbox_rules WHERE account_id = $1`

const insertInboxRule = `INSERT INTO inbox_rules (account_id, position, name, from_contains, subject_contains, body_contains, action, value, text)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ` + inboxRuleColumns

// CreateInboxRule adds a rule at its position (the end by default).
func (db *DB) CreateInboxRule(ctx context.Context, accountID int64, r NewInboxRule) (InboxRule, error) {
	if err := r.Validate(); err != nil {
		return InboxRule{}, err
	}
	var out InboxRule
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var id int64
		if err := tx.GetContext(ctx, &id, lockInboxRules, accountID); err != nil {
			return fmt.Errorf("store: lock inbox rules: %w", err)
		}
		var next int
		if err := tx.GetContext(ctx, &next, nextInboxRulePosition, accountID); err != nil {
			return fmt.Errorf("store: inbox rule position: %w", err)
		}
		pos := next
		if r.Position != nil && *r.Position < next {
			pos = *r.Position
			if _, err := tx.ExecContext(ctx, shiftInboxRules, accountID, pos); err != nil {
				return fmt.Errorf("store: shift inbox rules: %w", err)
			}
		}
		return tx.GetContext(ctx, &out, insertInboxRule, accountID, pos, r.Name, r.FromContains, r.SubjectContains, r.BodyContains, r.Action, r.Value, r.Text)
	})
	return out, err
}

const deleteInboxRule = `DELETE FROM inbox_rules WHERE account_id = $1 AND id = $2`

// DeleteInboxRule deletes a rule.
func (db *DB) DeleteInboxRule(ctx context.Context, accountID, id int64) error {
	res, err := db.ExecContext(ctx, deleteInboxRule, accountID, id)
	if err != nil {
		return fmt.Errorf("store: delete inbox rule: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// ---- drafts ----

// InboxDraft is an AI reply draft.
type InboxDraft struct {
	ID        int64      `db:"id"`
	AccountID int64      `db:"account_id"`
	MessageID int64      `db:"message_id"`
	Text      string     `db:"text"`
	Status    string     `db:"status"`
	Cost      Money      `db:"cost"`
	Model     string     `db:"model"`
	ReplyID   *int64     `db:"reply_id"`
	CreatedAt time.Time  `db:"created_at"`
	DecidedAt *time.Time `db:"decided_at"`
}

// Draft statuses.
const (
	DraftPending   = "pending"
	DraftApproved  = "approved"
	DraftDiscarded = "discarded"
)

const inboxDraftColumns = `id, account_id, message_id, text, status, cost, model, reply_id, created_at, decided_at`

const insertInboxDraft = `INSERT INTO inbox_drafts (account_id, message_id, text, cost, model) VALUES ($1, $2, $3, $4, $5)
RETURNING ` + inboxDraftColumns

// InsertInboxDraft stores a draft inside tx (the AI debit's transaction).
func InsertInboxDraft(ctx context.Context, tx *sqlx.Tx, accountID, messageID int64, text string, cost Money, model string) (InboxDraft, error) {
	var d InboxDraft
	if err := tx.GetContext(ctx, &d, insertInboxDraft, accountID, messageID, text, int64(cost), model); err != nil {
		return InboxDraft{}, fmt.Errorf("store: insert inbox draft: %w", err)
	}
	return d, nil
}

// InboxDrafts lists the account's drafts, newest first; status "" is all.
func (db *DB) InboxDrafts(ctx context.Context, accountID int64, status string, p Page) ([]InboxDraft, int, error) {
	cond := "account_id = $1 AND ($2 = '' OR status = $2)"
	args := []any{accountID, status}
	total, _, err := countUpTo(ctx, db, "inbox_drafts", cond, args, InboxCountCap)
	if err != nil {
		return nil, 0, fmt.Errorf("store: inbox drafts: %w", err)
	}
	out := make([]InboxDraft, 0, p.capacity())
	q := `SELECT ` + inboxDraftColumns + ` FROM inbox_drafts WHERE ` + cond + ` ORDER BY id DESC LIMIT $3 OFFSET $4`
	if err := db.SelectContext(ctx, &out, q, append(args, p.PerPage, p.Offset())...); err != nil {
		return nil, 0, fmt.Errorf("store: inbox drafts: %w", err)
	}
	return out, total, nil
}

const selectInboxDraft = `SELECT ` + inboxDraftColumns + ` FROM inbox_drafts WHERE account_id = $1 AND id = $2`

// InboxDraft returns one draft.
func (db *DB) InboxDraft(ctx context.Context, accountID, id int64) (InboxDraft, error) {
	var d InboxDraft
	if err := db.GetContext(ctx, &d, selectInboxDraft, accountID, id); err != nil {
		return InboxDraft{}, notFound("inbox draft", err)
	}
	return d, nil
}

const decideInboxDraft = `UPDATE inbox_drafts SET status = $4, decided_at = CASE WHEN $4 = 'pending' THEN NULL ELSE now() END,
  text = COALESCE($5, text)
WHERE account_id = $1 AND id = $2 AND status = $3
RETURNING ` + inboxDraftColumns

// DecideInboxDraft moves a draft from status from to status to (optionally
// with new text); a ConflictError when it is not in from, ErrNotFound when it
// does not exist.
func (db *DB) DecideInboxDraft(ctx context.Context, accountID, id int64, from, to string, text *string) (InboxDraft, error) {
	var d InboxDraft
	err := db.GetContext(ctx, &d, decideInboxDraft, accountID, id, from, to, text)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := db.InboxDraft(ctx, accountID, id); err != nil {
			return InboxDraft{}, err
		}
		return InboxDraft{}, &ConflictError{Reason: "draft_not_pending", Message: "Der Entwurf wurde bereits gesendet oder verworfen."}
	}
	if err != nil {
		return InboxDraft{}, fmt.Errorf("store: decide inbox draft: %w", err)
	}
	return d, nil
}

// ---- metrics ----

// InboxMetrics are the figures of GET /inbox/metrics.
type InboxMetrics struct {
	Received                int      `db:"received"`
	Unread                  int      `db:"unread"`
	Replied                 int      `db:"replied"`
	AvgFirstResponseMinutes *float64 `db:"avg_first_response_minutes"`
	AIDrafts                int      `db:"ai_drafts"`
	AIDraftsApproved        int      `db:"ai_drafts_approved"`
}

const selectInboxMetrics = `SELECT
  (SELECT count(*) FROM inbox_messages WHERE account_id = $1 AND received_at >= $2 AND received_at < $3) AS received,
  (SELECT count(*) FROM inbox_messages WHERE account_id = $1 AND received_at >= $2 AND received_at < $3 AND NOT read AND NOT archived) AS unread,
  (SELECT count(*) FROM inbox_messages WHERE account_id = $1 AND received_at >= $2 AND received_at < $3 AND first_replied_at IS NOT NULL) AS replied,
  (SELECT round((avg(extract(epoch FROM first_replied_at - received_at)) / 60)::numeric, 1)::float8 FROM inbox_messages
     WHERE account_id = $1 AND received_at >= $2 AND received_at < $3 AND first_replied_at IS NOT NULL) AS avg_first_response_minutes,
  (SELECT count(*) FROM inbox_drafts WHERE account_id = $1 AND created_at >= $2 AND created_at < $3) AS ai_drafts,
  (SELECT count(*) FROM inbox_drafts WHERE account_id = $1 AND created_at >= $2 AND created_at < $3 AND status = 'approved') AS ai_drafts_approved`

// InboxMetrics returns the figures for messages received (and drafts made)
// in [from, to).
func (db *DB) InboxMetrics(ctx context.Context, accountID int64, from, to time.Time) (InboxMetrics, error) {
	var m InboxMetrics
	if err := db.GetContext(ctx, &m, selectInboxMetrics, accountID, from, to); err != nil {
		return InboxMetrics{}, fmt.Errorf("store: inbox metrics: %w", err)
	}
	return m, nil
}

// InboxDay is one day of the metrics chart.
type InboxDay struct {
	Day      time.Time `db:"day"`
	Received int       `db:"received"`
	Replied  int       `db:"replied"`
}

const selectInboxDays = `SELECT d::date::timestamptz AS day,
  (SELECT count(*) FROM inbox_messages m WHERE m.account_id = $1 AND (m.received_at AT TIME ZONE 'Europe/Berlin')::date = d::date) AS received,
  (SELECT count(*) FROM inbox_replies r WHERE r.account_id = $1 AND (r.sent_at AT TIME ZONE 'Europe/Berlin')::date = d::date) AS replied
FROM generate_series(($2::timestamptz AT TIME ZONE 'Europe/Berlin')::date, ($3::timestamptz AT TIME ZONE 'Europe/Berlin')::date, interval '1 day') AS d`

// InboxDays returns received and replied per day (Europe/Berlin) for the chart.
func (db *DB) InboxDays(ctx context.Context, accountID int64, from, to time.Time) ([]InboxDay, error) {
	var out []InboxDay
	if err := db.SelectContext(ctx, &out, selectInboxDays, accountID, from, to); err != nil {
		return nil, fmt.Errorf("store: inbox days: %w", err)
	}
	return out, nil
}

// InboxLabels returns the labels in use, most used first.
func (db *DB) InboxLabels(ctx context.Context, accountID int64) ([]string, error) {
	out := []string{}
	const q = `SELECT l FROM inbox_messages, unnest(labels) AS l WHERE account_id = $1 GROUP BY l ORDER BY count(*) DESC, l LIMIT 50`
	if err := db.SelectContext(ctx, &out, q, accountID); err != nil {
		return nil, fmt.Errorf("store: inbox labels: %w", err)
	}
	return out, nil
}

// ContactForInbox is what a draft prompt knows of the sender.
type ContactForInbox struct {
	Email     string `db:"email"`
	FirstName string `db:"first_name"`
	LastName  string `db:"last_name"`
	Status    string `db:"status"`
}

// InboxContact returns the contact of a message's sender.
func (db *DB) InboxContact(ctx context.Context, accountID, contactID int64) (ContactForInbox, error) {
	var c ContactForInbox
	const q = `SELECT email, first_name, last_name, status FROM contacts WHERE account_id = $1 AND id = $2`
	if err := db.GetContext(ctx, &c, q, accountID, contactID); err != nil {
		return ContactForInbox{}, notFound("inbox contact", err)
	}
	return c, nil
}

const selectMessageDrafts = `SELECT ` + inboxDraftColumns + ` FROM inbox_drafts WHERE account_id = $1 AND message_id = $2 AND status = 'pending' ORDER BY id DESC`

// PendingDraftsOf returns the pending drafts of one message, newest first.
func (db *DB) PendingDraftsOf(ctx context.Context, accountID, messageID int64) ([]InboxDraft, error) {
	out := []InboxDraft{}
	if err := db.SelectContext(ctx, &out, selectMessageDrafts, accountID, messageID); err != nil {
		return nil, fmt.Errorf("store: message drafts: %w", err)
	}
	return out, nil
}

const selectRepliesOf = `SELECT id, account_id, message_id, to_email, subject, text_body, html_body, source, mail_id, sent_at
FROM inbox_replies WHERE account_id = $1 AND message_id = ANY($2) ORDER BY sent_at, id`

// RepliesOf returns the replies sent to the given messages, oldest first.
func (db *DB) RepliesOf(ctx context.Context, accountID int64, messageIDs []int64) ([]InboxReply, error) {
	out := []InboxReply{}
	if err := db.SelectContext(ctx, &out, selectRepliesOf, accountID, pq.Array(messageIDs)); err != nil {
		return nil, fmt.Errorf("store: inbox replies: %w", err)
	}
	return out, nil
}

const countUnread = `SELECT count(*) FROM (SELECT 1 FROM inbox_messages WHERE account_id = $1 AND NOT read AND NOT archived LIMIT 10000) x`

// InboxUnread counts unread open messages (up to 10,000), for the portal.
func (db *DB) InboxUnread(ctx context.Context, accountID int64) (int, error) {
	var n int
	if err := db.GetContext(ctx, &n, countUnread, accountID); err != nil {
		return 0, fmt.Errorf("store: inbox unread: %w", err)
	}
	return n, nil
}
