package mailer

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// recorder writes a lane's outcomes in the background, so that the lane
// sends on while a handover is being stored. It holds at most recorderQueue
// handovers besides the one being written (the lane waits when it is full),
// which bounds both memory and what a crash can leave unrecorded.
type recorder struct {
	db     *store.DB
	counts OutcomeCounter // nil: not counted
	log    *slog.Logger
	held   *holdings // the lane's rows: a written outcome's row is no longer renewed
	jobs   chan recordJob
	free   chan []store.Outcome
	done   chan struct{}

	mu     sync.Mutex
	status map[int64]writtenStatus // per campaign: its status after the last write
	idle   *sync.Cond
	queued int
	seq    uint64 // batches handed over so far
}

// writtenStatus is a campaign's status as a write returned it, and which
// batch that write stored.
type writtenStatus struct {
	status string
	seq    uint64
}

type recordJob struct {
	accountID, campaignID int64
	seq                   uint64
	outs                  []store.Outcome
}

// recorderQueue is the number of batches a lane may hand over before it
// waits for the recorder.
const recorderQueue = 1

func newRecorder(db *store.DB, counts OutcomeCounter, log *slog.Logger, held *holdings) *recorder {
	r := &recorder{db: db, counts: counts, log: log, held: held, jobs: make(chan recordJob, recorderQueue), free: make(chan []store.Outcome, recorderQueue+2),
		done: make(chan struct{}), status: map[int64]writtenStatus{}}
	r.idle = sync.NewCond(&r.mu)
	go r.run()
	return r
}

// buffer returns an empty outcome slice to fill.
func (r *recorder) buffer() []store.Outcome {
	select {
	case b := <-r.free:
		return b[:0]
	default:
		return make([]store.Outcome, 0, 32)
	}
}

// submit hands the outcomes of a campaign over for writing and returns an
// empty buffer for the next ones.
func (r *recorder) submit(c *store.Campaign, outs []store.Outcome) []store.Outcome {
	if len(outs) == 0 {
		return outs
	}
	r.mu.Lock()
	r.queued++
	r.seq++
	seq := r.seq
	r.mu.Unlock()
	r.jobs <- recordJob{accountID: c.AccountID, campaignID: c.ID, seq: seq, outs: outs}
	return r.buffer()
}

// mark returns a mark for sending: writes of batches handed over after it.
func (r *recorder) mark() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq + 1
}

// sending reports whether the campaign still counted as sending at the last
// write of a batch handed over since mark. An older write's status does not
// count: the campaign may have been resumed since.
func (r *recorder) sending(campaignID int64, mark uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.status[campaignID]
	return !ok || s.seq < mark || s.status == store.CampaignSending
}

// wait blocks until everything handed over is written.
func (r *recorder) wait() {
	r.mu.Lock()
	for r.queued > 0 {
		r.idle.Wait()
	}
	r.mu.Unlock()
}

// close writes what is left and stops the recorder.
func (r *recorder) close() {
	close(r.jobs)
	<-r.done
}

func (r *recorder) run() {
	defer close(r.done)
	for job := range r.jobs {
		status, err := r.write(job)
		r.held.dropOutcomes(job.outs)
		r.mu.Lock()
		if err == nil {
			if len(r.status) >= maxCompiled {
				clear(r.status) // a lane serves few campaigns at a time
			}
			r.status[job.campaignID] = writtenStatus{status: status, seq: job.seq}
		}
		r.queued--
		r.idle.Broadcast()
		r.mu.Unlock()
		select {
		case r.free <- job.outs:
		default:
		}
	}
}

// write stores one batch, retrying a failed write a few times: an outcome
// that is lost leaves its row to be sent again after the lease. It runs to
// completion even while the worker shuts down.
func (r *recorder) write(job recordJob) (string, error) {
	var (
		status string
		err    error
	)
	for attempt, pause := 1, 100*time.Millisecond; ; attempt, pause = attempt+1, pause*4 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		status, err = r.db.RecordOutcomes(ctx, job.accountID, job.campaignID, job.outs)
		cancel()
		if err == nil || attempt == 4 {
			break
		}
		r.log.Warn("send worker: record outcomes", "campaign", job.campaignID, "attempt", attempt, "err", err)
		time.Sleep(pause)
	}
	if err != nil {
		r.log.Error("send worker: outcomes lost; their recipients will be sent again when their lease runs out",
			"campaign", job.campaignID, "count", len(job.outs), "err", err)
		return status, err
	}
	r.count(job.outs)
	return status, nil
}

// count hands the stored outcomes to the counter, one call per status.
func (r *recorder) count(outs []store.Outcome) {
	if r.counts == nil {
		return
	}
	for _, status := range []string{store.RecipientSent, store.RecipientFailed, store.RecipientSkipped, store.RecipientQueued} {
		n := 0
		for _, o := range outs {
			if o.Status == status {
				n++
			}
		}
		if n > 0 {
			r.counts.CountSendOutcomes(status, n)
		}
	}
}
