package webhook

import (
	"context"
	"sync"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// WorkerOptions tune a Worker; zero values take the defaults.
type WorkerOptions struct {
	// PollInterval is how often the outbox and the due retries are checked: 250 ms.
	// New events are fanned out at once while the process runs
	// store.DB.ListenNotifications.
	PollInterval time.Duration
	// MaxInFlight bounds the attempts running at once in this process: 64.
	MaxInFlight int
	// PerWebhook bounds one webhook's share of them, so that a slow receiver
	// (up to 4 s per attempt) cannot hold every slot: 16.
	PerWebhook int
	// DispatchBatch is the number of outbox events fanned out per transaction: 500.
	DispatchBatch int
}

func (o *WorkerOptions) defaults() {
	if o.PollInterval <= 0 {
		o.PollInterval = 250 * time.Millisecond
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 64
	}
	if o.PerWebhook <= 0 {
		o.PerWebhook = 16
	}
	if o.PerWebhook > o.MaxInFlight {
		o.PerWebhook = o.MaxInFlight
	}
	if o.DispatchBatch <= 0 {
		o.DispatchBatch = 500
	}
}

// Tuning of the loop.
const (
	// claimDelay gathers attempts that finish close together into one claim.
	claimDelay = 3 * time.Millisecond
	// maxRecordBatch bounds the results recorded in one transaction.
	maxRecordBatch = 500
	// recordTries bounds how often a batch of results is retried when the
	// database fails; after that the leases run out and the attempts are
	// repeated (receivers deduplicate by X-Service-Event-Id).
	recordTries = 30
)

// Worker is the background delivery loop of one process. Several processes (and
// several Workers) may run on one database: the fan-out is the outbox consumer
// store.OutboxConsumerWebhooks, which hands each event to one of them, and
// deliveries are claimed with FOR UPDATE SKIP LOCKED, so each is delivered once.
type Worker struct {
	s      *Service
	opts   WorkerOptions
	fanOut *store.Consumer
	// dispatched wakes the loop when the fan-out has created deliveries.
	dispatched chan struct{}

	mu       sync.Mutex
	busy     map[int64]int // attempts in flight per webhook
	inFlight int
	freed    chan struct{}
	results  chan store.AttemptResult
	attempts sync.WaitGroup
}

// Worker returns a delivery loop; run it with Run.
func (s *Service) Worker(opts WorkerOptions) *Worker {
	opts.defaults()
	w := &Worker{
		s: s, opts: opts, busy: map[int64]int{},
		dispatched: make(chan struct{}, 1),
		freed:      make(chan struct{}, 1),
		results:    make(chan store.AttemptResult, opts.MaxInFlight),
	}
	w.fanOut = s.db.WebhookFanOut(s.now, nil, store.ConsumerOptions{
		Batch: opts.DispatchBatch, PollInterval: opts.PollInterval, Log: s.log,
		Drained: func(int) {
			select {
			case w.dispatched <- struct{}{}:
			default:
			}
		},
	})
	return w
}

// Run delivers until ctx ends: the fan-out consumer turns new outbox events
// into deliveries (on notification and every PollInterval), and the loop starts
// the due attempts, at most MaxInFlight at once, after each fan-out and every
// PollInterval; when attempts finish it starts more at once. Results are
// recorded in batches by a second goroutine. At the end it lets the running
// attempts finish (at most the 4 s timeout) and records them.
func (w *Worker) Run(ctx context.Context) error {
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		w.record(context.WithoutCancel(ctx))
	}()
	fannedOut := make(chan struct{})
	go func() {
		defer close(fannedOut)
		_ = w.fanOut.Run(ctx) // logs its own errors and returns when ctx ends
	}()
	tick := time.NewTicker(w.opts.PollInterval)
	defer tick.Stop()
	// Attempts outlive ctx by at most their timeout: cutting them off would
	// count a failure against a receiver that did nothing wrong.
	attemptCtx := context.WithoutCancel(ctx)
	for {
		more := w.fill(ctx, attemptCtx)
	wait:
		for {
			select {
			case <-ctx.Done():
				<-fannedOut
				w.attempts.Wait()
				close(w.results)
				<-recorded
				return nil
			case <-tick.C:
				break wait
			case <-w.dispatched:
				break wait
			case <-w.freed:
				if more {
					time.Sleep(claimDelay)
					break wait
				}
			}
		}
	}
}

// fill claims due deliveries for the free slots and starts them. It reports
// whether more may be due than it could start (all slots taken, or a webhook at
// its share), so that finishing attempts should trigger the next claim.
func (w *Worker) fill(ctx, attemptCtx context.Context) bool {
	w.mu.Lock()
	free := w.opts.MaxInFlight - w.inFlight
	busy := make(map[int64]int, len(w.busy))
	for id, n := range w.busy {
		busy[id] = n
	}
	w.mu.Unlock()
	if free <= 0 {
		return true
	}
	jobs, err := w.s.db.ClaimDeliveries(ctx, store.ClaimOptions{
		Now: w.s.now(), Lease: lease, Limit: free, PerWebhook: w.opts.PerWebhook, Busy: busy,
	})
	if err != nil {
		if ctx.Err() == nil {
			w.s.log.Error("webhook claim", "err", err)
		}
		return false
	}
	// Judged on the snapshot the claim used: attempts finishing meanwhile must not
	// hide that a webhook was at its share (its finishing attempts are what
	// should trigger the next claim).
	saturated := false
	for _, j := range jobs {
		busy[j.WebhookID]++
	}
	for _, n := range busy {
		saturated = saturated || n >= w.opts.PerWebhook
	}
	w.mu.Lock()
	for _, j := range jobs {
		w.busy[j.WebhookID]++
		w.inFlight++
	}
	w.mu.Unlock()
	for _, j := range jobs {
		w.attempts.Go(func() {
			// The slot is free only once the recorder has the result: a
			// recorder that falls behind slows the claims down.
			w.results <- w.s.d.attempt(attemptCtx, j, false)
			w.mu.Lock()
			if w.busy[j.WebhookID]--; w.busy[j.WebhookID] <= 0 {
				delete(w.busy, j.WebhookID)
			}
			w.inFlight--
			w.mu.Unlock()
			select {
			case w.freed <- struct{}{}:
			default:
			}
		})
	}
	return len(jobs) == free || saturated
}

// record writes finished attempts in batches until results is closed and empty.
func (w *Worker) record(ctx context.Context) {
	batch := make([]store.AttemptResult, 0, maxRecordBatch)
	for r := range w.results {
		batch = append(batch[:0], r)
	drain:
		for len(batch) < maxRecordBatch {
			select {
			case r, ok := <-w.results:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		w.flush(ctx, batch)
	}
}

func (w *Worker) flush(ctx context.Context, batch []store.AttemptResult) {
	for try := 1; ; try++ {
		paused, err := w.s.db.RecordAttempts(ctx, batch)
		if err == nil {
			w.s.recorded(batch, paused)
			return
		}
		if try == recordTries {
			w.s.log.Error("webhook record: giving up; the attempts will be repeated when their lease ends",
				"err", err, "results", len(batch))
			return
		}
		w.s.log.Warn("webhook record", "err", err, "try", try)
		time.Sleep(time.Second)
	}
}

// Process runs one complete round synchronously and returns the number of
// attempts made: it fans out the events committed before the call, then claims and attempts due
// deliveries (MaxInFlight at a time) until none is due at the clock's now, and
// records every result. Tests with an injected clock use it instead of Run;
// don't call it while Run runs on the same Worker.
func (w *Worker) Process(ctx context.Context) (int, error) {
	if _, err := w.fanOut.CatchUp(ctx); err != nil {
		return 0, err
	}
	total := 0
	for {
		jobs, err := w.s.db.ClaimDeliveries(ctx, store.ClaimOptions{
			Now: w.s.now(), Lease: lease, Limit: w.opts.MaxInFlight, PerWebhook: w.opts.PerWebhook,
		})
		if err != nil || len(jobs) == 0 {
			return total, err
		}
		results := make([]store.AttemptResult, len(jobs))
		var wg sync.WaitGroup
		for i, j := range jobs {
			wg.Go(func() { results[i] = w.s.d.attempt(ctx, j, false) })
		}
		wg.Wait()
		paused, err := w.s.db.RecordAttempts(ctx, results)
		if err != nil {
			return total, err
		}
		w.s.recorded(results, paused)
		total += len(jobs)
	}
}
