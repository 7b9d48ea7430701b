package mailer_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
)

// BenchmarkNewsletterSendAttachment compares the send rate of the same
// newsletter without and with a 1 MB attachment through the real pipeline
// into a discarding SMTP sink: the attachment is read and base64-encoded once
// per send (mailer.EncodeAttachments at compile time) and copied into each
// message. The recipients default to 2,000 (each attached message is 1.4 MB
// on the wire); RUNDBRIEF_BENCH_RECIPIENTS sets another count (100000 for the
// issue's figure). Metrics: msgs/s, peak_rss_MB of the send.
func BenchmarkNewsletterSendAttachment(b *testing.B) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("RUNDBRIEF_BENCH_RECIPIENTS")); err == nil && v > 0 {
		n = v
	}
	for _, size := range []int{0, 1 << 20} {
		name := "none"
		if size > 0 {
			name = "1MB"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				e := newSendEnv(b, smtptest.Options{Discard: true})
				list := e.seedList("bench", n)
				nl := e.newsletter(list)
				if size > 0 {
					data := make([]byte, size)
					_, _ = rand.Read(data)
					copy(data, "%PDF-1.7\n")
					att, _, err := e.db.UploadAttachment(ctx, e.acct, systemActor, "katalog.pdf", "", bytes.NewReader(data))
					if err != nil {
						b.Fatal(err)
					}
					ids := []int64{att.ID}
					if nl, err = e.db.UpdateNewsletter(ctx, e.acct, systemActor, nl.ID, store.NewsletterInput{AttachmentIDs: &ids}); err != nil {
						b.Fatal(err)
					}
				}
				w := e.worker(e.db, e.transports, mailer.WorkerOptions{PollInterval: 10 * time.Millisecond})
				svc := e.campaigns(w)
				runtime.GC()
				resetPeakRSS(b)
				b.StartTimer()
				start := time.Now()
				stop := running(w.Run)
				if _, err := svc.SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
					b.Fatal(err)
				}
				c := e.waitStatus(nl.ID, store.CampaignSent, store.CampaignFailed)
				elapsed := time.Since(start)
				b.StopTimer()
				stop()
				if c.SentCount != int64(n) || e.srv.Count() != n {
					b.Fatalf("sent %d, server got %d; want %d", c.SentCount, e.srv.Count(), n)
				}
				b.ReportMetric(float64(n)/elapsed.Seconds(), "msgs/s")
				b.ReportMetric(float64(peakRSS(b))/(1<<20), "peak_rss_MB")
				b.StartTimer()
			}
		})
	}
}
