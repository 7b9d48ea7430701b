// Package campaign is the home of newsletters and single emails: its Service
// is the one entry the API and the portal call to change or send them (drafts,
// sends, schedules, pauses, retries, test mails, previews), and its Scheduler
// starts scheduled sends. Their rows and statements live in store
// (newsletters.go, emails.go, campaigns.go); rendering, SMTP and the send
// queue in mailer.
package campaign

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
)

// Service is the service behind the newsletter and email endpoints: it
// checks the SMTP route, starts sends through the store (recipients queued in
// one transaction), sends the first batch inline and leaves the rest to the
// send worker; it also sends test mails and renders previews.
type Service struct {
	db     *store.DB
	opener mailer.Opener
	worker *mailer.Worker
	opts   Options
}

// Options tune a Service.
type Options struct {
	// Links builds the unsubscribe, open and click URLs.
	Links mailer.LinkBuilder
	// InlineBatch is how many recipients a send request delivers itself
	// before answering; default 20.
	InlineBatch int
	// InlineBudget bounds the time a send request spends on them; default 5 s.
	InlineBudget time.Duration
	// Now is the clock of schedules and the daily limit; nil: time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// New returns the service; worker (nil: none) sends the queued rest.
func New(db *store.DB, opener mailer.Opener, worker *mailer.Worker, opts Options) *Service {
	if opts.InlineBatch <= 0 {
		opts.InlineBatch = 20
	}
	if opts.InlineBudget <= 0 {
		opts.InlineBudget = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{db: db, opener: opener, worker: worker, opts: opts}
}

// checkRoute reports a campaign whose chosen SMTP server does not exist as a
// 422 on smtp_server_id. Without a chosen server the account's default, the
// operator relay or the development outbox is always usable.
func (s *Service) checkRoute(ctx context.Context, c store.Campaign) error {
	sender, _, err := s.opener.Open(ctx, c.AccountID, c.ServerID())
	if errors.Is(err, store.ErrNotFound) {
		return store.Invalid("smtp_server_id", "Den gewählten SMTP-Server gibt es nicht (mehr).")
	}
	if err != nil {
		return err
	}
	return sender.Close()
}

// startOptions are the store's hooks for starting a send now.
func (s *Service) startOptions() store.StartOptions {
	return store.StartOptions{Now: s.opts.Now(), Check: s.checkRoute, Links: mailer.CampaignLinks}
}

// sendOptions are the start options of a send request: its idempotent
// response, as of the commit (nothing sent yet), is stored in the transaction
// that queues the mails, so that no retry can queue them again. The request
// replaces it by the final response once the first batch went out.
func (s *Service) sendOptions(warnings []string) store.StartOptions {
	o := s.startOptions()
	o.Respond = func(ctx context.Context, tx *sqlx.Tx, c store.Campaign, res store.StartResult) error {
		return store.RecordIdempotent(ctx, tx, SendResult{Campaign: c, Queued: res.Queued, Sent: c.SentCount,
			Failed: c.FailedCount, Skipped: c.SkippedCount, Warnings: warnings})
	}
	return o
}

// SendResult is the state of a campaign right after a send request.
type SendResult struct {
	Campaign store.Campaign
	Queued   int64
	Sent     int64
	Failed   int64
	Skipped  int64
	// Warnings name what the account should fix (codes such as
	// store.WarningNoPostalAddress); the send happened all the same.
	Warnings []string
}

// SendNewsletter starts a newsletter now (422 naming the missing subject,
// content, lists or SMTP server; 402 over the daily limit; 409 already_sent),
// sends its first batch and returns the counts so far.
func (s *Service) SendNewsletter(ctx context.Context, accountID int64, actor store.Actor, id int64) (SendResult, error) {
	warnings, err := s.db.SendWarnings(ctx, accountID, false)
	if err != nil {
		return SendResult{}, err
	}
	c, res, err := s.db.StartNewsletter(ctx, accountID, actor, id, s.sendOptions(warnings))
	if err != nil {
		return SendResult{}, err
	}
	out, err := s.afterStart(ctx, c, res)
	out.Warnings = warnings
	return out, err
}

// afterStart sends the first batch inline and reads the counts.
func (s *Service) afterStart(ctx context.Context, c store.Campaign, res store.StartResult) (SendResult, error) {
	if c.Status == store.CampaignSending && s.worker != nil {
		// The request's end must not cut a message short: its outcome would
		// be unknown. The budget bounds the inline part instead.
		inline := context.WithoutCancel(ctx)
		if _, err := s.worker.SendBatch(inline, c.AccountID, c.ID, s.opts.InlineBatch, s.opts.InlineBudget); err != nil {
			s.opts.Log.Warn("inline batch", "campaign", c.ID, "err", err)
		}
	}
	cur, err := s.db.CampaignByID(ctx, c.ID)
	if err != nil {
		return SendResult{}, err
	}
	return SendResult{Campaign: cur, Queued: res.Queued, Sent: cur.SentCount, Failed: cur.FailedCount, Skipped: cur.SkippedCount}, nil
}

// ScheduleNewsletter schedules a newsletter for at, after the same checks as
// a send (except the recipients and the daily limit, settled at the start).
func (s *Service) ScheduleNewsletter(ctx context.Context, accountID int64, actor store.Actor, id int64, at time.Time) (store.Campaign, error) {
	return s.db.ScheduleNewsletter(ctx, accountID, actor, id, at, store.StartOptions{Now: s.opts.Now(), Check: s.checkRoute})
}

// SendEmail records a single email and sends it now (first batch inline) or
// schedules it.
func (s *Service) SendEmail(ctx context.Context, accountID int64, actor store.Actor, in store.EmailInput) (SendResult, error) {
	warnings, err := s.db.SendWarnings(ctx, accountID, in.Type == store.TypeTransactional)
	if err != nil {
		return SendResult{}, err
	}
	res, err := s.db.CreateEmail(ctx, accountID, actor, in, s.sendOptions(warnings))
	if err != nil {
		return SendResult{}, err
	}
	if res.Campaign.Status == store.CampaignScheduled {
		return SendResult{Campaign: res.Campaign, Warnings: warnings}, nil
	}
	out, err := s.afterStart(ctx, res.Campaign, store.StartResult{Queued: res.Queued, Skipped: res.Skipped})
	out.Warnings = warnings
	return out, err
}

// RetryFailed queues a newsletter's failed recipients again and wakes the
// workers.
func (s *Service) RetryFailed(ctx context.Context, accountID int64, actor store.Actor, id int64) (SendResult, error) {
	c, n, err := s.db.RetryFailed(ctx, accountID, actor, id, s.opts.Now())
	if err != nil {
		return SendResult{}, err
	}
	if s.worker != nil {
		s.worker.Wake()
	}
	return SendResult{Campaign: c, Queued: n, Sent: c.SentCount, Failed: c.FailedCount, Skipped: c.SkippedCount}, nil
}

// ResumeNewsletter continues a paused newsletter and wakes the workers.
func (s *Service) ResumeNewsletter(ctx context.Context, accountID int64, actor store.Actor, id int64) (store.Campaign, error) {
	c, err := s.db.ResumeNewsletter(ctx, accountID, actor, id)
	if err == nil && s.worker != nil {
		s.worker.Wake()
	}
	return c, err
}

// TestMailResult is the outcome of one test mail.
type TestMailResult struct {
	Email     string
	Sent      bool
	MessageID string
	Error     string
}

// TestNewsletter sends a newsletter to at most five addresses, now and
// without tracking: the subject starts with "[TEST] ", and it is personalised
// with the contact of each address if there is one, else with a sample
// contact (the first subscribed member of its lists, else a made-up one).
// The mails count against the daily limit. A failed send is reported in the
// result, not as an error.
func (s *Service) TestNewsletter(ctx context.Context, accountID, id int64, to []string) ([]TestMailResult, error) {
	c, err := s.db.Newsletter(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	return s.TestCampaign(ctx, c, to)
}

// TestCampaign sends the test mails of TestNewsletter for a campaign of any
// kind (story emails and sequence days too), as loaded by the caller.
func (s *Service) TestCampaign(ctx context.Context, c store.Campaign, to []string) ([]TestMailResult, error) {
	accountID := c.AccountID
	to, err := store.NormalizeTestRecipients(to)
	errs := c.ReadyErrors()
	delete(errs, "list_ids") // a test needs no recipients of its own
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		for k, v := range ve.Fields {
			errs.Add(k, v)
		}
	} else if err != nil {
		return nil, err
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	sender, route, err := s.opener.Open(ctx, accountID, c.ServerID())
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.Invalid("smtp_server_id", "Den gewählten SMTP-Server gibt es nicht (mehr).")
	}
	if err != nil {
		return nil, err
	}
	defer sender.Close()
	if err := s.db.CountSends(ctx, accountID, int64(len(to)), s.opts.Now()); err != nil {
		return nil, err
	}
	assets, err := mailer.LoadAssets(ctx, s.db, accountID, c.Content())
	if err != nil {
		return nil, err
	}
	mail, err := mailer.CompileTestMail(c, assets, s.opts.Links)
	if err != nil {
		return nil, err
	}
	known, err := s.db.ContactsByEmail(ctx, accountID, to)
	if err != nil {
		return nil, err
	}
	sample, err := s.sample(ctx, accountID, 0, c.ListIDs)
	if err != nil {
		return nil, err
	}
	out := make([]TestMailResult, len(to))
	for i, addr := range to {
		values := sample
		if k, ok := known[addr]; ok {
			values = mailer.RecipientOf(k)
		}
		msg, err := mail.Message(values, route)
		if err != nil {
			return nil, err
		}
		msg.To = mailer.Address{Email: addr}
		out[i].Email = addr
		if err := sender.Send(ctx, msg); err != nil {
			out[i].Error = mailer.SendErrorText(err)
			continue
		}
		out[i].Sent, out[i].MessageID = true, msg.MessageID
	}
	return out, nil
}

// sample returns the placeholder values of a preview or test mail.
func (s *Service) sample(ctx context.Context, accountID, contactID int64, listIDs []int64) (mailer.Recipient, error) {
	c, err := s.db.SampleContact(ctx, accountID, contactID, listIDs)
	switch {
	case err == nil:
		return mailer.RecipientOf(c), nil
	case errors.Is(err, store.ErrNotFound) && contactID == 0:
		return mailer.SampleRecipient(), nil
	case errors.Is(err, store.ErrNotFound):
		return mailer.Recipient{}, store.Invalid("contact_id", "Diesen Kontakt gibt es nicht.")
	}
	return mailer.Recipient{}, err
}

// Preview is a newsletter rendered for one contact, without tracking.
type Preview struct {
	Subject, Preheader, HTML, Text string
	// ContactID is the contact it is personalised with; 0 for the made-up
	// sample.
	ContactID int64
}

// PreviewNewsletter renders a newsletter for contactID (0: the first
// subscribed member of its lists, else a made-up sample contact). 422 when
// it has no content or the contact does not exist.
func (s *Service) PreviewNewsletter(ctx context.Context, accountID, id, contactID int64) (Preview, error) {
	c, err := s.db.Newsletter(ctx, accountID, id)
	if err != nil {
		return Preview{}, err
	}
	return s.PreviewCampaign(ctx, c, contactID)
}

// PreviewCampaign renders c as PreviewNewsletter does, for content that is
// not saved yet (the portal's live preview of the editor); c.AccountID decides
// whose contacts personalise it.
func (s *Service) PreviewCampaign(ctx context.Context, c store.Campaign, contactID int64) (Preview, error) {
	accountID := c.AccountID
	if !c.HasContent() {
		return Preview{}, store.Invalid("html", "Der Newsletter hat noch keinen Inhalt.")
	}
	// A preview shows no attachments: it need not read and encode them.
	mc := c.Content()
	mc.AttachmentIDs = nil
	assets, err := mailer.LoadAssets(ctx, s.db, accountID, mc)
	if err != nil {
		return Preview{}, err
	}
	preview, err := mailer.CompilePreview(c, assets, s.opts.Links)
	if err != nil {
		return Preview{}, err
	}
	var p Preview
	contact, err := s.db.SampleContact(ctx, accountID, contactID, c.ListIDs)
	values := mailer.SampleRecipient()
	switch {
	case err == nil:
		values, p.ContactID = mailer.RecipientOf(contact), contact.ID
	case errors.Is(err, store.ErrNotFound) && contactID != 0:
		return Preview{}, store.Invalid("contact_id", "Diesen Kontakt gibt es nicht.")
	case !errors.Is(err, store.ErrNotFound):
		return Preview{}, err
	}
	r, err := preview.Render(values)
	if err != nil {
		return Preview{}, err
	}
	p.Subject, p.Preheader, p.HTML, p.Text = r.Subject, r.Preheader, r.HTML, r.Text
	return p, nil
}

// The changes below need nothing beyond their transaction (store holds their
// rules and events); they go through the Service all the same, so that the API
// and the portal have one entry for every change of a campaign.

// CreateNewsletter creates a newsletter draft.
func (s *Service) CreateNewsletter(ctx context.Context, accountID int64, actor store.Actor, in store.NewsletterInput) (store.Campaign, error) {
	return s.db.CreateNewsletter(ctx, accountID, actor, in)
}

// UpdateNewsletter changes a draft or scheduled newsletter.
func (s *Service) UpdateNewsletter(ctx context.Context, accountID int64, actor store.Actor, id int64, in store.NewsletterInput) (store.Campaign, error) {
	return s.db.UpdateNewsletter(ctx, accountID, actor, id, in)
}

// DeleteNewsletter deletes a newsletter that is not sending.
func (s *Service) DeleteNewsletter(ctx context.Context, accountID int64, actor store.Actor, id int64) error {
	return s.db.DeleteNewsletter(ctx, accountID, actor, id)
}

// DuplicateNewsletter copies a newsletter into a new draft.
func (s *Service) DuplicateNewsletter(ctx context.Context, accountID int64, actor store.Actor, id int64) (store.Campaign, error) {
	return s.db.DuplicateNewsletter(ctx, accountID, actor, id)
}

// UnscheduleNewsletter turns a scheduled newsletter back into a draft.
func (s *Service) UnscheduleNewsletter(ctx context.Context, accountID int64, actor store.Actor, id int64) (store.Campaign, error) {
	return s.db.UnscheduleNewsletter(ctx, accountID, actor, id)
}

// PauseNewsletter pauses a sending newsletter.
func (s *Service) PauseNewsletter(ctx context.Context, accountID int64, actor store.Actor, id int64) (store.Campaign, error) {
	return s.db.PauseNewsletter(ctx, accountID, actor, id)
}

// CancelEmail cancels a scheduled single email.
func (s *Service) CancelEmail(ctx context.Context, accountID int64, actor store.Actor, id int64) (store.Campaign, error) {
	return s.db.CancelEmail(ctx, accountID, actor, id)
}
