package store_test

import (
	"context"
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
	var accts []int64
	for i := range 4 {
		res, err := db.CreateAccount(ctx, store.NewAccount{Name: "Bench", Email: "bench" + string(rune('a'+i)) + "@example.com", Plan: "business"})
		if err != nil {
			b.Fatal(err)
		}
		accts = append(accts, res.Account.ID)
	}
	const perTx = 500
	for i := 0; i < b.N; i += perTx {
		events := make([]store.Event, min(perTx, b.N-i))
		for j := range events {
			events[j] = store.Event{Name: store.EventContactUpdated, Data: map[string]any{
				"contact": map[string]any{"id": i + j, "email": "leser@example.com"}, "changed": []string{"first_name"}}}
		}
		err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
			_, err := store.EmitAll(ctx, tx, accts[(i/perTx)%len(accts)], events)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
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
