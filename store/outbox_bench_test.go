package store_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// BenchmarkOutboxNoopConsumer measures the mechanism itself: b.N events of
// four accounts (committed beforehand in transactions of 500, as an import
// writes them) consumed by a consumer whose handler does nothing, in the
// default batches. It reports events/s, and cpu_us/event (this process and
// the PostgreSQL backends together; pg_cpu_us/event: PostgreSQL's part).
func BenchmarkOutboxNoopConsumer(b *testing.B) {
	ctx := context.Background()
	db := dbtest.NewDB(b)
	seedOutbox(b, db, 4, b.N, func(i int) store.Event {
		return store.Event{Name: store.EventContactUpdated, Data: map[string]any{
			"contact": map[string]any{"id": i, "email": "leser@example.com"}, "changed": []string{"first_name"}}}
	})
	seen := 0
	c := db.NewConsumer("noop", func(_ context.Context, _ *sqlx.Tx, events []store.StoredEvent) error {
		seen += len(events)
		return nil
	}, store.ConsumerOptions{})
	self0, pg0 := dbtest.CPUTime(b, db)
	b.ResetTimer()
	start := time.Now()
	n, err := c.CatchUp(ctx)
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if n != b.N || seen != b.N {
		b.Fatalf("consumed %d (handler saw %d), want %d", n, seen, b.N)
	}
	self, pg := dbtest.CPUTime(b, db)
	perEvent := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(perEvent(self-self0+pg-pg0), "cpu_us/event")
	b.ReportMetric(perEvent(pg-pg0), "pg_cpu_us/event")
}

// seedOutbox commits n events of accounts new accounts, made by event(i), in
// transactions of 500 (as an import or a send writes them), the accounts in
// turn.
func seedOutbox(b *testing.B, db *store.DB, accounts, n int, event func(i int) store.Event) {
	ctx := context.Background()
	var accts []int64
	for i := range accounts {
		res, err := db.CreateAccount(ctx, store.NewAccount{Name: "Bench", Email: "bench" + string(rune('a'+i)) + "@example.com", Plan: "business"})
		if err != nil {
			b.Fatal(err)
		}
		accts = append(accts, res.Account.ID)
	}
	const perTx = 500
	for i := 0; i < n; i += perTx {
		events := make([]store.Event, min(perTx, n-i))
		for j := range events {
			events[j] = event(i + j)
		}
		err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
			_, err := store.EmitAll(ctx, tx, accts[(i/perTx)%len(accts)], events)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOutboxSendEventsPassedOver measures what a newsletter's
// email.sent events cost a consumer that never handles them: b.N of them,
// of one account, behind the contact-fields consumer of serve
// (NewFieldConsumer), which acts on contact.created and contact.updated
// only. It reports events/s and the CPU per event of this process and the
// PostgreSQL backends together (cpu_us/event) and PostgreSQL's part.
func BenchmarkOutboxSendEventsPassedOver(b *testing.B) {
	ctx := context.Background()
	db := dbtest.NewDB(b)
	seedOutbox(b, db, 1, b.N, func(i int) store.Event {
		return store.Event{Name: store.EventEmailSent, Data: map[string]any{"campaign_id": 1, "contact_id": i + 1,
			"email": "leser" + strconv.Itoa(i) + "@example.com", "message_id": "<" + strconv.Itoa(i) + ".1@rundbrief.example>"}}
	})
	c := db.NewFieldConsumer(store.ConsumerOptions{})
	self0, pg0 := dbtest.CPUTime(b, db)
	b.ResetTimer()
	start := time.Now()
	if _, err := c.CatchUp(ctx); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	var behind int
	if err := db.GetContext(ctx, &behind, `SELECT count(*) FROM events e JOIN outbox_cursors k
  ON k.consumer = 'fields' AND k.account_id = e.account_id WHERE (e.xid, e.id) > (k.last_xid, k.last_id)`); err != nil || behind != 0 {
		b.Fatalf("%d events left behind the cursor (%v)", behind, err)
	}
	self, pg := dbtest.CPUTime(b, db)
	perEvent := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(perEvent(self-self0+pg-pg0), "cpu_us/event")
	b.ReportMetric(perEvent(pg-pg0), "pg_cpu_us/event")
}

// BenchmarkOutboxLatency measures what a feature following the outbox sees in
// serve: one event per transaction, committed by 4 writers as fast as they
// can, handled by a no-op consumer woken by the process's notification
// listener. It reports the consumed events/s and the p50/p99 time from the
// start of an event's transaction to its handling.
func BenchmarkOutboxLatency(b *testing.B) {
	ctx := context.Background()
	url := dbtest.URL(b)
	db := dbtest.Open(b, url)
	res, err := db.CreateAccount(ctx, store.NewAccount{Name: "Bench", Email: "latency@example.com", Plan: "business"})
	if err != nil {
		b.Fatal(err)
	}
	acct := res.Account.ID
	latencies := make([]time.Duration, 0, b.N)
	done := make(chan struct{})
	c := db.NewConsumer("latency", func(_ context.Context, _ *sqlx.Tx, events []store.StoredEvent) error {
		now := time.Now()
		for _, e := range events {
			latencies = append(latencies, now.Sub(e.CreatedAt))
		}
		if len(latencies) == b.N {
			close(done)
		}
		return nil
	}, store.ConsumerOptions{PollInterval: time.Hour})
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = db.ListenNotifications(runCtx, url, nil) })
	wg.Go(func() { _ = c.Run(runCtx) })
	defer func() { stop(); wg.Wait() }()
	// The consumer registers itself (and its cursor) on its first round.
	for {
		var n int
		if err := db.GetContext(ctx, &n, `SELECT count(*) FROM outbox_cursors WHERE consumer = 'latency'`); err != nil {
			b.Fatal(err)
		}
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	self0, pg0 := dbtest.CPUTime(b, db)
	b.ResetTimer()
	start := time.Now()
	var next atomic.Int64
	var writers sync.WaitGroup
	for range 4 {
		writers.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
					_, err := store.Emit(ctx, tx, acct, store.EventContactUpdated, map[string]any{"i": i})
					return err
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	writers.Wait()
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatalf("%d of %d events handled after a minute", len(latencies), b.N)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	self, pg := dbtest.CPUTime(b, db)
	slices.Sort(latencies)
	at := func(q float64) float64 {
		return float64(latencies[int(q*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(at(0.50), "p50_ms")
	b.ReportMetric(at(0.99), "p99_ms")
	b.ReportMetric(float64((self-self0+pg-pg0).Microseconds())/float64(b.N), "cpu_us/event")
}
