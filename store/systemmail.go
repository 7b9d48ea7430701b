package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"html"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// DOITokenTTL is how long a double opt-in confirmation link stays valid.
const DOITokenTTL = 7 * 24 * time.Hour

// doiTokenLen is the length of a confirmation token (A-Za-z0-9, 190 bits).
const doiTokenLen = 32

// ConfirmPathPrefix is the public path of confirmation links: /confirm/{token}.
const ConfirmPathPrefix = "/confirm/"

// ConfirmURLPlaceholder stands in a queued system mail's body for the full
// confirmation URL; the sender replaces it with RUNDBRIEF_BASE_URL + LinkPath.
const ConfirmURLPlaceholder = "{{confirm_url}}"

// SystemMailDOI is the kind of a double opt-in confirmation mail.
const SystemMailDOI = "doi_confirmation"

// ErrConfirmationExpired means a confirmation link is older than DOITokenTTL.
var ErrConfirmationExpired = errors.New("store: confirmation link expired")

// SystemMail is a mail the service sends on an account's behalf (double opt-in
// confirmation). SentAt is nil until the mailer sent it.
type SystemMail struct {
	ID        int64  `db:"id"`
	AccountID int64  `db:"account_id"`
	ContactID *int64 `db:"contact_id"`
	Kind      string `db:"kind"`
	ToEmail   string `db:"to_email"`
	Subject   string `db:"subject"`
	BodyText  string `db:"body_text"`
	BodyHTML  string `db:"body_html"`
	LinkPath  string `db:"link_path"`
	// Calendar is an iCalendar object (RFC 5545) sent as the mail's
	// text/calendar part (appointment invitations); empty: none.
	Calendar string `db:"calendar"`
	// AccountRoute sends the mail through the account's own default SMTP
	// server (else the relay, else the outbox), as its own mail would go
	// (appointment confirmations to bookers); false: the system route.
	AccountRoute bool       `db:"account_route"`
	Attempts     int        `db:"attempts"`
	LastError    string     `db:"last_error"`
	CreatedAt    time.Time  `db:"created_at"`
	SentAt       *time.Time `db:"sent_at"`
}

// Bodies returns the text and HTML body with the confirmation URL filled in
// (baseURL is RUNDBRIEF_BASE_URL, without trailing slash).
func (m SystemMail) Bodies(baseURL string) (text, htmlBody string) {
	u := strings.TrimRight(baseURL, "/") + m.LinkPath
	return strings.ReplaceAll(m.BodyText, ConfirmURLPlaceholder, u),
		strings.ReplaceAll(m.BodyHTML, ConfirmURLPlaceholder, html.EscapeString(u))
}

func hashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

const selectAccountName = `SELECT name FROM accounts WHERE id = $1`

const insertDOITokens = `INSERT INTO doi_tokens (token_hash, account_id, contact_id, expires_at)
SELECT x.h, $1, x.c, now() + $4 * interval '1 second' FROM unnest($2::bytea[], $3::bigint[]) AS x(h, c)`

const insertSystemMails = `INSERT INTO system_mails (account_id, contact_id, kind, to_email, subject, body_text, body_html, link_path)
SELECT $1, x.c, $2, x.e, x.s, x.t, x.h, x.p
FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[]) WITH ORDINALITY AS x(c, e, s, t, h, p, n)
ORDER BY x.n`

const doiSubject = "Bitte bestätigen Sie Ihre Anmeldung"

const doiText = `Hallo%s,

bitte bestätigen Sie Ihre Anmeldung bei %s mit einem Klick auf diesen Link:

` + ConfirmURLPlaceholder + `

Der Link ist 7 Tage gültig. Wenn Sie sich nicht angemeldet haben, ignorieren Sie diese E-Mail einfach: Sie erhalten dann keine weiteren Nachrichten.
`

const doiHTML = `<p>Hallo%s,</p>
<p>bitte bestätigen Sie Ihre Anmeldung bei %s mit einem Klick auf diesen Link:</p>
<p><a href="` + ConfirmURLPlaceholder + `">Anmeldung bestätigen</a></p>
<p>Der Link ist 7 Tage gültig. Wenn Sie sich nicht angemeldet haben, ignorieren Sie diese E-Mail einfach: Sie erhalten dann keine weiteren Nachrichten.</p>
`

// queueConfirmations creates a confirmation token and queues a confirmation mail
// for every op that needs one.
func queueConfirmations(ctx context.Context, tx *sqlx.Tx, accountID int64, ops []*contactOp) error {
	var need []*contactOp
	for _, op := range ops {
		if op.err == nil && op.needDOI {
			need = append(need, op)
		}
	}
	if len(need) == 0 {
		return nil
	}
	var account string
	if err := tx.GetContext(ctx, &account, selectAccountName, accountID); err != nil {
		return fmt.Errorf("store: confirmation mail: %w", err)
	}
	n := len(need)
	hashes := make([][]byte, n)
	contacts := make([]int64, n)
	to, subjects, texts, htmls, paths := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, op := range need {
		token := RandomString(doiTokenLen)
		name := strings.TrimSpace(op.next.FirstName + " " + op.next.LastName)
		greeting := ""
		if name != "" {
			greeting = " " + name
		}
		hashes[i], contacts[i], to[i] = hashToken(token), op.next.ID, op.next.Email
		subjects[i] = doiSubject
		texts[i] = fmt.Sprintf(doiText, greeting, account)
		htmls[i] = fmt.Sprintf(doiHTML, html.EscapeString(greeting), html.EscapeString(account))
		paths[i] = ConfirmPathPrefix + token
	}
	if _, err := tx.ExecContext(ctx, insertDOITokens, accountID, pq.ByteaArray(hashes), pq.Int64Array(contacts),
		int64(DOITokenTTL/time.Second)); err != nil {
		return fmt.Errorf("store: confirmation token: %w", err)
	}
	if _, err := tx.ExecContext(ctx, insertSystemMails, accountID, SystemMailDOI, pq.Int64Array(contacts), pq.StringArray(to),
		pq.StringArray(subjects), pq.StringArray(texts), pq.StringArray(htmls), pq.StringArray(paths)); err != nil {
		return fmt.Errorf("store: confirmation mail: %w", err)
	}
	return nil
}

// Confirmation is the outcome of ConfirmContact.
type Confirmation struct {
	Contact Contact
	// AlreadyConfirmed means the link had been used before; nothing changed.
	AlreadyConfirmed bool
	// Unblocked means the address was on the blocked list and no longer is.
	Unblocked bool
}

const peekDOIToken = `SELECT t.used_at IS NOT NULL AS used, t.expires_at < now() AS expired, c.email
FROM doi_tokens t JOIN contacts c ON c.id = t.contact_id AND c.account_id = t.account_id WHERE t.token_hash = $1`

// ConfirmationState is what a confirmation link would do, read without doing it.
type ConfirmationState struct {
	Email string // the address the link confirms
	// AlreadyConfirmed means the link had been used before.
	AlreadyConfirmed bool
}

// PeekConfirmation reads the state of a confirmation link without confirming
// anything: GET /confirm/{token} shows the button with it, because link
// scanners of mail providers fetch every link of a mail. Errors as
// ConfirmContact: ErrNotFound for an unknown token (or a deleted contact),
// ErrConfirmationExpired for an expired unused one.
func (db *DB) PeekConfirmation(ctx context.Context, token string) (ConfirmationState, error) {
	if len(token) != doiTokenLen {
		return ConfirmationState{}, ErrNotFound
	}
	var row struct {
		Used    bool   `db:"used"`
		Expired bool   `db:"expired"`
		Email   string `db:"email"`
	}
	if err := db.GetContext(ctx, &row, peekDOIToken, hashToken(token)); err != nil {
		return ConfirmationState{}, notFound("peek confirmation", err)
	}
	if !row.Used && row.Expired {
		return ConfirmationState{}, ErrConfirmationExpired
	}
	return ConfirmationState{Email: row.Email, AlreadyConfirmed: row.Used}, nil
}

const lockDOIToken = `SELECT account_id, contact_id, used_at IS NOT NULL AS used, expires_at < now() AS expired
FROM doi_tokens WHERE token_hash = $1 FOR UPDATE`

const confirmContactRow = `UPDATE contacts SET status = 'subscribed', doi_confirmed_at = now(), unsubscribed_at = NULL, updated_at = now()
WHERE account_id = $1 AND id = $2`

const unblockEmail = `DELETE FROM blocked_addresses WHERE account_id = $1 AND email = $2`

const useDOIToken = `UPDATE doi_tokens SET used_at = now() WHERE token_hash = $1`

// ConfirmContact confirms a double opt-in by the token of a confirmation link:
// the contact becomes subscribed, doi_confirmed_at is set, a block of its address
// is lifted (the person asked for mail again), and contact.updated (changed) plus
// list.joined for each of its lists are emitted. A used token confirms nothing
// again (AlreadyConfirmed); an unknown one is ErrNotFound, an expired one
// ErrConfirmationExpired. The public page's button (POST /confirm/{token})
// calls it; the GET only peeks (PeekConfirmation).
func (db *DB) ConfirmContact(ctx context.Context, token string) (Confirmation, error) {
	if len(token) != doiTokenLen {
		return Confirmation{}, ErrNotFound
	}
	hash := hashToken(token)
	var out Confirmation
	err := db.retryTx(ctx, func(tx *sqlx.Tx) error {
		out = Confirmation{}
		var t struct {
			AccountID int64 `db:"account_id"`
			ContactID int64 `db:"contact_id"`
			Used      bool  `db:"used"`
			Expired   bool  `db:"expired"`
		}
		if err := tx.GetContext(ctx, &t, lockDOIToken, hash); err != nil {
			return notFound("confirm contact", err)
		}
		locked, err := lockContactRows(ctx, tx, t.AccountID, nil, []int64{t.ContactID})
		if err != nil {
			return err
		}
		cur := locked.byID[t.ContactID]
		if cur == nil {
			return ErrNotFound
		}
		if t.Used {
			out.Contact, out.AlreadyConfirmed = cur.Contact, true
			final, err := readContacts(ctx, tx, t.AccountID, []int64{cur.ID})
			out.Contact = final[cur.ID]
			return err
		}
		if t.Expired {
			return ErrConfirmationExpired
		}
		if _, err := tx.ExecContext(ctx, confirmContactRow, t.AccountID, cur.ID); err != nil {
			return fmt.Errorf("store: confirm contact: %w", err)
		}
		res, err := tx.ExecContext(ctx, unblockEmail, t.AccountID, cur.Email)
		if err != nil {
			return fmt.Errorf("store: confirm contact: %w", err)
		}
		n, _ := res.RowsAffected()
		out.Unblocked = n > 0
		if _, err := tx.ExecContext(ctx, useDOIToken, hash); err != nil {
			return fmt.Errorf("store: confirm contact: %w", err)
		}
		final, err := readContacts(ctx, tx, t.AccountID, []int64{cur.ID})
		if err != nil {
			return err
		}
		c := final[cur.ID]
		out.Contact = c
		changed := []string{}
		if cur.Status != StatusSubscribed {
			changed = append(changed, "status")
		}
		changed = append(changed, "doi_confirmed_at")
		data := c.Data()
		events := []Event{{EventContactUpdated, ContactUpdatedData{Contact: data, Changed: changed}}}
		if cur.Status != StatusSubscribed {
			// The contact becomes an active member of the lists it joined while pending.
			for _, l := range c.Lists {
				events = append(events, Event{EventListJoined, ListEventData{List: ListEventRef{ID: l.ID, Name: l.Name}, Contact: data}})
			}
		}
		if _, err := EmitAll(ctx, tx, t.AccountID, events); err != nil {
			return err
		}
		return LogActivity(ctx, tx, t.AccountID, Actor{Type: ActorPublic}, ActivityEntry{
			Action: "contact.confirmed", ObjectType: ObjectContact, ObjectID: c.ID,
			Details: map[string]any{"email": c.Email, "unblocked": out.Unblocked},
		})
	})
	if err != nil {
		return Confirmation{}, err
	}
	return out, nil
}

const systemMailColumns = `id, account_id, contact_id, kind, to_email, subject, body_text, body_html, link_path, calendar, account_route, attempts, last_error, created_at, sent_at`

const selectSystemMails = `SELECT ` + systemMailColumns + ` FROM system_mails WHERE account_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3`

const countSystemMails = `SELECT count(*) FROM system_mails WHERE account_id = $1`

// SystemMails lists an account's system mails, newest first (the development
// outbox shows them until the mailer sends them).
func (db *DB) SystemMails(ctx context.Context, accountID int64, p Page) ([]SystemMail, int, error) {
	var total int
	if err := db.GetContext(ctx, &total, countSystemMails, accountID); err != nil {
		return nil, 0, fmt.Errorf("store: system mails: %w", err)
	}
	var out []SystemMail
	if err := db.SelectContext(ctx, &out, selectSystemMails, accountID, p.PerPage, p.Offset()); err != nil {
		return nil, 0, fmt.Errorf("store: system mails: %w", err)
	}
	return out, total, nil
}

// Sending system mail (the worker in mailer/systemmail.go). A mail that fails is
// tried again with a growing pause, measured from its creation: attempt n+1 is due
// SystemMailBackoff·(2ⁿ−1) after created_at; after SystemMailMaxAttempts it stays
// unsent with its last error (the development outbox and the log show it).
const (
	SystemMailBackoff     = time.Minute
	SystemMailMaxAttempts = 10
)

// ErrSystemMailRejected marks a send error as final (the message can never be
// sent, e.g. an invalid address or a permanent SMTP refusal): the mail is not
// tried again.
var ErrSystemMailRejected = errors.New("store: system mail rejected for good")

const insertOwnerMail = `INSERT INTO system_mails (account_id, kind, to_email, subject, body_text, body_html)
SELECT $1, $2, u.email, $3, $4, $5 FROM users u WHERE u.account_id = $1 AND u.role = 'owner' ORDER BY u.id LIMIT 1`

// queueOwnerMail queues a notification to the account's owner inside tx. The
// bodies are final text (no confirmation link).
func queueOwnerMail(ctx context.Context, tx *sqlx.Tx, accountID int64, kind, subject, text, htmlBody string) error {
	if _, err := tx.ExecContext(ctx, insertOwnerMail, accountID, kind, subject, text, htmlBody); err != nil {
		return fmt.Errorf("store: owner mail: %w", err)
	}
	return nil
}

const claimSystemMail = `SELECT ` + systemMailColumns + ` FROM system_mails
WHERE sent_at IS NULL AND attempts < $2
  AND created_at + $3 * (power(2, attempts) - 1) * interval '1 second' <= $1
ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`

const markSystemMailSent = `UPDATE system_mails SET sent_at = $2, attempts = attempts + 1, last_error = '' WHERE id = $1`

const markSystemMailFailed = `UPDATE system_mails SET attempts = CASE WHEN $3 THEN greatest(attempts + 1, $4) ELSE attempts + 1 END,
last_error = $2 WHERE id = $1`

// SendNextSystemMail claims the oldest due unsent system mail (FOR UPDATE SKIP
// LOCKED, so several processes never send one twice), calls send with it while
// holding the claim, and records the outcome: sent_at, or one more attempt with
// the error (an error wrapping ErrSystemMailRejected ends the attempts). It
// reports false when no mail was due. A crash during send leaves
// the mail unsent (the claim ends with the connection), so it is sent again.
func (db *DB) SendNextSystemMail(ctx context.Context, now time.Time, send func(SystemMail) error) (bool, error) {
	found := false
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var m SystemMail
		err := tx.GetContext(ctx, &m, claimSystemMail, now, SystemMailMaxAttempts, int64(SystemMailBackoff/time.Second))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: claim system mail: %w", err)
		}
		found = true
		if sendErr := send(m); sendErr != nil {
			msg := strings.ToValidUTF8(strings.ReplaceAll(sendErr.Error(), "\x00", " "), "?")
			final := errors.Is(sendErr, ErrSystemMailRejected)
			if _, err := tx.ExecContext(ctx, markSystemMailFailed, m.ID, msg, final, SystemMailMaxAttempts); err != nil {
				return fmt.Errorf("store: system mail failed: %w", err)
			}
			return nil
		}
		if _, err := tx.ExecContext(ctx, markSystemMailSent, m.ID, now); err != nil {
			return fmt.Errorf("store: system mail sent: %w", err)
		}
		return nil
	})
	return found, err
}
