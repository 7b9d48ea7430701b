// Package sequence is the home of story sequences and story emails: its
// Service is the one entry the API and the portal call to change them
// (sequences, days, participants, AI outlines; story settings, drafts, test
// mails, sends and schedules), and its Worker queues due sequence days into
// the send queue. Rows and statements live in store (sequences.go,
// stories.go); sending is the send queue's (mailer).
package sequence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/campaign"
)

// Waker is woken when mail was queued (the send worker).
type Waker interface{ Wake() }

// Options tune a Service.
type Options struct {
	// Now is the clock of enrolments, schedules and the worker; nil: time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// Service is the service behind the sequence and story email endpoints.
type Service struct {
	db        *store.DB
	ai        *ai.Service
	campaigns *campaign.Service
	opener    mailer.Opener
	sender    Waker
	opts      Options
}

// New returns the service. ai (nil: outlines answer 503), campaigns (test
// mails), opener (the SMTP route check) and sender (nil: none) may be nil in
// tests that do not need them.
func New(db *store.DB, aiSvc *ai.Service, campaigns *campaign.Service, opener mailer.Opener, sender Waker, opts Options) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{db: db, ai: aiSvc, campaigns: campaigns, opener: opener, sender: sender, opts: opts}
}

// Now is the service's clock.
func (s *Service) Now() time.Time { return s.opts.Now() }

// CreateSequence creates an inactive sequence.
func (s *Service) CreateSequence(ctx context.Context, accountID int64, actor store.Actor, in store.SequenceInput) (store.Sequence, error) {
	return s.db.CreateSequence(ctx, accountID, actor, in)
}

// UpdateSequence changes a sequence.
func (s *Service) UpdateSequence(ctx context.Context, accountID int64, actor store.Actor, id int64, in store.SequenceInput) (store.Sequence, error) {
	return s.db.UpdateSequence(ctx, accountID, actor, id, in)
}

// DeleteSequence deletes a sequence.
func (s *Service) DeleteSequence(ctx context.Context, accountID int64, actor store.Actor, id int64) error {
	return s.db.DeleteSequence(ctx, accountID, actor, id)
}

// Activate starts or resumes a sequence.
func (s *Service) Activate(ctx context.Context, accountID int64, actor store.Actor, id int64) (store.Sequence, error) {
	return s.db.ActivateSequence(ctx, accountID, actor, id, s.opts.Now())
}

// Deactivate holds a sequence's participants.
func (s *Service) Deactivate(ctx context.Context, accountID int64, actor store.Actor, id int64) (store.Sequence, error) {
	return s.db.DeactivateSequence(ctx, accountID, actor, id)
}

// CreateDay adds a day.
func (s *Service) CreateDay(ctx context.Context, accountID int64, actor store.Actor, seqID int64, in store.DayInput) (store.SequenceDay, error) {
	return s.db.CreateSequenceDay(ctx, accountID, actor, seqID, in)
}

// UpdateDay changes a day.
func (s *Service) UpdateDay(ctx context.Context, accountID int64, actor store.Actor, seqID, dayID int64, in store.DayInput) (store.SequenceDay, error) {
	return s.db.UpdateSequenceDay(ctx, accountID, actor, seqID, dayID, in)
}

// DeleteDay deletes a day.
func (s *Service) DeleteDay(ctx context.Context, accountID int64, actor store.Actor, seqID, dayID int64) error {
	return s.db.DeleteSequenceDay(ctx, accountID, actor, seqID, dayID)
}

// Enrol enrols contacts by id or by address (one of the two, at most
// store.MaxEnrolBatch entries: 413 beyond).
func (s *Service) Enrol(ctx context.Context, accountID int64, actor store.Actor, seqID int64, contactIDs []int64, emails []string) (store.EnrolResult, error) {
	switch {
	case len(contactIDs) > store.MaxEnrolBatch || len(emails) > store.MaxEnrolBatch:
		return store.EnrolResult{}, ErrTooMany
	case len(contactIDs) > 0 && len(emails) > 0:
		return store.EnrolResult{}, store.Invalid("contact_ids", "Bitte entweder contact_ids oder emails angeben, nicht beides.")
	case len(contactIDs) == 0 && len(emails) == 0:
		return store.EnrolResult{}, store.Invalid("contact_ids", "Bitte contact_ids oder emails angeben.")
	case len(emails) > 0:
		return s.db.EnrolEmails(ctx, accountID, actor, seqID, emails, s.opts.Now())
	}
	return s.db.EnrolContacts(ctx, accountID, actor, seqID, contactIDs, s.opts.Now())
}

// ErrTooMany is an enrolment of more than store.MaxEnrolBatch entries.
var ErrTooMany = errors.New("sequence: more than 1000 entries")

// RemoveParticipant takes a contact out of a sequence.
func (s *Service) RemoveParticipant(ctx context.Context, accountID int64, actor store.Actor, seqID, contactID int64) error {
	return s.db.RemoveParticipant(ctx, accountID, actor, seqID, contactID, s.opts.Now())
}

// OutlineInput is the request of an AI outline.
type OutlineInput struct {
	Topic, Goal, Tone, Model string
	Days                     int  // 3–14; 0: 5
	Save                     bool // append the days to the sequence
	RequestID                string
}

// OutlineDay is one AI-written day.
type OutlineDay struct {
	Subject   string `json:"subject"`
	Preheader string `json:"preheader"`
	HTML      string `json:"html"`
}

// OutlineResult is an outline with what it cost; Saved holds the days as
// stored when they were appended.
type OutlineResult struct {
	Days       []OutlineDay
	Saved      []store.SequenceDay
	Completion ai.Completion
}

func (in *OutlineInput) validate() error {
	errs := store.Errs{}
	in.Topic, in.Goal, in.Tone = strings.TrimSpace(in.Topic), strings.TrimSpace(in.Goal), strings.TrimSpace(in.Tone)
	if in.Topic == "" {
		errs.Add("topic", "Bitte ein Thema angeben.")
	}
	for field, v := range map[string]string{"topic": in.Topic, "goal": in.Goal, "tone": in.Tone} {
		if utf8.RuneCountInString(v) > 1000 {
			errs.Add(field, "Höchstens 1000 Zeichen.")
		}
	}
	if in.Days == 0 {
		in.Days = 5
	}
	if in.Days < 3 || in.Days > 14 {
		errs.Add("days", "Bitte 3 bis 14 Tage angeben.")
	}
	return errs.Err()
}

// outlineSystem asks for the JSON decisions.md pins.
const outlineSystem = `Du bist ein erfahrener Texter für E-Mail-Marketing im deutschsprachigen Raum. Du schreibst Story-Sequenzen: ` +
	`eine Folge von E-Mails, die an aufeinanderfolgenden Tagen verschickt werden, jede mit einer kleinen Geschichte, ` +
	`einem Nutzen für die Leserin oder den Leser und einem klaren nächsten Schritt. Antworte ausschließlich mit JSON ` +
	`der Form {"days": [{"subject": "…", "preheader": "…", "html": "…"}]} ohne weiteren Text. html ist ein HTML-Fragment ` +
	`(Absätze <p>, Hervorhebungen, Links), ohne <html>- oder <body>-Rahmen. Platzhalter wie {{vorname}} sind erlaubt.`

func outlinePrompt(in OutlineInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Schreibe eine Story-Sequenz mit genau %d E-Mails.\nThema: %s\n", in.Days, in.Topic)
	if in.Goal != "" {
		fmt.Fprintf(&b, "Ziel der Sequenz: %s\n", in.Goal)
	}
	if in.Tone != "" {
		fmt.Fprintf(&b, "Tonfall: %s\n", in.Tone)
	}
	b.WriteString("Jede E-Mail hat einen Betreff (subject, höchstens 80 Zeichen), einen Vorschautext (preheader) und den Inhalt (html).")
	return b.String()
}

// parseOutline reads the model's answer: the JSON object, optionally inside
// a Markdown code fence; exactly n days, each with subject and html.
func parseOutline(answer string, n int) ([]OutlineDay, error) {
	s := strings.TrimSpace(answer)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```")
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	if i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}'); i >= 0 && j > i {
		s = s[i : j+1]
	}
	var out struct {
		Days []OutlineDay `json:"days"`
	}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("sequence: outline is no JSON: %w", err)
	}
	if len(out.Days) != n {
		return nil, fmt.Errorf("sequence: outline has %d days, want %d", len(out.Days), n)
	}
	for i, d := range out.Days {
		d.Subject, d.Preheader = strings.TrimSpace(d.Subject), strings.TrimSpace(d.Preheader)
		d.HTML = strings.TrimSpace(d.HTML)
		if d.Subject == "" || d.HTML == "" || strings.ContainsAny(d.Subject, "\r\n") {
			return nil, fmt.Errorf("sequence: outline day %d lacks subject or html", i+1)
		}
		if utf8.RuneCountInString(d.Subject) > 255 {
			d.Subject = string([]rune(d.Subject)[:255])
		}
		if utf8.RuneCountInString(d.Preheader) > 500 {
			d.Preheader = string([]rune(d.Preheader)[:500])
		}
		out.Days[i] = d
	}
	return out.Days, nil
}

// Outline writes days with the AI service (charged like /ai/generate: 402
// without credit, 503 without a provider or with an unusable answer, and
// then nothing is charged) and appends them to the sequence unless
// in.Save is false.
func (s *Service) Outline(ctx context.Context, accountID int64, actor store.Actor, seqID int64, in OutlineInput) (OutlineResult, error) {
	if err := in.validate(); err != nil {
		return OutlineResult{}, err
	}
	seq, err := s.db.Sequence(ctx, accountID, seqID)
	if err != nil {
		return OutlineResult{}, err
	}
	if s.ai == nil {
		return OutlineResult{}, store.WithHint(&store.UnavailableError{Service: "ai",
			Message: "Die KI-Textgenerierung ist auf diesem Server nicht eingerichtet."}, ai.HintNotConfigured)
	}
	var days []OutlineDay
	var res OutlineResult
	_, err = s.ai.Complete(ctx, accountID, ai.Call{
		Action: "sequence_outline", Model: in.Model, System: outlineSystem, Prompt: outlinePrompt(in),
		MaxTokens: 600 * in.Days, RequestID: in.RequestID,
		Accept: func(answer string) (string, error) {
			d, err := parseOutline(answer, in.Days)
			if err != nil {
				return "", err
			}
			days = d
			return answer, nil
		},
		// The days and the request's idempotent response commit with the
		// charge: a retry after any failure past the debit replays the
		// response instead of paying and appending again.
		Respond: func(ctx context.Context, tx *sqlx.Tx, c ai.Completion) error {
			res = OutlineResult{Days: days, Completion: c}
			if in.Save {
				saved, err := store.AppendSequenceDaysTx(ctx, tx, accountID, actor, seqID, outlineDayInputs(days, seq.DaysCount == 0))
				if err != nil {
					return err
				}
				res.Saved = saved
			}
			return store.RecordIdempotent(ctx, tx, res)
		},
	})
	if err != nil {
		return OutlineResult{}, err
	}
	return res, nil
}

// outlineDayInputs makes days one day apart; the first day of an empty
// sequence goes out at entry.
func outlineDayInputs(days []OutlineDay, empty bool) []store.DayInput {
	inputs := make([]store.DayInput, len(days))
	for i, d := range days {
		delay := 1
		if i == 0 && empty {
			delay = 0
		}
		subject, pre, html := d.Subject, d.Preheader, d.HTML
		inputs[i] = store.DayInput{DelayDays: &delay, Content: store.NewsletterInput{Subject: &subject, Preheader: &pre, HTML: &html}}
	}
	return inputs
}

// checkRoute reports a campaign whose chosen SMTP server does not exist as
// a 422 on smtp_server_id.
func (s *Service) checkRoute(ctx context.Context, c store.Campaign) error {
	if s.opener == nil {
		return nil
	}
	sender, _, err := s.opener.Open(ctx, c.AccountID, c.ServerID())
	if errors.Is(err, store.ErrNotFound) {
		return store.Invalid("smtp_server_id", "Den gewählten SMTP-Server gibt es nicht (mehr).")
	}
	if err != nil {
		return err
	}
	return sender.Close()
}

// CreateStoryEmail creates a story email draft.
func (s *Service) CreateStoryEmail(ctx context.Context, accountID int64, actor store.Actor, in store.NewsletterInput) (store.Campaign, error) {
	return s.db.CreateStoryEmail(ctx, accountID, actor, in)
}

// UpdateStoryEmail changes a draft or scheduled story email.
func (s *Service) UpdateStoryEmail(ctx context.Context, accountID int64, actor store.Actor, id int64, in store.NewsletterInput) (store.Campaign, error) {
	return s.db.UpdateStoryEmail(ctx, accountID, actor, id, in)
}

// DeleteStoryEmail deletes a story email that is not sending.
func (s *Service) DeleteStoryEmail(ctx context.Context, accountID int64, actor store.Actor, id int64) error {
	return s.db.DeleteStoryEmail(ctx, accountID, actor, id)
}

// PutStorySettings saves the story settings.
func (s *Service) PutStorySettings(ctx context.Context, accountID int64, actor store.Actor, in store.StorySettingsInput) (store.StorySettings, error) {
	return s.db.PutStorySettings(ctx, accountID, actor, in)
}

// SendStoryEmail queues a story email to the story lists now and wakes the
// send workers.
func (s *Service) SendStoryEmail(ctx context.Context, accountID int64, actor store.Actor, id int64) (store.Campaign, store.StartResult, error) {
	c, res, err := s.db.StartStoryEmail(ctx, accountID, actor, id, store.StartOptions{Now: s.opts.Now(), Check: s.checkRoute, Links: mailer.CampaignLinks})
	if err == nil && s.sender != nil {
		s.sender.Wake()
	}
	return c, res, err
}

// ScheduleStoryEmail schedules a story email at at, or (zero) on the next
// free allowed day at the settings' send_time.
func (s *Service) ScheduleStoryEmail(ctx context.Context, accountID int64, actor store.Actor, id int64, at time.Time) (store.Campaign, error) {
	return s.db.ScheduleStoryEmail(ctx, accountID, actor, id, at, store.StartOptions{Now: s.opts.Now(), Check: s.checkRoute})
}

// TestStoryEmail sends a story email to at most five addresses.
func (s *Service) TestStoryEmail(ctx context.Context, accountID, id int64, to []string) ([]campaign.TestMailResult, error) {
	c, err := s.db.StoryEmail(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	if s.campaigns == nil {
		return nil, &store.UnavailableError{Service: "mail", Message: "Der Versand ist in diesem Dienst nicht eingerichtet."}
	}
	settings, err := s.db.StorySettingsOf(ctx, accountID)
	if err != nil {
		return nil, err
	}
	if len(c.ListIDs) == 0 {
		c.ListIDs = settings.ListIDs
	}
	return s.campaigns.TestCampaign(ctx, c, to)
}
