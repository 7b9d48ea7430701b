package inbox

import (
	"context"
	"time"
)

// WorkerOptions tune the Worker; zero values take the defaults.
type WorkerOptions struct {
	// Poll is how often the worker looks for due syncs without a wake-up: 5 s.
	Poll time.Duration
}

// Worker syncs every connected account every five minutes (next_sync_at),
// each sync claimed by one process through its lease in PostgreSQL, and runs
// the rules of new messages that a crashed sync left pending.
type Worker struct {
	s    *Service
	opts WorkerOptions
}

// Worker returns the sync worker of the service.
func (s *Service) Worker(opts WorkerOptions) *Worker {
	if opts.Poll <= 0 {
		opts.Poll = 5 * time.Second
	}
	return &Worker{s: s, opts: opts}
}

// Run syncs due accounts until ctx ends.
func (w *Worker) Run(ctx context.Context) error {
	t := time.NewTicker(w.opts.Poll)
	defer t.Stop()
	for {
		w.round(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-w.s.wake:
		}
	}
}

// round syncs every due account it can claim, one after the other.
func (w *Worker) round(ctx context.Context) {
	for ctx.Err() == nil {
		id, ok, err := w.s.db.ClaimDueInbox(ctx, w.s.owner, w.s.cfg.Lease)
		if err != nil {
			w.s.cfg.Log.Warn("inbox claim", "err", err)
			return
		}
		if !ok {
			break
		}
		if _, err := w.s.syncClaimed(ctx, id); err != nil {
			w.s.cfg.Log.Info("inbox sync", "account_id", id, "err", err)
		}
	}
	if err := w.s.ProcessPending(ctx, 0); err != nil && ctx.Err() == nil {
		w.s.cfg.Log.Warn("inbox rules", "err", err)
	}
}
