package mailer

import (
	"context"
	"sync"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// This file keeps a worker's claims alive. A claim (store.ClaimRecipients)
// leases its rows for WorkerOptions.Lease, a few seconds. While the process
// lives, its heartbeat renews the leases of every row a lane holds (claimed,
// and neither recorded nor put back) every Lease/4, so that a live worker
// keeps its rows however long a batch takes (a slow SMTP server, a rate
// limit), while the rows of a process that died are free again within Lease
// of its death instead of after a long fixed lease. The claims of all
// processes live in the database alone, on the one clock they share.
//
// A lane sends a row only while its lease is certain: up to three quarters of
// Lease after the later of its claim and the last renewal that covered it.
// When renewals fail (the database is out of reach), the lane puts the rest
// of its batch back before the lease could run out, so two live workers never
// send one row; the last quarter is the time one send may take.

// holdings are the rows one lane holds, shared with the worker's heartbeat.
type holdings struct {
	mu  sync.Mutex
	ids map[int64]struct{}
	// gen counts the lane's claims; leaseFrom is when the lease of the rows
	// of the latest claim last started (the claim or a renewal that covered
	// it): they are leased until leaseFrom + Lease.
	gen       uint64
	leaseFrom time.Time
}

// claimed adds a new claim's rows, leased from at (taken before the claim
// ran, so no later than the database's now()).
func (h *holdings) claimed(rows []store.QueuedRecipient, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range rows {
		h.ids[rows[i].ID] = struct{}{}
	}
	h.gen++
	h.leaseFrom = at
}

// dropRows stops renewing rows the lane puts back or abandons.
func (h *holdings) dropRows(rows []store.QueuedRecipient) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range rows {
		delete(h.ids, rows[i].ID)
	}
}

// dropOutcomes stops renewing rows whose outcomes were written (or lost: then
// the lease runs out and the rows are sent again).
func (h *holdings) dropOutcomes(outs []store.Outcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range outs {
		delete(h.ids, outs[i].RecipientID)
	}
}

// sendableUntil is when the lane must stop sending from its latest claim.
func (h *holdings) sendableUntil(lease time.Duration) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.leaseFrom.Add(lease - lease/4)
}

// hold registers a lane's holdings with the heartbeat; release ends that.
func (w *Worker) hold(h *holdings) {
	w.leaseMu.Lock()
	defer w.leaseMu.Unlock()
	w.held[h] = struct{}{}
}

func (w *Worker) release(h *holdings) {
	w.leaseMu.Lock()
	defer w.leaseMu.Unlock()
	delete(w.held, h)
}

// heartbeat renews the leases of every lane's rows every Lease/4 until ctx
// ends.
func (w *Worker) heartbeat(ctx context.Context) {
	tick := time.NewTicker(max(w.opts.Lease/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := w.renew(ctx); err != nil && ctx.Err() == nil {
				w.opts.Log.Warn("send worker: renew leases", "err", err)
			}
		}
	}
}

// renew extends the leases of all rows the lanes hold, in one statement.
func (w *Worker) renew(ctx context.Context) error {
	type covered struct {
		h   *holdings
		gen uint64
	}
	w.leaseMu.Lock()
	lanes := make([]covered, 0, len(w.held))
	for h := range w.held {
		lanes = append(lanes, covered{h: h})
	}
	w.leaseMu.Unlock()

	start := time.Now() // no later than the database's now() of the renewal
	var ids []int64
	for i := range lanes {
		h := lanes[i].h
		h.mu.Lock()
		for id := range h.ids {
			ids = append(ids, id)
		}
		lanes[i].gen = h.gen
		h.mu.Unlock()
	}
	if len(ids) == 0 {
		return nil
	}
	renewCtx, cancel := context.WithTimeout(ctx, w.opts.Lease/2)
	defer cancel()
	if err := w.db.RenewRecipients(renewCtx, ids, w.opts.Lease); err != nil {
		return err
	}
	for _, c := range lanes {
		c.h.mu.Lock()
		// The renewal covered the latest claim if it was made before the
		// snapshot, and it counts only if that claim's lease had not run out
		// when the renewal started (an expired row is not renewed).
		if c.h.gen == c.gen && start.After(c.h.leaseFrom) && start.Before(c.h.leaseFrom.Add(w.opts.Lease)) {
			c.h.leaseFrom = start
		}
		c.h.mu.Unlock()
	}
	return nil
}
