package mailer_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/mail"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/secret"
)

// sendChildEnv names the database a re-executed test binary sends from: set,
// TestMain runs runSendChild instead of the tests.
const sendChildEnv = "RUNDBRIEF_TEST_SEND_CHILD_DB"

// runSendChild is the child process of the kill test: one send worker with
// the production defaults on its own connection pool and SMTP pool, as in a
// `serve` process, until SIGTERM (a clean stop) or SIGKILL.
func runSendChild(url string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "send child:", err)
		return 1
	}
	db, err := store.Open(ctx, url)
	if err != nil {
		return fail(err)
	}
	defer db.Close()
	box, err := secret.NewBox(sendSecret)
	if err != nil {
		return fail(err)
	}
	tokens, err := mailer.NewTokens(sendSecret)
	if err != nil {
		return fail(err)
	}
	transports := mailer.NewTransports(db, box, mailer.TransportOptions{HELO: "rundbrief.test", DefaultFrom: mailer.DefaultFrom(testBaseURL)})
	w := mailer.NewWorker(db, transports, mailer.WorkerOptions{Links: mailer.LinkBuilder{BaseURL: testBaseURL, Tokens: tokens}})
	_ = w.Run(ctx)
	return 0
}

// startSendChild re-executes the test binary as a send worker process whose
// database sessions are named name (application_name).
func startSendChild(t *testing.T, dbURL, name string) *exec.Cmd {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), sendChildEnv+"="+u.String())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// TestKilledProcessLosesNothingAndRepeatsWithTheSameMessageID sends a
// 20,000-recipient newsletter from a real child process to a real SMTP
// server, kills it with SIGKILL at a random point, and lets a second process
// finish the send. Nobody is lost; the only recipients who get the mail
// twice are among the rows the killed process held (claimed, not recorded),
// at most what its lanes can have sent without recording it, and both copies
// carry the same Message-ID, so that a receiver drops the repeat. The killed
// process's claims are taken over once their lease runs out (seconds, not the
// old five minutes): the campaign finishes within the test's wait.
func TestKilledProcessLosesNothingAndRepeatsWithTheSameMessageID(t *testing.T) {
	const n = 20000
	ctx := context.Background()
	e := newSendEnv(t, smtptest.Options{})
	list := e.seedList("kill", n)
	// A short mail keeps the 20,000 received messages small in memory.
	name, subject, html := "Kurzbrief", "Hallo {{vorname}}", `<p>Hallo {{vorname}}, <a href="https://example.com/a">hier</a>.</p>`
	nl, err := e.db.CreateNewsletter(ctx, e.acct, systemActor, store.NewsletterInput{Name: &name, Subject: &subject, HTML: &html, ListIDs: &[]int64{list}})
	if err != nil {
		t.Fatal(err)
	}
	svc := campaign.New(e.db, e.transports, nil, campaign.Options{Links: e.links})
	if _, err := svc.SendNewsletter(ctx, e.acct, systemActor, nl.ID); err != nil {
		t.Fatal(err)
	}

	first := startSendChild(t, e.url, "killed-sender")
	killAt := n/5 + rand.IntN(3*n/5)
	for e.srv.Count() < killAt {
		time.Sleep(time.Millisecond)
	}
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = first.Wait()
	receivedAtKill := e.srv.Count()
	// A statement the killed process sent last still runs to its end on the
	// server; once its sessions are gone, what it left is settled.
	for {
		var sessions int
		e.scalar(&sessions, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'killed-sender'`)
		if sessions == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// What the killed process held: claimed, and not recorded.
	var held []string
	e.selectStrings(&held, `SELECT email FROM campaign_recipients WHERE campaign_id = $1 AND status = 'sending'`, nl.ID)

	second := startSendChild(t, e.url, "surviving-sender")
	c := e.waitStatus(nl.ID, store.CampaignSent)
	if err := second.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.Wait(); err != nil {
		t.Errorf("second process: %v", err)
	}

	ids := map[string][]string{} // recipient → Message-IDs received
	for _, m := range e.srv.Messages() {
		msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
		if err != nil {
			t.Fatal(err)
		}
		for _, to := range m.To {
			ids[to] = append(ids[to], msg.Header.Get("Message-Id"))
		}
	}
	var lost, dups []string
	for i := 1; i <= n; i++ {
		addr := userEmail("kill", i)
		switch got := ids[addr]; {
		case len(got) == 0:
			lost = append(lost, addr)
		case len(got) > 1:
			dups = append(dups, addr)
			if len(slices.Compact(slices.Clone(got))) != 1 {
				t.Errorf("%s got %d messages with different Message-IDs %v", addr, len(got), got)
			}
			if len(got) > 2 {
				t.Errorf("%s got %d messages", addr, len(got))
			}
			if !slices.Contains(held, addr) {
				t.Errorf("%s got %d messages but was not held by the killed process", addr, len(got))
			}
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d recipients lost: %v", len(lost), lost[:min(len(lost), 10)])
	}
	// Per lane: the handover being collected, one queued, one being
	// written (FlushEvery each), and the message on the wire.
	const lanes, flushEvery = 4, 25
	if bound := lanes * (3*flushEvery + 1); len(dups) > bound {
		t.Errorf("%d recipients got the mail twice; at most %d can be sent and not recorded", len(dups), bound)
	}
	if c.SentCount != n {
		t.Errorf("sent_count %d, want %d", c.SentCount, n)
	}
	var mismatched int
	e.scalar(&mismatched, `SELECT count(*) FROM campaign_recipients r WHERE r.campaign_id = $1 AND (r.status <> 'sent' OR r.message_id IS NULL)`, nl.ID)
	if mismatched != 0 {
		t.Errorf("%d recipients not recorded as sent with their Message-ID", mismatched)
	}

	// The figures: sent_at is the survivor's clock after SMTP accepted, the
	// same clock as killed (one machine).
	var firstSend, firstHeld, lastHeld time.Time
	e.scalar(&firstSend, `SELECT min(sent_at) FROM campaign_recipients WHERE campaign_id = $1 AND sent_at > $2`, nl.ID, killed)
	if len(held) > 0 {
		e.scalar(&firstHeld, `SELECT min(sent_at) FROM campaign_recipients WHERE campaign_id = $1 AND email = ANY($2)`, nl.ID, pq.StringArray(held))
		e.scalar(&lastHeld, `SELECT max(sent_at) FROM campaign_recipients WHERE campaign_id = $1 AND email = ANY($2)`, nl.ID, pq.StringArray(held))
	}
	t.Logf("killed after %d of %d messages (%d received at the kill); held by the killed process %d; lost %d; duplicated %d (same Message-ID); "+
		"kill → first send of the survivor %.2fs, → first resend of a held recipient %.2fs, → last %.2fs",
		killAt, n, receivedAtKill, len(held), len(lost), len(dups),
		firstSend.Sub(killed).Seconds(), firstHeld.Sub(killed).Seconds(), lastHeld.Sub(killed).Seconds())
}
