package mailer_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
)

// outcomeCounts is a mailer.OutcomeCounter that remembers the counts.
type outcomeCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *outcomeCounts) CountSendOutcomes(status string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[status] += n
}

// TestOutcomeCounterSeesRecordedOutcomes: the counter hears of every outcome
// the worker recorded, retries of a transient failure included.
func TestOutcomeCounterSeesRecordedOutcomes(t *testing.T) {
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{Reject: map[string]int{userEmail("count", 2): 451, userEmail("count", 3): 554}})
	nl := e.newsletter(e.seedList("count", 5))
	counts := &outcomeCounts{n: map[string]int{}}
	w := e.worker(e.db, e.transports, mailer.WorkerOptions{MaxAttempts: 2, Backoff: func(int) time.Duration { return 10 * time.Millisecond },
		Outcomes: counts})
	if _, err := e.campaigns(w).SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}
	stop := running(w.Run)
	c := e.waitStatus(nl.ID, store.CampaignSent)
	stop()
	if c.SentCount != 3 || c.FailedCount != 2 {
		t.Fatalf("sent %d failed %d", c.SentCount, c.FailedCount)
	}
	counts.mu.Lock()
	defer counts.mu.Unlock()
	want := map[string]int{store.RecipientSent: 3, store.RecipientFailed: 2, store.RecipientQueued: 1}
	if !maps.Equal(counts.n, want) {
		t.Errorf("counted %v, want %v", counts.n, want)
	}
}
