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

// This file holds story sequences (issue 20): the sequences, their days and
// participants, manual and triggered enrolment, and the claim the sequence
// worker (store/sequence) runs. Every day's content lives in a campaign of
// kind 'sequence' (see migrations/00027_sequences.sql), so a day is sent
// through the send queue like any newsletter.
//
// Timing: a participant's next_send_at is sequence_due(base, delay_days,
// send_time) of its next day, where base is the due time of the day it last
// received (its entry before the first). The SQL function is the one place
// that rule lives.
//
// Days in flight: current_day is the position a participant last received.
// Inserting a day at or before that position, or deleting one, renumbers the
// later days and moves current_day with them, so that participants continue
// with the content that followed what they last received. A reorder keeps
// current_day: they continue with whatever now follows that position.

// KindStory and KindSequence are the campaign kinds of story emails and
// sequence days.
const (
	KindStory    = "story"
	KindSequence = "sequence"
)

// Sequence statuses, triggers and participant statuses.
const (
	SequenceInactive = "inactive"
	SequenceActive   = "active"

	TriggerManual = "manual"
	TriggerList   = "list"
	TriggerTag    = "tag"

	ParticipantActive    = "active"
	ParticipantCompleted = "completed"
	ParticipantExited    = "exited"
)

// ObjectSequence is the activity log object type of sequences.
const ObjectSequence = "sequence"

// MaxEnrolBatch is the most contact ids or emails one enrolment request takes.
const MaxEnrolBatch = 1000

// Sequence is a story sequence with its counts.
type Sequence struct {
	ID                int64      `db:"id"`
	AccountID         int64      `db:"account_id"`
	Name              string     `db:"name"`
	Status            string     `db:"status"`
	Trigger           string     `db:"trigger"`
	TriggerListID     *int64     `db:"trigger_list_id"`
	TriggerTag        string     `db:"trigger_tag"`
	SendTime          *string    `db:"send_time"` // "HH:MM", nil: delay-based
	FromName          string     `db:"from_name"`
	ReplyTo           string     `db:"reply_to"`
	SMTPServerID      *int64     `db:"smtp_server_id"`
	TemplateKey       string     `db:"template_key"`
	ActivatedAt       *time.Time `db:"activated_at"`
	DaysCount         int64      `db:"days_count"`
	ParticipantsCount int64      `db:"participants_count"`
	CreatedAt         time.Time  `db:"created_at"`
	UpdatedAt         time.Time  `db:"updated_at"`
}

// SequenceInput is what a caller may write of a sequence; nil: not given.
type SequenceInput struct {
	Name          *string
	Trigger       *string
	TriggerListID *int64 // 0 clears
	TriggerTag    *string
	// SendTime "HH:MM"; "" clears (delay-based timing).
	SendTime     *string
	FromName     *string
	ReplyTo      *string
	SMTPServerID *int64 // 0 clears
	TemplateKey  *string
}

// ValidHHMM reports whether s is a wall-clock time "HH:MM" of a day (00:00
// to 23:59; ClockMinutes also takes the end of day, 24:00).
func ValidHHMM(s string) bool {
	m, ok := ClockMinutes(s)
	return ok && m < 24*60
}

// Normalize trims and checks the input.
func (in *SequenceInput) Normalize() error {
	errs := Errs{}
	normLine(errs, "name", in.Name, maxNameLen)
	normLine(errs, "from_name", in.FromName, maxFromNameLen)
	normLine(errs, "trigger_tag", in.TriggerTag, 100)
	normLine(errs, "template_key", in.TemplateKey, 100)
	normReplyTo(errs, in.ReplyTo)
	if in.Trigger != nil && *in.Trigger != TriggerManual && *in.Trigger != TriggerList && *in.Trigger != TriggerTag {
		errs.Add("trigger", "Erlaubt sind manual, list und tag.")
	}
	if in.SendTime != nil {
		*in.SendTime = strings.TrimSpace(*in.SendTime)
		if *in.SendTime != "" && !ValidHHMM(*in.SendTime) {
			errs.Add("send_time", "Bitte eine Uhrzeit im Format HH:MM angeben.")
		}
	}
	if in.TriggerListID != nil && *in.TriggerListID < 0 {
		errs.Add("trigger_list_id", "Bitte eine gültige ID angeben.")
	}
	if in.SMTPServerID != nil && *in.SMTPServerID < 0 {
		errs.Add("smtp_server_id", "Bitte eine gültige ID angeben.")
	}
	return errs.Err()
}

func (in SequenceInput) apply(s *Sequence) []string {
	var changed []string
	setText(&changed, "name", &s.Name, in.Name)
	setText(&changed, "trigger", &s.Trigger, in.Trigger)
	setText(&changed, "trigger_tag", &s.TriggerTag, in.TriggerTag)
	setText(&changed, "from_name", &s.FromName, in.FromName)
	setText(&changed, "reply_to", &s.ReplyTo, in.ReplyTo)
	setText(&changed, "template_key", &s.TemplateKey, in.TemplateKey)
	setOptID(&changed, "trigger_list_id", &s.TriggerListID, in.TriggerListID)
	setOptID(&changed, "smtp_server_id", &s.SMTPServerID, in.SMTPServerID)
	if in.SendTime != nil {
		cur := ""
		if s.SendTime != nil {
			cur = *s.SendTime
		}
		if cur != *in.SendTime {
			s.SendTime = nil
			if *in.SendTime != "" {
				v := *in.SendTime
				s.SendTime = &v
			}
			changed = append(changed, "send_time")
		}
	}
	return changed
}

func setOptID(changed *[]string, name string, dst **int64, v *int64) {
	if v == nil {
		return
	}
	cur := int64(0)
	if *dst != nil {
		cur = **dst
	}
	if cur == *v {
		return
	}
	*dst = nil
	if *v != 0 {
		id := *v
		*dst = &id
	}
	*changed = append(*changed, name)
}

// check validates the combination: a list trigger names a list of the
// account, a tag trigger a tag.
func (s Sequence) check(ctx context.Context, tx *sqlx.Tx) error {
	errs := Errs{}
	if s.Name == "" {
		errs.Add("name", "Bitte einen Namen angeben.")
	}
	switch s.Trigger {
	case TriggerList:
		if s.TriggerListID == nil {
			errs.Add("trigger_list_id", "Für den Auslöser list bitte eine Liste angeben.")
		}
	case TriggerTag:
		if s.TriggerTag == "" {
			errs.Add("trigger_tag", "Für den Auslöser tag bitte einen Tag angeben.")
		}
	}
	if err := errs.Err(); err != nil {
		return err
	}
	if s.Trigger == TriggerList {
		if err := checkListIDs(ctx, tx, s.AccountID, "trigger_list_id", []int64{*s.TriggerListID}); err != nil {
			return err
		}
	}
	return checkSMTPServer(ctx, tx, s.AccountID, s.SMTPServerID)
}

const sequenceColumns = `s.id, s.account_id, s.name, s.status, s.trigger, s.trigger_list_id, s.trigger_tag,
  to_char(s.send_time, 'HH24:MI') AS send_time, s.from_name, s.reply_to, s.smtp_server_id, s.template_key, s.activated_at,
  (SELECT count(*) FROM sequence_days d WHERE d.sequence_id = s.id) AS days_count,
  (SELECT count(*) FROM sequence_participants p WHERE p.sequence_id = s.id) AS participants_count,
  s.created_at, s.updated_at`

const selectSequence = `SELECT ` + sequenceColumns + ` FROM sequences s WHERE s.account_id = $1 AND s.id = $2`

const lockSequenceStmt = `SELECT ` + sequenceColumns + ` FROM sequences s WHERE s.account_id = $1 AND s.id = $2 FOR UPDATE OF s`

// Sequence returns one sequence.
func (db *DB) Sequence(ctx context.Context, accountID, id int64) (Sequence, error) {
	var s Sequence
	if err := db.GetContext(ctx, &s, selectSequence, accountID, id); err != nil {
		return Sequence{}, notFound("sequence", err)
	}
	return s, nil
}

func lockSequence(ctx context.Context, tx *sqlx.Tx, accountID, id int64) (Sequence, error) {
	var s Sequence
	if err := tx.GetContext(ctx, &s, lockSequenceStmt, accountID, id); err != nil {
		return Sequence{}, notFound("sequence", err)
	}
	return s, nil
}

const selectSequencePage = `SELECT ` + sequenceColumns + ` FROM sequences s WHERE s.account_id = $1 ORDER BY s.id DESC LIMIT $2 OFFSET $3`

// Sequences lists an account's sequences, newest first.
func (db *DB) Sequences(ctx context.Context, accountID int64, p Page) ([]Sequence, int, error) {
	var out []Sequence
	var total int
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.SelectContext(ctx, &out, selectSequencePage, accountID, p.PerPage, p.Offset()); err != nil {
			return fmt.Errorf("store: sequences: %w", err)
		}
		return tx.GetContext(ctx, &total, `SELECT count(*) FROM sequences WHERE account_id = $1`, accountID)
	})
	return out, total, err
}

const insertSequence = `INSERT INTO sequences (account_id, name, trigger, trigger_list_id, trigger_tag, send_time, from_name,
  reply_to, smtp_server_id, template_key)
VALUES ($1, $2, $3, $4, $5, $6::time, $7, $8, $9, $10) RETURNING id`

// CreateSequence creates an inactive sequence without days.
func (db *DB) CreateSequence(ctx context.Context, accountID int64, actor Actor, in SequenceInput) (Sequence, error) {
	if err := in.Normalize(); err != nil {
		return Sequence{}, err
	}
	s := Sequence{AccountID: accountID, Status: SequenceInactive, Trigger: TriggerManual}
	in.apply(&s)
	var id int64
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if err := s.check(ctx, tx); err != nil {
			return err
		}
		if err := tx.GetContext(ctx, &id, insertSequence, accountID, s.Name, s.Trigger, s.TriggerListID, s.TriggerTag,
			s.SendTime, s.FromName, s.ReplyTo, s.SMTPServerID, s.TemplateKey); err != nil {
			return fmt.Errorf("store: create sequence: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "sequence.created", ObjectType: ObjectSequence,
			ObjectID: id, Details: map[string]any{"name": s.Name}})
	})
	if err != nil {
		return Sequence{}, err
	}
	return db.Sequence(ctx, accountID, id)
}

const updateSequence = `UPDATE sequences SET name = $3, trigger = $4, trigger_list_id = $5, trigger_tag = $6, send_time = $7::time,
  from_name = $8, reply_to = $9, smtp_server_id = $10, template_key = $11, updated_at = now()
WHERE account_id = $1 AND id = $2`

// UpdateSequence changes a sequence. A new send_time applies to every
// participant's next day at once; new sender settings apply to every day
// sent from now on.
func (db *DB) UpdateSequence(ctx context.Context, accountID int64, actor Actor, id int64, in SequenceInput) (Sequence, error) {
	if err := in.Normalize(); err != nil {
		return Sequence{}, err
	}
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		s, err := lockSequence(ctx, tx, accountID, id)
		if err != nil {
			return err
		}
		changed := in.apply(&s)
		if len(changed) == 0 {
			return nil
		}
		if err := s.check(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, updateSequence, accountID, id, s.Name, s.Trigger, s.TriggerListID, s.TriggerTag,
			s.SendTime, s.FromName, s.ReplyTo, s.SMTPServerID, s.TemplateKey); err != nil {
			return fmt.Errorf("store: update sequence: %w", err)
		}
		for _, f := range changed {
			switch f {
			case "send_time":
				if err := recomputeDue(ctx, tx, id, -1); err != nil {
					return err
				}
			case "from_name", "reply_to", "smtp_server_id", "template_key":
				if err := reviseAllDays(ctx, tx, s); err != nil {
					return err
				}
			}
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "sequence.updated", ObjectType: ObjectSequence,
			ObjectID: id, Details: map[string]any{"changed": changed}})
	})
	if err != nil {
		return Sequence{}, err
	}
	return db.Sequence(ctx, accountID, id)
}

// DeleteSequence deletes a sequence with its days and participants. Mails
// already queued still go out; the campaigns that sent days stay (with their
// statistics), drafts that never sent are removed.
func (db *DB) DeleteSequence(ctx context.Context, accountID int64, actor Actor, id int64) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		s, err := lockSequence(ctx, tx, accountID, id)
		if err != nil {
			return err
		}
		var ids pq.Int64Array
		if err := tx.GetContext(ctx, &ids, `SELECT coalesce(array_agg(campaign_id), '{}') FROM sequence_day_campaigns
WHERE sequence_id = $1`, id); err != nil {
			return fmt.Errorf("store: delete sequence: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM sequences WHERE account_id = $1 AND id = $2`, accountID, id); err != nil {
			return fmt.Errorf("store: delete sequence: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM campaigns WHERE account_id = $1 AND id = ANY($2) AND kind = 'sequence'
AND status = 'draft' AND recipients_count = 0`, accountID, ids); err != nil {
			return fmt.Errorf("store: delete sequence: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "sequence.deleted", ObjectType: ObjectSequence,
			ObjectID: id, Details: map[string]any{"name": s.Name}})
	})
}

// ActivateSequence starts (or resumes) a sequence: it needs at least one day
// and every day needs a subject and content (422 on days otherwise). Held
// participants continue where they are; one whose day fell due while held
// gets it now, or with send_time at the next send_time.
func (db *DB) ActivateSequence(ctx context.Context, accountID int64, actor Actor, id int64, now time.Time) (Sequence, error) {
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		s, err := lockSequence(ctx, tx, accountID, id)
		if err != nil {
			return err
		}
		if s.Status == SequenceActive {
			return nil
		}
		days, err := sequenceDays(ctx, tx, accountID, id)
		if err != nil {
			return err
		}
		if err := readyDays(days); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sequences SET status = 'active', activated_at = $2, updated_at = now() WHERE id = $1`,
			id, now); err != nil {
			return fmt.Errorf("store: activate sequence: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sequence_participants p SET running = true,
  next_send_at = CASE WHEN s.send_time IS NOT NULL AND p.next_send_at < $2 THEN sequence_due($2, 0, s.send_time) ELSE p.next_send_at END
FROM sequences s WHERE s.id = p.sequence_id AND p.sequence_id = $1 AND p.status = 'active'`, id, now); err != nil {
			return fmt.Errorf("store: activate sequence: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "sequence.activated", ObjectType: ObjectSequence, ObjectID: id})
	})
	if err != nil {
		return Sequence{}, err
	}
	return db.Sequence(ctx, accountID, id)
}

// readyDays is the 422 of a sequence that cannot run: no day, or a day
// without subject or content.
func readyDays(days []SequenceDay) error {
	if len(days) == 0 {
		return Invalid("days", "Die Sequenz braucht mindestens einen Tag mit Betreff und Inhalt.")
	}
	for _, d := range days {
		if !d.Ready() {
			return Invalid("days", fmt.Sprintf("Tag %d braucht einen Betreff und einen Inhalt.", d.Position))
		}
	}
	return nil
}

// DeactivateSequence holds every participant where they are.
func (db *DB) DeactivateSequence(ctx context.Context, accountID int64, actor Actor, id int64) (Sequence, error) {
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		s, err := lockSequence(ctx, tx, accountID, id)
		if err != nil {
			return err
		}
		if s.Status == SequenceInactive {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sequences SET status = 'inactive', updated_at = now() WHERE id = $1`, id); err != nil {
			return fmt.Errorf("store: deactivate sequence: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sequence_participants SET running = false WHERE sequence_id = $1 AND running`, id); err != nil {
			return fmt.Errorf("store: deactivate sequence: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "sequence.deactivated", ObjectType: ObjectSequence, ObjectID: id})
	})
	if err != nil {
		return Sequence{}, err
	}
	return db.Sequence(ctx, accountID, id)
}

// SequenceDay is one day of a sequence with the content of its campaign.
type SequenceDay struct {
	ID            int64         `db:"id"`
	SequenceID    int64         `db:"sequence_id"`
	Position      int           `db:"position"`
	DelayDays     int           `db:"delay_days"`
	CampaignID    int64         `db:"campaign_id"`
	Subject       string        `db:"subject"`
	Preheader     string        `db:"preheader"`
	HTML          string        `db:"html"`
	Text          string        `db:"plain_text"`
	Markdown      string        `db:"markdown"`
	TemplateKey   string        `db:"template_key"`
	AttachmentIDs pq.Int64Array `db:"attachment_ids"`
	CreatedAt     time.Time     `db:"created_at"`
	UpdatedAt     time.Time     `db:"updated_at"`
}

// Ready reports whether the day can be sent: a subject and content.
func (d SequenceDay) Ready() bool {
	c := Campaign{Subject: d.Subject, HTML: d.HTML, Text: d.Text, Markdown: d.Markdown}
	return strings.TrimSpace(d.Subject) != "" && c.HasContent()
}

const dayColumns = `d.id, d.sequence_id, d.position, d.delay_days, d.campaign_id, c.subject, c.preheader, c.html, c.plain_text,
  c.markdown, c.template_key, c.attachment_ids, d.created_at, d.updated_at`

const selectDays = `SELECT ` + dayColumns + ` FROM sequence_days d JOIN campaigns c ON c.id = d.campaign_id
WHERE d.account_id = $1 AND d.sequence_id = $2 ORDER BY d.position`

func sequenceDays(ctx context.Context, q sqlx.QueryerContext, accountID, seqID int64) ([]SequenceDay, error) {
	var out []SequenceDay
	if err := sqlx.SelectContext(ctx, q, &out, selectDays, accountID, seqID); err != nil {
		return nil, fmt.Errorf("store: sequence days: %w", err)
	}
	return out, nil
}

// SequenceDays returns a sequence's days in position order (404 for another
// account's sequence).
func (db *DB) SequenceDays(ctx context.Context, accountID, seqID int64) ([]SequenceDay, error) {
	if _, err := db.Sequence(ctx, accountID, seqID); err != nil {
		return nil, err
	}
	return sequenceDays(ctx, db, accountID, seqID)
}

// SequenceDayByID returns one day.
const sequenceDayByID = `SELECT ` + dayColumns + ` FROM sequence_days d JOIN campaigns c ON c.id = d.campaign_id
WHERE d.account_id = $1 AND d.sequence_id = $2 AND d.id = $3`

func (db *DB) SequenceDayByID(ctx context.Context, accountID, seqID, dayID int64) (SequenceDay, error) {
	var d SequenceDay
	if err := db.GetContext(ctx, &d, sequenceDayByID, accountID, seqID, dayID); err != nil {
		return SequenceDay{}, notFound("sequence day", err)
	}
	return d, nil
}

// DayInput is what a caller may write of a day: its place and timing, and
// its mail content (the content fields of the shared campaign content).
type DayInput struct {
	Position  *int
	DelayDays *int
	Content   NewsletterInput // only the content fields are used
}

// contentOnly keeps the content fields of a mail input: subject, preheader,
// html, text, markdown, template_key. The one place where story emails and
// sequence days take their content from a request.
func contentOnly(in NewsletterInput) NewsletterInput {
	return NewsletterInput{Subject: in.Subject, Preheader: in.Preheader, HTML: in.HTML, Text: in.Text,
		Markdown: in.Markdown, TemplateKey: in.TemplateKey, AttachmentIDs: in.AttachmentIDs}
}

// resolveMailContentTx checks c's content against the account with the
// shared content model (template_key, attachment_ids; a starting-point
// template's content copied when copyStart and c has no body of its own).
func resolveMailContentTx(ctx context.Context, tx *sqlx.Tx, c *Campaign, copyStart bool) error {
	mc := c.Content()
	if err := resolveContentTx(ctx, tx, c.AccountID, &mc, copyStart); err != nil {
		return err
	}
	c.setContent(mc)
	return nil
}

// Normalize checks the input.
func (in *DayInput) Normalize() error {
	in.Content = contentOnly(in.Content)
	err := in.Content.Normalize()
	errs := Errs{}
	var ve *ValidationError
	if errors.As(err, &ve) {
		for k, v := range ve.Fields {
			errs.Add(k, v)
		}
	} else if err != nil {
		return err
	}
	if in.DelayDays != nil && (*in.DelayDays < 0 || *in.DelayDays > 365) {
		errs.Add("delay_days", "Bitte 0 bis 365 Tage angeben.")
	}
	if in.Position != nil && *in.Position < 1 {
		errs.Add("position", "Positionen beginnen bei 1.")
	}
	return errs.Err()
}

// dayCampaign is the campaign that carries a day's content with the
// sequence's sender settings.
func dayCampaign(s Sequence, position int) Campaign {
	return Campaign{AccountID: s.AccountID, Kind: KindSequence, Type: TypeNewsletter, Status: CampaignDraft,
		Name: fmt.Sprintf("%s – Tag %d", s.Name, position), FromName: s.FromName, ReplyTo: s.ReplyTo,
		SMTPServerID: s.SMTPServerID, TemplateKey: s.TemplateKey, TrackOpens: true, TrackClicks: true, Placeholders: Placeholders{}}
}

const shiftDaysUp = `UPDATE sequence_days SET position = position + 1, updated_at = now() WHERE sequence_id = $1 AND position >= $2`

const shiftParticipantsUp = `UPDATE sequence_participants SET current_day = current_day + 1
WHERE sequence_id = $1 AND current_day >= $2 AND status = 'active'`

// CreateSequenceDay adds a day at position (default: last). Participants who
// already received the day at that position or later keep their place (their
// current_day moves with the renumbering), so they do not get the new day.
func (db *DB) CreateSequenceDay(ctx context.Context, accountID int64, actor Actor, seqID int64, in DayInput) (SequenceDay, error) {
	if err := in.Normalize(); err != nil {
		return SequenceDay{}, err
	}
	var dayID int64
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		dayID, err = createDayTx(ctx, tx, accountID, actor, seqID, in)
		return err
	})
	if err != nil {
		return SequenceDay{}, err
	}
	return db.SequenceDayByID(ctx, accountID, seqID, dayID)
}

func createDayTx(ctx context.Context, tx *sqlx.Tx, accountID int64, actor Actor, seqID int64, in DayInput) (int64, error) {
	s, err := lockSequence(ctx, tx, accountID, seqID)
	if err != nil {
		return 0, err
	}
	n := int(s.DaysCount)
	pos := n + 1
	if in.Position != nil && *in.Position <= n {
		pos = *in.Position
	}
	delay := 1
	if pos == 1 {
		delay = 0
	}
	if in.DelayDays != nil {
		delay = *in.DelayDays
	}
	c := dayCampaign(s, pos)
	in.Content.apply(&c)
	if err := contentErrors(c); err != nil {
		return 0, err
	}
	if err := resolveMailContentTx(ctx, tx, &c, true); err != nil {
		return 0, err
	}
	if s.Status == SequenceActive && !(SequenceDay{Subject: c.Subject, HTML: c.HTML, Text: c.Text, Markdown: c.Markdown}).Ready() {
		return 0, Invalid("subject", "Eine aktive Sequenz braucht für jeden Tag Betreff und Inhalt.")
	}
	c, err = insertCampaignTx(ctx, tx, c)
	if err != nil {
		return 0, err
	}
	if pos <= n {
		if _, err := tx.ExecContext(ctx, shiftDaysUp, seqID, pos); err != nil {
			return 0, fmt.Errorf("store: insert day: %w", err)
		}
		if _, err := tx.ExecContext(ctx, shiftParticipantsUp, seqID, pos); err != nil {
			return 0, fmt.Errorf("store: insert day: %w", err)
		}
	}
	var id int64
	if err := tx.GetContext(ctx, &id, `INSERT INTO sequence_days (account_id, sequence_id, position, delay_days, campaign_id)
VALUES ($1, $2, $3, $4, $5) RETURNING id`, accountID, seqID, pos, delay, c.ID); err != nil {
		return 0, fmt.Errorf("store: insert day: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO sequence_day_campaigns (account_id, sequence_id, day_id, campaign_id)
VALUES ($1, $2, $3, $4)`, accountID, seqID, id, c.ID); err != nil {
		return 0, fmt.Errorf("store: insert day: %w", err)
	}
	if err := touchSequence(ctx, tx, seqID); err != nil {
		return 0, err
	}
	if err := recomputeDue(ctx, tx, seqID, pos-1); err != nil {
		return 0, err
	}
	return id, LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "sequence.day_created", ObjectType: ObjectSequence,
		ObjectID: seqID, Details: map[string]any{"day_id": id, "position": pos}})
}

func touchSequence(ctx context.Context, tx *sqlx.Tx, seqID int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE sequences SET updated_at = now() WHERE id = $1`, seqID); err != nil {
		return fmt.Errorf("store: sequence: %w", err)
	}
	return nil
}

// recomputeDue sets next_send_at of the sequence's active participants (only
// those whose current_day is atDay, unless atDay < 0) from their base and
// the delay of their next day; without a next day it is NULL (they complete
// at their next claim).
const recomputeDueStmt = `UPDATE sequence_participants p SET next_send_at = (
  SELECT sequence_due(coalesce(p.base_at, p.joined_at), d.delay_days, s.send_time)
  FROM sequence_days d JOIN sequences s ON s.id = d.sequence_id
  WHERE d.sequence_id = p.sequence_id AND d.position = p.current_day + 1)
WHERE p.sequence_id = $1 AND p.status = 'active' AND ($2 < 0 OR p.current_day = $2)`

// completeStranded marks participants due at once whose next day is gone,
// so that the worker completes them (with sequence.completed).
const completeStranded = `UPDATE sequence_participants p SET next_send_at = coalesce(p.base_at, p.joined_at)
WHERE p.sequence_id = $1 AND p.status = 'active' AND p.current_day > 0 AND p.next_send_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM sequence_days d WHERE d.sequence_id = p.sequence_id AND d.position = p.current_day + 1)`

func recomputeDue(ctx context.Context, tx *sqlx.Tx, seqID int64, atDay int) error {
	if _, err := tx.ExecContext(ctx, recomputeDueStmt, seqID, atDay); err != nil {
		return fmt.Errorf("store: sequence timing: %w", err)
	}
	if _, err := tx.ExecContext(ctx, completeStranded, seqID); err != nil {
		return fmt.Errorf("store: sequence timing: %w", err)
	}
	return nil
}

// UpdateSequenceDay changes a day's delay, content or position (a reorder:
// the days between shift by one; participants keep their current_day).
func (db *DB) UpdateSequenceDay(ctx context.Context, accountID int64, actor Actor, seqID, dayID int64, in DayInput) (SequenceDay, error) {
	if err := in.Normalize(); err != nil {
		return SequenceDay{}, err
	}
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		s, err := lockSequence(ctx, tx, accountID, seqID)
		if err != nil {
			return err
		}
		d, err := lockDay(ctx, tx, accountID, seqID, dayID)
		if err != nil {
			return err
		}
		if in.DelayDays != nil && *in.DelayDays != d.DelayDays {
			if _, err := tx.ExecContext(ctx, `UPDATE sequence_days SET delay_days = $2, updated_at = now() WHERE id = $1`, dayID, *in.DelayDays); err != nil {
				return fmt.Errorf("store: update day: %w", err)
			}
			if err := recomputeDue(ctx, tx, seqID, d.Position-1); err != nil {
				return err
			}
		}
		if err := reviseDay(ctx, tx, s, d, in.Content); err != nil {
			return err
		}
		if in.Position != nil && *in.Position != d.Position {
			to := min(*in.Position, int(s.DaysCount))
			if _, err := tx.ExecContext(ctx, `UPDATE sequence_days SET position = CASE
  WHEN id = $2 THEN $4::int
  WHEN $4::int < $3::int AND position >= $4::int AND position < $3::int THEN position + 1
  WHEN $4::int > $3::int AND position <= $4::int AND position > $3::int THEN position - 1
  ELSE position END, updated_at = now()
WHERE sequence_id = $1`, seqID, dayID, d.Position, to); err != nil {
				return fmt.Errorf("store: reorder days: %w", err)
			}
			if err := recomputeDue(ctx, tx, seqID, -1); err != nil {
				return err
			}
		}
		if err := touchSequence(ctx, tx, seqID); err != nil {
			return err
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "sequence.day_updated", ObjectType: ObjectSequence,
			ObjectID: seqID, Details: map[string]any{"day_id": dayID}})
	})
	if err != nil {
		return SequenceDay{}, err
	}
	return db.SequenceDayByID(ctx, accountID, seqID, dayID)
}

func lockDay(ctx context.Context, tx *sqlx.Tx, accountID, seqID, dayID int64) (SequenceDay, error) {
	var d SequenceDay
	if err := tx.GetContext(ctx, &d, `SELECT `+dayColumns+` FROM sequence_days d JOIN campaigns c ON c.id = d.campaign_id
WHERE d.account_id = $1 AND d.sequence_id = $2 AND d.id = $3 FOR UPDATE OF d`, accountID, seqID, dayID); err != nil {
		return SequenceDay{}, notFound("sequence day", err)
	}
	return d, nil
}

const updateDayCampaign = `UPDATE campaigns SET name = $2, subject = $3, preheader = $4, html = $5, plain_text = $6, markdown = $7,
  template_key = $8, from_name = $9, reply_to = $10, smtp_server_id = $11, attachment_ids = $12, updated_at = now()
WHERE id = $1 AND status = 'draft'`

// reviseDay applies content (and the sequence's current sender settings) to
// a day. A campaign that never sent is changed in place; one that did keeps
// its content (the send workers compiled it) and the day gets a new campaign.
func reviseDay(ctx context.Context, tx *sqlx.Tx, s Sequence, d SequenceDay, content NewsletterInput) error {
	var c Campaign
	if err := tx.GetContext(ctx, &c, `SELECT `+campaignColumns+` FROM campaigns WHERE id = $1 FOR UPDATE`, d.CampaignID); err != nil {
		return fmt.Errorf("store: day campaign: %w", err)
	}
	next := c
	changed := content.apply(&next)
	if next.FromName != s.FromName || next.ReplyTo != s.ReplyTo || next.ServerID() != serverID(s.SMTPServerID) {
		next.FromName, next.ReplyTo, next.SMTPServerID = s.FromName, s.ReplyTo, s.SMTPServerID
		changed = append(changed, "sender")
	}
	if len(changed) == 0 {
		return nil
	}
	if err := contentErrors(next); err != nil {
		return err
	}
	if content.TemplateKey != nil || content.AttachmentIDs != nil || content.HTML != nil {
		if err := resolveMailContentTx(ctx, tx, &next, content.TemplateKey != nil); err != nil {
			return err
		}
	}
	if s.Status == SequenceActive && !(SequenceDay{Subject: next.Subject, HTML: next.HTML, Text: next.Text, Markdown: next.Markdown}).Ready() {
		return Invalid("subject", "Eine aktive Sequenz braucht für jeden Tag Betreff und Inhalt.")
	}
	next.Name = fmt.Sprintf("%s – Tag %d", s.Name, d.Position)
	if c.Status == CampaignDraft {
		_, err := tx.ExecContext(ctx, updateDayCampaign, c.ID, next.Name, next.Subject, next.Preheader, next.HTML, next.Text,
			next.Markdown, next.TemplateKey, next.FromName, next.ReplyTo, next.SMTPServerID, nonNilIDArray(next.AttachmentIDs))
		if err != nil {
			return fmt.Errorf("store: update day: %w", err)
		}
		return nil
	}
	// A running A/B test of the day queues into its campaign until it is
	// decided; new content now would leave the test or the day behind.
	var testing bool
	if err := tx.GetContext(ctx, &testing, `SELECT EXISTS (SELECT 1 FROM ab_tests WHERE target_type = 'soap' AND target_id = $1
  AND status = 'running')`, d.ID); err != nil {
		return fmt.Errorf("store: update day: %w", err)
	}
	if testing {
		return &ConflictError{Reason: "ab_test_running", Message: fmt.Sprintf("Für Tag %d läuft ein A/B-Test. Bitte zuerst den Gewinner festlegen oder den Test stoppen.", d.Position)}
	}
	fresh := dayCampaign(s, d.Position)
	fresh.setContent(next.Content())
	fresh, err := insertCampaignTx(ctx, tx, fresh)
	if err != nil {
		return err
	}
	return setDayCampaignTx(ctx, tx, s.AccountID, d.ID, fresh.ID)
}

// setDayCampaignTx makes campaignID the campaign of a day (the one that
// participants who reach the day from now on are queued into); the day keeps
// its earlier campaigns for its funnel.
func setDayCampaignTx(ctx context.Context, tx *sqlx.Tx, accountID, dayID, campaignID int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE sequence_days SET campaign_id = $3, updated_at = now() WHERE account_id = $1 AND id = $2`,
		accountID, dayID, campaignID); err != nil {
		return fmt.Errorf("store: day campaign: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO sequence_day_campaigns (account_id, sequence_id, day_id, campaign_id)
SELECT account_id, sequence_id, id, $3 FROM sequence_days WHERE account_id = $1 AND id = $2`, accountID, dayID, campaignID); err != nil {
		return fmt.Errorf("store: day campaign: %w", err)
	}
	return nil
}

// dayCopy is a new draft campaign of a day with c's content and sender.
func dayCopy(c Campaign) Campaign {
	fresh := Campaign{AccountID: c.AccountID, Kind: KindSequence, Type: TypeNewsletter, Status: CampaignDraft, Name: c.Name,
		FromName: c.FromName, ReplyTo: c.ReplyTo, SMTPServerID: c.SMTPServerID, TrackOpens: c.TrackOpens,
		TrackClicks: c.TrackClicks, Placeholders: c.Placeholders}
	fresh.setContent(c.Content())
	return fresh
}

func serverID(id *int64) int64 {
	if id == nil {
		return 0
	}
	return *id
}

// reviseAllDays applies changed sender settings to every day.
func reviseAllDays(ctx context.Context, tx *sqlx.Tx, s Sequence) error {
	days, err := sequenceDays(ctx, tx, s.AccountID, s.ID)
	if err != nil {
		return err
	}
	for _, d := range days {
		if err := reviseDay(ctx, tx, s, d, NewsletterInput{}); err != nil {
			return err
		}
	}
	return nil
}

// DeleteSequenceDay deletes a day; the later days move up by one, and so do
// the current_day of participants who had received it or a later day.
func (db *DB) DeleteSequenceDay(ctx context.Context, accountID int64, actor Actor, seqID, dayID int64) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		s, err := lockSequence(ctx, tx, accountID, seqID)
		if err != nil {
			return err
		}
		d, err := lockDay(ctx, tx, accountID, seqID, dayID)
		if err != nil {
			return err
		}
		if s.Status == SequenceActive && s.DaysCount == 1 {
			return &ConflictError{Reason: "last_day", Message: "Der einzige Tag einer aktiven Sequenz kann nicht gelöscht werden. Bitte die Sequenz zuerst deaktivieren."}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM sequence_days WHERE id = $1`, dayID); err != nil {
			return fmt.Errorf("store: delete day: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM campaigns WHERE id = $1 AND status = 'draft' AND recipients_count = 0`, d.CampaignID); err != nil {
			return fmt.Errorf("store: delete day: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sequence_days SET position = position - 1, updated_at = now()
WHERE sequence_id = $1 AND position > $2`, seqID, d.Position); err != nil {
			return fmt.Errorf("store: delete day: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sequence_participants SET current_day = current_day - 1
WHERE sequence_id = $1 AND current_day >= $2 AND status = 'active'`, seqID, d.Position); err != nil {
			return fmt.Errorf("store: delete day: %w", err)
		}
		if err := recomputeDue(ctx, tx, seqID, d.Position-1); err != nil {
			return err
		}
		if err := touchSequence(ctx, tx, seqID); err != nil {
			return err
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "sequence.day_deleted", ObjectType: ObjectSequence,
			ObjectID: seqID, Details: map[string]any{"day_id": dayID, "position": d.Position}})
	})
}

// AppendSequenceDays appends days (the AI outline) in one transaction.
func (db *DB) AppendSequenceDays(ctx context.Context, accountID int64, actor Actor, seqID int64, days []DayInput) ([]SequenceDay, error) {
	var out []SequenceDay
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		out, err = AppendSequenceDaysTx(ctx, tx, accountID, actor, seqID, days)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AppendSequenceDaysTx appends days in tx, the transaction of a caller that
// commits them together with something else (the AI charge of an outline).
func AppendSequenceDaysTx(ctx context.Context, tx *sqlx.Tx, accountID int64, actor Actor, seqID int64, days []DayInput) ([]SequenceDay, error) {
	for i := range days {
		if err := days[i].Normalize(); err != nil {
			return nil, err
		}
	}
	out := make([]SequenceDay, 0, len(days))
	for _, d := range days {
		d.Position = nil
		id, err := createDayTx(ctx, tx, accountID, actor, seqID, d)
		if err != nil {
			return nil, err
		}
		var day SequenceDay
		if err := tx.GetContext(ctx, &day, sequenceDayByID, accountID, seqID, id); err != nil {
			return nil, fmt.Errorf("store: appended sequence day: %w", err)
		}
		out = append(out, day)
	}
	return out, nil
}

// Participant is a contact's place in a sequence.
type Participant struct {
	ID          int64      `db:"id"`
	SequenceID  int64      `db:"sequence_id"`
	ContactID   int64      `db:"contact_id"`
	Email       string     `db:"email"`
	Status      string     `db:"status"`
	CurrentDay  int        `db:"current_day"`
	NextSendAt  *time.Time `db:"next_send_at"`
	JoinedAt    time.Time  `db:"joined_at"`
	CompletedAt *time.Time `db:"completed_at"`
	ExitedAt    *time.Time `db:"exited_at"`
	ExitReason  string     `db:"exit_reason"`
}

const participantColumns = `id, sequence_id, contact_id, email, status, current_day, next_send_at, joined_at, completed_at,
  exited_at, exit_reason`

// ValidParticipantStatus reports whether s is a participant status.
func ValidParticipantStatus(s string) bool {
	return s == ParticipantActive || s == ParticipantCompleted || s == ParticipantExited
}

// Participants lists a sequence's participants in enrolment order; status
// filters when not empty.
func (db *DB) Participants(ctx context.Context, accountID, seqID int64, status string, p Page) ([]Participant, int, error) {
	if _, err := db.Sequence(ctx, accountID, seqID); err != nil {
		return nil, 0, err
	}
	var out []Participant
	var total int
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.SelectContext(ctx, &out, `SELECT `+participantColumns+` FROM sequence_participants
WHERE account_id = $1 AND sequence_id = $2 AND ($3 = '' OR status = $3) ORDER BY id LIMIT $4 OFFSET $5`,
			accountID, seqID, status, p.PerPage, p.Offset()); err != nil {
			return fmt.Errorf("store: participants: %w", err)
		}
		return tx.GetContext(ctx, &total, `SELECT count(*) FROM sequence_participants
WHERE account_id = $1 AND sequence_id = $2 AND ($3 = '' OR status = $3)`, accountID, seqID, status)
	})
	return out, total, err
}

// EnrolResult counts an enrolment.
type EnrolResult struct {
	Enrolled int64
	Skipped  int64
}

// enrolContacts enrols the subscribed contacts among ids into sequence $2 in
// one statement: a contact already in it (in any status) is left alone.
// Their first day is due by its delay after now (NULL without days yet).
const enrolContacts = `WITH ins AS (
  INSERT INTO sequence_participants (account_id, sequence_id, contact_id, email, joined_at, running, next_send_at)
  SELECT $1, s.id, c.id, c.email, $4, s.status = 'active',
    (SELECT sequence_due($4, d.delay_days, s.send_time) FROM sequence_days d WHERE d.sequence_id = s.id AND d.position = 1)
  FROM sequences s
  JOIN contacts c ON c.account_id = $1 AND c.id = ANY($3) AND c.status = 'subscribed'
  WHERE s.account_id = $1 AND s.id = $2
  ORDER BY c.id
  ON CONFLICT (sequence_id, contact_id) DO NOTHING
  RETURNING 1)
SELECT count(*) FROM ins`

// EnrolContacts enrols contacts by id (set-based: one statement for any
// number of them). Unknown, unsubscribed and already enrolled contacts are
// skipped. Allowed while the sequence is inactive (nothing is sent until it
// is activated).
func (db *DB) EnrolContacts(ctx context.Context, accountID int64, actor Actor, seqID int64, contactIDs []int64, now time.Time) (EnrolResult, error) {
	var res EnrolResult
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := lockSequence(ctx, tx, accountID, seqID); err != nil {
			return err
		}
		ids := dedupIDs(contactIDs)
		if err := tx.GetContext(ctx, &res.Enrolled, enrolContacts, accountID, seqID, pq.Int64Array(ids), now); err != nil {
			return fmt.Errorf("store: enrol: %w", err)
		}
		res.Skipped = int64(len(contactIDs)) - res.Enrolled
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "sequence.enrolled", ObjectType: ObjectSequence,
			ObjectID: seqID, Details: map[string]any{"enrolled": res.Enrolled, "skipped": res.Skipped}})
	})
	return res, err
}

// EnrolEmails enrols contacts by address (normalised); addresses that are no
// contact of the account are skipped.
func (db *DB) EnrolEmails(ctx context.Context, accountID int64, actor Actor, seqID int64, emails []string, now time.Time) (EnrolResult, error) {
	norm := make(pq.StringArray, 0, len(emails))
	for _, e := range emails {
		addr, err := ParseEmail(e)
		if err != nil {
			return EnrolResult{}, Invalid("emails", emailProblem(e, err))
		}
		norm = append(norm, addr)
	}
	var ids []int64
	if err := db.SelectContext(ctx, &ids, `SELECT id FROM contacts WHERE account_id = $1 AND email = ANY($2)`, accountID, norm); err != nil {
		return EnrolResult{}, fmt.Errorf("store: enrol: %w", err)
	}
	res, err := db.EnrolContacts(ctx, accountID, actor, seqID, ids, now)
	res.Skipped = int64(len(emails)) - res.Enrolled
	return res, err
}

func dedupIDs(ids []int64) []int64 {
	seen := make(map[int64]bool, len(ids))
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if id > 0 && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// RemoveParticipant takes a contact out of a sequence (status exited,
// reason removed); 404 when it is not in it.
func (db *DB) RemoveParticipant(ctx context.Context, accountID int64, actor Actor, seqID, contactID int64, now time.Time) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := lockSequence(ctx, tx, accountID, seqID); err != nil {
			return err
		}
		r, err := tx.ExecContext(ctx, `DELETE FROM sequence_participants WHERE account_id = $1 AND sequence_id = $2 AND contact_id = $3`,
			accountID, seqID, contactID)
		if err != nil {
			return fmt.Errorf("store: remove participant: %w", err)
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "sequence.participant_removed", ObjectType: ObjectSequence,
			ObjectID: seqID, Details: map[string]any{"contact_id": contactID}})
	})
}

// exitContacts ends the active participations of contacts (every sequence
// of the account) with a reason.
const exitContacts = `UPDATE sequence_participants SET status = 'exited', exited_at = $3, exit_reason = $4, next_send_at = NULL
WHERE account_id = $1 AND contact_id = ANY($2) AND status = 'active'`

// sequenceCompleted is the payload of sequence.completed.
type sequenceCompleted struct {
	Sequence sequenceRef     `json:"sequence"`
	Contact  json.RawMessage `json:"contact"`
}

type sequenceRef struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// SequenceFunnel is how far a sequence's participants got, per day.
type SequenceFunnel struct {
	Participants int64
	Active       int64
	Completed    int64
	Exited       int64
	Days         []FunnelDay
}

// FunnelDay is one day of the funnel.
type FunnelDay struct {
	DayID    int64  `db:"day_id"`
	Position int    `db:"position"`
	Subject  string `db:"subject"`
	Reached  int64  `db:"reached"`
	Sent     int64  `db:"sent"`
	Opened   int64  `db:"opened"`
	Clicked  int64  `db:"clicked"`
}

const selectFunnelDays = `SELECT d.id AS day_id, d.position, c.subject,
  (SELECT count(*) FROM sequence_participants p WHERE p.sequence_id = d.sequence_id AND p.current_day >= d.position) AS reached,
  coalesce(r.sent, 0) AS sent, coalesce(r.opened, 0) AS opened, coalesce(r.clicked, 0) AS clicked
FROM sequence_days d JOIN campaigns c ON c.id = d.campaign_id
LEFT JOIN LATERAL (
  SELECT count(*) FILTER (WHERE x.status = 'sent') AS sent, count(*) FILTER (WHERE x.opened_at IS NOT NULL) AS opened,
    count(*) FILTER (WHERE x.clicked_at IS NOT NULL) AS clicked
  FROM sequence_day_campaigns m JOIN campaign_recipients x ON x.campaign_id = m.campaign_id
  WHERE m.day_id = d.id) r ON true
WHERE d.account_id = $1 AND d.sequence_id = $2 ORDER BY d.position`

// Funnel counts a sequence's participants by status and, per day, how many
// reached it (current_day at or past it), were sent it, opened and clicked.
func (db *DB) Funnel(ctx context.Context, accountID, seqID int64) (SequenceFunnel, error) {
	if _, err := db.Sequence(ctx, accountID, seqID); err != nil {
		return SequenceFunnel{}, err
	}
	var f SequenceFunnel
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.QueryRowxContext(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'active'),
  count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'exited')
FROM sequence_participants WHERE account_id = $1 AND sequence_id = $2`, accountID, seqID).Scan(&f.Participants, &f.Active, &f.Completed, &f.Exited); err != nil {
			return fmt.Errorf("store: funnel: %w", err)
		}
		return tx.SelectContext(ctx, &f.Days, selectFunnelDays, accountID, seqID)
	})
	return f, err
}

// The claim of the sequence worker.

// claimDue locks up to $2 due participants of running sequences, oldest due
// first (one range scan of sequence_participants_due_idx), with what the
// send needs: the campaign of their next day and whether their contact may
// still get mail.
const claimDue = `WITH due AS (
  SELECT p.id FROM sequence_participants p
  WHERE p.status = 'active' AND p.running AND p.next_send_at <= $1
  ORDER BY p.next_send_at LIMIT $2
  FOR UPDATE SKIP LOCKED
)
SELECT p.id, p.account_id, p.sequence_id, p.contact_id, p.current_day, coalesce(d.id, 0) AS day_id,
  coalesce(d.campaign_id, 0) AS campaign_id,
  coalesce(c.email, p.email) AS email,
  CASE WHEN c.id IS NULL THEN 'deleted' WHEN c.status <> 'subscribed' THEN 'unsubscribed'
    WHEN EXISTS (SELECT 1 FROM blocked_addresses b WHERE b.account_id = p.account_id AND b.email = c.email) THEN 'blocked'
    ELSE '' END AS exit_reason
FROM due JOIN sequence_participants p ON p.id = due.id
LEFT JOIN sequence_days d ON d.sequence_id = p.sequence_id AND d.position = p.current_day + 1
LEFT JOIN contacts c ON c.account_id = p.account_id AND c.id = p.contact_id`

type dueParticipant struct {
	ID         int64  `db:"id"`
	AccountID  int64  `db:"account_id"`
	SequenceID int64  `db:"sequence_id"`
	ContactID  int64  `db:"contact_id"`
	CurrentDay int    `db:"current_day"`
	DayID      int64  `db:"day_id"`
	CampaignID int64  `db:"campaign_id"`
	Email      string `db:"email"`
	ExitReason string `db:"exit_reason"`
}

// advanceParticipants moves sent (and day-less) participants past their day:
// the next day's due time from this one's, or completed without a next day.
// base is the due time of the day just queued (not the claim time, so that
// a late tick does not shift the rest), but no older than 5 minutes before
// now (a participant held for weeks does not get the rest in a burst).
const advanceParticipants = `WITH x AS (
  SELECT p.id, greatest(p.next_send_at, $2::timestamptz - interval '5 minutes') AS base,
    p.current_day + CASE WHEN x.sent THEN 1 ELSE 0 END AS day, nd.delay_days, s.send_time, nd.id AS next_day
  FROM unnest($1::bigint[], $3::boolean[]) AS x(id, sent)
  JOIN sequence_participants p ON p.id = x.id
  JOIN sequences s ON s.id = p.sequence_id
  LEFT JOIN sequence_days nd ON nd.sequence_id = p.sequence_id
    AND nd.position = p.current_day + CASE WHEN x.sent THEN 2 ELSE 1 END
  WHERE p.id = ANY($1)
)
UPDATE sequence_participants p SET current_day = x.day, base_at = x.base,
  next_send_at = CASE WHEN x.next_day IS NULL THEN NULL ELSE sequence_due(x.base, x.delay_days, x.send_time) END,
  status = CASE WHEN x.next_day IS NULL THEN 'completed' ELSE 'active' END,
  completed_at = CASE WHEN x.next_day IS NULL THEN $2::timestamptz END
FROM x WHERE p.id = ANY($1) AND p.id = x.id
RETURNING p.account_id, p.sequence_id, p.contact_id, p.status`

const insertDayRecipients = `INSERT INTO campaign_recipients (account_id, campaign_id, contact_id, email, status, variant, ab_held)
SELECT x.account_id, x.campaign_id, x.contact_id, x.email, CASE WHEN x.held THEN 'waiting' ELSE 'queued' END,
  nullif(x.variant, ''), x.held
FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::boolean[])
  AS x(account_id, campaign_id, contact_id, email, variant, held)
ORDER BY x.campaign_id, x.contact_id`

// openDayCampaigns marks the day campaigns sending with their new recipients
// counted. A draft gets started_at (its links were stored just before); a
// campaign the send workers had finished is reopened.
const openDayCampaigns = `UPDATE campaigns c SET status = 'sending', started_at = coalesce(c.started_at, $3),
  finished_at = NULL, recipients_count = c.recipients_count + x.n, updated_at = now()
FROM unnest($1::bigint[], $2::bigint[]) AS x(id, n) WHERE c.id = x.id`

// SequenceClaimOptions carry what a claim needs from the mailer.
type SequenceClaimOptions struct {
	Now   time.Time
	Batch int // default 5000
	// Links returns a campaign's trackable links, stored when a day's
	// campaign sends for the first time.
	Links func(c Campaign) ([]LinkInput, error)
}

// SequenceClaimResult says what one claim did.
type SequenceClaimResult struct {
	Claimed   int
	Queued    int
	Exited    int
	Completed int
	Postponed int
}

// ClaimSequenceDays runs one batch of the sequence worker in one transaction:
// it locks due participants (FOR UPDATE SKIP LOCKED: each is handled by one
// process), queues each one's next day as a recipient of that day's campaign,
// and moves them on (next day's due time, or completed with the event
// sequence.completed). A participant whose contact was deleted, unsubscribed
// or blocked exits instead. The queueing and the move commit together, so a
// participant gets each day exactly once whatever crashes when. Accounts over
// their daily send limit have their participants postponed by an hour.
func (db *DB) ClaimSequenceDays(ctx context.Context, opts SequenceClaimOptions) (SequenceClaimResult, error) {
	if opts.Batch <= 0 {
		opts.Batch = 5000
	}
	var res SequenceClaimResult
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		res = SequenceClaimResult{}
		var due []dueParticipant
		if err := tx.SelectContext(ctx, &due, claimDue, opts.Now, opts.Batch); err != nil {
			return fmt.Errorf("store: claim sequence days: %w", err)
		}
		res.Claimed = len(due)
		if len(due) == 0 {
			return nil
		}
		tests, err := soapTestsTx(ctx, tx, due, opts)
		if err != nil {
			return err
		}
		// Exits first; the rest by account for the daily limit.
		exits := map[string][]int64{}
		byAccount := map[int64][]dueParticipant{}
		var accounts []int64
		for _, p := range due {
			if p.ExitReason != "" {
				exits[p.ExitReason] = append(exits[p.ExitReason], p.ID)
				continue
			}
			if _, ok := byAccount[p.AccountID]; !ok {
				accounts = append(accounts, p.AccountID)
			}
			byAccount[p.AccountID] = append(byAccount[p.AccountID], p)
		}
		for reason, ids := range exits {
			if _, err := tx.ExecContext(ctx, `UPDATE sequence_participants SET status = 'exited', exited_at = $2, exit_reason = $3,
  next_send_at = NULL WHERE id = ANY($1)`, pq.Int64Array(ids), opts.Now, reason); err != nil {
				return fmt.Errorf("store: sequence exits: %w", err)
			}
			res.Exited += len(ids)
		}
		var (
			advIDs   pq.Int64Array
			advSent  pq.BoolArray
			rAcc     pq.Int64Array
			rCamp    pq.Int64Array
			rCont    pq.Int64Array
			rMail    pq.StringArray
			rDay     []int64
			counts   = map[int64]int64{}
			postpone pq.Int64Array
		)
		for _, acct := range accounts {
			ps := byAccount[acct]
			var n int64
			for _, p := range ps {
				if p.CampaignID != 0 {
					n++
				}
			}
			sp, err := savepoint(ctx, tx)
			if err != nil {
				return err
			}
			if err := countSends(ctx, tx, acct, n, opts.Now); err != nil {
				var le *LimitError
				if !errors.As(err, &le) {
					return err
				}
				if err := sp.rollback(ctx); err != nil {
					return err
				}
				for _, p := range ps {
					postpone = append(postpone, p.ID)
				}
				continue
			}
			for _, p := range ps {
				advIDs = append(advIDs, p.ID)
				advSent = append(advSent, p.CampaignID != 0)
				if p.CampaignID != 0 {
					rAcc, rCamp, rCont, rMail = append(rAcc, p.AccountID), append(rCamp, p.CampaignID), append(rCont, p.ContactID), append(rMail, p.Email)
					rDay = append(rDay, p.DayID)
					counts[p.CampaignID]++
				}
			}
		}
		if len(postpone) > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE sequence_participants SET next_send_at = $2::timestamptz + interval '1 hour'
WHERE id = ANY($1)`, postpone, opts.Now); err != nil {
				return fmt.Errorf("store: sequence postpone: %w", err)
			}
			res.Postponed = len(postpone)
		}
		if len(rCamp) > 0 {
			if err := storeFirstLinks(ctx, tx, counts, opts); err != nil {
				return err
			}
			rVar, rHeld, err := assignSoapVariants(ctx, tx, tests, rDay, rMail, opts.Now)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, insertDayRecipients, rAcc, rCamp, rCont, rMail, rVar, rHeld); err != nil {
				return fmt.Errorf("store: queue sequence days: %w", err)
			}
			ids, ns := make(pq.Int64Array, 0, len(counts)), make(pq.Int64Array, 0, len(counts))
			for id, n := range counts {
				ids, ns = append(ids, id), append(ns, n)
			}
			if _, err := tx.ExecContext(ctx, openDayCampaigns, ids, ns, opts.Now); err != nil {
				return fmt.Errorf("store: open day campaigns: %w", err)
			}
			res.Queued = len(rCamp)
		}
		if len(advIDs) == 0 {
			return nil
		}
		type moved struct {
			AccountID  int64  `db:"account_id"`
			SequenceID int64  `db:"sequence_id"`
			ContactID  int64  `db:"contact_id"`
			Status     string `db:"status"`
		}
		var rows []moved
		if err := tx.SelectContext(ctx, &rows, advanceParticipants, advIDs, opts.Now, advSent); err != nil {
			return fmt.Errorf("store: advance participants: %w", err)
		}
		done := map[int64][]moved{}
		for _, m := range rows {
			if m.Status == ParticipantCompleted {
				done[m.AccountID] = append(done[m.AccountID], m)
				res.Completed++
			}
		}
		for acct, ms := range done {
			seqIDs, contactIDs := make(pq.Int64Array, len(ms)), make(pq.Int64Array, len(ms))
			for i, m := range ms {
				seqIDs[i], contactIDs[i] = m.SequenceID, m.ContactID
			}
			if err := emitCompleted(ctx, tx, acct, seqIDs, contactIDs); err != nil {
				return err
			}
		}
		return nil
	})
	return res, err
}

// soapTestsTx locks the draft and running A/B tests of the days that the
// claimed participants reach, starts the drafts (startSoapTestTx) and points
// those participants at the campaign their day has now: a decision that
// committed after claimDue read the days may have given a day the winner's
// campaign, and a started test its own. It returns the running tests by day.
func soapTestsTx(ctx context.Context, tx *sqlx.Tx, due []dueParticipant, opts SequenceClaimOptions) (map[int64]*soapTest, error) {
	var dayIDs pq.Int64Array
	seen := map[int64]bool{}
	for _, p := range due {
		if p.DayID != 0 && p.ExitReason == "" && !seen[p.DayID] {
			seen[p.DayID] = true
			dayIDs = append(dayIDs, p.DayID)
		}
	}
	if len(dayIDs) == 0 {
		return nil, nil
	}
	var locked []soapTest
	if err := tx.SelectContext(ctx, &locked, lockSoapTests, dayIDs); err != nil {
		return nil, fmt.Errorf("store: sequence day tests: %w", err)
	}
	var days []struct {
		ID         int64 `db:"id"`
		CampaignID int64 `db:"campaign_id"`
	}
	if err := tx.SelectContext(ctx, &days, `SELECT id, campaign_id FROM sequence_days WHERE id = ANY($1)`, dayIDs); err != nil {
		return nil, fmt.Errorf("store: sequence day campaigns: %w", err)
	}
	campaignOf := make(map[int64]int64, len(days))
	for _, d := range days {
		campaignOf[d.ID] = d.CampaignID
	}
	tests := make(map[int64]*soapTest, len(locked))
	for i := range locked {
		t := &locked[i]
		if campaignOf[t.TargetID] == 0 {
			continue // the day was deleted after claimDue read it
		}
		if t.Status == ABDraft {
			id, err := startSoapTestTx(ctx, tx, t, campaignOf[t.TargetID], opts.Links, opts.Now)
			if err != nil {
				return nil, err
			}
			campaignOf[t.TargetID] = id
		}
		tests[t.TargetID] = t
	}
	for i := range due {
		if id, ok := campaignOf[due[i].DayID]; ok {
			due[i].CampaignID = id
		}
	}
	return tests, nil
}

// assignSoapVariants gives each queued row (its day and address) its slot
// in the running test of its day: the variant, or held back. Rows of days
// without a test get neither.
func assignSoapVariants(ctx context.Context, tx *sqlx.Tx, tests map[int64]*soapTest, days []int64, emails []string, now time.Time) (pq.StringArray, pq.BoolArray, error) {
	variants, held := make(pq.StringArray, len(days)), make(pq.BoolArray, len(days))
	if len(tests) == 0 {
		return variants, held, nil
	}
	rows := map[int64][]int{}
	var order []int64
	for i, d := range days {
		if tests[d] == nil {
			continue
		}
		if _, ok := rows[d]; !ok {
			order = append(order, d)
		}
		rows[d] = append(rows[d], i)
	}
	for _, d := range order {
		is := rows[d]
		addrs := make([]string, len(is))
		for k, i := range is {
			addrs[k] = emails[i]
		}
		slots, err := tests[d].assign(ctx, tx, addrs, now)
		if err != nil {
			return nil, nil, err
		}
		for k, i := range is {
			variants[i], held[i] = slots[k].Variant, slots[k].Held
		}
	}
	return variants, held, nil
}

// storeFirstLinks stores the tracked links of day campaigns that send for
// the first time (still drafts), locking every campaign of the batch in id
// order first (FinishCampaign takes the same lock, so a campaign cannot be
// finished between the queueing of its rows and their commit).
func storeFirstLinks(ctx context.Context, tx *sqlx.Tx, counts map[int64]int64, opts SequenceClaimOptions) error {
	ids := make(pq.Int64Array, 0, len(counts))
	for id := range counts {
		ids = append(ids, id)
	}
	var cs []Campaign
	if err := tx.SelectContext(ctx, &cs, `SELECT `+campaignColumns+` FROM campaigns WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids); err != nil {
		return fmt.Errorf("store: day campaigns: %w", err)
	}
	for _, c := range cs {
		if c.Status != CampaignDraft || !c.TrackClicks || opts.Links == nil {
			continue
		}
		links, err := opts.Links(c)
		if err != nil {
			return err
		}
		if len(links) == 0 {
			continue
		}
		urls := make(pq.StringArray, len(links))
		pers := make(pq.BoolArray, len(links))
		for i, l := range links {
			urls[i], pers[i] = l.URL, l.Personalized
		}
		if _, err := tx.ExecContext(ctx, insertCampaignLinks, c.AccountID, c.ID, urls, pers); err != nil {
			return fmt.Errorf("store: campaign links: %w", err)
		}
	}
	return nil
}

// emitCompleted emits sequence.completed for each (sequence, contact) pair.
func emitCompleted(ctx context.Context, tx *sqlx.Tx, accountID int64, seqIDs, contactIDs pq.Int64Array) error {
	contacts, err := queryContacts(ctx, tx, nil, true, `SELECT `+contactColumns+`, `+contactLists+` FROM contacts c
WHERE c.account_id = $1 AND c.id = ANY($2)`, accountID, contactIDs)
	if err != nil {
		return fmt.Errorf("store: completed contacts: %w", err)
	}
	byID := make(map[int64]*Contact, len(contacts))
	for i := range contacts {
		byID[contacts[i].ID] = &contacts[i]
	}
	names := map[int64]string{}
	var seqs []struct {
		ID   int64  `db:"id"`
		Name string `db:"name"`
	}
	if err := tx.SelectContext(ctx, &seqs, `SELECT id, name FROM sequences WHERE id = ANY($1)`, seqIDs); err != nil {
		return fmt.Errorf("store: completed sequences: %w", err)
	}
	for _, s := range seqs {
		names[s.ID] = s.Name
	}
	events := make([]Event, 0, len(seqIDs))
	for i := range seqIDs {
		c, ok := byID[contactIDs[i]]
		if !ok {
			continue
		}
		cj, err := c.AppendJSON(make([]byte, 0, 512))
		if err != nil {
			return fmt.Errorf("store: completed contact: %w", err)
		}
		events = append(events, Event{Name: EventSequenceCompleted, Data: sequenceCompleted{
			Sequence: sequenceRef{ID: seqIDs[i], Name: names[seqIDs[i]]}, Contact: cj}})
	}
	if len(events) == 0 {
		return nil
	}
	_, err = EmitAll(ctx, tx, accountID, events)
	return err
}

// OutboxConsumerSequences names the outbox consumer that enrols contacts in
// sequences with a list or tag trigger and exits unsubscribed and deleted
// contacts; it registers itself on its first run.
const OutboxConsumerSequences = "sequences"

// triggerSequence is an active sequence with a trigger, as the consumer
// matches events against it.
type triggerSequence struct {
	ID            int64     `db:"id"`
	Trigger       string    `db:"trigger"`
	TriggerListID *int64    `db:"trigger_list_id"`
	TriggerTag    string    `db:"trigger_tag"`
	ActivatedAt   time.Time `db:"activated_at"`
}

// triggerEvent is the part of a contact or list event the consumer reads.
type triggerEvent struct {
	Contact struct {
		ID     int64    `json:"id"`
		Status string   `json:"status"`
		Tags   []string `json:"tags"`
	} `json:"contact"`
	List struct {
		ID int64 `json:"id"`
	} `json:"list"`
	Changed []string `json:"changed"`
}

// enrolPairs enrols (sequence, contact) pairs in one statement, as
// enrolContacts does for one sequence.
const enrolPairs = `INSERT INTO sequence_participants (account_id, sequence_id, contact_id, email, joined_at, running, next_send_at)
SELECT $1, s.id, c.id, c.email, x.at, s.status = 'active',
  (SELECT sequence_due(x.at, d.delay_days, s.send_time) FROM sequence_days d WHERE d.sequence_id = s.id AND d.position = 1)
FROM unnest($2::bigint[], $3::bigint[], $4::timestamptz[]) AS x(seq, contact, at)
JOIN sequences s ON s.id = x.seq AND s.account_id = $1 AND s.status = 'active'
JOIN contacts c ON c.account_id = $1 AND c.id = x.contact AND c.status = 'subscribed'
ORDER BY s.id, c.id
ON CONFLICT (sequence_id, contact_id) DO NOTHING`

// SequenceEventNames are the events HandleSequenceEvents acts on; its
// consumer passes over the rest (ConsumerOptions.Names).
func SequenceEventNames() []string {
	return []string{EventContactCreated, EventContactUpdated, EventListJoined, EventContactUnsubscribed, EventContactDeleted}
}

// SequenceAccountNames is the sequences consumer's
// ConsumerOptions.AccountNames: all of SequenceEventNames while the account
// has an active sequence with a trigger, only the exits while contacts take
// part in one, and nothing otherwise: the events of an account without
// sequences are passed without being read.
const SequenceAccountNames = `CASE
  WHEN EXISTS (SELECT 1 FROM sequences s WHERE s.account_id = c.account_id AND s.status = 'active'
    AND s.trigger <> 'manual' AND s.activated_at IS NOT NULL) THEN NULL
  WHEN EXISTS (SELECT 1 FROM sequence_participants p WHERE p.account_id = c.account_id AND p.status = 'active')
    THEN ARRAY['` + EventContactUnsubscribed + `', '` + EventContactDeleted + `']
  ELSE '{}' END`

// HandleSequenceEvents is the handler of the sequences consumer for one
// account's batch of events: list.joined of a sequence's trigger list, and a
// contact created or updated with a sequence's trigger tag, enrol the contact
// (once; only events after the sequence's activation count; tags compare
// case-insensitively); contact.
// unsubscribed and contact.deleted end the contact's participations. It runs
// in the transaction that moves the consumer's cursor.
func HandleSequenceEvents(ctx context.Context, tx *sqlx.Tx, events []StoredEvent) error {
	if len(events) == 0 {
		return nil
	}
	accountID := events[0].AccountID
	var seqs []triggerSequence
	if err := tx.SelectContext(ctx, &seqs, `SELECT id, trigger, trigger_list_id, trigger_tag, activated_at FROM sequences
WHERE account_id = $1 AND status = 'active' AND trigger <> 'manual' AND activated_at IS NOT NULL`, accountID); err != nil {
		return fmt.Errorf("store: trigger sequences: %w", err)
	}
	var (
		pairSeq, pairContact pq.Int64Array
		pairAt               []time.Time
		exitIDs              = map[string]pq.Int64Array{}
	)
	for _, e := range events {
		switch e.Name {
		case EventContactUnsubscribed, EventContactDeleted:
		case EventListJoined, EventContactCreated, EventContactUpdated:
			if len(seqs) == 0 {
				continue
			}
		default:
			continue
		}
		var ev triggerEvent
		if err := json.Unmarshal(e.Payload, &ev); err != nil || ev.Contact.ID == 0 {
			continue // not a contact event we understand: nothing to do
		}
		switch e.Name {
		case EventContactUnsubscribed:
			exitIDs["unsubscribed"] = append(exitIDs["unsubscribed"], ev.Contact.ID)
			continue
		case EventContactDeleted:
			exitIDs["deleted"] = append(exitIDs["deleted"], ev.Contact.ID)
			continue
		}
		tagged := e.Name == EventContactCreated || containsString(ev.Changed, "tags")
		for _, s := range seqs {
			if e.CreatedAt.Before(s.ActivatedAt) {
				continue
			}
			match := false
			switch s.Trigger {
			case TriggerList:
				match = e.Name == EventListJoined && s.TriggerListID != nil && ev.List.ID == *s.TriggerListID
			case TriggerTag:
				match = tagged && slices.ContainsFunc(ev.Contact.Tags, func(t string) bool { return strings.EqualFold(t, s.TriggerTag) })
			}
			if match {
				pairSeq, pairContact, pairAt = append(pairSeq, s.ID), append(pairContact, ev.Contact.ID), append(pairAt, e.CreatedAt)
			}
		}
	}
	if len(pairSeq) > 0 {
		ats := make(pq.StringArray, len(pairAt))
		for i, t := range pairAt {
			ats[i] = t.Format(time.RFC3339Nano)
		}
		if _, err := tx.ExecContext(ctx, enrolPairs, accountID, pairSeq, pairContact, ats); err != nil {
			return fmt.Errorf("store: trigger enrol: %w", err)
		}
	}
	for reason, ids := range exitIDs {
		if _, err := tx.ExecContext(ctx, exitContacts, accountID, ids, events[len(events)-1].CreatedAt, reason); err != nil {
			return fmt.Errorf("store: sequence exits: %w", err)
		}
	}
	return nil
}
