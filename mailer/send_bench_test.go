package mailer_test

import (
	"bufio"
	"context"
	"flag"
	"os"
	"runtime"
	"runtime/debug"
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
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// benchRecipients is the list size of BenchmarkNewsletterSend.
const benchRecipients = 20_000

// busy is the number of busy loops the benchmarks of this package run beside
// themselves (go test -bench … -busy 2): the figures of a machine whose cores
// other work takes too. CPU per message hardly moves with it; throughput does.
var busy = flag.Int("busy", 0, "busy loops (processes spinning on the CPU) beside the benchmark")

// benchHTML is a newsletter of about 5 KB with five placeholders and three
// tracked links (one personalised); its plain-text part is derived from it.
var benchHTML = strings.Replace(newsletterHTML, `<p><a href="https://www.example.com/impressum">Impressum</a> · <a href="mailto:info@example.com">Kontakt</a></p>`,
	strings.Repeat(`<p style="margin:0 0 12px 0;line-height:1.5">At vero eos et accusamus et iusto odio dignissimos ducimus qui blanditiis
praesentium voluptatum deleniti atque corrupti quos dolores et quas molestias excepturi sint occaecati cupiditate non
provident, similique sunt in culpa qui officia deserunt mollitia animi, id est laborum et dolorum fuga.</p>
`, 9), 1)

// BenchmarkNewsletterSend sends a newsletter (benchHTML: 5 KB, five
// placeholders, open tracking, three tracked links, a plain-text part) to
// 20,000 contacts through the real pipeline with default settings (one
// process, its Worker with the default lanes, batches and flushes) into a
// local SMTP sink that accepts at once (connections reused). When the clock
// stops every recipient's state, its email.sent event and its contact
// activity are in PostgreSQL. Seeding (one INSERT … SELECT) is not timed.
//
//	go test ./mailer/ -run '^$' -bench BenchmarkNewsletterSend -benchtime 1x [-busy 2]
//
// Metrics: msgs/s (the whole send, from the start request until the campaign
// is finished), steady_msgs/s (the sink's rate between the 20th and 80th
// percent of the messages), p50_ms and p99_ms (the gaps of 1 % of the
// messages each: how even the flow is), total_s, peak_rss_MB (VmHWM of the
// process during the send: the peak is reset after the setup, whose argon2id
// password hash alone takes 64 MB), and the CPU time per message of this
// process (go_cpu_us/msg: the SMTP client and the sink, rendering, the driver)
// and of the PostgreSQL backends (pg_cpu_us/msg). Targets: steady ≥ 9,000
// msgs/s, PostgreSQL ≤ 50 µs per message, peak RSS < 40 MB.
func BenchmarkNewsletterSend(b *testing.B) {
	dbtest.BusyLoops(b, *busy)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		e := newSendEnv(b, smtptest.Options{Discard: true})
		list := e.seedList("bench", benchRecipients)
		n := e.newsletterWith(benchHTML, list)
		w := e.worker(e.db, e.transports, mailer.WorkerOptions{PollInterval: 10 * time.Millisecond})
		svc := e.campaigns(w)
		resetPeakRSS(b)
		goCPU0, pgCPU0 := processCPU(b), backendCPU(e.url)
		b.StartTimer()

		start := time.Now()
		marks := watchCount(e.srv.Count, benchRecipients)
		stop := running(w.Run)
		res, err := svc.SendNewsletter(ctx, e.acct, systemActor, n.ID)
		if err != nil {
			b.Fatal(err)
		}
		startGo, startPG := processCPU(b)-goCPU0, backendCPU(e.url)-pgCPU0
		// The sink's count first, then the campaign's status: polled during
		// the whole send, the status (a campaign row with its content) cost
		// PostgreSQL some 10 µs per message, the harness's and not the send's.
		at := <-marks
		c := e.waitStatus(n.ID, store.CampaignSent, store.CampaignFailed)
		elapsed := time.Since(start)

		b.StopTimer()
		goCPU, pgCPU := processCPU(b)-goCPU0, backendCPU(e.url)-pgCPU0
		stop()
		if res.Queued != benchRecipients || c.SentCount != benchRecipients || e.srv.Count() != benchRecipients {
			b.Fatalf("queued %d, sent %d, server got %d; want %d each", res.Queued, c.SentCount, e.srv.Count(), benchRecipients)
		}
		var durable, events, acts int
		e.scalar(&durable, `SELECT count(*) FROM campaign_recipients WHERE campaign_id = $1 AND status = 'sent' AND message_id IS NOT NULL`, n.ID)
		e.scalar(&events, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'email.sent'`, e.acct)
		e.scalar(&acts, `SELECT count(*) FROM activity_log WHERE account_id = $1 AND action = 'email.sent'`, e.acct)
		if durable != benchRecipients || events != benchRecipients || acts != benchRecipients {
			b.Fatalf("%d recipients recorded as sent, %d email.sent events, %d activities; want %d each", durable, events, acts, benchRecipients)
		}
		gaps := make([]time.Duration, 0, 100)
		for i := 1; i < len(at); i++ {
			gaps = append(gaps, at[i].Sub(at[i-1]))
		}
		slices.Sort(gaps)
		pct := func(p float64) float64 { return float64(gaps[int(float64(len(gaps)-1)*p)].Microseconds()) / 1000 }
		b.ReportMetric(benchRecipients/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(0.6*benchRecipients/at[80].Sub(at[20]).Seconds(), "steady_msgs/s")
		b.ReportMetric(pct(0.5), "p50_ms")
		b.ReportMetric(pct(0.99), "p99_ms")
		b.ReportMetric(elapsed.Seconds(), "total_s")
		b.ReportMetric(float64(peakRSS(b))/(1<<20), "peak_rss_MB")
		b.ReportMetric(float64(goCPU.Microseconds())/benchRecipients, "go_cpu_us/msg")
		b.ReportMetric(float64(pgCPU.Microseconds())/benchRecipients, "pg_cpu_us/msg")
		// The start request's share (queueing every recipient, the first
		// batch inline), part of the figures above.
		b.ReportMetric(float64(startGo.Milliseconds()), "start_go_cpu_ms")
		b.ReportMetric(float64(startPG.Milliseconds()), "start_pg_cpu_ms")
		b.StartTimer()
	}
}

// watchCount polls count every half millisecond and sends, once it reached
// total, the times at which it reached each percent of total (index 0: the
// start, 100: the end).
func watchCount(count func() int, total int) <-chan []time.Time {
	out := make(chan []time.Time, 1)
	go func() {
		at := make([]time.Time, 101)
		at[0] = time.Now()
		next := 1
		for next <= 100 {
			n := count()
			now := time.Now()
			for next <= 100 && n >= next*total/100 {
				at[next] = now
				next++
			}
			time.Sleep(500 * time.Microsecond)
		}
		out <- at
	}()
	return out
}

// BenchmarkSMTPSinkCeiling sends the same HTML over the same SMTP path
// (four pooled connections to the in-process sink) without rendering, queue
// or database: the ceiling BenchmarkNewsletterSend can reach on this machine.
func BenchmarkSMTPSinkCeiling(b *testing.B) {
	const lanes, perLane = 4, 5000
	srv := smtptest.Start(b, smtptest.Options{Discard: true})
	cfg := mailer.ServerConfig{Host: srv.Host, Port: srv.Port, Encryption: mailer.EncryptionNone}
	for b.Loop() {
		start := time.Now()
		var wg sync.WaitGroup
		for range lanes {
			wg.Go(func() {
				s := mailer.NewSMTPSender(cfg)
				defer s.Close()
				for range perLane {
					m := &mailer.Message{From: mailer.Address{Email: "news@acme.test"}, To: mailer.Address{Email: "user@example.com"},
						Subject: "Neuigkeiten", HTML: newsletterHTML, Text: "Hallo"}
					if err := s.Send(context.Background(), m); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.ReportMetric(lanes*perLane/time.Since(start).Seconds(), "msgs/s")
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendCPU sums the CPU time of the PostgreSQL backends serving the
// database of dbURL (Linux: their titles name the database).
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
		// Fields after "(comm)": utime and stime are the 12th and 13th.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			s, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + s
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100
}

// resetPeakRSS returns freed memory to the system and restarts the peak
// (VmHWM) at the current resident size, so that the peak measured afterwards
// is the send's: the setup (an account whose owner password is hashed with
// argon2id, 64 MB) would otherwise dominate it.
func resetPeakRSS(tb testing.TB) {
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Fatalf("reset VmHWM: %v", err)
	}
}

// peakRSS reads the process's peak resident set size (VmHWM) in bytes.
func peakRSS(tb testing.TB) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatal("VmHWM not in /proc/self/status")
	return 0
}
