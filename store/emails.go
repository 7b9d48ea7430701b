package store

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// MaxEmailRecipients bounds the to addresses of one POST /emails/send.
const MaxEmailRecipients = MaxBatch

// EmailInput is a single email (POST /emails/send). Single emails never
// create contacts; a recipient that is a known contact is personalised with
// that contact's fields.
type EmailInput struct {
	To            []string
	Subject       string
	Preheader     string
	HTML          string
	Text          string
	Markdown      string
	TemplateKey   string
	AttachmentIDs []int64
	Placeholders  map[string]string // validated by the caller (mailer.ValidateCustom)
	FromName      string
	ReplyTo       string
	TrackOpens    bool
	TrackClicks   bool
	ScheduledAt   *time.Time // nil: send now
	Type          string     // TypeFollowUp (the default) or TypeTransactional
	ListIDs       []int64    // follow-ups only
	ContactIDs    []int64    // follow-ups only
	SMTPServerID  *int64
}

// Normalize trims and checks the input; now is for scheduled_at. Without a
// type an email is a follow-up (decisions.md "Single emails and the
// unsubscribe line"): it carries the unsubscribe line and List-Unsubscribe and
// skips blocked addresses; only an explicit transactional type goes without
// them and to blocked addresses too.
func (in *EmailInput) Normalize(now time.Time) error {
	errs := Errs{}
	if in.Type == "" {
		in.Type = TypeFollowUp
	}
	if in.Type != TypeTransactional && in.Type != TypeFollowUp {
		errs.Add("type", "Erlaubt sind transactional und follow_up.")
	}
	to := make([]string, 0, len(in.To))
	for _, e := range in.To {
		addr, err := ParseEmail(e)
		if err != nil {
			errs.Add("to", emailProblem(e, err))
			continue
		}
		e = addr
		if !containsString(to, e) {
			to = append(to, e)
		}
	}
	in.To = to
	if len(in.To) > MaxEmailRecipients {
		errs.Add("to", fmt.Sprintf("Höchstens %d Empfänger pro Anfrage.", MaxEmailRecipients))
	}
	in.ListIDs = normIDs(errs, "list_ids", in.ListIDs)
	in.ContactIDs = normIDs(errs, "contact_ids", in.ContactIDs)
	if in.Type == TypeTransactional {
		if len(in.ListIDs) > 0 {
			errs.Add("list_ids", "Listen sind nur mit type follow_up möglich.")
		}
		if len(in.ContactIDs) > 0 {
			errs.Add("contact_ids", "Kontakt-IDs sind nur mit type follow_up möglich.")
		}
	}
	if len(in.To) == 0 && len(in.ListIDs) == 0 && len(in.ContactIDs) == 0 {
		errs.Add("to", "Bitte mindestens einen Empfänger angeben.")
	}
	normLine(errs, "subject", &in.Subject, maxSubjectLen)
	normLine(errs, "preheader", &in.Preheader, maxPreheaderLen)
	normLine(errs, "template_key", &in.TemplateKey, 100)
	mc := in.content()
	normContent(errs, &mc)
	in.AttachmentIDs = mc.AttachmentIDs
	// With a template, subject and content may come from it: checked once it
	// is resolved (CreateEmail).
	if in.TemplateKey == "" {
		if in.Subject == "" {
			errs.Add("subject", "Bitte einen Betreff angeben.")
		}
		if !mc.HasBody() {
			errs.Add("html", "Bitte einen Inhalt angeben (html, text oder markdown).")
		}
	}
	if in.Markdown != "" && (in.HTML != "" || in.Text != "") {
		errs.Add("markdown", "Entweder markdown oder html/text angeben, nicht beides.")
	}
	for field, v := range map[string]string{"html": in.HTML, "text": in.Text, "markdown": in.Markdown} {
		if !utf8.ValidString(v) {
			errs.Add(field, "Der Inhalt ist kein gültiges UTF-8.")
		}
		if len(v) > MaxHTMLBytes {
			errs.Add(field, "Der Inhalt ist größer als 2 MB.")
		}
	}
	normLine(errs, "from_name", &in.FromName, maxFromNameLen)
	normReplyTo(errs, &in.ReplyTo)
	if in.ScheduledAt != nil && !in.ScheduledAt.After(now) {
		errs.Add("scheduled_at", "Der Zeitpunkt muss in der Zukunft liegen.")
	}
	if in.SMTPServerID != nil && *in.SMTPServerID <= 0 {
		errs.Add("smtp_server_id", "Bitte eine gültige ID angeben.")
	}
	return errs.Err()
}

// content is the email's content.
func (in EmailInput) content() MailContent {
	return MailContent{Subject: in.Subject, Preheader: in.Preheader, HTML: in.HTML, Text: in.Text, Markdown: in.Markdown,
		TemplateKey: in.TemplateKey, AttachmentIDs: in.AttachmentIDs}
}

const checkContactIDs = `SELECT id FROM contacts WHERE account_id = $1 AND id = ANY($2)`

// EmailResult is what POST /emails/send did.
type EmailResult struct {
	Campaign Campaign
	Queued   int64
	Skipped  int64
}

// CreateEmail records a single email and, unless it is scheduled, starts it
// (recipients queued, daily limit counted: 402) in the same transaction.
// opts.Check tests the SMTP route (422 smtp_server_id). Unknown list or
// contact ids are a 422.
func (db *DB) CreateEmail(ctx context.Context, accountID int64, actor Actor, in EmailInput, opts StartOptions) (EmailResult, error) {
	now := opts.now()
	if err := in.Normalize(now); err != nil {
		return EmailResult{}, err
	}
	c := Campaign{AccountID: accountID, Kind: KindEmail, Type: in.Type, Status: CampaignDraft, Name: in.Subject,
		FromName: in.FromName, ReplyTo: in.ReplyTo,
		SMTPServerID: in.SMTPServerID, TrackOpens: in.TrackOpens, TrackClicks: in.TrackClicks,
		ListIDs: pq.Int64Array(in.ListIDs), ContactIDs: pq.Int64Array(in.ContactIDs), ToEmails: pq.StringArray(in.To),
		Placeholders: Placeholders(in.Placeholders), ScheduledAt: in.ScheduledAt}
	c.setContent(in.content())
	if c.Placeholders == nil {
		c.Placeholders = Placeholders{}
	}
	if in.ScheduledAt != nil {
		c.Status = CampaignScheduled
	}
	var out EmailResult
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		mc := c.Content()
		if err := resolveContentTx(ctx, tx, accountID, &mc, true); err != nil {
			return err
		}
		c.setContent(mc)
		c.Name = c.Subject
		if err := c.ReadyErrors().Err(); err != nil {
			return err
		}
		if err := checkListIDs(ctx, tx, accountID, "list_ids", in.ListIDs); err != nil {
			return err
		}
		if len(in.ContactIDs) > 0 {
			var found []int64
			if err := tx.SelectContext(ctx, &found, checkContactIDs, accountID, pq.Int64Array(in.ContactIDs)); err != nil {
				return fmt.Errorf("store: check contacts: %w", err)
			}
			if missing := missingIDs(in.ContactIDs, found); len(missing) > 0 {
				return Invalid("contact_ids", unknownIDs("Den Kontakt %d gibt es nicht.", "Diese Kontakte gibt es nicht: %s.", missing))
			}
		}
		if err := checkSMTPServer(ctx, tx, accountID, in.SMTPServerID); err != nil {
			return err
		}
		var err error
		if c, err = insertCampaignTx(ctx, tx, c); err != nil {
			return err
		}
		action := "email.scheduled"
		if in.ScheduledAt == nil {
			action = "email.queued"
			res, err := startCampaign(ctx, tx, &c, opts)
			if err != nil {
				return err
			}
			out.Queued, out.Skipped = res.Queued, res.Skipped
		} else if err := opts.check(ctx, c, Errs{}); err != nil {
			return err
		}
		out.Campaign = c
		if err := LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: action, ObjectType: ObjectEmail, ObjectID: c.ID,
			Details: map[string]any{"type": c.Type, "subject": c.Subject, "queued": out.Queued, "skipped": out.Skipped}}); err != nil {
			return err
		}
		return opts.respond(ctx, tx, c, StartResult{Queued: out.Queued, Skipped: out.Skipped})
	})
	return out, err
}

// Email returns one single email.
func (db *DB) Email(ctx context.Context, accountID, id int64) (Campaign, error) {
	return db.campaign(ctx, accountID, id, KindEmail)
}

// Emails lists an account's single emails, newest first; status filters when
// not empty.
func (db *DB) Emails(ctx context.Context, accountID int64, status string, p Page) ([]Campaign, int, error) {
	return db.campaigns(ctx, accountID, KindEmail, status, p)
}

// CancelEmail calls off a scheduled single email (409 not_scheduled once it
// started); the record stays with status cancelled.
func (db *DB) CancelEmail(ctx context.Context, accountID int64, actor Actor, id int64) (Campaign, error) {
	var out Campaign
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		c, err := lockCampaignTx(ctx, tx, accountID, id, KindEmail)
		if err != nil {
			return err
		}
		if c.Status != CampaignScheduled {
			return &ConflictError{Reason: "not_scheduled", Message: fmt.Sprintf("Nur geplante E-Mails können abgebrochen werden; diese ist %s.", statusWord(c.Status))}
		}
		if err := tx.GetContext(ctx, &out, setStatus, id, CampaignCancelled); err != nil {
			return fmt.Errorf("store: cancel email: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "email.cancelled", ObjectType: ObjectEmail, ObjectID: id})
	})
	return out, err
}
