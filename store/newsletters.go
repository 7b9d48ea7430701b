package store

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// NewsletterInput is what a caller may write of a newsletter; nil fields are
// not given (PATCH keeps them).
type NewsletterInput struct {
	Name          *string
	Subject       *string
	Preheader     *string
	HTML          *string
	Text          *string
	Markdown      *string
	TemplateKey   *string
	AttachmentIDs *[]int64
	ListIDs       *[]int64
	SegmentID     *int64 // 0 clears the segment (the lists alone are the audience)
	FromName      *string
	ReplyTo       *string
	SMTPServerID  *int64 // 0 clears the choice (the account's default route)
	TrackOpens    *bool
	TrackClicks   *bool
}

// Normalize trims and checks the input.
func (in *NewsletterInput) Normalize() error {
	errs := Errs{}
	normLine(errs, "name", in.Name, maxNameLen)
	normLine(errs, "subject", in.Subject, maxSubjectLen)
	normLine(errs, "preheader", in.Preheader, maxPreheaderLen)
	normLine(errs, "from_name", in.FromName, maxFromNameLen)
	normLine(errs, "template_key", in.TemplateKey, 100)
	if in.TemplateKey != nil || in.AttachmentIDs != nil {
		mc := MailContent{}
		if in.TemplateKey != nil {
			mc.TemplateKey = *in.TemplateKey
		}
		if in.AttachmentIDs != nil {
			mc.AttachmentIDs = *in.AttachmentIDs
		}
		normContent(errs, &mc)
		if in.AttachmentIDs != nil {
			in.AttachmentIDs = &mc.AttachmentIDs
		}
	}
	normReplyTo(errs, in.ReplyTo)
	for field, v := range map[string]*string{"html": in.HTML, "text": in.Text, "markdown": in.Markdown} {
		if v != nil && !utf8.ValidString(*v) {
			errs.Add(field, "Der Inhalt ist kein gültiges UTF-8.")
		}
	}
	if in.ListIDs != nil {
		ids := normIDs(errs, "list_ids", *in.ListIDs)
		in.ListIDs = &ids
	}
	if in.SegmentID != nil && *in.SegmentID < 0 {
		errs.Add("segment_id", "Bitte eine gültige ID angeben.")
	}
	if in.SMTPServerID != nil && *in.SMTPServerID < 0 {
		errs.Add("smtp_server_id", "Bitte eine gültige ID angeben.")
	}
	return errs.Err()
}

// apply writes the given fields onto c and returns the names of the changed ones.
func (in NewsletterInput) apply(c *Campaign) []string {
	var changed []string
	setText(&changed, "name", &c.Name, in.Name)
	setText(&changed, "subject", &c.Subject, in.Subject)
	setText(&changed, "preheader", &c.Preheader, in.Preheader)
	setText(&changed, "html", &c.HTML, in.HTML)
	setText(&changed, "text", &c.Text, in.Text)
	setText(&changed, "markdown", &c.Markdown, in.Markdown)
	setText(&changed, "template_key", &c.TemplateKey, in.TemplateKey)
	if in.AttachmentIDs != nil && !equalIDs(*in.AttachmentIDs, c.AttachmentIDs) {
		c.AttachmentIDs = pq.Int64Array(*in.AttachmentIDs)
		changed = append(changed, "attachment_ids")
	}
	setText(&changed, "from_name", &c.FromName, in.FromName)
	setText(&changed, "reply_to", &c.ReplyTo, in.ReplyTo)
	if in.ListIDs != nil && !equalIDs(*in.ListIDs, c.ListIDs) {
		c.ListIDs = pq.Int64Array(*in.ListIDs)
		changed = append(changed, "list_ids")
	}
	if in.SegmentID != nil && *in.SegmentID != c.Segment() {
		c.SegmentID = nil
		if id := *in.SegmentID; id != 0 {
			c.SegmentID = &id
		}
		changed = append(changed, "segment_id")
	}
	if in.SMTPServerID != nil && *in.SMTPServerID != c.ServerID() {
		c.SMTPServerID = nil
		if id := *in.SMTPServerID; id != 0 {
			c.SMTPServerID = &id
		}
		changed = append(changed, "smtp_server_id")
	}
	if in.TrackOpens != nil && *in.TrackOpens != c.TrackOpens {
		c.TrackOpens = *in.TrackOpens
		changed = append(changed, "track_opens")
	}
	if in.TrackClicks != nil && *in.TrackClicks != c.TrackClicks {
		c.TrackClicks = *in.TrackClicks
		changed = append(changed, "track_clicks")
	}
	return changed
}

func equalIDs(a []int64, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// contentErrors checks the combination of content fields: markdown stands
// alone; text may accompany html as its plain-text part. A template_key may
// come with content of its own (a layout wraps it).
func contentErrors(c Campaign) error {
	errs := Errs{}
	if c.Markdown != "" && (c.HTML != "" || c.Text != "") {
		errs.Add("markdown", "Entweder markdown oder html/text angeben, nicht beides.")
	}
	for field, v := range map[string]string{"html": c.HTML, "text": c.Text, "markdown": c.Markdown} {
		if len(v) > MaxHTMLBytes {
			errs.Add(field, "Der Inhalt ist größer als 2 MB.")
		}
	}
	return errs.Err()
}

const insertCampaign = `INSERT INTO campaigns (account_id, kind, type, status, name, subject, preheader, html, plain_text,
  markdown, template_key, attachment_ids, from_name, reply_to, smtp_server_id, track_opens, track_clicks, list_ids, segment_id, contact_ids, to_emails,
  placeholders, scheduled_at)
VALUES (:account_id, :kind, :type, :status, :name, :subject, :preheader, :html, :plain_text, :markdown, :template_key,
  :attachment_ids, :from_name, :reply_to, :smtp_server_id, :track_opens, :track_clicks, :list_ids, :segment_id, :contact_ids, :to_emails, :placeholders,
  :scheduled_at)
RETURNING ` + campaignColumns

// insertCampaignTx inserts c (a new draft, scheduled or sending campaign) and
// returns the stored row.
func insertCampaignTx(ctx context.Context, tx *sqlx.Tx, c Campaign) (Campaign, error) {
	if c.ListIDs == nil {
		c.ListIDs = pq.Int64Array{}
	}
	if c.ContactIDs == nil {
		c.ContactIDs = pq.Int64Array{}
	}
	if c.ToEmails == nil {
		c.ToEmails = pq.StringArray{}
	}
	if c.AttachmentIDs == nil {
		c.AttachmentIDs = pq.Int64Array{}
	}
	q, args, err := tx.BindNamed(insertCampaign, c)
	if err != nil {
		return Campaign{}, fmt.Errorf("store: insert campaign: %w", err)
	}
	var out Campaign
	if err := tx.GetContext(ctx, &out, q, args...); err != nil {
		return Campaign{}, fmt.Errorf("store: insert campaign: %w", err)
	}
	return out, nil
}

// defaultNewsletterName names a newsletter created without a name.
func defaultNewsletterName(subject string) string {
	if subject != "" {
		return subject
	}
	return "Neuer Newsletter"
}

// CreateNewsletter creates a draft. Nothing is sent. Opens and clicks are
// tracked unless the input says otherwise.
func (db *DB) CreateNewsletter(ctx context.Context, accountID int64, actor Actor, in NewsletterInput) (Campaign, error) {
	if err := in.Normalize(); err != nil {
		return Campaign{}, err
	}
	c := Campaign{AccountID: accountID, Kind: KindNewsletter, Type: TypeNewsletter, Status: CampaignDraft,
		TrackOpens: true, TrackClicks: true, Placeholders: Placeholders{}}
	in.apply(&c)
	if err := contentErrors(c); err != nil {
		return Campaign{}, err
	}
	var out Campaign
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		mc := c.Content()
		if err := resolveContentTx(ctx, tx, accountID, &mc, true); err != nil {
			return err
		}
		c.setContent(mc)
		if c.Name == "" {
			c.Name = defaultNewsletterName(c.Subject)
		}
		if err := checkListIDs(ctx, tx, accountID, "list_ids", c.ListIDs); err != nil {
			return err
		}
		if err := checkSegmentID(ctx, tx, accountID, c.SegmentID); err != nil {
			return err
		}
		if err := checkSMTPServer(ctx, tx, accountID, c.SMTPServerID); err != nil {
			return err
		}
		var err error
		if out, err = insertCampaignTx(ctx, tx, c); err != nil {
			return err
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "newsletter.created", ObjectType: ObjectNewsletter,
			ObjectID: out.ID, Details: map[string]any{"name": out.Name}})
	})
	return out, err
}

// Newsletter returns one newsletter.
func (db *DB) Newsletter(ctx context.Context, accountID, id int64) (Campaign, error) {
	return db.campaign(ctx, accountID, id, KindNewsletter)
}

// Newsletters lists an account's newsletters, newest first; status filters
// when not empty.
func (db *DB) Newsletters(ctx context.Context, accountID int64, status string, p Page) ([]Campaign, int, error) {
	return db.campaigns(ctx, accountID, KindNewsletter, status, p)
}

// errNotDraft is the 409 for changing a newsletter that is no draft any more.
func errNotDraft(c Campaign) error {
	return &ConflictError{Reason: "not_draft", Message: fmt.Sprintf("Nur Entwürfe können geändert werden; dieser Newsletter ist %s.", statusWord(c.Status))}
}

// statusWord is a campaign status in a German sentence.
func statusWord(status string) string {
	switch status {
	case CampaignDraft:
		return "ein Entwurf"
	case CampaignScheduled:
		return "geplant"
	case CampaignSending:
		return "im Versand"
	case CampaignSent:
		return "versendet"
	case CampaignPaused:
		return "pausiert"
	case CampaignFailed:
		return "fehlgeschlagen"
	case CampaignCancelled:
		return "abgebrochen"
	}
	return status
}

const updateCampaignContent = `UPDATE campaigns SET name = :name, subject = :subject, preheader = :preheader, html = :html,
  plain_text = :plain_text, markdown = :markdown, template_key = :template_key, attachment_ids = :attachment_ids, from_name = :from_name, reply_to = :reply_to,
  smtp_server_id = :smtp_server_id, track_opens = :track_opens, track_clicks = :track_clicks, list_ids = :list_ids,
  segment_id = :segment_id, updated_at = now()
WHERE id = :id RETURNING ` + campaignColumns

// UpdateNewsletter changes the given fields of a draft; any other status is a
// 409 not_draft.
func (db *DB) UpdateNewsletter(ctx context.Context, accountID int64, actor Actor, id int64, in NewsletterInput) (Campaign, error) {
	if err := in.Normalize(); err != nil {
		return Campaign{}, err
	}
	var out Campaign
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		c, err := lockCampaignTx(ctx, tx, accountID, id, KindNewsletter)
		if err != nil {
			return err
		}
		if c.Status != CampaignDraft {
			return errNotDraft(c)
		}
		changed := in.apply(&c)
		if len(changed) == 0 {
			out = c
			return nil
		}
		if err := contentErrors(c); err != nil {
			return err
		}
		if in.TemplateKey != nil || in.AttachmentIDs != nil || in.HTML != nil {
			mc := c.Content()
			if err := resolveContentTx(ctx, tx, accountID, &mc, in.TemplateKey != nil); err != nil {
				return err
			}
			c.setContent(mc)
		}
		if err := checkListIDs(ctx, tx, accountID, "list_ids", c.ListIDs); err != nil {
			return err
		}
		if err := checkSegmentID(ctx, tx, accountID, c.SegmentID); err != nil {
			return err
		}
		if in.SMTPServerID != nil {
			if err := checkSMTPServer(ctx, tx, accountID, c.SMTPServerID); err != nil {
				return err
			}
		}
		q, args, err := tx.BindNamed(updateCampaignContent, c)
		if err != nil {
			return fmt.Errorf("store: update newsletter: %w", err)
		}
		if err := tx.GetContext(ctx, &out, q, args...); err != nil {
			return fmt.Errorf("store: update newsletter: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "newsletter.updated", ObjectType: ObjectNewsletter,
			ObjectID: id, Details: map[string]any{"changed": changed}})
	})
	return out, err
}

const deleteCampaign = `DELETE FROM campaigns WHERE id = $1`

// DeleteNewsletter deletes a draft; a newsletter that was scheduled or sent
// keeps its record (409 not_draft).
func (db *DB) DeleteNewsletter(ctx context.Context, accountID int64, actor Actor, id int64) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		c, err := lockCampaignTx(ctx, tx, accountID, id, KindNewsletter)
		if err != nil {
			return err
		}
		if c.Status != CampaignDraft {
			return errNotDraft(c)
		}
		if _, err := tx.ExecContext(ctx, deleteCampaign, id); err != nil {
			return fmt.Errorf("store: delete newsletter: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "newsletter.deleted", ObjectType: ObjectNewsletter,
			ObjectID: id, Details: map[string]any{"name": c.Name}})
	})
}

// DuplicateNewsletter copies a newsletter of any status into a new draft
// (content, lists, sender and tracking settings; no schedule, no counters).
func (db *DB) DuplicateNewsletter(ctx context.Context, accountID int64, actor Actor, id int64) (Campaign, error) {
	var out Campaign
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var c Campaign
		if err := tx.GetContext(ctx, &c, selectCampaign, accountID, id, KindNewsletter); err != nil {
			return notFound("duplicate newsletter", err)
		}
		name := []rune(c.Name + " (Kopie)")
		if len(name) > maxNameLen {
			name = name[:maxNameLen]
		}
		cp := Campaign{AccountID: accountID, Kind: KindNewsletter, Type: TypeNewsletter, Status: CampaignDraft,
			Name: string(name), Subject: c.Subject, Preheader: c.Preheader, HTML: c.HTML, Text: c.Text, Markdown: c.Markdown,
			TemplateKey: c.TemplateKey, AttachmentIDs: c.AttachmentIDs, FromName: c.FromName, ReplyTo: c.ReplyTo, SMTPServerID: c.SMTPServerID,
			TrackOpens: c.TrackOpens, TrackClicks: c.TrackClicks, ListIDs: c.ListIDs, SegmentID: c.SegmentID, Placeholders: Placeholders{}}
		var err error
		if out, err = insertCampaignTx(ctx, tx, cp); err != nil {
			return err
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "newsletter.duplicated", ObjectType: ObjectNewsletter,
			ObjectID: out.ID, Details: map[string]any{"from": id}})
	})
	return out, err
}

// errAlreadySent is the 409 of sending a newsletter that was sent or is sending.
func errAlreadySent(c Campaign) error {
	return &ConflictError{Reason: "already_sent", Message: fmt.Sprintf("Dieser Newsletter ist bereits %s.", statusWord(c.Status))}
}

// StartNewsletter starts sending a newsletter now: checks (subject, content,
// lists, opts.Check for the SMTP server; one 422 naming every field), queues
// its recipients and counts them against the daily limit (402), in one
// transaction. A newsletter that was sent or is sending is a 409 already_sent;
// a scheduled one is sent now instead.
func (db *DB) StartNewsletter(ctx context.Context, accountID int64, actor Actor, id int64, opts StartOptions) (Campaign, StartResult, error) {
	var (
		c   Campaign
		res StartResult
	)
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if c, err = lockCampaignTx(ctx, tx, accountID, id, KindNewsletter); err != nil {
			return err
		}
		if !c.startable() {
			return errAlreadySent(c)
		}
		if res, err = startCampaign(ctx, tx, &c, opts); err != nil {
			return err
		}
		if err := LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "newsletter.started", ObjectType: ObjectNewsletter,
			ObjectID: id, Details: map[string]any{"queued": res.Queued, "skipped": res.Skipped}}); err != nil {
			return err
		}
		return opts.respond(ctx, tx, c, res)
	})
	return c, res, err
}

const setSchedule = `UPDATE campaigns SET status = $2, scheduled_at = $3, last_error = '', updated_at = now() WHERE id = $1
RETURNING ` + campaignColumns

// ScheduleNewsletter defers a newsletter's send to at (which must lie after
// now). The send checks run now as well (422), so that a schedule that can
// only fail is refused at once; the recipients and the daily limit are
// settled when the send starts. A scheduled newsletter may be rescheduled.
func (db *DB) ScheduleNewsletter(ctx context.Context, accountID int64, actor Actor, id int64, at time.Time, opts StartOptions) (Campaign, error) {
	now := opts.now()
	if !at.After(now) {
		return Campaign{}, Invalid("scheduled_at", "Der Zeitpunkt muss in der Zukunft liegen.")
	}
	var out Campaign
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		c, err := lockCampaignTx(ctx, tx, accountID, id, KindNewsletter)
		if err != nil {
			return err
		}
		if !c.startable() {
			return errAlreadySent(c)
		}
		if err := checkStoredContentTx(ctx, tx, c); err != nil {
			return err
		}
		if err := opts.check(ctx, c, c.ReadyErrors()); err != nil {
			return err
		}
		if err := tx.GetContext(ctx, &out, setSchedule, id, CampaignScheduled, at); err != nil {
			return fmt.Errorf("store: schedule newsletter: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "newsletter.scheduled", ObjectType: ObjectNewsletter,
			ObjectID: id, Details: map[string]any{"scheduled_at": EventTime(at)}})
	})
	return out, err
}

// UnscheduleNewsletter turns a scheduled newsletter back into a draft
// (409 not_scheduled otherwise).
func (db *DB) UnscheduleNewsletter(ctx context.Context, accountID int64, actor Actor, id int64) (Campaign, error) {
	var out Campaign
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		c, err := lockCampaignTx(ctx, tx, accountID, id, KindNewsletter)
		if err != nil {
			return err
		}
		if c.Status != CampaignScheduled {
			return &ConflictError{Reason: "not_scheduled", Message: fmt.Sprintf("Der Newsletter ist nicht geplant, sondern %s.", statusWord(c.Status))}
		}
		if err := tx.GetContext(ctx, &out, setSchedule, id, CampaignDraft, nil); err != nil {
			return fmt.Errorf("store: unschedule newsletter: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "newsletter.unscheduled", ObjectType: ObjectNewsletter, ObjectID: id})
	})
	return out, err
}

const setStatus = `UPDATE campaigns SET status = $2, updated_at = now() WHERE id = $1 RETURNING ` + campaignColumns

// PauseNewsletter stops a sending newsletter: workers send no further mail of
// it (a message already handed to SMTP completes). 409 not_sending otherwise.
func (db *DB) PauseNewsletter(ctx context.Context, accountID int64, actor Actor, id int64) (Campaign, error) {
	return db.moveStatus(ctx, accountID, actor, id, CampaignSending, CampaignPaused, "not_sending",
		"Nur ein Newsletter im Versand kann pausiert werden; dieser ist %s.", "newsletter.paused")
}

// ResumeNewsletter continues a paused newsletter (409 not_paused otherwise).
func (db *DB) ResumeNewsletter(ctx context.Context, accountID int64, actor Actor, id int64) (Campaign, error) {
	return db.moveStatus(ctx, accountID, actor, id, CampaignPaused, CampaignSending, "not_paused",
		"Nur ein pausierter Newsletter kann fortgesetzt werden; dieser ist %s.", "newsletter.resumed")
}

func (db *DB) moveStatus(ctx context.Context, accountID int64, actor Actor, id int64, from, to, reason, msg, action string) (Campaign, error) {
	var out Campaign
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		c, err := lockCampaignTx(ctx, tx, accountID, id, KindNewsletter)
		if err != nil {
			return err
		}
		if c.Status != from {
			return &ConflictError{Reason: reason, Message: fmt.Sprintf(msg, statusWord(c.Status))}
		}
		if err := tx.GetContext(ctx, &out, setStatus, id, to); err != nil {
			return fmt.Errorf("store: %s: %w", action, err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: action, ObjectType: ObjectNewsletter, ObjectID: id})
	})
	return out, err
}

const requeueFailed = `UPDATE campaign_recipients SET status = 'queued', attempts = 0, next_attempt_at = NULL,
  claimed_until = NULL, error = NULL
WHERE campaign_id = $1 AND status = 'failed'`

const reopenCampaign = `UPDATE campaigns SET failed_count = failed_count - $2,
  status = CASE WHEN status = 'paused' THEN 'paused' ELSE 'sending' END,
  finished_at = NULL, last_error = '', updated_at = now()
WHERE id = $1 RETURNING ` + campaignColumns

// RetryFailed queues a newsletter's failed recipients again (and only them):
// the newsletter goes back to sending (a paused one stays paused), the
// requeued sends count against the daily limit. 409 not_sent before the
// newsletter was sent, 409 nothing_to_retry without failed recipients.
func (db *DB) RetryFailed(ctx context.Context, accountID int64, actor Actor, id int64, now time.Time) (Campaign, int64, error) {
	var (
		out Campaign
		n   int64
	)
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		c, err := lockCampaignTx(ctx, tx, accountID, id, KindNewsletter)
		if err != nil {
			return err
		}
		switch c.Status {
		case CampaignSending, CampaignSent, CampaignFailed, CampaignPaused:
		default:
			return &ConflictError{Reason: "not_sent", Message: fmt.Sprintf("Der Newsletter wurde noch nicht versendet; er ist %s.", statusWord(c.Status))}
		}
		res, err := tx.ExecContext(ctx, requeueFailed, id)
		if err != nil {
			return fmt.Errorf("store: retry failed: %w", err)
		}
		if n, _ = res.RowsAffected(); n == 0 {
			return &ConflictError{Reason: "nothing_to_retry", Message: "Es gibt keine fehlgeschlagenen Empfänger."}
		}
		if err := countSends(ctx, tx, accountID, n, now); err != nil {
			return err
		}
		if err := tx.GetContext(ctx, &out, reopenCampaign, id, n); err != nil {
			return fmt.Errorf("store: retry failed: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "newsletter.retried", ObjectType: ObjectNewsletter,
			ObjectID: id, Details: map[string]any{"requeued": n}})
	})
	return out, n, err
}

// SampleContact is the contact a test mail or preview is personalised with:
// contactID when given (404 when not found), else the first subscribed member
// of listIDs, else ErrNotFound (the caller uses a made-up sample).
func (db *DB) SampleContact(ctx context.Context, accountID, contactID int64, listIDs []int64) (Contact, error) {
	if contactID != 0 {
		return db.Contact(ctx, accountID, contactID)
	}
	if len(listIDs) == 0 {
		return Contact{}, ErrNotFound
	}
	var id int64
	err := db.GetContext(ctx, &id, `SELECT c.id FROM contacts c WHERE c.account_id = $1 AND c.status = 'subscribed'
  AND EXISTS (SELECT 1 FROM list_members m WHERE m.contact_id = c.id AND m.list_id = ANY($2)) ORDER BY c.id LIMIT 1`,
		accountID, pq.Int64Array(listIDs))
	if err != nil {
		return Contact{}, notFound("sample contact", err)
	}
	return db.Contact(ctx, accountID, id)
}

// ContactsByEmail returns the account's contacts among emails, keyed by the
// normalised address (test mails personalise a known address with its contact).
func (db *DB) ContactsByEmail(ctx context.Context, accountID int64, emails []string) (map[string]Contact, error) {
	norm := make(pq.StringArray, len(emails))
	for i, e := range emails {
		norm[i] = NormalizeEmail(e)
	}
	rows, err := queryContacts(ctx, db, nil, false, `SELECT `+contactColumns+` FROM contacts c WHERE c.account_id = $1 AND c.email = ANY($2)`, accountID, norm)
	if err != nil {
		return nil, fmt.Errorf("store: contacts by email: %w", err)
	}
	out := make(map[string]Contact, len(rows))
	for _, c := range rows {
		out[c.Email] = c
	}
	return out, nil
}

// MaxTestRecipients is the spec's limit of test mail recipients.
const MaxTestRecipients = 5

// NormalizeTestRecipients trims, lower-cases and deduplicates the addresses
// of a test mail: one to five valid addresses (422 on "to" otherwise).
func NormalizeTestRecipients(to []string) ([]string, error) {
	out := make([]string, 0, len(to))
	for _, e := range to {
		addr, err := ParseEmail(e)
		if err != nil {
			return nil, Invalid("to", emailProblem(e, err))
		}
		e = addr
		if !containsString(out, e) {
			out = append(out, e)
		}
	}
	switch {
	case len(out) == 0:
		return nil, Invalid("to", "Bitte mindestens eine Adresse angeben.")
	case len(out) > MaxTestRecipients:
		return nil, Invalid("to", fmt.Sprintf("Höchstens %d Adressen für eine Test-E-Mail.", MaxTestRecipients))
	}
	return out, nil
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
