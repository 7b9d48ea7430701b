package webhook_test

import (
	"context"
	"maps"
	"net/http"
	"sync"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// outcomeCounts is a webhook.OutcomeCounter that remembers the counts.
type outcomeCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *outcomeCounts) CountWebhookOutcomes(outcome string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[outcome] += n
}

func (c *outcomeCounts) get() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// TestOutcomeCounterSeesRecordedAttempts: the worker's attempts and a manual
// resend reach the counter, each with its outcome.
func TestOutcomeCounterSeesRecordedAttempts(t *testing.T) {
	counts := &outcomeCounts{n: map[string]int{}}
	e := newEnv(t, webhook.Config{AllowPrivate: true, Outcomes: counts})
	ok := newReceiver(t, func(int, *http.Request) (int, string) { return http.StatusOK, "" })
	busy := newReceiver(t, func(int, *http.Request) (int, string) { return http.StatusServiceUnavailable, "" })
	gone := newReceiver(t, func(int, *http.Request) (int, string) { return http.StatusGone, "" })
	okHook, _ := e.hook(t, ok.URL, "*")
	e.hook(t, busy.URL, "*")
	e.hook(t, gone.URL, "*")
	e.emit(t, store.Event{Name: store.EventContactDeleted, Data: map[string]any{}})
	if n := e.process(t, e.svc.Worker(webhook.WorkerOptions{})); n != 3 {
		t.Fatalf("%d attempts", n)
	}
	want := map[string]int{store.DeliverySucceeded: 1, store.DeliveryRetrying: 1, store.DeliveryFailed: 1}
	if got := counts.get(); !maps.Equal(got, want) {
		t.Fatalf("after the worker: %v, want %v", got, want)
	}
	if _, _, err := e.svc.Resend(context.Background(), e.acct, e.deliveries(t, okHook.ID)[0].ID); err != nil {
		t.Fatal(err)
	}
	want[store.DeliverySucceeded] = 2
	if got := counts.get(); !maps.Equal(got, want) {
		t.Fatalf("after a resend: %v, want %v", got, want)
	}
}
