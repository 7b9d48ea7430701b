package sequence_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/sequence"
)

// BenchmarkQueueDay100k: a sequence day due for 100,000 participants at the
// same send_time, queued by one worker tick (recipient rows in the day's
// campaign, participants moved on). Reports the enrolment of the 100,000
// (one statement) as enrol-s and the queueing as queue-s (target < 10 s each),
// with the queueing's CPU per participant of this process and of PostgreSQL's
// backends (the tick's transactions run one after another, so on a quiet
// machine queue-s is about their sum).
func BenchmarkQueueDay100k(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	e := newEnv(b)
	ids := e.contacts("bench", n)
	seq := e.sequence("Bench", "09:00", 1, 1)
	e.clock.Set(berlin(2026, 6, 1, 10, 0))
	svc := sequence.New(e.db, nil, nil, nil, nil, sequence.Options{Now: e.clock.Now})
	if _, err := svc.Activate(ctx, e.acct, sys, seq.ID); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	res, err := e.db.EnrolContacts(ctx, e.acct, sys, seq.ID, ids, e.clock.Now())
	if err != nil || res.Enrolled != n {
		b.Fatalf("enrol: %+v %v", res, err)
	}
	b.ReportMetric(time.Since(start).Seconds(), "enrol-s")
	e.exec(`ANALYZE sequence_participants`)
	due := berlin(2026, 6, 2, 9, 0)
	w := sequence.NewWorker(e.db, nil, sequence.WorkerOptions{Now: func() time.Time { return due }})
	var total, appCPU, pgCPU time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e.exec(`DELETE FROM campaign_recipients WHERE account_id = $1`, e.acct)
		e.exec(`UPDATE sequence_participants SET current_day = 0, base_at = NULL, next_send_at = $2, status = 'active'
WHERE sequence_id = $1`, seq.ID, due)
		e.exec(`VACUUM ANALYZE sequence_participants`)
		b.StartTimer()
		t0 := time.Now()
		app0, pg0 := processCPU(b), backendCPU(e.url)
		r, err := w.Tick(ctx)
		total += time.Since(t0)
		appCPU += processCPU(b) - app0
		pgCPU += backendCPU(e.url) - pg0
		if err != nil || r.Queued != n {
			b.Fatalf("tick: %+v %v", r, err)
		}
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "queue-s")
	b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "participants/s")
	b.ReportMetric(float64(appCPU.Microseconds())/float64(n*b.N), "app_cpu_us/participant")
	b.ReportMetric(float64(pgCPU.Microseconds())/float64(n*b.N), "pg_cpu_us/participant")
}

// BenchmarkTickFlat: the cost of a tick that finds 100 due participants
// among 1,000 active sequences with 1,000,000 participants (all others due
// later): the claim walks the due index from its start, so the tick costs
// the same as with an almost empty table. Compare with BenchmarkTickSmall.
func BenchmarkTickFlat(b *testing.B) { benchTick(b, 1000, 1_000_000) }

// BenchmarkTickSmall is BenchmarkTickFlat with 10 sequences and 1,000
// participants.
func BenchmarkTickSmall(b *testing.B) { benchTick(b, 10, 1000) }

func benchTick(b *testing.B, sequences, participants int) {
	ctx := context.Background()
	e := newEnv(b)
	ids := e.contacts("due", 100)
	first := e.sequence("Erste", "", 0, 1)
	e.exec(`INSERT INTO sequences (account_id, name, status, activated_at) SELECT $1, 'S' || g, 'active', now()
FROM generate_series(2, $2::int) g`, e.acct, sequences)
	e.exec(`UPDATE sequences SET status = 'active', activated_at = now() WHERE id = $1`, first.ID)
	// The many: due in a year, spread over the sequences (contact ids need no
	// contact rows: they are never claimed).
	var ids0 []int64
	if err := e.db.SelectContext(ctx, &ids0, `SELECT id FROM sequences WHERE account_id = $1 ORDER BY id`, e.acct); err != nil {
		b.Fatal(err)
	}
	e.exec(`INSERT INTO sequence_participants (account_id, sequence_id, contact_id, email, running, joined_at, next_send_at)
SELECT $1, ($3::bigint[])[1 + g % array_length($3::bigint[], 1)], 1000000000 + g, 'x' || g || '@example.com', true, now(),
  now() + interval '365 days' + g * interval '1 second'
FROM generate_series(1, $2::int) g`, e.acct, participants, pq.Int64Array(ids0))
	e.exec(`VACUUM ANALYZE sequence_participants`)
	now := time.Now()
	w := sequence.NewWorker(e.db, nil, sequence.WorkerOptions{Now: func() time.Time { return now }})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e.exec(`DELETE FROM sequence_participants WHERE sequence_id = $1`, first.ID)
		if _, err := e.db.EnrolContacts(ctx, e.acct, sys, first.ID, ids, now.Add(-time.Minute)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		r, err := w.Tick(ctx)
		if err != nil || r.Queued != 100 {
			b.Fatalf("tick: %+v %v", r, err)
		}
	}
	_ = store.ParticipantActive
}

// BenchmarkTriggerEnrol: the trigger consumer's cost per contact event. Each
// iteration adds 500 contacts to the trigger list (500 list.joined events)
// and lets the consumer enrol them; reported as wall time per event
// (ms/event) and as CPU per event of this process (app_cpu_ms/event: the
// consumer's Go side) and of the database's backends (pg_cpu_ms/event), the
// figure that holds on a loaded machine (target ≤ 0.2 ms in all).
func BenchmarkTriggerEnrol(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b)
	name := "Trigger"
	l, err := e.db.CreateList(ctx, e.acct, sys, store.ListInput{Name: &name})
	if err != nil {
		b.Fatal(err)
	}
	seq := e.sequence("Trigger", "", 0, 1)
	trig, lid := store.TriggerList, l.ID
	svc := sequence.New(e.db, nil, nil, nil, nil, sequence.Options{})
	if _, err := svc.UpdateSequence(ctx, e.acct, sys, seq.ID, store.SequenceInput{Trigger: &trig, TriggerListID: &lid}); err != nil {
		b.Fatal(err)
	}
	if _, err := svc.Activate(ctx, e.acct, sys, seq.ID); err != nil {
		b.Fatal(err)
	}
	consumer := sequence.NewTriggerConsumer(e.db, store.ConsumerOptions{Batch: 500})
	if _, err := consumer.CatchUp(ctx); err != nil {
		b.Fatal(err)
	}
	var handled int
	var spent, appCPU, pgCPU time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ids := e.contacts(fmt.Sprintf("t%d-", i), 500)
		if _, err := e.db.AddListMembers(ctx, e.acct, sys, l.ID, ids, nil); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		app0, pg0 := processCPU(b), backendCPU(e.url)
		n, err := consumer.CatchUp(ctx)
		appCPU += processCPU(b) - app0
		pgCPU += backendCPU(e.url) - pg0
		spent += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		handled += n
	}
	var enrolled int
	e.scalar(&enrolled, `SELECT count(*) FROM sequence_participants WHERE sequence_id = $1`, seq.ID)
	if enrolled != 500*b.N {
		b.Fatalf("enrolled %d, want %d", enrolled, 500*b.N)
	}
	b.ReportMetric(float64(spent.Microseconds())/float64(handled)/1000, "ms/event")
	b.ReportMetric(float64(appCPU.Microseconds())/float64(handled)/1000, "app_cpu_ms/event")
	b.ReportMetric(float64(pgCPU.Microseconds())/float64(handled)/1000, "pg_cpu_ms/event")
	b.ReportMetric(float64((appCPU+pgCPU).Microseconds())/float64(handled)/1000, "cpu_ms/event")
}
