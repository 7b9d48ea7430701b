package mailer_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// processOpener counts the messages one process hands to its Senders.
type processOpener struct {
	mailer.Opener
	n      *atomic.Int64
	starts *sendStarts
}

// sendStarts records when sends began (right after the shared budget let
// them through), over all processes.
type sendStarts struct {
	mu sync.Mutex
	at []time.Time
}

func (s *sendStarts) add(t time.Time) {
	s.mu.Lock()
	s.at = append(s.at, t)
	s.mu.Unlock()
}

func (o processOpener) Open(ctx context.Context, accountID, serverID int64) (mailer.Sender, mailer.Route, error) {
	s, r, err := o.Opener.Open(ctx, accountID, serverID)
	if err != nil {
		return s, r, err
	}
	return processSender{Sender: s, n: o.n, starts: o.starts}, r, nil
}

type processSender struct {
	mailer.Sender
	n      *atomic.Int64
	starts *sendStarts
}

func (s processSender) Send(ctx context.Context, m *mailer.Message) error {
	s.starts.add(time.Now())
	err := s.Sender.Send(ctx, m)
	if err == nil {
		s.n.Add(1)
	}
	return err
}

// TestSharedRateAcrossProcesses: two processes (each with its own database
// pool, SMTP connection pool and send worker) send one newsletter over a
// server limited to 10 messages per second. Together they keep to it: no
// second of the send starts more than 10 messages (one more is tolerated for
// a send that got its turn at the very end of a second and started in the
// next), and both took part. Each process alone would allow 10 per second,
// so without the shared budget the two would start 20.
func TestSharedRateAcrossProcesses(t *testing.T) {
	const n, rate = 40, 10
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{Discard: true})
	e.exec(`UPDATE smtp_servers SET rate_per_second = $2 WHERE id = $1`, e.serverID, rate)
	nl := e.newsletter(e.seedList("shared", n))
	if _, err := campaign.New(e.db, e.transports, nil, campaign.Options{Links: e.links}).SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}
	var sent [2]atomic.Int64
	starts := &sendStarts{}
	var stops []func()
	for i := range 2 {
		db := e.db
		if i == 1 {
			db = dbtest.Open(t, e.url) // the second process's own pool
		}
		op := mailer.SharedRate(processOpener{Opener: e.newTransports(db, nil), n: &sent[i], starts: starts}, store.NewSendRateLimiter(db))
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
	perSecond := map[time.Time]int{}
	for _, at := range starts.at {
		perSecond[at.Truncate(time.Second)]++
	}
	var windows []string
	most := 0
	for sec, c := range perSecond {
		windows = append(windows, fmt.Sprintf("%s=%d", sec.Format("15:04:05"), c))
		most = max(most, c)
	}
	sort.Strings(windows)
	if most > rate+1 || len(perSecond) < n/rate {
		t.Errorf("messages per second %v: at most %d allowed for both processes together", windows, rate)
	}
}
