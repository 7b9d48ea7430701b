package inbox_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/inbox/imaptest"
)

// peakRSS resets (when allowed) and reads the process's peak resident set in MB.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func peakRSS() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// benchMail is a typical message: headers, a paragraph of text and an HTML part.
func benchMail(i int) []byte {
	body := strings.Repeat(fmt.Sprintf("Zeile %d der Nachricht mit etwas Text über Lieferung und Rechnung. ", i), 12)
	return fmt.Appendf(nil, "From: Kunde %d <kunde%d@example.com>\r\nTo: inbox@example.com\r\nSubject: Anfrage %d\r\nMessage-ID: <b%d@example.com>\r\n"+
		"Date: Mon, 23 Nov 2026 10:00:00 +0100\r\nMIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=BB\r\n\r\n"+
		"--BB\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n--BB\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>%s</p>\r\n--BB--\r\n",
		i, i, i, i, body, body)
}

// benchServerEnv makes the test binary an IMAP server with that many
// messages (serveBenchMailbox), so that the benchmark's process holds only
// the syncing side and its RSS is the sync's own.
const benchServerEnv = "INBOX_BENCH_IMAP_MESSAGES"

// serveBenchMailbox runs an IMAP server with n messages, prints its address
// and serves until stdin closes.
func serveBenchMailbox(n string) {
	count, _ := strconv.Atoi(n)
	srv, err := imaptest.New(imaptest.Options{})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	for i := range count {
		if err := srv.AppendRaw("INBOX", benchMail(i)); err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
	}
	fmt.Printf("ADDR %s %d %s %s\n", srv.Host, srv.Port, srv.Username, srv.Password)
	_, _ = io.Copy(io.Discard, os.Stdin)
	srv.Close()
	os.Exit(0)
}

// BenchmarkInboxFirstSync10000 syncs a mailbox of 10,000 messages from the
// start (each iteration forgets the position and the stored messages), from
// an IMAP server in a process of its own. Reports seconds per sync, the
// benchmark process's peak RSS and its peak Go heap during the sync.
func BenchmarkInboxFirstSync10000(b *testing.B) {
	f := newFixture(b, imaptest.Options{})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=10000")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	var host, user, pass string
	var port int
	if _, err := fmt.Fscanf(bufio.NewReader(stdout), "ADDR %s %d %s %s\n", &host, &port, &user, &pass); err != nil {
		b.Fatalf("bench server: %v", err)
	}
	in := f.settings()
	in.Host, in.Port, in.Username, in.Password = host, port, user, &pass
	if _, err := f.svc.SaveSettings(context.Background(), f.acct, in); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var total time.Duration
	var rss, baseHeap, peakHeap float64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for _, q := range []string{`DELETE FROM inbox_messages WHERE account_id = $1`, `UPDATE inbox_settings SET last_uid = 0, uidvalidity = 0 WHERE account_id = $1`} {
			if _, err := f.db.ExecContext(ctx, q, f.acct); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		resetPeakRSS()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		baseHeap = max(baseHeap, float64(ms.HeapInuse)/(1<<20))
		var peak atomic.Uint64
		done := make(chan struct{})
		go func() {
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					var m runtime.MemStats
					runtime.ReadMemStats(&m)
					if m.HeapInuse > peak.Load() {
						peak.Store(m.HeapInuse)
					}
				}
			}
		}()
		b.StartTimer()
		start := time.Now()
		res, err := f.svc.Sync(ctx, f.acct)
		total += time.Since(start)
		close(done)
		peakHeap = max(peakHeap, float64(peak.Load())/(1<<20))
		if err != nil || res.New != 10_000 {
			b.Fatalf("sync = %+v, %v", res, err)
		}
		rss = max(rss, peakRSS())
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/sync")
	b.ReportMetric(rss, "MB-peak-rss")
	b.ReportMetric(baseHeap, "MB-heap-before")
	b.ReportMetric(peakHeap, "MB-heap-peak")
	b.ReportMetric(10_000*float64(b.N)/total.Seconds(), "msgs/s")
}

// BenchmarkInboxIncremental100 syncs 100 new messages on top of 2,000 known ones.
func BenchmarkInboxIncremental100(b *testing.B) {
	f := newFixture(b, imaptest.Options{})
	for i := range 2000 {
		f.imap.Append(b, "INBOX", benchMail(i))
	}
	if _, err := f.svc.SaveSettings(context.Background(), f.acct, f.settings()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := f.svc.Sync(ctx, f.acct); err != nil {
		b.Fatal(err)
	}
	n := 2000
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for range 100 {
			f.imap.Append(b, "INBOX", benchMail(n))
			n++
		}
		b.StartTimer()
		start := time.Now()
		res, err := f.svc.Sync(ctx, f.acct)
		total += time.Since(start)
		if err != nil || res.New != 100 {
			b.Fatalf("sync = %+v, %v", res, err)
		}
	}
	b.ReportMetric(total.Seconds()*1000/float64(b.N), "ms/sync")
}

// BenchmarkInboxList100k lists pages of an inbox of 100,000 messages: the
// default view, unread, a label and a search.
func BenchmarkInboxList100k(b *testing.B) {
	f := newFixture(b, imaptest.Options{})
	ctx := context.Background()
	if _, err := f.db.ExecContext(ctx, `INSERT INTO inbox_messages (account_id, folder, uidvalidity, uid, message_id, from_email, from_name, subject, text_body, received_at, read, labels, search)
SELECT $1, 'INBOX', 1, g, 'l' || g || '@example.com', 'kunde' || g || '@example.com', 'Kunde ' || g, 'Anfrage ' || g, 'Text der Nachricht ' || g,
  now() - g * interval '1 minute', g % 3 = 0, CASE WHEN g % 10 = 0 THEN '{Rechnung}'::text[] ELSE '{}' END,
  lower('Anfrage ' || g || ' kunde' || g || '@example.com Kunde ' || g || ' Text der Nachricht ' || g)
FROM generate_series(1, 100000) g`, f.acct); err != nil {
		b.Fatal(err)
	}
	if _, err := f.db.ExecContext(ctx, `ANALYZE inbox_messages`); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    store.InboxFilter
		page int
	}{
		{"open/page1", store.InboxFilter{Status: "open"}, 1},
		{"open/page50", store.InboxFilter{Status: "open"}, 50},
		{"unread", store.InboxFilter{Status: "unread"}, 1},
		{"label", store.InboxFilter{Status: "all", Label: "Rechnung"}, 1},
		{"search", store.InboxFilter{Status: "all", Q: "kunde4711@"}, 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				msgs, _, err := f.db.InboxMessages(ctx, f.acct, c.f, store.Page{Page: c.page, PerPage: 50})
				if err != nil || len(msgs) == 0 {
					b.Fatalf("%d, %v", len(msgs), err)
				}
			}
		})
	}
}
