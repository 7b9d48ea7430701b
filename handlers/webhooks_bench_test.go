package handlers_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// BenchmarkWebhookFanOut sends 10,000 outbox events to 3 webhooks on a local
// receiver (30,000 deliveries) through the webhook worker as serve runs it
// (default options), and reports deliveries per second and the event-to-delivery
// latency (from just before the emitting transaction to the receiver's arrival).
//
//   - burst: all events are emitted as fast as possible (200 transactions of 50):
//     the worker's throughput; latency here is mostly queueing.
//   - paced: 500 events/s (1,500 deliveries/s offered) for 20 s: the latency under
//     a sustained load above the 1,000 deliveries/s target.
func BenchmarkWebhookFanOut(b *testing.B) {
	for _, c := range []struct {
		name string
		rate int // events per second; 0: as fast as possible
	}{{"burst", 0}, {"paced_500_events_per_s", 500}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				benchFanOut(b, c.rate)
			}
		})
	}
}

func benchFanOut(b *testing.B, rate int) {
	const events, hooks, perTx = 10_000, 3, 50
	b.StopTimer()
	ctx := context.Background()
	s := startServer(b, 1_000_000)
	acct, err := s.db.CreateAccount(ctx, store.NewAccount{Name: "Bench", Email: "bench@example.com", Password: "benchmark-password"})
	if err != nil {
		b.Fatal(err)
	}
	box, err := secret.NewBox("webhook-benchmark-secret-0123456789abcd")
	if err != nil {
		b.Fatal(err)
	}

	type arrival struct {
		eventID string
		at      time.Time
	}
	var (
		mu       sync.Mutex
		arrivals = make([]arrival, 0, events*hooks)
		count    atomic.Int64
		done     = make(chan struct{})
	)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		now := time.Now()
		mu.Lock()
		arrivals = append(arrivals, arrival{r.Header.Get("X-Service-Event-Id"), now})
		mu.Unlock()
		if count.Add(1) == events*hooks {
			close(done)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()

	svc := webhook.New(s.db, webhook.Config{Box: box, AllowPrivate: true})
	for i := range hooks {
		if _, _, err := svc.Create(ctx, acct.Account.ID, store.Actor{Type: store.ActorSystem},
			store.WebhookSettings{URL: recv.URL + "/hook/" + string(rune('a'+i)), Events: []string{"*"}}); err != nil {
			b.Fatal(err)
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	w := svc.Worker(webhook.WorkerOptions{})
	wg.Go(func() { _ = w.Run(runCtx) })
	defer func() { stop(); wg.Wait() }()

	emitted := make(map[string]time.Time, events)
	var emitMu sync.Mutex
	b.StartTimer()
	start := time.Now()
	var interval time.Duration
	if rate > 0 {
		interval = time.Second * perTx / time.Duration(rate)
	}
	for i := 0; i < events; i += perTx {
		if interval > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(i/perTx) * interval)))
		}
		batch := make([]store.Event, perTx)
		for j := range batch {
			batch[j] = store.Event{Name: store.EventContactUpdated, Data: map[string]any{
				"contact": map[string]any{"id": i + j, "email": "leser@example.com"}, "changed": []string{"first_name"}}}
		}
		before := time.Now()
		var ids []string
		err := s.db.WithTx(ctx, func(tx *sqlx.Tx) error {
			var err error
			ids, err = store.EmitAll(ctx, tx, acct.Account.ID, batch)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		emitMu.Lock()
		for _, id := range ids {
			emitted[id] = before
		}
		emitMu.Unlock()
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d deliveries arrived", count.Load(), events*hooks)
	}
	b.StopTimer()

	mu.Lock()
	defer mu.Unlock()
	seen := make(map[string]int, events)
	latencies := make([]time.Duration, 0, len(arrivals))
	last := start
	for _, a := range arrivals {
		seen[a.eventID]++
		latencies = append(latencies, a.at.Sub(emitted[a.eventID]))
		if a.at.After(last) {
			last = a.at
		}
	}
	for id, n := range seen {
		if n != hooks {
			b.Fatalf("event %s arrived %d times, want %d", id, n, hooks)
		}
	}
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[int(float64(len(latencies)-1)*p)].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(arrivals))/last.Sub(start).Seconds(), "deliveries/s")
	b.ReportMetric(pct(0.50), "p50_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
}
