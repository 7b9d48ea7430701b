package mailer_test

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
)

// benchRecipients is the list size of BenchmarkNewsletterSend.
const benchRecipients = 100_000

// BenchmarkNewsletterSend sends a newsletter with five placeholders, open
// tracking and four tracked links (one personalised) to 100,000 contacts
// through the real pipeline with default settings (one process, its Worker
// with the default lanes, batches and flushes) into a local SMTP sink that
// accepts at once (connections reused). When the clock stops every
// recipient's state, its email.sent event and its contact activity are in
// PostgreSQL. Seeding (one INSERT … SELECT) is not timed.
//
// Metrics: msgs/s, total_s, peak_rss_MB (VmHWM of the process during the
// send: the peak is reset after the setup, whose argon2id password hash
// alone takes 64 MB), and the CPU time per message of this process (the SMTP
// client and the sink, rendering, the driver) and of the PostgreSQL backends.
func BenchmarkNewsletterSend(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		e := newSendEnv(b, smtptest.Options{Discard: true})
		list := e.seedList("bench", benchRecipients)
		n := e.newsletter(list)
		w := e.worker(e.db, e.transports, mailer.WorkerOptions{PollInterval: 10 * time.Millisecond})
		svc := e.campaigns(w)
		resetPeakRSS(b)
		goCPU0, pgCPU0 := processCPU(b), backendCPU(e.url)
		b.StartTimer()

		start := time.Now()
		stop := running(w.Run)
		res, err := svc.SendNewsletter(ctx, e.acct, systemActor, n.ID)
		if err != nil {
			b.Fatal(err)
		}
		c := e.waitStatus(n.ID, store.CampaignSent, store.CampaignFailed)
		elapsed := time.Since(start)

		b.StopTimer()
		goCPU, pgCPU := processCPU(b)-goCPU0, backendCPU(e.url)-pgCPU0
		stop()
		if res.Queued != benchRecipients || c.SentCount != benchRecipients || e.srv.Count() != benchRecipients {
			b.Fatalf("queued %d, sent %d, server got %d; want %d each", res.Queued, c.SentCount, e.srv.Count(), benchRecipients)
		}
		var durable, events int
		e.scalar(&durable, `SELECT count(*) FROM campaign_recipients WHERE campaign_id = $1 AND status = 'sent' AND message_id IS NOT NULL`, n.ID)
		e.scalar(&events, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'email.sent'`, e.acct)
		if durable != benchRecipients || events != benchRecipients {
			b.Fatalf("%d recipients recorded as sent, %d email.sent events; want %d each", durable, events, benchRecipients)
		}
		b.ReportMetric(benchRecipients/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(elapsed.Seconds(), "total_s")
		b.ReportMetric(float64(peakRSS(b))/(1<<20), "peak_rss_MB")
		b.ReportMetric(float64(goCPU.Microseconds())/benchRecipients, "go_cpu_us/msg")
		b.ReportMetric(float64(pgCPU.Microseconds())/benchRecipients, "pg_cpu_us/msg")
		b.StartTimer()
	}
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
