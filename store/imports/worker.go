package imports

import (
	"context"
	"log/slog"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// WorkerOptions tune a Worker; zero values take the defaults.
type WorkerOptions struct {
	Poll  time.Duration // how often to look for a job when idle; default 1 s
	Lease time.Duration // how long a claim lasts without a renewing batch; default 2 min
	Batch int           // rows per transaction; default store.DefaultImportBatch
	Log   *slog.Logger
}

// Worker runs queued import jobs. Any number of workers (in any number of
// processes) share the queue; a job whose worker died is resumed by another
// one once its lease has run out.
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
	if opts.Batch <= 0 || opts.Batch > store.MaxBatch {
		opts.Batch = store.DefaultImportBatch
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Worker{db: db, opts: opts}
}

// Run works through the queue until ctx ends; when idle it deletes stale
// uploads, at most once an hour.
func (w *Worker) Run(ctx context.Context) error {
	var purged time.Time
	for {
		if time.Since(purged) > time.Hour {
			purged = time.Now()
			if _, err := w.db.PurgeStaleImports(ctx, store.StaleImportUpload); err != nil && ctx.Err() == nil {
				w.opts.Log.Error("import worker", "err", err)
			}
		}
		ran, err := w.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			w.opts.Log.Error("import worker", "err", err)
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
	return w.db.RunNextImport(ctx, store.ImportRun{Lease: w.opts.Lease, Batch: w.opts.Batch, Log: w.opts.Log})
}
