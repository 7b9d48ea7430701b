package abtest

import (
	"context"
	"errors"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// DecideDue decides every test whose wait is over and returns how many it
// decided. Each is claimed with FOR UPDATE SKIP LOCKED and marked decided in
// the same transaction, so with several processes every test is decided once.
func (s *Service) DecideDue(ctx context.Context) (int, error) {
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
func (s *Service) Run(ctx context.Context) error {
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
