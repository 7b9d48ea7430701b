package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// This file holds story emails (issue 20): the daily email to the story
// lists. A story email is a campaign of kind 'story' (see
// migrations/00027_sequences.sql): drafts, schedules, the send queue, stats and
// the campaigns listing are the campaign's own. The account's story settings
// (lists, send time, weekdays, sender) are copied onto a story email when it
// is sent or scheduled.

// ObjectStoryEmail is the activity log object type of story emails.
const ObjectStoryEmail = "story_email"

// StorySettings are an account's story email settings.
type StorySettings struct {
	ListIDs      pq.Int64Array `db:"list_ids"`
	SendTime     string        `db:"send_time"` // HH:MM, Europe/Berlin
	Weekdays     pq.Int64Array `db:"weekdays"`  // ISO: 1 = Monday … 7 = Sunday
	FromName     string        `db:"from_name"`
	ReplyTo      string        `db:"reply_to"`
	SMTPServerID *int64        `db:"smtp_server_id"`
	TemplateKey  string        `db:"template_key"`
	CreatedAt    time.Time     `db:"created_at"`
	UpdatedAt    time.Time     `db:"updated_at"`
}

// StorySettingsInput is a PUT of the settings: nil fields keep their value.
type StorySettingsInput struct {
	ListIDs      *[]int64
	SendTime     *string
	Weekdays     *[]int64
	FromName     *string
	ReplyTo      *string
	SMTPServerID *int64 // 0 clears
	TemplateKey  *string
}

const selectStorySettings = `SELECT list_ids, to_char(send_time, 'HH24:MI') AS send_time, weekdays::bigint[] AS weekdays, from_name,
  reply_to, smtp_server_id, template_key, created_at, updated_at FROM story_settings WHERE account_id = $1`

// StorySettingsOf returns an account's story settings (the defaults when it
// never saved any: no lists, 08:00, every day).
func (db *DB) StorySettingsOf(ctx context.Context, accountID int64) (StorySettings, error) {
	return storySettings(ctx, db, accountID)
}

func storySettings(ctx context.Context, q sqlx.QueryerContext, accountID int64) (StorySettings, error) {
	var s StorySettings
	err := sqlx.GetContext(ctx, q, &s, selectStorySettings, accountID)
	if err == nil {
		return s, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return StorySettings{}, fmt.Errorf("store: story settings: %w", err)
	}
	now := time.Now()
	return StorySettings{ListIDs: pq.Int64Array{}, SendTime: "08:00", Weekdays: pq.Int64Array{1, 2, 3, 4, 5, 6, 7},
		CreatedAt: now, UpdatedAt: now}, nil
}

const upsertStorySettings = `INSERT INTO story_settings (account_id, list_ids, send_time, weekdays, from_name, reply_to, smtp_server_id,
  template_key) VALUES ($1, $2, $3::time, $4::smallint[], $5, $6, $7, $8)
ON CONFLICT (account_id) DO UPDATE SET list_ids = EXCLUDED.list_ids, send_time = EXCLUDED.send_time,
  weekdays = EXCLUDED.weekdays, from_name = EXCLUDED.from_name, reply_to = EXCLUDED.reply_to,
  smtp_server_id = EXCLUDED.smtp_server_id, template_key = EXCLUDED.template_key, updated_at = now()`

// PutStorySettings saves the settings (422 naming bad fields).
func (db *DB) PutStorySettings(ctx context.Context, accountID int64, actor Actor, in StorySettingsInput) (StorySettings, error) {
	errs := Errs{}
	normLine(errs, "from_name", in.FromName, maxFromNameLen)
	normLine(errs, "template_key", in.TemplateKey, 100)
	normReplyTo(errs, in.ReplyTo)
	if in.SendTime != nil && !ValidHHMM(*in.SendTime) {
		errs.Add("send_time", "Bitte eine Uhrzeit im Format HH:MM angeben.")
	}
	if in.Weekdays != nil {
		if len(*in.Weekdays) == 0 {
			errs.Add("weekdays", "Bitte mindestens einen Wochentag angeben (1 = Montag … 7 = Sonntag).")
		}
		for _, d := range *in.Weekdays {
			if d < 1 || d > 7 {
				errs.Add("weekdays", "Wochentage sind 1 (Montag) bis 7 (Sonntag).")
			}
		}
	}
	if in.ListIDs != nil {
		ids := normIDs(errs, "list_ids", *in.ListIDs)
		in.ListIDs = &ids
	}
	if in.SMTPServerID != nil && *in.SMTPServerID < 0 {
		errs.Add("smtp_server_id", "Bitte eine gültige ID angeben.")
	}
	if err := errs.Err(); err != nil {
		return StorySettings{}, err
	}
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		s, err := storySettings(ctx, tx, accountID)
		if err != nil {
			return err
		}
		if in.ListIDs != nil {
			s.ListIDs = pq.Int64Array(*in.ListIDs)
		}
		if in.SendTime != nil {
			s.SendTime = *in.SendTime
		}
		if in.Weekdays != nil {
			s.Weekdays = uniqueSorted(*in.Weekdays)
		}
		for _, f := range []struct {
			dst *string
			v   *string
		}{{&s.FromName, in.FromName}, {&s.ReplyTo, in.ReplyTo}, {&s.TemplateKey, in.TemplateKey}} {
			if f.v != nil {
				*f.dst = *f.v
			}
		}
		var changed []string
		setOptID(&changed, "smtp_server_id", &s.SMTPServerID, in.SMTPServerID)
		if err := checkListIDs(ctx, tx, accountID, "list_ids", s.ListIDs); err != nil {
			return err
		}
		if err := checkSMTPServer(ctx, tx, accountID, s.SMTPServerID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, upsertStorySettings, accountID, s.ListIDs, s.SendTime, s.Weekdays, s.FromName,
			s.ReplyTo, s.SMTPServerID, s.TemplateKey); err != nil {
			return fmt.Errorf("store: story settings: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "story_settings.updated", ObjectType: ObjectStoryEmail})
	})
	if err != nil {
		return StorySettings{}, err
	}
	return db.StorySettingsOf(ctx, accountID)
}

func uniqueSorted(days []int64) pq.Int64Array {
	var seen [8]bool
	for _, d := range days {
		seen[d] = true
	}
	out := pq.Int64Array{}
	for d := int64(1); d <= 7; d++ {
		if seen[d] {
			out = append(out, d)
		}
	}
	return out
}

// StoryEmail returns one story email.
func (db *DB) StoryEmail(ctx context.Context, accountID, id int64) (Campaign, error) {
	return db.campaign(ctx, accountID, id, KindStory)
}

// StoryEmails lists story emails with their engagement, newest first;
// status filters when not empty.
func (db *DB) StoryEmails(ctx context.Context, accountID int64, status string, p Page) ([]CampaignSummary, int, error) {
	list, total, err := db.campaigns(ctx, accountID, KindStory, status, p)
	if err != nil {
		return nil, 0, err
	}
	out, err := summarize(ctx, db, accountID, list)
	return out, total, err
}

// StoryCalendar returns the story emails scheduled or sent between from
// and to (their day: scheduled_at, else started_at), and the drafts.
func (db *DB) StoryCalendar(ctx context.Context, accountID int64, from, to time.Time) ([]Campaign, error) {
	var out []Campaign
	if err := db.SelectContext(ctx, &out, `SELECT `+campaignSummaryColumns+` FROM campaigns
WHERE account_id = $1 AND kind = 'story' AND (status = 'draft' OR coalesce(scheduled_at, started_at) BETWEEN $2 AND $3)
ORDER BY coalesce(scheduled_at, started_at, created_at), id LIMIT 500`, accountID, from, to); err != nil {
		return nil, fmt.Errorf("store: story calendar: %w", err)
	}
	return out, nil
}

// CreateStoryEmail creates a story email draft with the settings' sender.
func (db *DB) CreateStoryEmail(ctx context.Context, accountID int64, actor Actor, in NewsletterInput) (Campaign, error) {
	name := in.Name
	in = contentOnly(in)
	in.Name = name
	if err := in.Normalize(); err != nil {
		return Campaign{}, err
	}
	c := Campaign{AccountID: accountID, Kind: KindStory, Type: TypeNewsletter, Status: CampaignDraft,
		TrackOpens: true, TrackClicks: true, Placeholders: Placeholders{}}
	in.apply(&c)
	if c.Name == "" {
		c.Name = c.Subject
		if c.Name == "" {
			c.Name = "Neue Story-E-Mail"
		}
	}
	if err := contentErrors(c); err != nil {
		return Campaign{}, err
	}
	var out Campaign
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		s, err := storySettings(ctx, tx, accountID)
		if err != nil {
			return err
		}
		applyStorySettings(&c, s)
		if err := resolveMailContentTx(ctx, tx, &c, true); err != nil {
			return err
		}
		if out, err = insertCampaignTx(ctx, tx, c); err != nil {
			return err
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "story_email.created", ObjectType: ObjectStoryEmail,
			ObjectID: out.ID, Details: map[string]any{"name": out.Name}})
	})
	return out, err
}

// applyStorySettings copies the settings' targets and sender onto a story
// email; its own template_key wins over the settings' (a layout wraps the
// content; a starting point's content is copied when the draft is created).
func applyStorySettings(c *Campaign, s StorySettings) {
	c.ListIDs = s.ListIDs
	if c.ListIDs == nil {
		c.ListIDs = pq.Int64Array{}
	}
	c.FromName, c.ReplyTo, c.SMTPServerID = s.FromName, s.ReplyTo, s.SMTPServerID
	if c.TemplateKey == "" {
		c.TemplateKey = s.TemplateKey
	}
}

const updateStoryCampaign = `UPDATE campaigns SET name = $2, subject = $3, preheader = $4, html = $5, plain_text = $6, markdown = $7,
  template_key = $8, list_ids = $9, from_name = $10, reply_to = $11, smtp_server_id = $12, attachment_ids = $13, updated_at = now()
WHERE id = $1 RETURNING ` + campaignColumns

// UpdateStoryEmail changes a draft or scheduled story email (409
// already_sent otherwise).
func (db *DB) UpdateStoryEmail(ctx context.Context, accountID int64, actor Actor, id int64, in NewsletterInput) (Campaign, error) {
	name := in.Name
	in = contentOnly(in)
	in.Name = name
	if err := in.Normalize(); err != nil {
		return Campaign{}, err
	}
	var out Campaign
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		c, err := lockCampaignTx(ctx, tx, accountID, id, KindStory)
		if err != nil {
			return err
		}
		if c.Status != CampaignDraft && c.Status != CampaignScheduled {
			return &ConflictError{Reason: "already_sent", Message: fmt.Sprintf("Diese Story-E-Mail ist bereits %s.", statusWord(c.Status))}
		}
		changed := in.apply(&c)
		if err := contentErrors(c); err != nil {
			return err
		}
		if in.TemplateKey != nil || in.AttachmentIDs != nil || in.HTML != nil {
			if err := resolveMailContentTx(ctx, tx, &c, in.TemplateKey != nil); err != nil {
				return err
			}
		}
		if err := tx.GetContext(ctx, &out, updateStoryCampaign, id, c.Name, c.Subject, c.Preheader, c.HTML, c.Text, c.Markdown,
			c.TemplateKey, c.ListIDs, c.FromName, c.ReplyTo, c.SMTPServerID, nonNilIDArray(c.AttachmentIDs)); err != nil {
			return fmt.Errorf("store: update story email: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "story_email.updated", ObjectType: ObjectStoryEmail,
			ObjectID: id, Details: map[string]any{"changed": changed}})
	})
	return out, err
}

// DeleteStoryEmail deletes a story email that is not sending or sent.
func (db *DB) DeleteStoryEmail(ctx context.Context, accountID int64, actor Actor, id int64) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		c, err := lockCampaignTx(ctx, tx, accountID, id, KindStory)
		if err != nil {
			return err
		}
		if c.Status == CampaignSending || c.Status == CampaignPaused {
			return &ConflictError{Reason: "sending", Message: "Eine Story-E-Mail im Versand kann nicht gelöscht werden."}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM campaigns WHERE id = $1`, id); err != nil {
			return fmt.Errorf("store: delete story email: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "story_email.deleted", ObjectType: ObjectStoryEmail,
			ObjectID: id, Details: map[string]any{"name": c.Name}})
	})
}

// refreshStory locks a story email that may still be sent and copies the
// current settings onto it.
func refreshStory(ctx context.Context, tx *sqlx.Tx, accountID, id int64) (Campaign, error) {
	c, err := lockCampaignTx(ctx, tx, accountID, id, KindStory)
	if err != nil {
		return Campaign{}, err
	}
	if !c.startable() {
		return Campaign{}, &ConflictError{Reason: "already_sent", Message: fmt.Sprintf("Diese Story-E-Mail ist bereits %s.", statusWord(c.Status))}
	}
	s, err := storySettings(ctx, tx, accountID)
	if err != nil {
		return Campaign{}, err
	}
	applyStorySettings(&c, s)
	if _, err := tx.ExecContext(ctx, updateStoryCampaign, id, c.Name, c.Subject, c.Preheader, c.HTML, c.Text, c.Markdown,
		c.TemplateKey, c.ListIDs, c.FromName, c.ReplyTo, c.SMTPServerID, nonNilIDArray(c.AttachmentIDs)); err != nil {
		return Campaign{}, fmt.Errorf("store: story email: %w", err)
	}
	return c, nil
}

// StartStoryEmail sends a story email now to the story lists (422 naming
// what is missing, 402 over the daily limit, 409 already_sent).
func (db *DB) StartStoryEmail(ctx context.Context, accountID int64, actor Actor, id int64, opts StartOptions) (Campaign, StartResult, error) {
	var (
		c   Campaign
		res StartResult
	)
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if c, err = refreshStory(ctx, tx, accountID, id); err != nil {
			return err
		}
		if res, err = startCampaign(ctx, tx, &c, opts); err != nil {
			return err
		}
		if err := LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "story_email.started", ObjectType: ObjectStoryEmail,
			ObjectID: id, Details: map[string]any{"queued": res.Queued, "skipped": res.Skipped}}); err != nil {
			return err
		}
		return opts.respond(ctx, tx, c, res)
	})
	return c, res, err
}

// storyLock serialises the "next free day" choice of one account's story
// emails, so that two schedules cannot pick the same day.
const storyLock = `SELECT pg_advisory_xact_lock(hashtextextended('story_schedule', $1))`

// selectStoryDays are the Berlin days that already have a story email
// (scheduled, sending or sent) from $2 on.
const selectStoryDays = `SELECT DISTINCT to_char((coalesce(scheduled_at, started_at) AT TIME ZONE 'Europe/Berlin')::date, 'YYYY-MM-DD')
FROM campaigns WHERE account_id = $1 AND kind = 'story' AND id <> $3 AND status IN ('scheduled', 'sending', 'sent', 'paused')
  AND coalesce(scheduled_at, started_at) >= $2`

// storyDayTaken reports whether another story email (scheduled, sending or
// sent) falls on the Berlin day of $2.
const storyDayTaken = `SELECT EXISTS (SELECT 1 FROM campaigns
WHERE account_id = $1 AND kind = 'story' AND id <> $3 AND status IN ('scheduled', 'sending', 'sent', 'paused')
  AND (coalesce(scheduled_at, started_at) AT TIME ZONE 'Europe/Berlin')::date = ($2::timestamptz AT TIME ZONE 'Europe/Berlin')::date)`

// NextStorySlot is the first allowed weekday at send_time (Europe/Berlin)
// after now that is not in taken (days as YYYY-MM-DD). Wall-clock times hold
// across daylight-saving changes.
func NextStorySlot(now time.Time, sendTime string, weekdays []int64, taken map[string]bool) (time.Time, bool) {
	var hh, mm int
	if _, err := fmt.Sscanf(sendTime, "%d:%d", &hh, &mm); err != nil {
		return time.Time{}, false
	}
	allowed := map[int64]bool{}
	for _, d := range weekdays {
		allowed[d] = true
	}
	local := now.In(Berlin)
	for i := 0; i < 400; i++ {
		day := time.Date(local.Year(), local.Month(), local.Day()+i, hh, mm, 0, 0, Berlin)
		wd := int64(day.Weekday())
		if wd == 0 {
			wd = 7
		}
		if !day.After(now) || !allowed[wd] || taken[day.Format("2006-01-02")] {
			continue
		}
		return day, true
	}
	return time.Time{}, false
}

// ScheduleStoryEmail schedules a story email at at, or (at zero) on the next
// free allowed day at the settings' send_time: one story email per Berlin
// day (409 story_day_taken for an explicit time on a taken day).
func (db *DB) ScheduleStoryEmail(ctx context.Context, accountID int64, actor Actor, id int64, at time.Time, opts StartOptions) (Campaign, error) {
	now := opts.now()
	if !at.IsZero() && !at.After(now) {
		return Campaign{}, Invalid("scheduled_at", "Der Zeitpunkt muss in der Zukunft liegen.")
	}
	var out Campaign
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, storyLock, accountID); err != nil {
			return fmt.Errorf("store: schedule story email: %w", err)
		}
		c, err := refreshStory(ctx, tx, accountID, id)
		if err != nil {
			return err
		}
		if err := opts.check(ctx, c, c.ReadyErrors()); err != nil {
			return err
		}
		if !at.IsZero() {
			var taken bool
			if err := tx.GetContext(ctx, &taken, storyDayTaken, accountID, at, id); err != nil {
				return fmt.Errorf("store: story day taken: %w", err)
			}
			if taken {
				return &ConflictError{Reason: "story_day_taken", Message: fmt.Sprintf(
					"Am %s ist bereits eine Story-E-Mail geplant oder verschickt. Pro Tag geht höchstens eine Story-E-Mail hinaus.",
					at.In(Berlin).Format("02.01.2006"))}
			}
		} else {
			s, err := storySettings(ctx, tx, accountID)
			if err != nil {
				return err
			}
			var days []string
			if err := tx.SelectContext(ctx, &days, selectStoryDays, accountID, now.Add(-48*time.Hour), id); err != nil {
				return fmt.Errorf("store: story days: %w", err)
			}
			taken := make(map[string]bool, len(days))
			for _, d := range days {
				taken[d] = true
			}
			slot, ok := NextStorySlot(now, s.SendTime, s.Weekdays, taken)
			if !ok {
				return Invalid("weekdays", "Im nächsten Jahr ist kein freier Tag für eine Story-E-Mail.")
			}
			at = slot
		}
		if err := tx.GetContext(ctx, &out, setSchedule, id, CampaignScheduled, at); err != nil {
			return fmt.Errorf("store: schedule story email: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "story_email.scheduled", ObjectType: ObjectStoryEmail,
			ObjectID: id, Details: map[string]any{"scheduled_at": EventTime(at)}})
	})
	return out, err
}

func nonNilIDArray(ids pq.Int64Array) pq.Int64Array {
	if ids == nil {
		return pq.Int64Array{}
	}
	return ids
}
