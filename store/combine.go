package store

import (
	"context"
	"slices"
	"sync"
)

// Combining concurrent calls into shared statements.
//
// Much of what a single write or look-up costs PostgreSQL is paid per
// statement and per transaction, not per row: the backend's wake-up, the
// round trip, the executor's start-up, the commit. So calls of one kind that
// arrive together share their statements. Calls are grouped by a key (an
// account, a campaign); a call that finds fewer than the group's slots of
// batches running runs at once, as its batch's leader, and calls arriving
// while all slots are busy wait. A finishing leader hands every waiting call
// that fits (combinable.joins) to the next leader as one batch. Nothing waits
// on a timer: a call without company runs alone, exactly as it would without
// the combiner, and the busier the group, the larger its batches.
//
// The groups live in one process, which is enough: they decide nothing but
// which statement carries a call, and every rule that holds across processes
// is PostgreSQL's.

// combiner holds the groups of one kind of call; the zero value is ready.
type combiner[K comparable, C combinable[C]] struct {
	mu     sync.Mutex
	groups map[K]*combineGroup[C]
}

// combinable is a call that can run in a batch of its kind. It carries its
// own outcome, which the batch's run sets.
type combinable[C any] interface {
	// joins reports whether the call may join batch (its leader first, then
	// the calls taken so far, in arrival order).
	joins(batch []C) bool
	// abandon gives the call an error: its batch ended without a result (the
	// leader's run panicked, which the leader's own caller sees).
	abandon()
}

// combineGroup exists while a batch of its key runs.
type combineGroup[C any] struct {
	running int // batches running
	waiting []*waitingCall[C]
}

// waitingCall is a call in a group.
type waitingCall[C any] struct {
	call C
	// wake receives exactly one value per turn of the call: true when the
	// call is to lead the next batch, false when its batch is done.
	wake chan bool
}

// do runs call, alone or in a batch with concurrent calls of its key: run
// gets the key and a batch (the leader first) and sets each call's outcome.
// At most slots batches of one key run at once. do returns ctx's error when
// the call left before it was taken into a batch, and nil when a batch ran it.
func (cb *combiner[K, C]) do(ctx context.Context, key K, call C, slots int, run func(key K, batch []C)) error {
	w := &waitingCall[C]{call: call, wake: make(chan bool, 1)}
	cb.mu.Lock()
	if cb.groups == nil {
		cb.groups = map[K]*combineGroup[C]{}
	}
	g := cb.groups[key]
	if g == nil {
		g = &combineGroup[C]{}
		cb.groups[key] = g
	}
	lead := g.running < slots
	if lead {
		g.running++
	} else {
		g.waiting = append(g.waiting, w)
	}
	cb.mu.Unlock()

	if !lead {
		select {
		case lead = <-w.wake:
		case <-ctx.Done():
			if cb.withdraw(g, w) {
				return ctx.Err()
			}
			// Already taken into a batch or made its leader: see it through.
			lead = <-w.wake
		}
	}
	if lead {
		cb.lead(key, g, w, run)
	}
	return nil
}

// withdraw takes a call that has not been taken into a batch out of its
// group; false means it was taken and will be woken.
func (cb *combiner[K, C]) withdraw(g *combineGroup[C], w *waitingCall[C]) bool {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if i := slices.Index(g.waiting, w); i >= 0 {
		g.waiting = slices.Delete(g.waiting, i, i+1)
		return true
	}
	return false
}

// lead runs one batch: the leader's call and the waiting calls that join it,
// wakes them, and hands the lead to the group's next waiting call, or gives
// back its slot.
func (cb *combiner[K, C]) lead(key K, g *combineGroup[C], leader *waitingCall[C], run func(key K, batch []C)) {
	taken := []*waitingCall[C]{leader}
	batch := []C{leader.call}
	cb.mu.Lock()
	rest := g.waiting[:0]
	for _, w := range g.waiting {
		if w.call.joins(batch) {
			taken = append(taken, w)
			batch = append(batch, w.call)
		} else {
			rest = append(rest, w)
		}
	}
	clear(g.waiting[len(rest):])
	g.waiting = rest
	cb.mu.Unlock()

	finished := false
	defer func() {
		if !finished {
			// A panic in the batch: the others must not wait forever, nor the
			// group stay busy; the leader's caller sees the panic.
			for _, c := range batch[1:] {
				c.abandon()
			}
		}
		for _, w := range taken[1:] {
			w.wake <- false
		}
		cb.mu.Lock()
		var next *waitingCall[C]
		if len(g.waiting) > 0 {
			next = g.waiting[0]
			g.waiting = g.waiting[1:]
		} else if g.running--; g.running == 0 {
			delete(cb.groups, key)
		}
		cb.mu.Unlock()
		if next != nil {
			next.wake <- true
		}
	}()
	run(key, batch)
	finished = true
}
