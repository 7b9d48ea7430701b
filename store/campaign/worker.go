package campaign

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
)

// SchedulerOptions tune a Scheduler.
type SchedulerOptions struct {
	// Interval is how often due campaigns are looked for; default 5 s, so a
	// scheduled send starts well within 30 s of its time.
	Interval time.Duration
	// Now is the clock that decides what is due; nil: time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// Scheduler starts scheduled newsletters and emails when they are due. Every
// process may run one: each due campaign is taken with FOR UPDATE SKIP LOCKED
// and its start (status, recipients, daily limit) commits in the same
// transaction, so it starts exactly once. A start that is refused (daily
// limit, no recipients, SMTP server gone) marks the campaign failed with the
// reason in last_error.
type Scheduler struct {
	db        *store.DB
	campaigns *Service
	opts      SchedulerOptions
}

// NewScheduler returns a scheduler that starts sends through campaigns (its
// route check, link extraction and worker).
func NewScheduler(db *store.DB, campaigns *Service, opts SchedulerOptions) *Scheduler {
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{db: db, campaigns: campaigns, opts: opts}
}

// Run starts due campaigns every Interval until ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	tick := time.NewTicker(s.opts.Interval)
	defer tick.Stop()
	for {
		if _, err := s.StartDue(ctx); err != nil && ctx.Err() == nil {
			s.opts.Log.Error("scheduler", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// StartDue starts every campaign due now and returns how many it took on
// (started or refused).
func (s *Scheduler) StartDue(ctx context.Context) (int, error) {
	n := 0
	for ctx.Err() == nil {
		opts := store.StartOptions{Now: s.opts.Now(), Check: s.campaigns.checkRoute, Links: mailer.CampaignLinks}
		c, res, err := s.db.StartNextDue(ctx, opts)
		switch {
		case errors.Is(err, store.ErrNothingDue):
			return n, nil
		case err != nil && c.ID != 0:
			n++
			s.opts.Log.Warn("scheduled send refused", "campaign", c.ID, "reason", c.LastError)
			continue
		case err != nil:
			return n, err
		}
		n++
		s.opts.Log.Info("scheduled send started", "campaign", c.ID, "queued", res.Queued, "skipped", res.Skipped)
		if s.campaigns.worker != nil {
			s.campaigns.worker.Wake()
		}
	}
	return n, nil
}
