package sequence

import (
	"context"
	"log/slog"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
)

// WorkerOptions tune a Worker.
type WorkerOptions struct {
	// Now is the clock that decides what is due; nil: time.Now.
	Now func() time.Time
	// Interval is the pause between ticks when nothing was due: 1 s.
	Interval time.Duration
	// Batch is the most participants one transaction queues: 5000 (a
	// larger batch spreads each transaction's fixed cost; 100,000 due
	// participants are 20 transactions).
	Batch int
	Log   *slog.Logger
}

// Worker queues due sequence days: each tick claims due participants in
// batches (store.ClaimSequenceDays: FOR UPDATE SKIP LOCKED on the due index,
// the day's recipient row and the participant's move in one transaction)
// until none is due, then wakes the send workers. Any number of processes
// run one; each participant's day is queued by exactly one of them, once.
type Worker struct {
	db     *store.DB
	sender Waker
	opts   WorkerOptions
}

// NewWorker returns the worker; sender (nil: none) is woken after queueing.
func NewWorker(db *store.DB, sender Waker, opts WorkerOptions) *Worker {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Batch <= 0 {
		opts.Batch = 5000
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Worker{db: db, sender: sender, opts: opts}
}

// Run ticks until ctx ends.
func (w *Worker) Run(ctx context.Context) error {
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	for {
		if _, err := w.Tick(ctx); err != nil && ctx.Err() == nil {
			w.opts.Log.Error("sequence worker", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Tick queues everything due now, batch by batch, and returns the totals.
func (w *Worker) Tick(ctx context.Context) (store.SequenceClaimResult, error) {
	var total store.SequenceClaimResult
	now := w.opts.Now()
	for ctx.Err() == nil {
		res, err := w.db.ClaimSequenceDays(ctx, store.SequenceClaimOptions{Now: now, Batch: w.opts.Batch, Links: mailer.CampaignLinks})
		if err != nil {
			return total, err
		}
		total.Claimed += res.Claimed
		total.Queued += res.Queued
		total.Exited += res.Exited
		total.Completed += res.Completed
		total.Postponed += res.Postponed
		if res.Queued > 0 && w.sender != nil {
			w.sender.Wake()
		}
		if res.Claimed < w.opts.Batch {
			break
		}
	}
	return total, nil
}
