package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestProcessRegistryRefusesOtherSettings(t *testing.T) {
	db := dbtest.NewDB(t)
	ctx := context.Background()
	dev := map[string]string{"RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE": "true", "RUNDBRIEF_SMTP_ALLOW_PRIVATE": "false"}
	a, err := db.RegisterProcess(ctx, store.ProcessInfo{Hostname: "a", PID: 1, Settings: dev}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.RegisterProcess(ctx, store.ProcessInfo{Hostname: "b", PID: 2, Settings: dev}, nil)
	if err != nil {
		t.Fatalf("a second process with the same settings: %v", err)
	}

	prod := map[string]string{"RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE": "false", "RUNDBRIEF_SMTP_ALLOW_PRIVATE": "false"}
	_, err = db.RegisterProcess(ctx, store.ProcessInfo{Hostname: "c", PID: 3, Settings: prod}, nil)
	var mismatch *store.ProcessMismatchError
	if !errors.As(err, &mismatch) || strings.Join(mismatch.Differs, ",") != "RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE" || mismatch.Other.Hostname != "a" ||
		!strings.Contains(err.Error(), "RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE=false here but RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE=true there") {
		t.Fatalf("other settings: %v, want a mismatch naming the variable and both values", err)
	}
	// A setting only one side knows counts as different (an older binary).
	_, err = db.RegisterProcess(ctx, store.ProcessInfo{Hostname: "d", PID: 4, Settings: map[string]string{"RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE": "true"}}, nil)
	if !errors.As(err, &mismatch) || strings.Join(mismatch.Differs, ",") != "RUNDBRIEF_SMTP_ALLOW_PRIVATE" {
		t.Fatalf("missing setting: %v", err)
	}
	if n := processCount(t, db); n != 2 {
		t.Fatalf("%d processes registered, want the two that agree", n)
	}

	// Once both have stopped, the other settings are welcome.
	if err := a.Deregister(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Deregister(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := db.RegisterProcess(ctx, store.ProcessInfo{Hostname: "c", PID: 3, Settings: prod}, nil)
	if err != nil {
		t.Fatalf("after the others stopped: %v", err)
	}

	// A process whose heartbeat is older than StaleAfter is gone: its row does
	// not block and is removed.
	if _, err := db.ExecContext(ctx, `UPDATE processes SET heartbeat_at = now() - $1 * interval '1 millisecond' - interval '1 second'`,
		store.StaleAfter.Milliseconds()); err != nil {
		t.Fatal(err)
	}
	d, err := db.RegisterProcess(ctx, store.ProcessInfo{Hostname: "d", PID: 4, Settings: dev}, nil)
	if err != nil {
		t.Fatalf("beside a stale process: %v", err)
	}
	if n := processCount(t, db); n != 1 {
		t.Fatalf("%d processes, want the stale one removed", n)
	}
	// The stale process comes back: its heartbeat enters it again through the
	// same check, which now refuses it.
	if err := c.Heartbeat(ctx); !errors.As(err, &mismatch) {
		t.Fatalf("heartbeat of a removed process beside other settings: %v", err)
	}
	// A heartbeat renews the row.
	if _, err := db.ExecContext(ctx, `UPDATE processes SET heartbeat_at = now() - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	if err := d.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	var fresh bool
	if err := db.GetContext(ctx, &fresh, `SELECT heartbeat_at > now() - interval '1 minute' FROM processes`); err != nil || !fresh {
		t.Fatalf("heartbeat not renewed: %v %v", fresh, err)
	}
}

func processCount(t *testing.T, db *store.DB) int {
	t.Helper()
	var n int
	if err := db.GetContext(context.Background(), &n, `SELECT count(*) FROM processes`); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestScrapeGauges(t *testing.T) {
	db := dbtest.NewDB(t)
	ctx := context.Background()
	acct := newAccount(t, db, "business")

	if n, err := db.SendQueueDepth(ctx); err != nil || n != 0 {
		t.Fatalf("empty queue: %d %v", n, err)
	}
	var campaign int64
	if err := db.GetContext(ctx, &campaign, `INSERT INTO campaigns (account_id, kind, type, status) VALUES ($1, 'newsletter', 'newsletter', 'sending') RETURNING id`, acct); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO campaign_recipients (account_id, campaign_id, email, status)
		SELECT $1, $2, 'r' || i || '@example.org', s FROM generate_series(1, 3) i, unnest(ARRAY['queued', 'sending', 'sent', 'failed', 'skipped', 'waiting']) s`,
		acct, campaign); err != nil {
		t.Fatal(err)
	}
	if n, err := db.SendQueueDepth(ctx); err != nil || n != 6 {
		t.Fatalf("queue depth %d %v, want the 3 queued and 3 sending", n, err)
	}
	// At the cap the count stops.
	if _, err := db.ExecContext(ctx, `INSERT INTO campaign_recipients (account_id, campaign_id, email)
		SELECT $1, $2, 'q' || i || '@example.org' FROM generate_series(1, $3) i`, acct, campaign, store.ScrapeCountCap); err != nil {
		t.Fatal(err)
	}
	if n, err := db.SendQueueDepth(ctx); err != nil || n != store.ScrapeCountCap {
		t.Fatalf("queue depth %d %v, want the cap %d", n, err, store.ScrapeCountCap)
	}

	if n, err := db.WebhookBacklog(ctx); err != nil || n != 0 {
		t.Fatalf("empty backlog: %d %v", n, err)
	}
	var hook int64
	if err := db.GetContext(ctx, &hook, `INSERT INTO webhooks (account_id, url, events, secret_sealed) VALUES ($1, 'https://example.org/h', '{*}', 'x') RETURNING id`, acct); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO webhook_deliveries (public_id, account_id, webhook_id, event_public_id, event, payload, status, next_attempt_at, created_at, updated_at)
		SELECT 'whd_' || i || s, $1, $2, 'evt', 'contact.created', '{}', s, CASE WHEN s IN ('pending', 'retrying') THEN now() END, now(), now()
		FROM generate_series(1, 2) i, unnest(ARRAY['pending', 'retrying', 'succeeded', 'failed']) s`, acct, hook); err != nil {
		t.Fatal(err)
	}
	if n, err := db.WebhookBacklog(ctx); err != nil || n != 4 {
		t.Fatalf("backlog %d %v, want the 2 pending and 2 retrying", n, err)
	}

	lag, err := db.OutboxLag(ctx)
	if err != nil || len(lag) != 1 || lag[store.OutboxConsumerWebhooks] != (store.ConsumerLag{}) {
		t.Fatalf("empty outbox: %+v %v", lag, err)
	}
	// The webhook fan-out's cursor (outbox_cursors) has passed evt_done only.
	moveCursorTo := func(publicID string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, `INSERT INTO outbox_cursors (consumer, account_id, last_xid, last_id)
		SELECT 'webhooks', account_id, xid, id FROM events WHERE public_id = $1
		ON CONFLICT (consumer, account_id) DO UPDATE SET last_xid = EXCLUDED.last_xid, last_id = EXCLUDED.last_id`, publicID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO events (account_id, public_id, name, payload, created_at)
		VALUES ($1, 'evt_done', 'contact.created', '{}', now() - interval '1 hour')`, acct); err != nil {
		t.Fatal(err)
	}
	moveCursorTo("evt_done")
	if _, err := db.ExecContext(ctx, `INSERT INTO events (account_id, public_id, name, payload, created_at)
		VALUES ($1, 'evt_old', 'contact.created', '{}', now() - interval '90 seconds'), ($1, 'evt_new', 'contact.created', '{}', now())`, acct); err != nil {
		t.Fatal(err)
	}
	lag, err = db.OutboxLag(ctx)
	if l := lag[store.OutboxConsumerWebhooks]; err != nil || l.Events != 2 || l.Age.Seconds() < 90 || l.Age.Seconds() > 3600 {
		t.Fatalf("outbox lag %+v %v, want 2 events, the oldest undispatched 90 s old", lag, err)
	}
	// The webhook dispatcher catches up.
	moveCursorTo("evt_new")
	if lag, err = db.OutboxLag(ctx); err != nil || lag[store.OutboxConsumerWebhooks] != (store.ConsumerLag{}) {
		t.Fatalf("caught up: %+v %v", lag, err)
	}
}

func TestPoolStatsNameThePools(t *testing.T) {
	db := dbtest.NewDB(t)
	if err := db.PingContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := db.PoolStats()
	// The pools share the connection bound less the listener's connection.
	if len(s) != 4 || s["main"].MaxOpen < 1 || s["relaxed"].MaxOpen < 1 || s["generic"].MaxOpen < 1 || s["queue"].MaxOpen < 1 ||
		s["main"].MaxOpen+s["relaxed"].MaxOpen+s["generic"].MaxOpen+s["queue"].MaxOpen != store.DefaultMaxConns-store.ListenerConns ||
		s["main"].Open < 1 {
		t.Fatalf("pool stats %+v", s)
	}
}

func TestMigrationsPending(t *testing.T) {
	db := dbtest.NewDB(t)
	ctx := context.Background()
	if pending, err := db.MigrationsPending(ctx); err != nil || pending {
		t.Fatalf("migrated database: pending=%v %v", pending, err)
	}
	// An earlier migration missing counts too (they may land out of order).
	if _, err := db.ExecContext(ctx, `DELETE FROM goose_db_version WHERE version_id = 3`); err != nil {
		t.Fatal(err)
	}
	if pending, err := db.MigrationsPending(ctx); err != nil || !pending {
		t.Fatalf("a migration missing: pending=%v %v", pending, err)
	}
}
