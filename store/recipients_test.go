package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// TestRenewRecipients: a worker's heartbeat extends the leases it holds, and
// only those: a lease that ran out (its row may be another worker's now) and a
// row put back into the queue stay as they are.
func TestRenewRecipients(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	c := e.ready(t)
	if _, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	rows, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 3, time.Second, nil)
	if err != nil || len(rows) != 3 {
		t.Fatalf("claim: %+v %v", rows, err)
	}
	live, expired, released := rows[0].ID, rows[1].ID, rows[2].ID
	e.exec(t, `UPDATE campaign_recipients SET claimed_until = now() - interval '1 second' WHERE id = $1`, expired)
	if err := e.db.ReleaseRecipients(ctx, c.ID, []int64{released}, 0, true); err != nil {
		t.Fatal(err)
	}
	if err := e.db.RenewRecipients(ctx, []int64{live, expired, released}, time.Hour); err != nil {
		t.Fatal(err)
	}
	var leasedMinutes []float64
	if err := e.db.SelectContext(ctx, &leasedMinutes, `SELECT coalesce(extract(epoch FROM claimed_until - now()) / 60, 0)
FROM campaign_recipients WHERE id = ANY(ARRAY[$1, $2, $3]::bigint[]) ORDER BY id`, live, expired, released); err != nil {
		t.Fatal(err)
	}
	if len(leasedMinutes) != 3 || leasedMinutes[0] < 59 || leasedMinutes[1] > 0 || leasedMinutes[2] != 0 {
		t.Errorf("minutes leased after the renewal (live, expired, released): %v; want 60, below 0, none", leasedMinutes)
	}
	// The expired row is anyone's; the renewed one is nobody else's.
	again, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 10, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range again {
		got = append(got, r.ID)
	}
	for _, id := range got {
		if id == live {
			t.Errorf("the renewed row %d was claimed again: %v", id, got)
		}
	}
	if len(got) < 2 || got[0] != expired || got[1] != released {
		t.Errorf("claimed %v after the renewal; want the expired %d and the released %d first", got, expired, released)
	}
	if err := e.db.RenewRecipients(ctx, nil, time.Hour); err != nil {
		t.Errorf("renewing nothing: %v", err)
	}
}

// TestClaimReadsOnlyItsBatch: a claim right after a large send was queued
// (the statistics still call the campaign tiny) reads about as many entries
// of the queue index as it claims. With the bitmap scan the planner chose for
// such statistics, every claim read every pending row after the cursor and
// sorted them: a send cost the database quadratic time in its size.
func TestClaimReadsOnlyItsBatch(t *testing.T) {
	const n, batch = 3000, 50
	ctx := context.Background()
	e := newCampaignEnv(t)
	c := e.started(t, n)
	// One connection of the send queue's pool: the claim's statistics are this
	// backend's, flushed on demand before they are read (as in
	// TestClaimIsHOTUpdate).
	queue := e.db.QueuePool()
	queue.SetMaxOpenConns(1)
	read := func() int64 {
		t.Helper()
		var v int64
		if _, err := queue.ExecContext(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		if err := queue.QueryRowContext(ctx, `SELECT idx_tup_read FROM pg_stat_user_indexes
WHERE indexrelid = 'campaign_recipients_queue_idx'::regclass`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := read()
	rows, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, batch, time.Minute, nil)
	if err != nil || len(rows) != batch {
		t.Fatalf("claim: %d rows, %v", len(rows), err)
	}
	for i := 1; i < len(rows); i++ {
		if rows[i].ID <= rows[i-1].ID {
			t.Fatalf("claimed out of id order: %d after %d", rows[i].ID, rows[i-1].ID)
		}
	}
	if got := read() - before; got > 4*batch {
		t.Errorf("a claim of %d read %d entries of the queue index (of %d queued); want about %d", batch, got, n, batch)
	}
}

// TestQueuePlansOutliveAnEmptyTable: the send queue's statements are planned
// once per connection (DB.queue), so a plan made while the recipients table
// was empty, as on a new installation, serves every later send on that
// connection. It must still reach a batch through the indexes: no sequential
// scan of the recipients, no read of the whole queue, for the claim and for
// the outcomes.
func TestQueuePlansOutliveAnEmptyTable(t *testing.T) {
	const n, batch = 3000, 50
	ctx := context.Background()
	e := newCampaignEnv(t)
	queue := e.db.QueuePool()
	queue.SetMaxOpenConns(1)
	l := mkList(t, e.db, e.acct, "Viele", false)
	c := e.newsletter(t, store.NewsletterInput{Subject: str("Hallo"), HTML: str("<p>Hallo</p>"), ListIDs: &[]int64{l.ID}})
	// Plan both statements on the one connection while no recipient exists
	// and the statistics say so, as autovacuum leaves a new installation's
	// table.
	e.exec(t, `VACUUM ANALYZE campaign_recipients`)
	if rows, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, batch, time.Minute, nil); err != nil || len(rows) != 0 {
		t.Fatalf("claim on an empty table: %d rows, %v", len(rows), err)
	}
	if _, err := e.db.RecordOutcomes(ctx, e.acct, c.ID, []store.Outcome{{RecipientID: 1, Status: store.RecipientSent, At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	e.exec(t, `INSERT INTO contacts (account_id, email) SELECT $1, 'viele' || g || '@example.com' FROM generate_series(1, $2::int) AS g`, e.acct, n)
	e.exec(t, `INSERT INTO list_members (list_id, contact_id, account_id)
SELECT $1, id, account_id FROM contacts WHERE account_id = $2 AND email LIKE 'viele%'`, l.ID, e.acct)
	if _, res, err := e.db.StartNewsletter(ctx, e.acct, apiActor, c.ID, store.StartOptions{}); err != nil || res.Queued != n {
		t.Fatalf("start: %+v %v", res, err)
	}
	reads := func() (seq, queueIdx int64) {
		t.Helper()
		if _, err := queue.ExecContext(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		if err := queue.QueryRowContext(ctx, `SELECT t.seq_scan, i.idx_tup_read FROM pg_stat_user_tables t, pg_stat_user_indexes i
WHERE t.relid = 'campaign_recipients'::regclass AND i.indexrelid = 'campaign_recipients_queue_idx'::regclass`).Scan(&seq, &queueIdx); err != nil {
			t.Fatal(err)
		}
		return seq, queueIdx
	}
	seq0, idx0 := reads()
	rows, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, batch, time.Minute, nil)
	if err != nil || len(rows) != batch {
		t.Fatalf("claim: %d rows, %v", len(rows), err)
	}
	outs := make([]store.Outcome, len(rows))
	for i, r := range rows {
		outs[i] = store.Outcome{RecipientID: r.ID, ContactID: r.ContactID, Email: r.Email, Status: store.RecipientSent,
			MessageID: fmt.Sprintf("<%d@example.com>", r.ID), At: time.Now()}
	}
	if _, err := e.db.RecordOutcomes(ctx, e.acct, c.ID, outs); err != nil {
		t.Fatal(err)
	}
	seq1, idx1 := reads()
	if seq1 != seq0 || idx1-idx0 > 4*batch {
		t.Errorf("claiming and recording %d of %d: %d sequential scans of the recipients, %d queue index entries read; want 0 and about %d",
			batch, n, seq1-seq0, idx1-idx0, batch)
	}
	var sent int
	if err := e.db.GetContext(ctx, &sent, `SELECT count(*) FROM campaign_recipients WHERE campaign_id = $1 AND status = 'sent'`, c.ID); err != nil || sent != batch {
		t.Errorf("%d recipients recorded as sent (%v), want %d", sent, err, batch)
	}
}

// TestOutcomesFindTheirRows: each outcome of a batch, handed over in any
// order, lands on its own recipient with its own details: status, message id,
// error, retry time, its event and activity, the counters and the blocked list.
func TestOutcomesFindTheirRows(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	c := e.started(t, 7)
	rows, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, 7, time.Minute, nil)
	if err != nil || len(rows) != 7 {
		t.Fatalf("claim: %d rows, %v", len(rows), err)
	}
	now := time.Now()
	out := func(r store.QueuedRecipient, o store.Outcome) store.Outcome {
		o.RecipientID, o.ContactID, o.Email, o.At = r.ID, r.ContactID, r.Email, now
		return o
	}
	// Neither in id order nor in reverse.
	outs := []store.Outcome{
		out(rows[3], store.Outcome{Status: store.RecipientSkipped, Error: store.SkipBlocked}),
		out(rows[0], store.Outcome{Status: store.RecipientSent, MessageID: "<null@acme.test>"}),
		out(rows[5], store.Outcome{Status: store.RecipientQueued, Error: "421 später", RetryIn: time.Hour}),
		out(rows[1], store.Outcome{Status: store.RecipientFailed, Error: "550 unbekannt", Bounce: true, Code: 550, Block: true}),
		out(rows[6], store.Outcome{Status: store.RecipientSent, MessageID: "<sechs@acme.test>"}),
		out(rows[2], store.Outcome{Status: store.RecipientFailed, Error: "Verbindung abgebrochen"}),
		out(rows[4], store.Outcome{Status: store.RecipientSent, MessageID: "<vier@acme.test>"}),
	}
	if _, err := e.db.RecordOutcomes(ctx, e.acct, c.ID, outs); err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID        int64   `db:"id"`
		Status    string  `db:"status"`
		MessageID string  `db:"message_id"`
		Error     string  `db:"error"`
		Sent      bool    `db:"sent"`
		RetryMin  float64 `db:"retry_min"`
	}
	var got []row
	if err := e.db.SelectContext(ctx, &got, `SELECT id, status, coalesce(message_id, '') AS message_id,
  coalesce(error, '') AS error, sent_at IS NOT NULL AS sent,
  coalesce(extract(epoch FROM next_attempt_at - now()) / 60, 0) AS retry_min
FROM campaign_recipients WHERE campaign_id = $1 ORDER BY id`, c.ID); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(outs) {
		t.Fatalf("%d recipients, want %d", len(got), len(outs))
	}
	byID := map[int64]store.Outcome{}
	for _, o := range outs {
		byID[o.RecipientID] = o
	}
	for _, r := range got {
		o := byID[r.ID]
		if r.Status != o.Status || r.MessageID != o.MessageID || r.Error != o.Error ||
			r.Sent != (o.Status == store.RecipientSent) || (o.Status == store.RecipientQueued) != (r.RetryMin > 59) {
			t.Errorf("recipient %d: %+v; want the outcome %+v", r.ID, r, o)
		}
	}
	var events []string
	if err := e.db.SelectContext(ctx, &events, `SELECT name || ' ' || coalesce(payload->>'message_id', payload->>'code') || ' ' ||
  coalesce(payload->>'contact_id', payload->>'reason') FROM events WHERE account_id = $1 AND name LIKE 'email.%' ORDER BY id`, e.acct); err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("email.sent <null@acme.test> %d", rows[0].ContactID),
		"email.bounced 550 550 unbekannt",
		fmt.Sprintf("email.sent <vier@acme.test> %d", rows[4].ContactID),
		fmt.Sprintf("email.sent <sechs@acme.test> %d", rows[6].ContactID),
	}
	if fmt.Sprint(events) != fmt.Sprint(want) {
		t.Errorf("events %q; want %q", events, want)
	}
	var acts []string
	if err := e.db.SelectContext(ctx, &acts, `SELECT action || ' ' || object_id || ' ' || coalesce(details->>'message_id', details->>'reason')
FROM activity_log WHERE account_id = $1 AND action LIKE 'email.%' ORDER BY id`, e.acct); err != nil {
		t.Fatal(err)
	}
	wantActs := []string{
		fmt.Sprintf("email.sent %d <null@acme.test>", rows[0].ContactID),
		fmt.Sprintf("email.bounced %d 550 unbekannt", rows[1].ContactID),
		fmt.Sprintf("email.sent %d <vier@acme.test>", rows[4].ContactID),
		fmt.Sprintf("email.sent %d <sechs@acme.test>", rows[6].ContactID),
	}
	if fmt.Sprint(acts) != fmt.Sprint(wantActs) {
		t.Errorf("activities %q; want %q", acts, wantActs)
	}
	var counts string
	if err := e.db.GetContext(ctx, &counts, `SELECT (SELECT sum(sent) || ' ' || sum(failed) || ' ' || sum(skipped) FROM campaign_counts WHERE campaign_id = $1)
  || ' ' || (SELECT sum(bounces) FROM campaign_stats WHERE campaign_id = $1)
  || ' ' || (SELECT string_agg(email, ',') FROM blocked_addresses WHERE account_id = $2 AND source = 'bounce')`, c.ID, e.acct); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("3 2 1 1 %s", rows[1].Email); counts != want {
		t.Errorf("sent, failed, skipped, bounces and blocked addresses: %s; want %s", counts, want)
	}
}

// Outcomes of a campaign recorded while another statement of its outcomes
// runs wait and go together in one statement, and each call still learns
// the campaign's status.
func TestConcurrentOutcomesShareAStatement(t *testing.T) {
	e, c, writers := queuedOutcomes(t, -1)
	if writers != 1 {
		t.Errorf("the six waiting calls were written by %d transactions, want 1", writers)
	}
	wantSent(t, e, c, 19)
}

// A call whose outcomes cannot be stored fails alone: the statement it shared
// fails, and the others' outcomes are stored on their own.
func TestFailedOutcomesFailAlone(t *testing.T) {
	e, c, writers := queuedOutcomes(t, 3)
	if writers != 5 {
		t.Errorf("the five good calls were written by %d transactions, want 5 (each on its own)", writers)
	}
	wantSent(t, e, c, 16)
}

// queuedOutcomes records the outcomes of 19 claimed recipients of a new
// campaign: one call whose statement waits for a row the test holds
// locked, then six calls of three outcomes each that line up behind it (the
// call numbered bad with a status no row may have), and it checks each
// call's result and the rows. It returns how many transactions wrote the six
// calls' rows that were sent.
func queuedOutcomes(t *testing.T, bad int) (campaignEnv, store.Campaign, int) {
	t.Helper()
	const n = 19
	ctx := context.Background()
	e := newCampaignEnv(t)
	c := e.started(t, n)
	rows, err := e.db.ClaimRecipients(ctx, e.acct, c.ID, 0, n, time.Minute, nil)
	if err != nil || len(rows) != n {
		t.Fatalf("claim: %d rows, %v", len(rows), err)
	}
	outcomes := func(rs []store.QueuedRecipient, status string) []store.Outcome {
		var outs []store.Outcome
		for _, r := range rs {
			outs = append(outs, store.Outcome{RecipientID: r.ID, ContactID: r.ContactID, Email: r.Email, Status: status,
				MessageID: fmt.Sprintf("m%d@acme.test", r.ID), At: time.Now()})
		}
		return outs
	}

	unlock := holdLock(t, e.db, `SELECT 1 FROM campaign_recipients WHERE id = $1 FOR UPDATE`, rows[0].ID)
	type result struct {
		status string
		err    error
	}
	record := func(outs []store.Outcome) <-chan result {
		done := make(chan result, 1)
		go func() {
			status, err := e.db.RecordOutcomes(ctx, e.acct, c.ID, outs)
			done <- result{status, err}
		}()
		return done
	}
	held := record(outcomes(rows[:1], store.RecipientSent))
	waitFor(t, "the first statement to wait for the lock", func() bool {
		var locked bool
		if err := e.db.GetContext(ctx, &locked, `SELECT count(*) = 1 FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH upd AS (%'`); err != nil {
			t.Fatal(err)
		}
		return locked
	})
	var calls []<-chan result
	for k := range 6 {
		status := store.RecipientSent
		if k == bad {
			status = "verschollen"
		}
		calls = append(calls, record(outcomes(rows[1+3*k:4+3*k], status)))
		waitFor(t, "the call to wait", func() bool { _, w := e.db.OutcomesRunning(e.acct, c.ID); return w == k+1 })
	}
	if running, _ := e.db.OutcomesRunning(e.acct, c.ID); running != 1 {
		t.Errorf("%d statements run, want 1", running)
	}
	unlock()
	if r := <-held; r.err != nil || r.status != store.CampaignSending {
		t.Errorf("held call: %s, %v", r.status, r.err)
	}
	for k, done := range calls {
		switch r := <-done; {
		case k == bad && r.err == nil:
			t.Errorf("call %d with an unknown status: no error", k)
		case k != bad && (r.err != nil || r.status != store.CampaignSending):
			t.Errorf("call %d: %s, %v", k, r.status, r.err)
		}
	}
	if running, waiting := e.db.OutcomesRunning(e.acct, c.ID); running != -1 || waiting != -1 {
		t.Errorf("the group outlived its statements: %d running, %d waiting", running, waiting)
	}
	for i, r := range rows {
		var status string
		if err := e.db.GetContext(ctx, &status, `SELECT status FROM campaign_recipients WHERE id = $1`, r.ID); err != nil {
			t.Fatal(err)
		}
		want := store.RecipientSent
		if bad >= 0 && i >= 1+3*bad && i < 4+3*bad {
			want = store.RecipientSending // left for its lease to run out
		}
		if status != want {
			t.Errorf("recipient %d: %s, want %s", i, status, want)
		}
	}
	var writers int
	if err := e.db.GetContext(ctx, &writers, `SELECT count(DISTINCT xmin::text) FROM campaign_recipients
WHERE campaign_id = $1 AND id <> $2 AND status = 'sent'`, c.ID, rows[0].ID); err != nil {
		t.Fatal(err)
	}
	return e, c, writers
}

// wantSent checks a campaign's sent counter and its email.sent events.
func wantSent(t *testing.T, e campaignEnv, c store.Campaign, n int64) {
	t.Helper()
	got, err := e.db.Newsletter(context.Background(), e.acct, c.ID)
	if err != nil || got.SentCount != n {
		t.Errorf("sent count %d (%v), want %d", got.SentCount, err, n)
	}
	var events int64
	for _, ev := range outbox(t, e.db, e.acct) {
		if ev.Name == store.EventEmailSent {
			events++
		}
	}
	if events != n {
		t.Errorf("%d email.sent events, want %d", events, n)
	}
}

// started creates n contacts on a new list and starts a newsletter to it.
func (e campaignEnv) started(t *testing.T, n int) store.Campaign {
	t.Helper()
	l := mkList(t, e.db, e.acct, "Viele", false)
	e.exec(t, `INSERT INTO contacts (account_id, email) SELECT $1, 'viele' || g || '@example.com' FROM generate_series(1, $2::int) AS g`, e.acct, n)
	e.exec(t, `INSERT INTO list_members (list_id, contact_id, account_id)
SELECT $1, id, account_id FROM contacts WHERE account_id = $2 AND email LIKE 'viele%'`, l.ID, e.acct)
	c := e.newsletter(t, store.NewsletterInput{Subject: str("Hallo"), HTML: str("<p>Hallo</p>"), ListIDs: &[]int64{l.ID}})
	if _, res, err := e.db.StartNewsletter(context.Background(), e.acct, apiActor, c.ID, store.StartOptions{}); err != nil || res.Queued != int64(n) {
		t.Fatalf("start: %+v %v", res, err)
	}
	return c
}
