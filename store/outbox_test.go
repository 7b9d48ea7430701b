package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/imports"
)

// helperDBEnv carries the database URL to a consumer process
// (TestHelperConsumerProcess); TestMain sees it and skips the test server.
const helperDBEnv = "RUNDBRIEF_OUTBOX_HELPER_DB"

// seenTable records which consumer handled which event, in the handler's
// transaction; the unique constraint refuses a second handling outright.
const seenTable = `CREATE TABLE outbox_seen (
  seq         bigserial PRIMARY KEY,
  consumer    text NOT NULL,
  event_id    bigint NOT NULL,
  account_id  bigint NOT NULL,
  pid         int NOT NULL,
  UNIQUE (consumer, event_id)
)`

// recordSeen is a handler that records its events into outbox_seen, in order.
func recordSeen(name string) store.ConsumerHandler {
	pid := os.Getpid()
	return func(ctx context.Context, tx *sqlx.Tx, events []store.StoredEvent) error {
		ids := make(pq.Int64Array, len(events))
		for i, e := range events {
			ids[i] = e.ID
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO outbox_seen (consumer, event_id, account_id, pid)
SELECT $1, x.id, $3, $4 FROM unnest($2::bigint[]) WITH ORDINALITY AS x(id, n) ORDER BY x.n`, name, ids, events[0].AccountID, pid)
		return err
	}
}

// TestHelperConsumerProcess is the body of a consumer process for
// TestOutboxConsumersAcrossProcesses; run directly, it does nothing.
func TestHelperConsumerProcess(t *testing.T) {
	url := os.Getenv(helperDBEnv)
	if url == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var wg sync.WaitGroup
	// One listener wakes both consumers, as in serve.
	wg.Go(func() { _ = db.ListenNotifications(ctx, url, nil) })
	for _, name := range []string{"alpha", "beta"} {
		c := db.NewConsumer(name, recordSeen(name), store.ConsumerOptions{Batch: 7, PollInterval: 10 * time.Millisecond})
		wg.Go(func() { _ = c.Run(ctx) })
	}
	wg.Wait()
}

var errRollback = errors.New("rolled back on purpose")

// TestOutboxConsumersAcrossProcesses runs two consumers in each of two OS
// processes while events arrive in many transactions, some committing after
// later-numbered ones and some rolled back; one process is killed with
// SIGKILL midway and started again. Each consumer must have handled every
// committed event exactly once, in (xid, id) order per account.
func TestOutboxConsumersAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	db := dbtest.Open(t, url)
	if _, err := db.ExecContext(ctx, seenTable); err != nil {
		t.Fatal(err)
	}
	accts := []int64{newAccount(t, db, "business"), newAccount(t, db, "business"), newAccount(t, db, "business")}

	var procMu sync.Mutex
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperConsumerProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperDBEnv+"="+url)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	procs := []*exec.Cmd{start(), start()}
	t.Cleanup(func() {
		procMu.Lock()
		defer procMu.Unlock()
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	})
	seen := func() int {
		var n int
		if err := db.GetContext(ctx, &n, `SELECT count(*) FROM outbox_seen`); err != nil {
			t.Fatal(err)
		}
		return n
	}

	emitTx := func(acct int64, n int, before func() error) error {
		return db.WithTx(ctx, func(tx *sqlx.Tx) error {
			events := make([]store.Event, n)
			for i := range events {
				events[i] = store.Event{Name: store.EventContactUpdated, Data: map[string]any{"i": i}}
			}
			if _, err := store.EmitAll(ctx, tx, acct, events); err != nil {
				return err
			}
			if before != nil {
				return before()
			}
			return nil
		})
	}
	var wg sync.WaitGroup
	// Four emitters: every fifth transaction commits late (after later ones
	// took higher ids), every seventh rolls back.
	for g := range 4 {
		wg.Go(func() {
			for i := range 80 {
				acct := accts[(g+i)%len(accts)]
				var before func() error
				switch {
				case i%7 == 3:
					before = func() error { return errRollback }
				case i%5 == 1:
					before = func() error { time.Sleep(3 * time.Millisecond); return nil }
				}
				if err := emitTx(acct, 1+i%4, before); err != nil && !errors.Is(err, errRollback) {
					t.Error(err)
					return
				}
			}
		})
	}
	// And explicitly: a transaction takes lower ids, another commits first.
	wg.Go(func() {
		for range 20 {
			first, second := make(chan struct{}), make(chan struct{})
			var inner sync.WaitGroup
			inner.Go(func() {
				if err := emitTx(accts[0], 2, func() error { close(first); <-second; return nil }); err != nil {
					t.Error(err)
				}
			})
			<-first
			if err := emitTx(accts[0], 2, nil); err != nil {
				t.Error(err)
			}
			close(second)
			inner.Wait()
		}
	})
	// A new account arrives midway: its cursors are created on the way.
	wg.Go(func() {
		acct := newAccount(t, db, "business")
		for i := range 20 {
			if err := emitTx(acct, 3, nil); err != nil {
				t.Error(err)
			}
			if i == 10 {
				time.Sleep(5 * time.Millisecond)
			}
		}
	})

	// Kill -9 one process once it has been at work, while events still arrive.
	for i := 0; i < 3000 && seen() < 60; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if seen() < 60 {
		t.Fatalf("the consumer processes handled only %d events", seen())
	}
	procMu.Lock()
	killed := procs[0].Process.Pid
	if err := procs[0].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = procs[0].Wait()
	procs[0] = start()
	procMu.Unlock()
	wg.Wait()

	var committed []int64
	if err := db.SelectContext(ctx, &committed, `SELECT id FROM events ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6000 && seen() < 2*len(committed); i++ {
		time.Sleep(10 * time.Millisecond)
	}

	type row struct {
		Account int64  `db:"account_id"`
		XID     string `db:"xid"`
		ID      int64  `db:"event_id"`
		PID     int    `db:"pid"`
	}
	for _, consumer := range []string{"alpha", "beta"} {
		var rows []row
		if err := db.SelectContext(ctx, &rows, `SELECT s.account_id, e.xid::text AS xid, s.event_id, s.pid
FROM outbox_seen s LEFT JOIN events e ON e.id = s.event_id WHERE s.consumer = $1 ORDER BY s.seq`, consumer); err != nil {
			t.Fatal(err)
		}
		got := make([]int64, len(rows))
		last := map[int64][2]uint64{}
		pids := map[int]int{}
		for i, r := range rows {
			got[i] = r.ID
			pids[r.PID]++
			xid, err := strconv.ParseUint(r.XID, 10, 64)
			if err != nil {
				t.Fatalf("%s: event %d is not in the outbox (%q)", consumer, r.ID, r.XID)
			}
			pos := [2]uint64{xid, uint64(r.ID)}
			if prev, ok := last[r.Account]; ok && (pos[0] < prev[0] || pos[0] == prev[0] && pos[1] <= prev[1]) {
				t.Fatalf("%s: account %d: event %v handled after %v", consumer, r.Account, pos, prev)
			}
			last[r.Account] = pos
		}
		slices.Sort(got)
		if !slices.Equal(got, committed) {
			t.Fatalf("%s handled %d events, want each of the %d committed ones once", consumer, len(got), len(committed))
		}
		t.Logf("%s: %d events by process (killed: %d): %v", consumer, len(got), killed, pids)
	}
}

// TestSlowConsumerDoesNotHoldBackAnother blocks one consumer inside its
// handler and lets another handle everything meanwhile, including events
// committed after the slow one's transaction began.
func TestSlowConsumerDoesNotHoldBackAnother(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	if _, err := db.ExecContext(ctx, seenTable); err != nil {
		t.Fatal(err)
	}
	acct := newAccount(t, db, "business")
	emitN := func(n int) {
		events := make([]store.Event, n)
		for i := range events {
			events[i] = store.Event{Name: store.EventListJoined, Data: map[string]any{"i": i}}
		}
		emit(t, db, acct, events...)
	}
	count := func(consumer string) int {
		var n int
		if err := db.GetContext(ctx, &n, `SELECT count(*) FROM outbox_seen WHERE consumer = $1`, consumer); err != nil {
			t.Fatal(err)
		}
		return n
	}
	emitN(10)
	entered, gate := make(chan struct{}), make(chan struct{})
	var once sync.Once
	record := recordSeen("slow")
	slow := db.NewConsumer("slow", func(ctx context.Context, tx *sqlx.Tx, events []store.StoredEvent) error {
		once.Do(func() { close(entered); <-gate }) // slow work before the writes
		return record(ctx, tx, events)
	}, store.ConsumerOptions{Batch: 4, PollInterval: 10 * time.Millisecond})
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = slow.Run(runCtx) })
	defer func() { stop(); wg.Wait() }()
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow consumer never started")
	}
	for range 5 {
		emitN(4)
	}
	fast := db.NewConsumer("fast", recordSeen("fast"), store.ConsumerOptions{Batch: 3})
	n, err := fast.CatchUp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 30 || count("fast") != 30 || count("slow") != 0 {
		t.Fatalf("while the slow consumer waits: fast handled %d (%d recorded), slow %d; want 30, 30, 0", n, count("fast"), count("slow"))
	}
	close(gate)
	for i := 0; i < 3000 && count("slow") < 30; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if got := count("slow"); got != 30 {
		t.Fatalf("the slow consumer handled %d events, want 30", got)
	}
	if _, err := fast.CatchUp(ctx); err != nil || count("fast") != 30 {
		t.Fatalf("fast again: %d recorded (%v)", count("fast"), err)
	}
}

// TestConsumerHandlerErrorRollsBackItsCursor: a failing handler's writes and
// cursor move are undone together, and the batch comes again.
func TestConsumerHandlerErrorRollsBackItsCursor(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	if _, err := db.ExecContext(ctx, seenTable); err != nil {
		t.Fatal(err)
	}
	acct := newAccount(t, db, "business")
	emit(t, db, acct, store.Event{Name: store.EventListJoined, Data: map[string]any{}}, store.Event{Name: store.EventListLeft, Data: map[string]any{}})
	record := recordSeen("flaky")
	fail := true
	c := db.NewConsumer("flaky", func(ctx context.Context, tx *sqlx.Tx, events []store.StoredEvent) error {
		if err := record(ctx, tx, events); err != nil {
			return err
		}
		if fail {
			return errRollback
		}
		return nil
	}, store.ConsumerOptions{})
	if _, err := c.CatchUp(ctx); !errors.Is(err, errRollback) {
		t.Fatalf("CatchUp: %v, want the handler's error", err)
	}
	var n int
	if err := db.GetContext(ctx, &n, `SELECT count(*) FROM outbox_seen`); err != nil || n != 0 {
		t.Fatalf("%d rows of a failed handler kept (%v)", n, err)
	}
	fail = false
	if n, err := c.CatchUp(ctx); err != nil || n != 2 {
		t.Fatalf("retry: %d events, %v", n, err)
	}
	if n, err := c.CatchUp(ctx); err != nil || n != 0 {
		t.Fatalf("a third round handled %d events again (%v)", n, err)
	}
}

// TestConsumerNamesPassOverOtherEvents: a consumer with Names gets exactly
// its events, in order, once, with their payloads, in windows whose last
// event is often one it does not handle; its cursor still ends after the
// last event, so nothing is offered again.
func TestConsumerNamesPassOverOtherEvents(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	var events []store.Event
	var want []string
	for i := range 23 {
		name := store.EventEmailSent
		if i%5 == 2 {
			name = store.EventContactCreated
		}
		if i%7 == 6 {
			name = store.EventListJoined
		}
		events = append(events, store.Event{Name: name, Data: map[string]any{"n": i}})
	}
	ids := emit(t, db, acct, events...)
	for i, e := range events {
		if e.Name != store.EventEmailSent {
			want = append(want, ids[i]+" "+e.Name+" "+strconv.Itoa(i))
		}
	}
	// Every name and none at all pass the same way.
	emit(t, db, acct, store.Event{Name: store.EventEmailSent, Data: map[string]any{"n": 23}})

	var got []string
	calls := 0
	c := db.NewConsumer("named", func(_ context.Context, _ *sqlx.Tx, batch []store.StoredEvent) error {
		calls++
		for _, e := range batch {
			var p struct{ N int }
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				return err
			}
			got = append(got, e.PublicID+" "+e.Name+" "+strconv.Itoa(p.N))
		}
		return nil
	}, store.ConsumerOptions{Batch: 4, Names: []string{store.EventContactCreated, store.EventListJoined}})
	n, err := c.CatchUp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(want) || !slices.Equal(got, want) {
		t.Fatalf("handled %d events:\n%v\nwant %d:\n%v", n, got, len(want), want)
	}
	if calls >= 6 {
		t.Errorf("handler called %d times for 6 windows, some without events of its own", calls)
	}
	cursorAtTheEnd(t, db, "named")
	if n, err := c.CatchUp(ctx); err != nil || n != 0 {
		t.Fatalf("a second round handled %d events (%v)", n, err)
	}
}

// TestPurgeKeepsEventsUntilEveryConsumerPassed: retention deletes an event
// once all registered consumers are past it, or after EventRetention.
func TestPurgeKeepsEventsUntilEveryConsumerPassed(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	noop := func(context.Context, *sqlx.Tx, []store.StoredEvent) error { return nil }
	left := func() []string {
		var ids []string
		if err := db.SelectContext(ctx, &ids, `SELECT public_id FROM events WHERE account_id = $1 ORDER BY id`, acct); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	now := time.Now()
	ids := emit(t, db, acct, store.Event{Name: store.EventListJoined, Data: map[string]any{}}, store.Event{Name: store.EventListLeft, Data: map[string]any{}})
	if _, err := db.NewConsumer("a", noop, store.ConsumerOptions{}).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Purge(ctx, now); err != nil {
		t.Fatal(err)
	}
	if got := left(); !slices.Equal(got, ids) {
		t.Fatalf("purged before the webhook fan-out passed: left %v", got)
	}
	if _, err := db.DispatchEvents(ctx, now, 10); err != nil {
		t.Fatal(err)
	}
	if err := db.Purge(ctx, now); err != nil {
		t.Fatal(err)
	}
	if got := left(); len(got) != 0 {
		t.Fatalf("left %v after every consumer passed", got)
	}

	// Consumer b is registered but stuck on the first of two new events.
	ids = emit(t, db, acct, store.Event{Name: store.EventListJoined, Data: map[string]any{}}, store.Event{Name: store.EventListLeft, Data: map[string]any{}})
	stuck := db.NewConsumer("b", func(context.Context, *sqlx.Tx, []store.StoredEvent) error { return errRollback }, store.ConsumerOptions{})
	if _, err := stuck.CatchUp(ctx); !errors.Is(err, errRollback) {
		t.Fatalf("stuck consumer: %v", err)
	}
	if _, err := db.NewConsumer("a", noop, store.ConsumerOptions{}).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DispatchEvents(ctx, now, 10); err != nil {
		t.Fatal(err)
	}
	if err := db.Purge(ctx, now); err != nil {
		t.Fatal(err)
	}
	if got := left(); !slices.Equal(got, ids) {
		t.Fatalf("purged although consumer b has not passed: left %v", got)
	}
	// After the retention period an event goes anyway.
	if _, err := db.ExecContext(ctx, `UPDATE events SET created_at = $2 WHERE public_id = $1`, ids[0], now.Add(-store.EventRetention-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := db.Purge(ctx, now); err != nil {
		t.Fatal(err)
	}
	if got := left(); !slices.Equal(got, ids[1:]) {
		t.Fatalf("after the retention period: left %v, want %v", got, ids[1:])
	}
}

// TestTagChangesReachAConsumer: adding tags through POST /contacts/{id}/tags
// (AddTags), an upsert, a bulk request and an import emits contact.updated
// with changed ["tags"], which a consumer follows.
func TestTagChangesReachAConsumer(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	c := upsert(t, db, acct, store.ContactInput{Email: "tags@example.com", FirstName: ptr("Tina")}).Contact
	type tagged struct {
		Contact struct {
			ID   int64    `json:"id"`
			Tags []string `json:"tags"`
		} `json:"contact"`
		Changed []string `json:"changed"`
	}
	var got []tagged
	follower := db.NewConsumer("tag-follower", func(_ context.Context, _ *sqlx.Tx, events []store.StoredEvent) error {
		for _, e := range events {
			if e.Name != store.EventContactUpdated {
				continue
			}
			var p tagged
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				return err
			}
			if slices.Contains(p.Changed, "tags") {
				got = append(got, p)
			}
		}
		return nil
	}, store.ConsumerOptions{})
	if _, err := follower.CatchUp(ctx); err != nil || len(got) != 0 {
		t.Fatalf("before: %v %v", got, err)
	}

	if _, err := db.AddTags(ctx, acct, apiActor, c.ID, []string{"vip"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddTags(ctx, acct, apiActor, c.ID, []string{"vip"}); err != nil { // no change, no event
		t.Fatal(err)
	}
	upsert(t, db, acct, store.ContactInput{Email: "tags@example.com", Tags: []string{"kunde"}})
	if _, err := db.BulkUpsertContacts(ctx, acct, apiActor, store.BulkContacts{
		Contacts: []store.ContactInput{{Email: "tags@example.com"}}, Tags: []string{"bulk"}}); err != nil {
		t.Fatal(err)
	}
	startedImport(t, db, acct, "email;tags\ntags@example.com;importiert\n", store.ImportSettings{Mapping: []string{"email", "tags"}})
	if ran, err := imports.NewWorker(db, imports.WorkerOptions{}).RunOnce(ctx); !ran || err != nil {
		t.Fatalf("import: %v %v", ran, err)
	}
	if _, err := follower.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"vip"}, {"vip", "kunde"}, {"vip", "kunde", "bulk"}, {"vip", "kunde", "bulk", "importiert"}}
	if len(got) != len(want) {
		t.Fatalf("tag events %+v, want %d", got, len(want))
	}
	for i, w := range want {
		slices.Sort(w)
		slices.Sort(got[i].Contact.Tags)
		if got[i].Contact.ID != c.ID || !slices.Equal(got[i].Changed, []string{"tags"}) || !slices.Equal(got[i].Contact.Tags, w) {
			t.Errorf("event %d: %+v, want tags %v and changed [tags]", i, got[i], w)
		}
	}
}

// TestConsumerProcessesShareAccounts: while one process of a consumer is busy
// with one account, another process of the same consumer takes the others
// (the claim locks one cursor, not all of them).
func TestConsumerProcessesShareAccounts(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	a, b := dbtest.Open(t, url), dbtest.Open(t, url)
	if _, err := a.ExecContext(ctx, seenTable); err != nil {
		t.Fatal(err)
	}
	accts := []int64{newAccount(t, a, "business"), newAccount(t, a, "business"), newAccount(t, a, "business")}
	for _, acct := range accts {
		emit(t, a, acct, store.Event{Name: store.EventListJoined, Data: map[string]any{}}, store.Event{Name: store.EventListLeft, Data: map[string]any{}})
	}
	entered, gate := make(chan int64, 1), make(chan struct{})
	var once sync.Once
	record := recordSeen("shared")
	busy := a.NewConsumer("shared", func(ctx context.Context, tx *sqlx.Tx, events []store.StoredEvent) error {
		once.Do(func() { entered <- events[0].AccountID; <-gate })
		return record(ctx, tx, events)
	}, store.ConsumerOptions{})
	done := make(chan error, 1)
	go func() { _, err := busy.CatchUp(ctx); done <- err }()
	var held int64
	select {
	case held = <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the first process never started")
	}
	n, err := b.NewConsumer("shared", recordSeen("shared"), store.ConsumerOptions{}).CatchUp(ctx)
	if err != nil || n != 4 {
		t.Fatalf("the second process handled %d events (%v), want the other two accounts' 4", n, err)
	}
	var others int
	if err := a.GetContext(ctx, &others, `SELECT count(*) FROM outbox_seen WHERE account_id <> $1`, held); err != nil || others != 4 {
		t.Fatalf("%d events of the other accounts recorded (%v)", others, err)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var total int
	if err := a.GetContext(ctx, &total, `SELECT count(*) FROM outbox_seen`); err != nil || total != 6 {
		t.Fatalf("%d events recorded in all (%v), want 6", total, err)
	}
}

// TestNotificationsWakeConsumers: with the process's one notification
// listener running, a consumer that would next poll in an hour handles new
// events as soon as they commit, and the key-change channel shares that
// listener's connection.
func TestNotificationsWakeConsumers(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	db := dbtest.Open(t, url)
	if _, err := db.ExecContext(ctx, seenTable); err != nil {
		t.Fatal(err)
	}
	acct := newAccount(t, db, "business")
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	wg.Go(func() { _ = db.ListenNotifications(runCtx, url, nil) })
	c := db.NewConsumer("woken", recordSeen("woken"), store.ConsumerOptions{PollInterval: time.Hour})
	wg.Go(func() { _ = c.Run(runCtx) })

	// The listener's connection is there and listens on both channels.
	var listening int
	for deadline := time.Now().Add(30 * time.Second); listening != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the notification listener never listened")
		}
		if err := db.GetContext(ctx, &listening, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND query ILIKE 'LISTEN%rundbrief_events%'`); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.ListenNotifications(ctx, url, nil); err == nil || !strings.Contains(err.Error(), "listener connections") {
		t.Fatalf("a second listener: %v, want it refused", err)
	}

	emit(t, db, acct, store.Event{Name: store.EventListJoined, Data: map[string]any{"i": 1}},
		store.Event{Name: store.EventListJoined, Data: map[string]any{"i": 2}})
	var seen int
	for deadline := time.Now().Add(30 * time.Second); seen != 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 events handled without a poll", seen)
		}
		if err := db.GetContext(ctx, &seen, `SELECT count(*) FROM outbox_seen WHERE consumer = 'woken'`); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOtherDatabasesDoNotHoldBackTheOutbox: a transaction left open in another
// database of the cluster cannot insert events here, so it must not hold the
// horizon back; one left open in this database must, until it ends.
func TestOtherDatabasesDoNotHoldBackTheOutbox(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	if _, err := db.ExecContext(ctx, seenTable); err != nil {
		t.Fatal(err)
	}
	acct := newAccount(t, db, "business")
	openXact := func(on *store.DB) (*sqlx.Tx, string) {
		tx, err := on.BeginTxx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var xid string // taking one, as a write does
		if err := tx.GetContext(ctx, &xid, `SELECT pg_current_xact_id()::text`); err != nil {
			t.Fatal(err)
		}
		return tx, xid
	}
	horizonAbove := func(xid string) bool {
		var above bool
		if err := db.GetContext(ctx, &above, `SELECT outbox_horizon() > $1::xid8`, xid); err != nil {
			t.Fatal(err)
		}
		return above
	}

	elsewhere, otherXid := openXact(dbtest.NewDB(t))
	defer elsewhere.Rollback()
	emit(t, db, acct, store.Event{Name: store.EventListJoined, Data: map[string]any{"i": 1}})
	if !horizonAbove(otherXid) {
		t.Fatal("a transaction open in another database holds the horizon back")
	}
	c := db.NewConsumer("horizon", recordSeen("horizon"), store.ConsumerOptions{})
	done := make(chan error, 1)
	go func() { _, err := c.CatchUp(ctx); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a transaction open in another database held the outbox back")
	}
	var seen int
	if err := db.GetContext(ctx, &seen, `SELECT count(*) FROM outbox_seen`); err != nil || seen != 1 {
		t.Fatalf("handled %d events (%v), want 1", seen, err)
	}

	here, xid := openXact(db)
	emit(t, db, acct, store.Event{Name: store.EventListJoined, Data: map[string]any{"i": 2}}) // a later transaction's
	if horizonAbove(xid) {
		t.Fatal("the horizon passed a transaction still open in this database")
	}
	if err := here.Rollback(); err != nil {
		t.Fatal(err)
	}
	if !horizonAbove(xid) {
		t.Fatal("the horizon stayed below a transaction that has ended")
	}
}

// listenEvents listens on the events channel past the throttle's window of
// what the test wrote before, and returns drain: the number of notifications
// that arrive until none came for wait.
func listenEvents(t *testing.T, url string) (drain func(wait time.Duration) int) {
	t.Helper()
	l := pq.NewListener(url, 10*time.Millisecond, time.Second, nil)
	t.Cleanup(func() { _ = l.Close() })
	if err := l.Listen("rundbrief_events"); err != nil {
		t.Fatal(err)
	}
	drain = func(wait time.Duration) int {
		n := 0
		for {
			select {
			case <-l.Notify:
				n++
			case <-time.After(wait):
				return n
			}
		}
	}
	time.Sleep(20 * time.Millisecond)
	drain(50 * time.Millisecond)
	return drain
}

// TestEventNotificationsAreThrottled: a burst of event-writing transactions
// sends far fewer notifications than transactions (each NOTIFY serialises
// commits server-wide), yet a lone write still notifies, and a consumer that
// polls slowly still handles every event of the burst.
func TestEventNotificationsAreThrottled(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	db := dbtest.Open(t, url)
	if _, err := db.ExecContext(ctx, seenTable); err != nil {
		t.Fatal(err)
	}
	acct := newAccount(t, db, "business")
	drain := listenEvents(t, url)

	emit(t, db, acct, store.Event{Name: store.EventListJoined, Data: map[string]any{"i": 0}})
	if n := drain(500 * time.Millisecond); n != 1 {
		t.Fatalf("a lone write sent %d notifications, want 1", n)
	}

	const burst = 60
	start := time.Now()
	for i := range burst {
		emit(t, db, acct, store.Event{Name: store.EventListJoined, Data: map[string]any{"i": i + 1}})
	}
	elapsed := time.Since(start)
	n := drain(500 * time.Millisecond)
	if limit := int(elapsed/(10*time.Millisecond)) + 2; n < 1 || n > limit || n >= burst {
		t.Fatalf("%d writes in %s sent %d notifications, want 1 to %d", burst, elapsed, n, min(limit, burst-1))
	}

	c := db.NewConsumer("throttled", recordSeen("throttled"), store.ConsumerOptions{PollInterval: 200 * time.Millisecond})
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	wg.Go(func() { _ = c.Run(runCtx) })
	var seen int
	for deadline := time.Now().Add(30 * time.Second); seen != burst+1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events handled", seen, burst+1)
		}
		if err := db.GetContext(ctx, &seen, `SELECT count(*) FROM outbox_seen WHERE consumer = 'throttled'`); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOneNotifyingTransactionAtATime: while a transaction that notified is
// still open, another one that writes events leaves the wake-up to it, even
// when the throttle's 10 ms are long past, so that a burst of writers does
// not queue its commits behind NOTIFY's lock one by one. The wake-up still
// comes, with the first transaction's commit.
func TestOneNotifyingTransactionAtATime(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	db := dbtest.Open(t, url)
	acct := newAccount(t, db, "business")
	drain := listenEvents(t, url)

	first, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Rollback() }()
	if _, err := store.EmitAll(ctx, first, acct, []store.Event{{Name: store.EventListJoined, Data: map[string]any{"i": 1}}}); err != nil {
		t.Fatal(err)
	}
	// Long past the throttle's window, as far as the time of the last
	// notification goes.
	if _, err := db.ExecContext(ctx, `SELECT setval('events_notified_at_ms', 1)`); err != nil {
		t.Fatal(err)
	}
	emit(t, db, acct, store.Event{Name: store.EventListJoined, Data: map[string]any{"i": 2}})
	if n := drain(300 * time.Millisecond); n != 0 {
		t.Fatalf("a write committed while another notifying one was open sent %d notifications, want 0", n)
	}
	if err := first.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := drain(500 * time.Millisecond); n != 1 {
		t.Fatalf("the first transaction's commit sent %d notifications, want 1", n)
	}
}

// TestConsumerRoundsKeepTheirGap: under a steady stream of events a
// consumer's rounds start at least MinGap apart, however often it polls or
// is woken, and every event is still handled once.
func TestConsumerRoundsKeepTheirGap(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	var batches, handled atomic.Int64
	c := db.NewConsumer("gap", func(_ context.Context, _ *sqlx.Tx, events []store.StoredEvent) error {
		batches.Add(1)
		handled.Add(int64(len(events)))
		return nil
	}, store.ConsumerOptions{PollInterval: 2 * time.Millisecond, MinGap: 100 * time.Millisecond})
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Run(runCtx) })
	defer func() { stop(); wg.Wait() }()

	// An event every 5 ms for a second: polled every 2 ms, the consumer would
	// take them a few at a time in some 200 rounds.
	start := time.Now()
	const events = 200
	for range events {
		emit(t, db, acct, store.Event{Name: store.EventContactUpdated, Data: map[string]any{}})
		time.Sleep(5 * time.Millisecond)
	}
	for i := 0; i < 3000 && handled.Load() < events; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	if handled.Load() != events {
		t.Fatalf("handled %d events, want %d", handled.Load(), events)
	}
	// One batch per round at most; a round every 100 ms, and one more.
	if most := int64(elapsed/(100*time.Millisecond)) + 2; batches.Load() > most {
		t.Errorf("%d batches in %v: rounds closer than the gap (at most %d)", batches.Load(), elapsed.Round(time.Millisecond), most)
	}
}

// TestDrainEndsWithoutAnEmptyStep: a drain stops after the step that leaves
// nothing below the horizon (no other cursor had events, the window was not
// full) instead of opening one more transaction that claims nothing; while
// another account or a full window may hold more, it goes on.
func TestDrainEndsWithoutAnEmptyStep(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	a, b := newAccount(t, db, "business"), newAccount(t, db, "business")
	ev := store.Event{Name: store.EventContactUpdated, Data: map[string]any{}}
	for _, named := range []bool{false, true} {
		opts := store.ConsumerOptions{Batch: 2}
		name := "more"
		if named {
			opts.Names, name = []string{store.EventContactUpdated}, "more-named"
		}
		c := db.NewConsumer(name, func(context.Context, *sqlx.Tx, []store.StoredEvent) error { return nil }, opts)
		if _, err := c.Drain(ctx); err != nil { // cursors for both accounts
			t.Fatal(err)
		}
		step := func(wantN int, wantMore bool) {
			t.Helper()
			n, claimed, more, err := c.StepMore(ctx)
			if err != nil || !claimed || n != wantN || more != wantMore {
				t.Fatalf("named %v: step %d events, claimed %v, more %v (%v); want %d, true, %v", named, n, claimed, more, err, wantN, wantMore)
			}
		}
		// One account, three events, windows of two: full, then the rest.
		emit(t, db, a, ev, ev, ev)
		step(2, true)
		step(1, false)
		// Two accounts with one event each: the first step knows of the other.
		emit(t, db, a, ev)
		emit(t, db, b, ev)
		step(1, true)
		step(1, false)
		if n, claimed, _, err := c.StepMore(ctx); err != nil || claimed || n != 0 {
			t.Fatalf("named %v: a step after the drain claimed %v with %d events (%v)", named, claimed, n, err)
		}
	}
}

// TestAccountNamesPassAccountsWithoutInterest: a consumer with AccountNames
// gets of each account only the events the expression names for it (all of
// them for NULL); an account with none has its cursor moved past its events
// without the handler seeing them, but only past those below the horizon:
// an event of a transaction still open then reaches the handler once the
// account has something to act on.
func TestAccountNamesPassAccountsWithoutInterest(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	if _, err := db.ExecContext(ctx, `CREATE TABLE outbox_interest (account_id bigint PRIMARY KEY, names text[])`); err != nil {
		t.Fatal(err)
	}
	interest := func(acct int64, names any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, `INSERT INTO outbox_interest VALUES ($1, $2)
ON CONFLICT (account_id) DO UPDATE SET names = excluded.names`, acct, names); err != nil {
			t.Fatal(err)
		}
	}
	none, some, all := newAccount(t, db, "business"), newAccount(t, db, "business"), newAccount(t, db, "business")
	interest(none, pq.StringArray{})
	interest(some, pq.StringArray{store.EventListJoined, store.EventContactDeleted})
	// all has no row: NULL, every event.
	mix := func(acct int64, n int) []string {
		names := []string{store.EventContactCreated, store.EventListJoined, store.EventEmailSent}
		var events []store.Event
		for i := range n {
			events = append(events, store.Event{Name: names[i%3], Data: map[string]any{"n": i}})
		}
		ids := emit(t, db, acct, events...)
		for i := range ids {
			ids[i] += " " + names[i%3]
		}
		return ids
	}
	noneIDs, someIDs, allIDs := mix(none, 7), mix(some, 7), mix(all, 7)

	got := map[int64][]string{}
	c := db.NewConsumer("interested", func(_ context.Context, _ *sqlx.Tx, batch []store.StoredEvent) error {
		for _, e := range batch {
			got[e.AccountID] = append(got[e.AccountID], e.PublicID+" "+e.Name)
		}
		return nil
	}, store.ConsumerOptions{Batch: 3, AccountNames: `SELECT i.names FROM outbox_interest i WHERE i.account_id = c.account_id`})

	// An event of none's stays uncommitted while the consumer passes the
	// account, and one committed after it lies above the horizon.
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	open, err := store.EmitAll(ctx, tx, none, []store.Event{{Name: store.EventContactCreated, Data: map[string]any{"n": "open"}}})
	if err != nil {
		t.Fatal(err)
	}
	after := mix(none, 1)
	if _, err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	var wantSome []string
	for _, id := range someIDs {
		if strings.HasSuffix(id, " "+store.EventListJoined) {
			wantSome = append(wantSome, id)
		}
	}
	if len(got[none]) != 0 || !slices.Equal(got[some], wantSome) || !slices.Equal(got[all], allIDs) {
		t.Fatalf("handled\nnone %v (want nothing)\nsome %v (want %v)\nall %v (want %v)", got[none], got[some], wantSome, got[all], allIDs)
	}
	// none's cursor stands at its last event below the horizon.
	var at string
	if err := db.GetContext(ctx, &at, `SELECT e.public_id FROM outbox_cursors k JOIN events e
  ON e.account_id = k.account_id AND (e.xid, e.id) = (k.last_xid, k.last_id)
WHERE k.consumer = 'interested' AND k.account_id = $1`, none); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(noneIDs[len(noneIDs)-1], at+" ") {
		t.Fatalf("none's cursor at %s, want the last of %v", at, noneIDs)
	}

	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	interest(none, nil)
	if _, err := c.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{open[0] + " " + store.EventContactCreated, after[0]}
	if !slices.Equal(got[none], want) {
		t.Fatalf("none, interested again, handled %v; want the open transaction's event and the later one %v", got[none], want)
	}
}

// TestConsumerPayloadHandsOnlyItsPart: a consumer with a Payload gets that
// expression's value as each event's payload, and is not handed the events
// for which it is NULL (nor those outside its Names), though its cursor moves
// past them all.
func TestConsumerPayloadHandsOnlyItsPart(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	var events []store.Event
	var want []string
	for i := range 11 {
		name := store.EventContactCreated
		if i%4 == 3 {
			name = store.EventEmailSent
		}
		events = append(events, store.Event{Name: name, Data: map[string]any{"n": i, "bulk": strings.Repeat("x", 500)}})
		if name == store.EventContactCreated && i%2 == 0 {
			want = append(want, fmt.Sprintf("%s %d", name, i/2))
		}
	}
	emit(t, db, acct, events...)
	var got []string
	c := db.NewConsumer("part", func(_ context.Context, _ *sqlx.Tx, batch []store.StoredEvent) error {
		for _, e := range batch {
			var p map[string]int
			if err := json.Unmarshal(e.Payload, &p); err != nil || len(p) != 1 {
				return fmt.Errorf("payload %s (%v)", e.Payload, err)
			}
			got = append(got, fmt.Sprintf("%s %d", e.Name, p["half"]))
		}
		return nil
	}, store.ConsumerOptions{Batch: 3, Names: []string{store.EventContactCreated},
		Payload: `CASE WHEN (e.payload->>'n')::int % 2 = 0 THEN jsonb_build_object('half', (e.payload->>'n')::int / 2) END`})
	n, err := c.CatchUp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(want) || !slices.Equal(got, want) {
		t.Fatalf("handled %d: %v; want %v", n, got, want)
	}
	cursorAtTheEnd(t, db, "part")
}

// cursorAtTheEnd fails the test when consumer's cursor of some account has
// events after it.
func cursorAtTheEnd(t *testing.T, db *store.DB, consumer string) {
	t.Helper()
	var behind bool
	if err := db.GetContext(context.Background(), &behind, `SELECT EXISTS (SELECT 1 FROM events e JOIN outbox_cursors k
  ON k.consumer = $1 AND k.account_id = e.account_id WHERE (e.xid, e.id) > (k.last_xid, k.last_id))`, consumer); err != nil || behind {
		t.Fatalf("cursor of %s left events behind it: %v (%v)", consumer, behind, err)
	}
}
