package appointment

import (
	"context"
	"log/slog"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// WorkerOptions configure the reminder worker.
type WorkerOptions struct {
	// Interval is how often due reminders are looked for; zero: 30 s.
	Interval time.Duration
	// Now is the clock; nil: time.Now. Tests move it.
	Now func() time.Time
	// Batch is how many reminders one transaction queues; zero: 100.
	Batch int
	Log   *slog.Logger
}

// Worker queues the reminder mails of appointments reminder_hours before
// their start. Several processes may run one each: a reminder is claimed with
// FOR UPDATE SKIP LOCKED and marked in the transaction that queues its mail,
// so each goes out once; the system mail worker sends it.
type Worker struct {
	db   *store.DB
	opts WorkerOptions
}

// NewWorker returns the reminder worker; run it with Run.
func NewWorker(db *store.DB, opts WorkerOptions) *Worker {
	if opts.Interval <= 0 {
		opts.Interval = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Batch <= 0 {
		opts.Batch = 100
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Worker{db: db, opts: opts}
}

// Run queues due reminders every Interval until ctx ends.
func (w *Worker) Run(ctx context.Context) error {
	tick := time.NewTicker(w.opts.Interval)
	defer tick.Stop()
	for {
		if _, err := w.QueueDue(ctx); err != nil && ctx.Err() == nil {
			w.opts.Log.Error("appointment reminders", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// QueueDue queues every reminder due now and returns how many.
func (w *Worker) QueueDue(ctx context.Context) (int, error) {
	total := 0
	for ctx.Err() == nil {
		n, err := w.db.QueueDueReminders(ctx, w.opts.Now(), w.opts.Batch, func(j store.ReminderJob) (store.QueuedMail, error) {
			return reminderMail(j), nil
		})
		total += n
		if err != nil || n < w.opts.Batch {
			return total, err
		}
	}
	return total, nil
}
