package mailer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// processOpener counts the messages one process hands to its Senders.
type processOpener struct {
	mailer.Opener
	n *atomic.Int64
}

func (o processOpener) Open(ctx context.Context, accountID, serverID int64) (mailer.Sender, mailer.Route, error) {
	s, r, err := o.Opener.Open(ctx, accountID, serverID)
	if err != nil {
		return s, r, err
	}
	return processSender{Sender: s, n: o.n}, r, nil
}

type processSender struct {
	mailer.Sender
	n *atomic.Int64
}

func (s processSender) Send(ctx context.Context, m *mailer.Message) error {
	err := s.Sender.Send(ctx, m)
	if err == nil {
		s.n.Add(1)
	}
	return err
}

// TestSharedRateAcrossProcesses: two processes (each with its own database
// pool, SMTP connection pool and send worker) send one newsletter over a
// server limited to 10 messages per second. Together they keep to it: no
// second of the send carries more than 10 messages (one more is tolerated
// where a send that took its turn at the end of a second is recorded in the
// next), and both took part. Each process alone would allow 10 per second,
// so without the shared budget the two would send 20.
func TestSharedRateAcrossProcesses(t *testing.T) {
	const n, rate = 40, 10
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{Discard: true})
	e.exec(`UPDATE smtp_servers SET rate_per_second = $2 WHERE id = $1`, e.serverID, rate)
	nl := e.newsletter(e.seedList("shared", n))
	if _, err := mailer.NewCampaigns(e.db, e.transports, nil, mailer.CampaignsOptions{Links: e.links}).SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}
	var sent [2]atomic.Int64
	var stops []func()
	for i := range 2 {
		db := e.db
		if i == 1 {
			db = dbtest.Open(t, e.url) // the second process's own pool
		}
		op := mailer.SharedRate(processOpener{Opener: e.newTransports(db, nil), n: &sent[i]}, store.NewSendRateLimiter(db))
		w := e.worker(db, op, mailer.WorkerOptions{Concurrency: 2, BatchSize: 5})
		stops = append(stops, running(w.Run))
	}
	e.waitStatus(nl.ID, store.CampaignSent)
	for _, stop := range stops {
		stop()
	}
	if sent[0].Load() == 0 || sent[1].Load() == 0 || sent[0].Load()+sent[1].Load() != n {
		t.Fatalf("sent by the processes: %d and %d, want both > 0 and %d together", sent[0].Load(), sent[1].Load(), n)
	}
	rows, err := e.db.QueryContext(ctx, `SELECT date_trunc('second', sent_at), count(*) FROM campaign_recipients
WHERE campaign_id = $1 GROUP BY 1 ORDER BY 1`, nl.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var windows []string
	most := 0
	for rows.Next() {
		var sec time.Time
		var c int
		if err := rows.Scan(&sec, &c); err != nil {
			t.Fatal(err)
		}
		windows = append(windows, fmt.Sprintf("%s=%d", sec.Format("15:04:05"), c))
		most = max(most, c)
	}
	if most > rate+1 || len(windows) < n/rate {
		t.Errorf("messages per second %v: at most %d allowed for both processes together", windows, rate)
	}
}
