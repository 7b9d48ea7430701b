package sequence_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/sequence"
)

// benchDayHTML is a day of about 5 KB with placeholders and three tracked
// links (one personalised), like the newsletter of mailer's
// BenchmarkNewsletterSend, so that the two rates compare.
var benchDayHTML = `<h1>Hallo {{vorname}},</h1>
<p>heute geht es weiter mit Tag 2. <a href="https://www.example.com/kurs?u={{email}}">Zum Kurs</a></p>
<p><a href="https://www.example.com/blog">Blog</a> · <a href="https://www.example.com/shop">Shop</a></p>
` + strings.Repeat(`<p style="margin:0 0 12px 0;line-height:1.5">At vero eos et accusamus et iusto odio dignissimos ducimus qui blanditiis
praesentium voluptatum deleniti atque corrupti quos dolores et quas molestias excepturi sint occaecati cupiditate non
provident, similique sunt in culpa qui officia deserunt mollitia animi, id est laborum et dolorum fuga.</p>
`, 12) + `<p>Bis morgen, {{vorname}}! {{unsubscribe}}</p>`

// BenchmarkSequenceDaySend: a sequence day due for 20,000 participants at
// the same send_time, queued by one tick of the sequence worker and sent by
// one process's send worker (default lanes and batches) into a local SMTP
// sink that discards: the whole way a day takes. Seeding is not timed.
//
//	go test ./store/sequence/ -run '^$' -bench BenchmarkSequenceDaySend -benchtime 1x
//
// Metrics: the queueing (one tick, alone): queue_s and its CPU per message
// (queue_go_cpu_us/msg, queue_pg_cpu_us/msg); the send that follows:
// msgs/s (until the sink has every message), steady_msgs/s (between 20 %
// and 80 % of the messages), p50_ms and p99_ms (the gaps of 1 % of the
// messages each), and the CPU per message of this process (go_cpu_us/msg:
// rendering, SMTP client and sink, outcomes) and of PostgreSQL's backends
// (pg_cpu_us/msg). Target (issue 20): the newsletter rate, ≥ 8,000 msgs/s on
// a quiet machine.
func BenchmarkSequenceDaySend(b *testing.B) {
	const n = 20_000
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		e := newEnv(b)
		sink := smtptest.Start(b, smtptest.Options{Discard: true})
		s, err := e.db.CreateSMTPServer(ctx, e.box, e.acct, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
			Name: "Sink", Host: sink.Host, Port: sink.Port, Encryption: "none", FromEmail: "story@acme.test", FromName: "Acme"}})
		if err != nil {
			b.Fatal(err)
		}
		e.serverID = s.ID
		ids := e.contacts("send", n)
		seq := e.sequence("Senden", "09:00", 0, 1)
		days, err := e.db.SequenceDays(ctx, e.acct, seq.ID)
		if err != nil {
			b.Fatal(err)
		}
		day := days[0] // the first of two: the participants move on
		subject := "Tag 2 für {{vorname}}"
		if _, err := e.db.UpdateSequenceDay(ctx, e.acct, sys, seq.ID, day.ID, store.DayInput{Content: store.NewsletterInput{
			Subject: &subject, HTML: &benchDayHTML}}); err != nil {
			b.Fatal(err)
		}
		e.clock.Set(berlin(2026, 6, 1, 10, 0))
		svc := sequence.New(e.db, nil, nil, nil, nil, sequence.Options{Now: e.clock.Now})
		if _, err := svc.Activate(ctx, e.acct, sys, seq.ID); err != nil {
			b.Fatal(err)
		}
		if res, err := e.db.EnrolContacts(ctx, e.acct, sys, seq.ID, ids, e.clock.Now()); err != nil || res.Enrolled != n {
			b.Fatalf("enrol: %+v %v", res, err)
		}
		e.exec(`VACUUM ANALYZE sequence_participants`)
		e.exec(`VACUUM ANALYZE contacts`)
		due := berlin(2026, 6, 2, 9, 0)
		tokens, err := mailer.NewTokens(testSecret)
		if err != nil {
			b.Fatal(err)
		}
		tr := mailer.NewTransports(e.db, e.box, mailer.TransportOptions{HELO: "rundbrief.test", DefaultFrom: mailer.DefaultFrom("https://rb.test")})
		sender := mailer.NewWorker(e.db, tr, mailer.WorkerOptions{Links: mailer.LinkBuilder{BaseURL: "https://rb.test", Tokens: tokens},
			PollInterval: 10 * time.Millisecond})
		w := sequence.NewWorker(e.db, sender, sequence.WorkerOptions{Now: func() time.Time { return due }})
		// The queueing first, alone, so that its CPU is its own; then the
		// send of what it queued.
		goCPU0, pgCPU0 := processCPU(b), backendCPU(e.url)
		b.StartTimer()
		t0 := time.Now()
		r, err := w.Tick(ctx)
		if err != nil || r.Queued != n {
			b.Fatalf("tick: %+v %v", r, err)
		}
		queued := time.Since(t0)
		b.StopTimer()
		qGo, qPG := processCPU(b)-goCPU0, backendCPU(e.url)-pgCPU0
		runCtx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		goCPU0, pgCPU0 = processCPU(b), backendCPU(e.url)
		b.StartTimer()
		start := time.Now()
		marks := watchCount(sink.Count, n)
		wg.Go(func() { _ = sender.Run(runCtx) })
		at := <-marks
		elapsed := time.Since(start)

		b.StopTimer()
		goCPU, pgCPU := processCPU(b)-goCPU0, backendCPU(e.url)-pgCPU0
		// The last outcomes are written after the sink took the messages.
		deadline := time.Now().Add(time.Minute)
		var sent int
		for time.Now().Before(deadline) {
			e.scalar(&sent, `SELECT count(*) FROM campaign_recipients WHERE campaign_id = $1 AND status = 'sent'`, day.CampaignID)
			if sent == n {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
		wg.Wait()
		if sent != n || sink.Count() != n {
			b.Fatalf("%d recorded as sent, %d at the sink; want %d", sent, sink.Count(), n)
		}
		gaps := make([]time.Duration, 0, 100)
		for i := 1; i < len(at); i++ {
			gaps = append(gaps, at[i].Sub(at[i-1]))
		}
		slices.Sort(gaps)
		pct := func(p float64) float64 { return float64(gaps[int(float64(len(gaps)-1)*p)].Microseconds()) / 1000 }
		b.ReportMetric(n/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(0.6*n/at[80].Sub(at[20]).Seconds(), "steady_msgs/s")
		b.ReportMetric(pct(0.5), "p50_ms")
		b.ReportMetric(pct(0.99), "p99_ms")
		b.ReportMetric(queued.Seconds(), "queue_s")
		b.ReportMetric(float64(qGo.Microseconds())/n, "queue_go_cpu_us/msg")
		b.ReportMetric(float64(qPG.Microseconds())/n, "queue_pg_cpu_us/msg")
		b.ReportMetric(float64(goCPU.Microseconds())/n, "go_cpu_us/msg")
		b.ReportMetric(float64(pgCPU.Microseconds())/n, "pg_cpu_us/msg")
		b.StartTimer()
	}
}

// watchCount polls count every half millisecond and sends, once it reached
// total, the times at which it reached each percent of total.
func watchCount(count func() int, total int) <-chan []time.Time {
	out := make(chan []time.Time, 1)
	go func() {
		at := make([]time.Time, 101)
		at[0] = time.Now()
		next := 1
		for next <= 100 {
			c := count()
			now := time.Now()
			for next <= 100 && c >= next*total/100 {
				at[next] = now
				next++
			}
			time.Sleep(500 * time.Microsecond)
		}
		out <- at
	}()
	return out
}

// processCPU is this process's user and system CPU time so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendCPU sums the CPU time of the PostgreSQL backends serving the
// database of dbURL (Linux: their process titles name the database).
func backendCPU(dbURL string) time.Duration {
	name := dbURL[strings.LastIndexByte(dbURL, '/')+1:]
	name, _, _ = strings.Cut(name, "?")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var ticks int64
	for _, ent := range entries {
		cmd, err := os.ReadFile("/proc/" + ent.Name() + "/cmdline")
		if err != nil || !strings.HasPrefix(string(cmd), "postgres: ") || !strings.Contains(string(cmd), " "+name+" ") {
			continue
		}
		stat, err := os.ReadFile("/proc/" + ent.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			s, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + s
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100
}
