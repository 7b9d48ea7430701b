package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/handlers/webtest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// busy is the number of busy loops the benchmarks of this package run beside
// themselves (go test -bench … -busy 2): the figures of a machine whose cores
// other work takes too. CPU per operation hardly moves with it; throughput does.
var busy = flag.Int("busy", 0, "busy loops (processes spinning on the CPU) beside the benchmark")

// importTotal and importBatch are the import benchmarks' size: sequential bulk
// requests of 1,000 contacts, as a client importing a file would send them.
const importTotal, importBatch = 20_000, 1_000

// newImportServer is serve (webtest.StartServe) on a fresh database with one
// account on the business plan and a key for it.
func newImportServer(b *testing.B) *contactsServer {
	b.Helper()
	ctx := context.Background()
	dbURL := dbtest.URL(b)
	db := dbtest.Open(b, dbURL)
	acct, err := db.CreateAccount(ctx, store.NewAccount{Name: "Import", Email: "import@example.com", Password: "benchmark-password"})
	if err != nil {
		b.Fatal(err)
	}
	_, full, err := db.CreateKey(ctx, acct.Account.ID, store.KeySettings{})
	if err != nil {
		b.Fatal(err)
	}
	sp := webtest.StartServe(b, dbURL)
	return &contactsServer{serve: sp, URL: sp.URL, db: db, acct: acct.Account.ID, key: full, client: &http.Client{}}
}

// importBodies are the bulk requests of one import of importTotal new
// contacts (names, a city, a tag): run makes the addresses unique.
func importBodies(run int) [][]byte {
	bodies := make([][]byte, importTotal/importBatch)
	for i := range bodies {
		entries := make([]map[string]any, importBatch)
		for j := range entries {
			n := i*importBatch + j
			entries[j] = map[string]any{"email": fmt.Sprintf("imp%d-%06d@example.org", run, n), "first_name": "Vorname",
				"last_name": fmt.Sprintf("Nachname%d", n%997), "city": "Hamburg", "tags": []string{"import"}}
		}
		bodies[i], _ = json.Marshal(map[string]any{"contacts": entries})
	}
	return bodies
}

// runImport sends the bodies one after the other and returns each request's
// duration; it fails the benchmark unless every contact was created.
func (cs *contactsServer) runImport(b *testing.B, bodies [][]byte) []time.Duration {
	b.Helper()
	took := make([]time.Duration, 0, len(bodies))
	for _, body := range bodies {
		t0 := time.Now()
		err := cs.call(http.MethodPost, "/v1/contacts/bulk", body, func(st int, resp []byte) error {
			if err := expect(st, http.StatusOK, resp); err != nil {
				return err
			}
			if !bytes.Contains(resp, fmt.Appendf(nil, `"created":%d`, importBatch)) {
				return fmt.Errorf("not all created: %.300s", resp)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(t0))
	}
	return took
}

// BenchmarkContactImport imports 20,000 new contacts over the API in
// sequential bulk requests of 1,000 (each contact with its contact.created
// event and activity), once into a fresh database (the contact table empty,
// never analysed) and once into a warm one (20,000 contacts, analysed):
//
//	go test ./handlers/ -run '^$' -bench BenchmarkContactImport -benchtime 1x [-busy 2]
//
// Metrics: contacts/s; p50_ms, p99_ms of one request of 1,000; CPU per
// contact of serve, in a process of its own (app_cpu_us/contact), and of
// PostgreSQL's backends (pg_cpu_us/contact). Targets: ≥ 9,000 contacts/s
// fresh, ≥ 12,000 warm.
func BenchmarkContactImport(b *testing.B) {
	dbtest.BusyLoops(b, *busy)
	report := func(b *testing.B, took []time.Duration, app, pg time.Duration) {
		var total time.Duration
		for _, d := range took {
			total += d
		}
		slices.Sort(took)
		pct := func(p float64) float64 {
			return float64(took[int(float64(len(took)-1)*p)].Microseconds()) / 1000
		}
		b.ReportMetric(float64(importTotal)/total.Seconds(), "contacts/s")
		b.ReportMetric(pct(0.5), "p50_ms")
		b.ReportMetric(pct(0.99), "p99_ms")
		b.ReportMetric(float64(app.Microseconds())/importTotal, "app_cpu_us/contact")
		b.ReportMetric(float64(pg.Microseconds())/importTotal, "pg_cpu_us/contact")
	}
	run := 0
	b.Run("fresh_20000", func(b *testing.B) {
		var took []time.Duration
		var app, pg time.Duration
		for range b.N {
			b.StopTimer()
			cs := newImportServer(b)
			run++
			bodies := importBodies(run)
			app0, pg0, _ := cs.cpuTime(b)
			b.StartTimer()
			took = append(took, cs.runImport(b, bodies)...)
			b.StopTimer()
			app1, pg1, _ := cs.cpuTime(b)
			app, pg = app+app1-app0, pg+pg1-pg0
			b.StartTimer()
		}
		report(b, took, app/time.Duration(b.N), pg/time.Duration(b.N))
	})
	b.Run("warm_20000", func(b *testing.B) {
		b.StopTimer()
		cs := newImportServer(b)
		run++
		cs.runImport(b, importBodies(run))
		if _, err := cs.db.ExecContext(context.Background(), `VACUUM (ANALYZE) contacts`); err != nil {
			b.Fatal(err)
		}
		var took []time.Duration
		var app, pg time.Duration
		for range b.N {
			run++
			bodies := importBodies(run)
			app0, pg0, _ := cs.cpuTime(b)
			b.StartTimer()
			took = append(took, cs.runImport(b, bodies)...)
			b.StopTimer()
			app1, pg1, _ := cs.cpuTime(b)
			app, pg = app+app1-app0, pg+pg1-pg0
		}
		report(b, took, app/time.Duration(b.N), pg/time.Duration(b.N))
	})
}
