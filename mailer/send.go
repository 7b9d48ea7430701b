package mailer

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// This file is the send pipeline's worker. Every `rundbrief serve` process
// runs one Worker with a few lanes (goroutines); all lanes of all processes
// share the queue in campaign_recipients.
//
// A lane claims a batch of due recipients of a running campaign (FOR UPDATE
// SKIP LOCKED, leased for a few seconds and renewed by the worker's heartbeat
// while the process lives: lease.go; the claim also looks them up in the
// blocked list, which counts except for transactional mail), renders and
// sends them one by one over one pooled SMTP connection that it keeps across
// batches, and hands the outcomes over every FlushEvery messages or
// FlushInterval, whichever comes first, to its recorder (record.go), which
// stores each handover in one statement (shared with the handovers of other
// lanes that wait meanwhile: store.RecordOutcomes): the rows, the
// email.sent / email.bounced events, the contacts' activities and the
// campaign's counters. Memory is bounded by Concurrency × (BatchSize rows + a few
// handovers), whatever the size of the list.
//
// What can be sent twice, exactly. A message is recorded as sent after the
// SMTP server accepted it, so:
//
//   - A worker that is stopped (context cancelled: shutdown) writes every
//     outcome it has and puts its unsent rows back. Only the message in flight
//     at that moment can be duplicated, at most one per lane: its row stays
//     'sending' because nobody knows whether the server took it, and it is
//     sent again when its lease runs out. (TestCrashLosesAndDuplicatesNothing
//     asserts exactly this.)
//   - A process that dies without stopping (kill -9, power loss) loses the
//     outcomes not yet written: per lane at most the current handover (fewer
//     than FlushEvery messages), one queued handover and the one being
//     written, so at most 3 × FlushEvery (75 with the defaults) plus the one in
//     flight; in practice one handover, since a write takes milliseconds.
//     Their rows are sent again once their lease runs out, within Lease of the
//     death (the heartbeat stopped renewing it), and every lane of every live
//     process sweeps its campaigns for such rows every Lease/4.
//     (TestKilledProcessLosesNothingAndRepeatsWithTheSameMessageID measures
//     this with a real process and SIGKILL.)
//   - A transient error after the content was transmitted (the connection
//     dropped before the final reply) is retried and may duplicate, as with
//     any SMTP client.
//
// Every attempt at one recipient carries the same Message-ID, derived from
// the campaign and the recipient (campaignMessageID), so a receiver that
// drops a repeated Message-ID drops these duplicates, and one that does not
// can at least tell them apart from two mails.
//
// Nothing is lost: a row leaves 'sending' only with a recorded outcome or
// when its lease runs out. Two live workers never send one row: a lane stops
// sending from a batch before its lease could end (it puts the rest back).

// Opener opens the Sender for an account's mail; *Transports implements it.
type Opener interface {
	Open(ctx context.Context, accountID, serverID int64) (Sender, Route, error)
}

// WorkerOptions tune a Worker; zero values take the defaults.
type WorkerOptions struct {
	// Links builds the unsubscribe, open and click URLs (RUNDBRIEF_BASE_URL
	// and the token key).
	Links LinkBuilder
	// Concurrency is the number of lanes, each with its own SMTP connection;
	// default DefaultLanes.
	Concurrency int
	// BatchSize is the number of recipients a lane claims at once; default
	// DefaultBatchSize.
	BatchSize int
	// FlushEvery and FlushInterval bound how many outcomes a lane holds
	// before handing them to its recorder; defaults 25 and 250 ms. Together
	// with the recorder's queue they bound what a killed process can leave
	// unrecorded (see above).
	FlushEvery    int
	FlushInterval time.Duration
	// Lease is how long a claim is exclusive without a renewal; default 8 s.
	// The worker renews the leases it holds every Lease/4 while it runs, so
	// Lease bounds how long the rows of a process that died wait (lease.go).
	Lease time.Duration
	// PollInterval is how often an idle lane looks for work; default 1 s.
	PollInterval time.Duration
	// MaxAttempts is how often a recipient is tried after transient errors
	// before it fails; default 5.
	MaxAttempts int
	// Backoff is the pause before attempt n+1 after a transient error; default
	// 1, 5, 15, 60 minutes.
	Backoff func(attempt int) time.Duration
	// Outcomes counts the outcomes the worker has recorded (metrics); nil:
	// not counted.
	Outcomes OutcomeCounter
	Log      *slog.Logger
}

// The defaults and bounds of a Worker's lanes and claims
// (RUNDBRIEF_SEND_LANES, RUNDBRIEF_SEND_BATCH_SIZE). Each lane holds up to a
// batch of rows and one SMTP connection, and claims its rows and writes their
// outcomes on the send queue's connections (store.DB), which bound the lanes'
// database work.
const (
	DefaultLanes     = 4
	MaxLanes         = 16
	DefaultBatchSize = 100
	MaxBatchSize     = 1000
)

// OutcomeCounter counts recorded send outcomes: n recipients ended with
// status (store.RecipientSent, RecipientFailed, RecipientSkipped, or
// RecipientQueued for a transient failure that will be retried). It is called
// after the outcomes are stored, so a count never runs ahead of the database.
type OutcomeCounter interface {
	CountSendOutcomes(status string, n int)
}

// DefaultBackoff is the pause after a transient failure of attempt n (1-based).
func DefaultBackoff(attempt int) time.Duration {
	steps := []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}
	if attempt < 1 {
		attempt = 1
	}
	if attempt > len(steps) {
		return steps[len(steps)-1]
	}
	return steps[attempt-1]
}

// DefaultLease is the lease of a claim without renewal: with the sweep every
// DefaultLease/4, the rows of a process that died are sent again within
// about 10 seconds.
const DefaultLease = 8 * time.Second

// idleCampaignPause is how long a lane leaves a campaign alone after finding
// nothing due in it (rows leased by others or waiting for a retry); at most
// an eighth of the lease, so that rows whose lease ran out are found soon.
const idleCampaignPause = 5 * time.Second

// rateBatchTime bounds the claim of a campaign whose route is rate-limited to
// what the route sends in this time, so that other lanes and processes share
// the rest.
const rateBatchTime = 30 * time.Second

// routePause is how long a lane leaves a campaign alone after its SMTP route
// failed (connect, TLS, AUTH).
const routePause = 30 * time.Second

// maxCompiled bounds the compiled campaigns a Worker keeps.
const maxCompiled = 64

// Worker sends the queued recipients of running campaigns.
type Worker struct {
	db     *store.DB
	opener Opener
	opts   WorkerOptions
	wake   chan struct{}

	mu       sync.Mutex
	compiled map[int64]*compiledCampaign
	cursors  map[int64]int64     // per campaign: the highest id a lane claimed
	sweeps   map[int64]time.Time // per campaign: the last claim from the start
	active   []store.ActiveCampaign
	activeAt time.Time

	leaseMu sync.Mutex
	held    map[*holdings]struct{} // the lanes' rows, renewed by the heartbeat
}

// NewWorker returns a send worker; run it with Run.
func NewWorker(db *store.DB, opener Opener, opts WorkerOptions) *Worker {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultLanes
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = 25
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 250 * time.Millisecond
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 5
	}
	if opts.Backoff == nil {
		opts.Backoff = DefaultBackoff
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Worker{db: db, opener: opener, opts: opts, wake: make(chan struct{}, opts.Concurrency),
		compiled: map[int64]*compiledCampaign{}, cursors: map[int64]int64{}, sweeps: map[int64]time.Time{},
		held: map[*holdings]struct{}{}}
}

// Run sends until ctx ends, with Concurrency lanes and the heartbeat that
// renews their leases, and returns when all of them have stopped (each lane
// flushes its outcomes and puts unsent rows back).
func (w *Worker) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { w.heartbeat(ctx) })
	for range w.opts.Concurrency {
		wg.Go(func() { w.newLane().run(ctx) })
	}
	wg.Wait()
	return nil
}

// Wake makes idle lanes look for work now (a send just started).
func (w *Worker) Wake() {
	w.mu.Lock()
	w.activeAt = time.Time{}
	w.mu.Unlock()
	for range w.opts.Concurrency {
		select {
		case w.wake <- struct{}{}:
		default:
			return
		}
	}
}

// SendBatch sends up to limit recipients of a campaign now, stopping before
// budget is used up, and finishes the campaign when that was all: the first
// batch of a send, in the request that started it. The rest is left to the
// lanes, which it wakes. It returns the number of recipients it handled.
func (w *Worker) SendBatch(ctx context.Context, accountID, campaignID int64, limit int, budget time.Duration) (int, error) {
	defer w.Wake()
	l := w.newLane()
	n, err := l.batch(ctx, store.ActiveCampaign{ID: campaignID, AccountID: accountID}, limit, time.Now().Add(budget))
	l.stop()
	if err != nil || n >= limit {
		return n, err
	}
	if _, err := w.db.FinishCampaign(ctx, campaignID); err != nil {
		return n, err
	}
	return n, nil
}

// activeCampaigns returns the running campaigns, read at most twice per poll
// interval for all lanes together.
func (w *Worker) activeCampaigns(ctx context.Context) ([]store.ActiveCampaign, error) {
	w.mu.Lock()
	if time.Since(w.activeAt) < w.opts.PollInterval/2 {
		list := w.active
		w.mu.Unlock()
		return list, nil
	}
	w.mu.Unlock()
	list, err := w.db.ActiveCampaigns(ctx, 100)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.active, w.activeAt = list, time.Now()
	w.mu.Unlock()
	return list, nil
}

// compile returns the compiled campaign, compiling it on first use. Content
// and links never change once a campaign started, so it is kept.
func (w *Worker) compile(ctx context.Context, id int64) (*compiledCampaign, error) {
	w.mu.Lock()
	cc := w.compiled[id]
	w.mu.Unlock()
	if cc != nil {
		return cc, nil
	}
	c, err := w.db.CampaignByID(ctx, id)
	if err != nil {
		return nil, err
	}
	links, err := w.db.CampaignLinks(ctx, id)
	if err != nil {
		return nil, err
	}
	assets, err := LoadAssets(ctx, w.db, c.AccountID, c.Content())
	if err != nil {
		return nil, err
	}
	if cc, err = compileCampaign(c, composeOptions{Tracking: true, Links: links, Assets: assets}); err != nil {
		return nil, err
	}
	if err := w.compileVariants(ctx, cc, links); err != nil {
		return nil, err
	}
	w.mu.Lock()
	if len(w.compiled) >= maxCompiled {
		for k := range w.compiled {
			delete(w.compiled, k)
			break
		}
	}
	w.compiled[id] = cc
	w.mu.Unlock()
	return cc, nil
}

func (w *Worker) forget(id int64) {
	w.mu.Lock()
	delete(w.compiled, id)
	delete(w.cursors, id)
	delete(w.sweeps, id)
	w.mu.Unlock()
}

// sweepDue reports whether a claim of the campaign should start from the
// start instead of the cursor, and notes it: every Lease/4 one lane of the
// worker looks behind the cursor for rows whose lease ran out (a process died)
// and rows put back, while the forward scan still finds work.
func (w *Worker) sweepDue(id int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if time.Since(w.sweeps[id]) < w.opts.Lease/4 {
		return false
	}
	if _, ok := w.sweeps[id]; !ok && len(w.sweeps) >= maxCompiled {
		clear(w.sweeps) // a forgotten sweep time only makes a sweep come early
	}
	w.sweeps[id] = time.Now()
	return true
}

// cursor is where the next forward claim of a campaign starts: after the
// highest id any lane of this worker claimed. Sharing it keeps each lane's
// claim from walking over the rows the other lanes hold (their index entries
// and leased rows), which cost the database more than the claim itself.
func (w *Worker) cursor(id int64) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cursors[id]
}

// advance moves a campaign's cursor forward to last.
func (w *Worker) advance(id, last int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.cursors[id]; !ok && len(w.cursors) >= maxCompiled {
		clear(w.cursors) // a forgotten cursor only makes a claim start from 0
	}
	if last > w.cursors[id] {
		w.cursors[id] = last
	}
}

// senderMaxAge is how long a lane keeps one Sender before opening the route
// again, so that a changed SMTP server setting takes effect.
const senderMaxAge = time.Minute

// laneSender is the Sender a lane holds between batches: one connection,
// reused for message after message.
type laneSender struct {
	accountID, serverID int64
	sender              Sender
	route               Route
	opened              time.Time
}

// lane is one sending goroutine with its connection and reusable buffers.
type lane struct {
	w      *Worker
	held   *holdings
	conn   *laneSender
	pauses map[int64]time.Time // per campaign: leave alone until
	rates  map[int64]int       // per campaign: the route's messages per second
	rows   []store.QueuedRecipient
	outs   []store.Outcome // outcomes not yet handed to the recorder
	rec    *recorder
	st     renderState
}

// newLane starts a lane's recorder and registers its rows with the
// heartbeat; close the lane with stop.
func (w *Worker) newLane() *lane {
	held := &holdings{ids: map[int64]struct{}{}}
	w.hold(held)
	return &lane{w: w, held: held, pauses: map[int64]time.Time{}, rates: map[int64]int{},
		rec: newRecorder(w.db, w.opts.Outcomes, w.opts.Log, held)}
}

// stop gives the connection back and waits until every outcome is written.
func (l *lane) stop() {
	l.closeSender()
	l.rec.close()
	l.w.release(l.held)
}

// release puts claimed rows back into the queue (see
// store.ReleaseRecipients), no longer renewing their leases.
func (l *lane) release(ctx context.Context, campaignID int64, rows []store.QueuedRecipient, delay time.Duration, untried bool) error {
	l.held.dropRows(rows)
	return l.w.db.ReleaseRecipients(ctx, campaignID, ids(rows), delay, untried)
}

// sender returns the lane's Sender for a campaign's route, opening it when
// the lane holds none, one of another route, or an old one.
func (l *lane) sender(ctx context.Context, c *store.Campaign) (Sender, Route, error) {
	if s := l.conn; s != nil && (s.accountID != c.AccountID || s.serverID != c.ServerID() || time.Since(s.opened) > senderMaxAge) {
		l.closeSender()
	}
	if l.conn == nil {
		sender, route, err := l.w.opener.Open(ctx, c.AccountID, c.ServerID())
		if err != nil {
			return nil, Route{}, err
		}
		l.conn = &laneSender{accountID: c.AccountID, serverID: c.ServerID(), sender: sender, route: route, opened: time.Now()}
	}
	return l.conn.sender, l.conn.route, nil
}

// closeSender gives the lane's connection back to the pool.
func (l *lane) closeSender() {
	if l.conn != nil {
		_ = l.conn.sender.Close()
		l.conn = nil
	}
}

func (l *lane) run(ctx context.Context) {
	defer l.stop()
	tick := time.NewTicker(l.w.opts.PollInterval)
	defer tick.Stop()
	for ctx.Err() == nil {
		worked := false
		active, err := l.w.activeCampaigns(ctx)
		if err != nil && ctx.Err() == nil {
			l.w.opts.Log.Error("send worker: active campaigns", "err", err)
		}
		l.prune(active)
		for _, a := range active {
			if ctx.Err() != nil {
				return
			}
			n, err := l.batch(ctx, a, l.batchSize(a.ID), time.Time{})
			if err != nil && ctx.Err() == nil {
				l.w.opts.Log.Error("send worker", "campaign", a.ID, "err", err)
			}
			if n > 0 {
				worked = true
			}
		}
		if worked {
			continue
		}
		l.closeSender()
		select {
		case <-ctx.Done():
			return
		case <-l.w.wake:
			// Something started or resumed: look at every campaign again.
			clear(l.pauses)
		case <-tick.C:
		}
	}
}

// prune forgets the per-campaign state of campaigns that are no longer
// running, so that a long-lived lane's maps stay small.
func (l *lane) prune(active []store.ActiveCampaign) {
	if len(l.pauses)+len(l.rates) <= 2*len(active) {
		return
	}
	running := make(map[int64]bool, len(active))
	for _, a := range active {
		running[a.ID] = true
	}
	for id := range l.pauses {
		if !running[id] {
			delete(l.pauses, id)
		}
	}
	for id := range l.rates {
		if !running[id] {
			delete(l.rates, id)
		}
	}
}

// batchSize keeps a rate-limited campaign's claim to what the route can send
// in rateBatchTime.
func (l *lane) batchSize(campaignID int64) int {
	n := l.w.opts.BatchSize
	if rate := l.rates[campaignID]; rate > 0 {
		n = min(n, max(1, rate*int(rateBatchTime/time.Second)))
	}
	return n
}

// batch claims and sends one batch of a campaign and returns how many
// recipients it claimed (0: nothing due; then it tries to finish the
// campaign). softDeadline (zero: none) stops it early.
func (l *lane) batch(ctx context.Context, a store.ActiveCampaign, limit int, softDeadline time.Time) (int, error) {
	if until, ok := l.pauses[a.ID]; ok {
		if time.Now().Before(until) {
			return 0, nil
		}
		delete(l.pauses, a.ID)
	}
	cc, err := l.w.compile(ctx, a.ID)
	if err != nil {
		if errors.Is(err, ErrNoContent) {
			return 0, l.w.db.FailCampaign(ctx, a.ID, "Der Newsletter hat keinen Inhalt.")
		}
		return 0, err
	}
	if ctx.Err() != nil {
		return 0, nil
	}
	// A claim cut short by a cancellation could lease rows without this lane
	// knowing them; it runs to its end instead, and send puts the rows back.
	claimCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	claimedAt := time.Now()
	cursor := l.w.cursor(a.ID)
	if cursor > 0 && l.w.sweepDue(a.ID) {
		cursor = 0
	}
	rows, err := l.w.db.ClaimRecipients(claimCtx, a.AccountID, a.ID, cursor, limit, l.w.opts.Lease, l.rows)
	l.rows = rows
	if err == nil && len(rows) == 0 && cursor > 0 {
		// The forward scan ran dry: sweep from the start for expired leases
		// and due retries.
		rows, err = l.w.db.ClaimRecipients(claimCtx, a.AccountID, a.ID, 0, limit, l.w.opts.Lease, l.rows)
		l.rows = rows
	}
	if err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		// This lane's last outcomes must be stored before the campaign can
		// count as done; the lane whose write comes last finishes it.
		l.rec.wait()
		done, err := l.w.db.FinishCampaign(ctx, a.ID)
		if done {
			l.w.forget(a.ID)
			delete(l.rates, a.ID)
		} else {
			l.pauses[a.ID] = time.Now().Add(min(idleCampaignPause, l.w.opts.Lease/8))
		}
		return 0, err
	}
	l.held.claimed(rows, claimedAt)
	l.w.advance(a.ID, rows[len(rows)-1].ID)
	return len(rows), l.send(ctx, cc, rows, softDeadline)
}

// send delivers claimed rows in order and records their outcomes.
func (l *lane) send(ctx context.Context, cc *compiledCampaign, rows []store.QueuedRecipient, softDeadline time.Time) error {
	opts := &l.w.opts
	db := l.w.db
	c := &cc.c
	// Bookkeeping writes must happen even when ctx was just cancelled.
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()

	sender, route, err := l.sender(ctx, c)
	if err != nil {
		switch {
		case errors.Is(err, store.ErrNotFound):
			// Failing the campaign fails its claimed rows too.
			l.held.dropRows(rows)
			return db.FailCampaign(bg, c.ID, "Den SMTP-Server dieses Versands gibt es nicht mehr.")
		case ctx.Err() != nil:
			return l.release(bg, c.ID, rows, 0, true)
		}
		l.pauses[c.ID] = time.Now().Add(routePause)
		return errors.Join(err, l.release(bg, c.ID, rows, routePause, true))
	}
	l.rates[c.ID] = route.RatePerSecond

	// Blocked addresses get nothing but transactional mail; the claim looked
	// them up (QueuedRecipient.Blocked).
	checkBlocked := !c.Transactional()
	l.outs = l.rec.buffer()
	mark := l.rec.mark()
	lastFlush := time.Now()
	var stopErr error
	for i := range rows {
		r := &rows[i]
		if checkBlocked && r.Blocked {
			l.outs = append(l.outs, store.Outcome{RecipientID: r.ID, ContactID: r.ContactID, Email: r.Email,
				Status: store.RecipientSkipped, Error: store.SkipBlocked, At: time.Now()})
			continue
		}
		now := time.Now()
		if ctx.Err() != nil || now.After(l.held.sendableUntil(opts.Lease)) || !softDeadline.IsZero() && now.After(softDeadline) ||
			!l.rec.sending(c.ID, mark) {
			// Stopped, lease not certain, out of time, or paused meanwhile:
			// put the rest back.
			stopErr = l.release(bg, c.ID, rows[i:], 0, true)
			break
		}
		out, stop := l.sendOne(ctx, cc, sender, route, r)
		switch stop {
		case stopInFlight:
			// Unknown whether the server took it: the row keeps its lease,
			// no longer renewed, and is sent again when it runs out.
			l.held.dropRows(rows[i : i+1])
			stopErr = l.release(bg, c.ID, rows[i+1:], 0, true)
		case stopRoute:
			l.closeSender()
			l.pauses[c.ID] = time.Now().Add(routePause)
			stopErr = errors.Join(out.err,
				l.release(bg, c.ID, rows[i:i+1], routePause, false),
				l.release(bg, c.ID, rows[i+1:], routePause, true))
		}
		if stop != stopNone {
			break
		}
		l.outs = append(l.outs, out.Outcome)
		if len(l.outs) >= opts.FlushEvery || time.Since(lastFlush) >= opts.FlushInterval {
			l.outs = l.rec.submit(c, l.outs)
			lastFlush = time.Now()
		}
	}
	l.outs = l.rec.submit(c, l.outs)
	return stopErr
}

// stopReason says why a lane stops a batch after one send.
type stopReason int

const (
	stopNone     stopReason = iota
	stopInFlight            // ctx ended during the send: outcome unknown
	stopRoute               // the connection could not be set up: try later
)

type sendOutcome struct {
	store.Outcome
	err error
}

// sendOne renders and sends one recipient's message and classifies the result.
func (l *lane) sendOne(ctx context.Context, cc *compiledCampaign, sender Sender, route Route, r *store.QueuedRecipient) (sendOutcome, stopReason) {
	out := sendOutcome{Outcome: store.Outcome{RecipientID: r.ID, ContactID: r.ContactID, Email: r.Email}}
	fail := func(msg string) (sendOutcome, stopReason) {
		out.Status, out.Error, out.At = store.RecipientFailed, msg, time.Now()
		return out, stopNone
	}
	data, err := queuedRecipientData(r)
	if err != nil {
		return fail(err.Error())
	}
	msg, err := cc.variant(r.Variant).message(&l.st, l.w.opts.Links, data, route)
	if err != nil {
		return fail(err.Error())
	}
	msg.MessageID = campaignMessageID(l.w.opts.Links.Tokens, cc.c.ID, r.ID, msg.From.Email)
	err = sender.Send(ctx, msg)
	out.At = time.Now()
	var se *SendError
	switch {
	case err == nil:
		out.Status, out.MessageID = store.RecipientSent, msg.MessageID
	case errors.Is(err, ErrInvalidMessage):
		return fail(err.Error())
	case ctx.Err() != nil:
		return out, stopInFlight
	case errors.As(err, &se) && se.Permanent:
		out.Status, out.Error = store.RecipientFailed, se.Reason
		out.Bounce, out.Code, out.Block = se.Bounce(), se.Code, HardBounce(se)
	case errors.As(err, &se) && (se.Stage == StageMail || se.Stage == StageRcpt || se.Stage == StageData):
		out.Error = se.Reason
		if r.Attempts >= l.w.opts.MaxAttempts {
			out.Status = store.RecipientFailed
		} else {
			out.Status, out.RetryIn = store.RecipientQueued, l.w.opts.Backoff(r.Attempts)
		}
	default:
		out.err = err
		return out, stopRoute
	}
	return out, stopNone
}

func ids(rows []store.QueuedRecipient) []int64 {
	out := make([]int64, len(rows))
	for i := range rows {
		out[i] = rows[i].ID
	}
	return out
}
