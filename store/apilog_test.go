package store_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// lossCounter counts the rows an API log writer reports lost.
type lossCounter struct{ n atomic.Int64 }

func (c *lossCounter) CountAPILogLost(n int) { c.n.Add(int64(n)) }

// apiLogRows reads every API log row of an account, oldest first.
func apiLogRows(t *testing.T, db *store.DB, acct int64) []store.APILogEntry {
	t.Helper()
	var rows []store.APILogEntry
	if err := db.SelectContext(context.Background(), &rows, `SELECT id, account_id, key_id, request_id, method, path, status, ip, origin,
user_agent, duration_us, created_at FROM api_log WHERE account_id = $1 ORDER BY id`, acct); err != nil {
		t.Fatal(err)
	}
	return rows
}

func logEntry(acct int64, i int) store.APILogEntry {
	return store.APILogEntry{AccountID: acct, RequestID: fmt.Sprint("req_", i), Method: "GET", Path: "/v1/me", Status: 200,
		IP: "203.0.113.7", CreatedAt: time.Now()}
}

// A NUL byte or invalid UTF-8 in any logged string, or a cut through a
// multi-byte character, made PostgreSQL refuse the COPY and lost the batch
// with every other account's rows.
func TestAPILogWriterStoresHostileStrings(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	w := store.NewAPILogWriter(db, nil)
	hostile := []store.APILogEntry{
		{Path: "/v1/contacts/\x00"},
		{UserAgent: "curl/8 \xff\xfe"},
		{Origin: "https://\xff.example"},
		{UserAgent: strings.Repeat("a", 299) + "ä"},           // 301 bytes: the 300-byte cut falls inside ä
		{UserAgent: strings.Repeat("ü", 400)},                 // 800 bytes
		{Path: "/v1/contacts?q=" + strings.Repeat("€", 2000)}, // 6,000 bytes
		{Method: "G\x00T", RequestID: "req_\xc3", IP: "\x00"},
	}
	w.Add(ctx, logEntry(acct, 0))
	for i, e := range hostile {
		e.AccountID, e.Status, e.CreatedAt = acct, 404, time.Now()
		e.RequestID = cmpOr(e.RequestID, fmt.Sprint("req_h", i))
		e.Method = cmpOr(e.Method, "GET")
		w.Add(ctx, e)
	}
	w.Add(ctx, logEntry(acct, 1))
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rows := apiLogRows(t, db, acct)
	if len(rows) != len(hostile)+2 {
		t.Fatalf("%d rows stored, want %d", len(rows), len(hostile)+2)
	}
	for _, r := range rows {
		for _, s := range []string{r.RequestID, r.Method, r.Path, r.IP, r.Origin, r.UserAgent} {
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
				t.Errorf("row %d: stored %q", r.ID, s)
			}
		}
		if len(r.UserAgent) > 300 || len(r.Origin) > 300 || len(r.Path) > 2048 {
			t.Errorf("row %d: not cut to its limit: %d, %d, %d bytes", r.ID, len(r.UserAgent), len(r.Origin), len(r.Path))
		}
	}
	for i, want := range map[int]string{
		1: "/v1/contacts/\uFFFD",
		2: "curl/8 \uFFFD",
		3: "https://\uFFFD.example",
		4: strings.Repeat("a", 299),
		5: strings.Repeat("ü", 150),
	} {
		if got := rows[i].Path + rows[i].UserAgent + rows[i].Origin; !strings.HasSuffix(got, want) {
			t.Errorf("row %d: %q, want it to end in %q", i, got, want)
		}
	}
	if p := rows[6].Path; !strings.HasPrefix(p, "/v1/contacts?q=€") || !strings.HasSuffix(p, "€") {
		t.Errorf("long path cut off a character: …%q", p[len(p)-8:])
	}
}

func cmpOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// A row the database refuses for good (here: its account is gone) must not
// take its batch with it: the others are written one by one, and only that
// row is lost, and counted.
func TestAPILogWriterLosesOnlyTheBadRow(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	lost := &lossCounter{}
	w := store.NewAPILogWriter(db, nil).CountLosses(lost)
	for i := range 10 {
		e := logEntry(acct, i)
		if i == 4 {
			e.AccountID = acct + 1_000_000 // no such account: a foreign key violation
		}
		w.Add(ctx, e)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rows := apiLogRows(t, db, acct)
	if len(rows) != 9 || lost.n.Load() != 1 {
		t.Fatalf("%d rows stored, %d counted lost; want 9 and 1", len(rows), lost.n.Load())
	}
	for i, r := range rows {
		if i >= 4 {
			i++ // req_4 was the bad row
		}
		if want := fmt.Sprint("req_", i); r.RequestID != want {
			t.Errorf("row %s, want %s", r.RequestID, want)
		}
	}
}

// A batch the database cannot take right now (here: the write's context ends)
// is kept and written by the next attempt, not thrown away.
func TestAPILogWriterKeepsRowsItCouldNotWriteYet(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	lost := &lossCounter{}
	w := store.NewAPILogWriter(db, nil).CountLosses(lost)
	for i := range 5 {
		w.Add(ctx, logEntry(acct, i))
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.Flush(gone); err == nil {
		t.Fatal("a write without a database connection succeeded")
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if rows := apiLogRows(t, db, acct); len(rows) != 5 || lost.n.Load() != 0 {
		t.Fatalf("%d rows stored, %d lost; want 5 and 0", len(rows), lost.n.Load())
	}
}

// With 20,000 rows queued, Add dropped every further row. Now it waits for
// room (back-pressure), and a row whose request ends while waiting is set
// aside and written with the next batch.
func TestAPILogWriterNeverDropsAFullQueue(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	lost := &lossCounter{}
	w := store.NewAPILogWriter(db, nil).CountLosses(lost)
	const queue, extra = 20_000, 50
	for i := range queue {
		w.Add(ctx, logEntry(acct, i))
	}
	// The queue is full: a request that ended meanwhile still gets its row.
	ended, cancel := context.WithCancel(ctx)
	cancel()
	w.Add(ended, logEntry(acct, queue))
	// Further requests wait until the writer makes room.
	var adders sync.WaitGroup
	adders.Go(func() {
		for i := range extra {
			w.Add(ctx, logEntry(acct, queue+1+i))
		}
	})
	done := make(chan struct{})
	go func() { adders.Wait(); close(done) }()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		default:
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := db.GetContext(ctx, &n, `SELECT count(DISTINCT request_id) FROM api_log WHERE account_id = $1`, acct); err != nil {
		t.Fatal(err)
	}
	if want := queue + 1 + extra; n != want || lost.n.Load() != 0 {
		t.Fatalf("%d rows stored, %d lost; want %d and 0", n, lost.n.Load(), want)
	}
}

// Run writes what requests queue, and what is still queued when it stops.
func TestAPILogWriterRunFlushesAtShutdown(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	w := store.NewAPILogWriter(db, nil)
	for i := range 2500 {
		w.Add(ctx, logEntry(acct, i))
	}
	runCtx, stop := context.WithCancel(ctx)
	stop()
	if err := w.Run(runCtx); err != nil {
		t.Fatal(err)
	}
	if rows := apiLogRows(t, db, acct); len(rows) != 2500 {
		t.Fatalf("%d rows stored, want 2500", len(rows))
	}
}

// A write cut short by the writer's own shutdown is retried by the drain; it
// is no database outage and must not be logged as an error (two serve
// processes stopping logged one, which their test reads as a failure).
func TestAPILogWriterCancelledWriteIsNoOutage(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	var logs bytes.Buffer
	w := store.NewAPILogWriter(db, slog.New(slog.NewTextHandler(&logs, nil)))
	for i := range 10 {
		w.Add(ctx, logEntry(acct, i))
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.Flush(cancelled); err == nil {
		t.Fatal("a flush with a cancelled context reported no error")
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a cancelled write was logged as an error: %s", logs.String())
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if rows := apiLogRows(t, db, acct); len(rows) != 10 {
		t.Fatalf("%d rows stored after the retry, want 10 (the cancelled write must keep them)", len(rows))
	}
}

func TestAPILogCountsUpToTheCap(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	if _, err := db.ExecContext(ctx, `INSERT INTO api_log (account_id, request_id, method, path, status, duration_us, created_at)
SELECT $1, 'req_' || i, 'GET', CASE WHEN i % 10 = 0 THEN '/v1/lists' ELSE '/v1/me' END, 200, 1, now() FROM generate_series(1, 30) i`, acct); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f            store.APILogFilter
		max, total   int
		capped       bool
		page, onPage int
	}{
		{store.APILogFilter{}, 20, 20, true, 1, 10},
		{store.APILogFilter{}, 20, 20, true, 3, 10}, // pages past the count still answer
		{store.APILogFilter{}, 30, 30, false, 3, 10},
		{store.APILogFilter{PathPrefix: "/v1/lists"}, 2, 2, true, 1, 3},
		{store.APILogFilter{PathPrefix: "/v1/lists"}, 3, 3, false, 1, 3},
	} {
		entries, total, capped, err := db.APILog(ctx, acct, tc.f, store.Page{Page: tc.page, PerPage: 10}, tc.max)
		if err != nil || total != tc.total || capped != tc.capped || len(entries) != tc.onPage {
			t.Errorf("%+v max %d page %d: %d entries, total %d, capped %v, %v", tc.f, tc.max, tc.page, len(entries), total, capped, err)
		}
	}
}

// What requests that gave up waiting set aside is bounded (20,000 rows beside
// the queue's 20,000): only past both is a row lost, and then counted.
func TestAPILogWriterBoundsWhatItSetsAside(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	lost := &lossCounter{}
	w := store.NewAPILogWriter(db, nil).CountLosses(lost)
	ended, cancel := context.WithCancel(ctx)
	cancel()
	const queue, aside = 20_000, 20_000
	for i := range queue + aside + 3 {
		w.Add(ended, logEntry(acct, i))
	}
	if n := lost.n.Load(); n != 3 {
		t.Fatalf("%d rows counted lost, want 3", n)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.GetContext(ctx, &n, `SELECT count(*) FROM api_log WHERE account_id = $1`, acct); err != nil {
		t.Fatal(err)
	}
	if n != queue+aside {
		t.Fatalf("%d rows stored, want %d", n, queue+aside)
	}
}

// While PostgreSQL is down the writer keeps its rows, and writes them once
// it is back: an outage loses nothing.
func TestAPILogWriterOutlivesADatabaseOutage(t *testing.T) {
	ctx := context.Background()
	pg := dbtest.OwnServer(t)
	db := pg.DB
	acct := newAccount(t, db, "business")
	lost := &lossCounter{}
	w := store.NewAPILogWriter(db, nil).CountLosses(lost)
	w.Add(ctx, logEntry(acct, 0))
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	pg.Stop()
	for i := 1; i <= 3; i++ {
		w.Add(ctx, logEntry(acct, i))
	}
	if err := w.Flush(ctx); err == nil {
		t.Fatal("a write without a database succeeded")
	}
	pg.Start()
	w.Add(ctx, logEntry(acct, 4))
	// The pool may hand out connections that died with the server first.
	var err error
	for range 5 {
		if err = w.Flush(ctx); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if rows := apiLogRows(t, db, acct); len(rows) != 5 || lost.n.Load() != 0 {
		t.Fatalf("%d rows stored, %d lost; want 5 and 0", len(rows), lost.n.Load())
	}
}
