// Package abtest is the home of A/B tests: its Service is the one entry the
// API and the portal call to change a test, set its winner or stop it, and its
// Worker decides due winners. Rows, statements and the statistics live in
// store (abtests.go); compiling and rendering the variants in mailer.
package abtest

import (
	"context"
	"log/slog"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
)

// Options tune a Service.
type Options struct {
	// Interval is how often the scheduler looks for due decisions; default
	// 30 s.
	Interval time.Duration
	// Now is the clock of decisions; nil: time.Now. Tests move it.
	Now func() time.Time
	Log *slog.Logger
}

// Service decides A/B test winners: by hand (POST /ab-tests/{id}/winner, the
// portal's button), when a test is stopped, and on schedule once wait_hours
// have passed (Run). A decision that releases held-back recipients wakes the
// send workers.
type Service struct {
	db     *store.DB
	worker *mailer.Worker
	opts   Options
}

// New returns the service; worker (nil: none) is woken after releases.
func New(db *store.DB, worker *mailer.Worker, opts Options) *Service {
	if opts.Interval <= 0 {
		opts.Interval = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{db: db, worker: worker, opts: opts}
}

func (s *Service) wake(released int64) {
	if released > 0 && s.worker != nil {
		s.worker.Wake()
	}
}

// SetWinner completes a running test with variant "A", "B" or "auto" (the
// leader by the data, A when level): held-back recipients get the winner.
func (s *Service) SetWinner(ctx context.Context, accountID int64, actor store.Actor, id int64, variant string) (store.ABWinnerResult, error) {
	res, err := s.db.SetABWinner(ctx, accountID, actor, id, variant, s.opts.Now())
	if err == nil {
		s.wake(res.Released)
	}
	return res, err
}

// Stop calls a test off; held-back recipients get variant A.
func (s *Service) Stop(ctx context.Context, accountID int64, actor store.Actor, id int64) (store.ABTest, int64, error) {
	t, released, err := s.db.StopABTest(ctx, accountID, actor, id, s.opts.Now())
	if err == nil {
		s.wake(released)
	}
	return t, released, err
}

// CreateABTest puts a test on a newsletter draft or a scheduled single email.
func (s *Service) CreateABTest(ctx context.Context, accountID int64, actor store.Actor, in store.ABInput) (store.ABTest, error) {
	return s.db.CreateABTest(ctx, accountID, actor, in)
}

// UpdateABTest changes a draft test.
func (s *Service) UpdateABTest(ctx context.Context, accountID int64, actor store.Actor, id int64, in store.ABInput) (store.ABTest, error) {
	return s.db.UpdateABTest(ctx, accountID, actor, id, in)
}

// DeleteABTest deletes a draft test.
func (s *Service) DeleteABTest(ctx context.Context, accountID int64, actor store.Actor, id int64) error {
	return s.db.DeleteABTest(ctx, accountID, actor, id)
}
