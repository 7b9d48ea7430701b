package mailer

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// This file is the mailer's part of A/B tests (issue 6). The store assigns
// each recipient its variant when the send starts (store.ABBucket, a hash of
// the test id and the address); here the send worker compiles variant B once
// per campaign next to variant A and renders each recipient from its
// variant's templates, and the ABTests service decides winners (by hand or
// on schedule) and wakes the workers for the recipients a decision releases.

// compileVariants compiles variant B of a campaign that has an A/B test,
// once, with variant B's tracked links (stored after A's, from
// store.ABLinkOffset on).
func (w *Worker) compileVariants(ctx context.Context, cc *compiledCampaign, links []store.CampaignLink) error {
	t, err := w.db.ABTestOfCampaign(ctx, cc.c.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var bLinks []store.CampaignLink
	for _, l := range links {
		if l.Position >= store.ABLinkOffset {
			l.Position -= store.ABLinkOffset
			bLinks = append(bLinks, l)
		}
	}
	if t.BHTML == nil {
		bLinks = links // the same content, the same links
	}
	b, err := compileCampaign(t.ApplyB(cc.c), composeOptions{Tracking: true, Links: bLinks})
	if err != nil {
		return err
	}
	cc.variantB = b
	return nil
}

// variant returns the compiled campaign of a recipient's variant: B's when
// the recipient got B, A's (the campaign itself) otherwise.
func (cc *compiledCampaign) variant(v string) *compiledCampaign {
	if v == "B" && cc.variantB != nil {
		return cc.variantB
	}
	return cc
}

// ABTestsOptions tune ABTests.
type ABTestsOptions struct {
	// Interval is how often the scheduler looks for due decisions; default
	// 30 s.
	Interval time.Duration
	// Now is the clock of decisions; nil: time.Now. Tests move it.
	Now func() time.Time
	Log *slog.Logger
}

// ABTests decides A/B test winners: by hand (POST /ab-tests/{id}/winner, the
// portal's button), when a test is stopped, and on schedule once wait_hours
// have passed (Run). A decision that releases held-back recipients wakes the
// send workers.
type ABTests struct {
	db     *store.DB
	worker *Worker
	opts   ABTestsOptions
}

// NewABTests returns the service; worker (nil: none) is woken after releases.
func NewABTests(db *store.DB, worker *Worker, opts ABTestsOptions) *ABTests {
	if opts.Interval <= 0 {
		opts.Interval = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &ABTests{db: db, worker: worker, opts: opts}
}

func (s *ABTests) wake(released int64) {
	if released > 0 && s.worker != nil {
		s.worker.Wake()
	}
}

// SetWinner completes a running test with variant "A", "B" or "auto" (the
// leader by the data, A when level): held-back recipients get the winner.
func (s *ABTests) SetWinner(ctx context.Context, accountID int64, actor store.Actor, id int64, variant string) (store.ABWinnerResult, error) {
	res, err := s.db.SetABWinner(ctx, accountID, actor, id, variant, s.opts.Now())
	if err == nil {
		s.wake(res.Released)
	}
	return res, err
}

// Stop calls a test off; held-back recipients get variant A.
func (s *ABTests) Stop(ctx context.Context, accountID int64, actor store.Actor, id int64) (store.ABTest, int64, error) {
	t, released, err := s.db.StopABTest(ctx, accountID, actor, id, s.opts.Now())
	if err == nil {
		s.wake(released)
	}
	return t, released, err
}

// DecideDue decides every test whose wait is over and returns how many it
// decided. Each is claimed with FOR UPDATE SKIP LOCKED and marked decided in
// the same transaction, so with several processes every test is decided once.
func (s *ABTests) DecideDue(ctx context.Context) (int, error) {
	n := 0
	for ctx.Err() == nil {
		d, err := s.db.DecideNextDueABTest(ctx, s.opts.Now())
		switch {
		case errors.Is(err, store.ErrNoDueABTest):
			return n, nil
		case err != nil:
			return n, err
		}
		n++
		s.opts.Log.Info("a/b test decided", "ab_test", d.Test.ID, "winner", d.Winner, "applied", d.Applied, "released", d.Released)
		s.wake(d.Released)
	}
	return n, nil
}

// Run decides due tests every Interval until ctx ends.
func (s *ABTests) Run(ctx context.Context) error {
	tick := time.NewTicker(s.opts.Interval)
	defer tick.Stop()
	for {
		if _, err := s.DecideDue(ctx); err != nil && ctx.Err() == nil {
			s.opts.Log.Error("a/b test scheduler", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
