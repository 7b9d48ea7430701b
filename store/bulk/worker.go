package bulk

import (
	"context"
	"log/slog"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// WorkerOptions tune a Worker; zero values take the defaults.
type WorkerOptions struct {
	Poll  time.Duration // how often to look for a job when idle; default 1 s
	Lease time.Duration // how long a claim lasts without a renewing chunk; default 2 min
	Chunk int           // contacts per transaction; default store.DefaultBulkChunk
	Log   *slog.Logger
}

// Worker runs queued bulk jobs. Any number of workers (in any number of
// processes) share the queue (claimed with FOR UPDATE SKIP LOCKED); a job
// whose worker died is resumed by another once its lease has run out, at the
// chunk after the last one committed.
type Worker struct {
	db   *store.DB
	opts WorkerOptions
}

// NewWorker returns a worker; Run starts it.
func NewWorker(db *store.DB, opts WorkerOptions) *Worker {
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Lease <= 0 {
		opts.Lease = 2 * time.Minute
	}
	if opts.Chunk <= 0 {
		opts.Chunk = store.DefaultBulkChunk
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Worker{db: db, opts: opts}
}

// Run works through the queue until ctx ends.
func (w *Worker) Run(ctx context.Context) error {
	for {
		ran, err := w.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			w.opts.Log.Error("bulk worker", "err", err)
		}
		if ran && err == nil {
			continue // there may be more
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(w.opts.Poll):
		}
	}
}

// RunOnce claims one job and runs it to its end; ran is false when the queue
// was empty.
func (w *Worker) RunOnce(ctx context.Context) (ran bool, err error) {
	return w.db.RunNextBulkJob(ctx, store.BulkRun{Lease: w.opts.Lease, Chunk: w.opts.Chunk, Log: w.opts.Log})
}
