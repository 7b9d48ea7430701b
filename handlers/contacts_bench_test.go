package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/handlers/webtest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// benchContacts is the size of the account the contact benchmarks run against.
const benchContacts = 1_000_000

// seedBase is the updated_at and created_at of the first seeded contact; contact
// g (1-based) has seedBase + g·30 s, so a depth in the account maps to a time.
var seedBase = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// contactsServer is `rundbrief serve` in a process of its own
// (webtest.StartServe) on a database with one account of benchContacts
// contacts (every fifth of them on one list, the oldest fifth on another, the
// newest fifth on a third) and a key for it.
type contactsServer struct {
	serve     *webtest.Serve
	URL       string
	db        *store.DB
	acct      int64
	key       string
	listID    int64
	oldListID int64
	newListID int64
	client    *http.Client
}

// seedContacts fills an account set-based (generate_series, in index order so
// that every index grows at its right edge), keeps the maintained counters
// right, vacuums so that deep pages can use index-only scans, and checkpoints so
// that the benchmarks measure the steady state rather than the seed's write-out.
func seedContacts(b *testing.B, db *store.DB, acct, listID, oldListID, newListID int64) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	stmts := []string{
		// The plan allows far more, so the write benchmarks can add contacts.
		`UPDATE plans SET max_contacts = 100000000 WHERE name = 'business'`,
		fmt.Sprintf(`INSERT INTO contacts (account_id, email, first_name, last_name, city, tags, source, created_at, updated_at)
SELECT %[1]d, 'c' || lpad(g::text, 7, '0') || '@example.com', 'Vorname' || g, 'Nachname' || (g %% 997), 'Berlin',
  CASE WHEN g %% 10 = 0 THEN '{kunde}'::text[] ELSE '{}'::text[] END, 'import',
  timestamptz '%[2]s' + g * interval '30 seconds', timestamptz '%[2]s' + g * interval '30 seconds'
FROM generate_series(1, %[3]d) AS g`, acct, seedBase.Format(time.RFC3339), benchContacts),
		fmt.Sprintf(`INSERT INTO list_members (list_id, contact_id, account_id)
SELECT %d, id, %d FROM contacts WHERE account_id = %d AND id %% 5 = 0 ORDER BY id`, listID, acct, acct),
		fmt.Sprintf(`INSERT INTO list_members (list_id, contact_id, account_id)
SELECT %d, id, %d FROM contacts WHERE account_id = %d ORDER BY id LIMIT %d`, oldListID, acct, acct, benchContacts/5),
		fmt.Sprintf(`INSERT INTO list_members (list_id, contact_id, account_id)
SELECT %d, id, %d FROM contacts WHERE account_id = %d AND id > (SELECT max(id) FROM contacts WHERE account_id = %[3]d) - %d ORDER BY id`,
			newListID, acct, acct, benchContacts/5),
		fmt.Sprintf(`UPDATE lists l SET member_count = (SELECT count(*) FROM list_members m WHERE m.list_id = l.id) WHERE id IN (%d, %d, %d)`,
			listID, oldListID, newListID),
		fmt.Sprintf(`UPDATE account_usage SET contacts = %d WHERE account_id = %d`, benchContacts, acct),
		fmt.Sprintf(`INSERT INTO contact_tag_counts (account_id, tag, stripe, contacts)
SELECT %[1]d, t, 0, count(*) FROM contacts c CROSS JOIN LATERAL unnest(c.tags) AS t
WHERE c.account_id = %[1]d AND c.tags <> '{}' GROUP BY t`, acct),
		`VACUUM (ANALYZE) contacts`,
		`VACUUM (ANALYZE) list_members`,
		// The seed's million rows would otherwise be written out by a
		// checkpoint during the first sub-benchmark.
		`CHECKPOINT`,
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			b.Fatalf("seed: %v\n%s", err, q)
		}
	}
	b.Logf("seeded %d contacts in %v", benchContacts, time.Since(start).Round(time.Millisecond))
}

func startContactsServer(b *testing.B) *contactsServer {
	b.Helper()
	ctx := context.Background()
	dbURL := dbtest.URL(b)
	db := dbtest.Open(b, dbURL)
	acct, err := db.CreateAccount(ctx, store.NewAccount{Name: "Bench", Email: "bench@example.com", Password: "benchmark-password"})
	if err != nil {
		b.Fatal(err)
	}
	_, full, err := db.CreateKey(ctx, acct.Account.ID, store.KeySettings{})
	if err != nil {
		b.Fatal(err)
	}
	var lists []int64
	for _, name := range []string{"Bestand", "Altkunden", "Neukunden"} {
		l, err := db.CreateList(ctx, acct.Account.ID, store.Actor{Type: store.ActorSystem}, store.ListInput{Name: &name})
		if err != nil {
			b.Fatal(err)
		}
		lists = append(lists, l.ID)
	}
	seedContacts(b, db, acct.Account.ID, lists[0], lists[1], lists[2])
	sp := webtest.StartServe(b, dbURL)
	const conns = 16
	return &contactsServer{serve: sp, URL: sp.URL, db: db, acct: acct.Account.ID, key: full, listID: lists[0], oldListID: lists[1], newListID: lists[2],
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}}
}

// call sends one request and hands its status and body to check, which must
// not keep the body: it is read into a buffer the calls share, so that the
// load generator makes no garbage per response (a listing's is 50 KB) for
// the garbage collector that the server's own work pays for too.
func (cs *contactsServer) call(method, path string, body []byte, check func(status int, body []byte) error) error {
	req, err := http.NewRequest(method, cs.URL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+cs.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := cs.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf := responseBuffers.Get().(*bytes.Buffer)
	defer responseBuffers.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	return check(resp.StatusCode, buf.Bytes())
}

var responseBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// wantStatus is a check for call that wants the status want.
func wantStatus(want int) func(int, []byte) error {
	return func(status int, body []byte) error { return expect(status, want, body) }
}

// cpuTime is the CPU time used so far by serve (app), by the PostgreSQL
// backends serving this test database (pg; on a server other test runs share,
// their backends and the server's own background processes are left out), and
// by this process, the load generator (load). On a shared machine req/s
// depends on what else runs; CPU per request does much less, so the
// benchmarks report both (cpu_ms/op: what one request costs the app and
// PostgreSQL; pg_cpu_ms/op: PostgreSQL's part of it).
func (cs *contactsServer) cpuTime(b *testing.B) (app, pg, load time.Duration) {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	for _, pid := range cs.backends(b) {
		pg += dbtest.ProcessCPU(pid)
	}
	return cs.serve.CPUTime(), pg, time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backends are the pids of the PostgreSQL backends serving this test database.
func (cs *contactsServer) backends(b *testing.B) []int {
	b.Helper()
	var pids []int
	// Client backends only: an autovacuum worker that the writes before a
	// benchmark set off may end during it, and its count would leave the sums.
	if err := cs.db.SelectContext(context.Background(), &pids,
		`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'`); err != nil {
		b.Fatal(err)
	}
	return pids
}

// dbRoundTrips counts the round trips to PostgreSQL so far, from the
// backends serving this test database (as cpuTime finds them): a backend
// sleeps once per round trip, waiting for its client's next message, and
// /proc counts each such sleep as a voluntary context switch. A backend also
// sleeps when it waits for a lock, which the benchmarks' requests rarely do.
// (Counting TCP segments instead missed the throwaway cluster, which is
// reached over a Unix socket.) Like cpu_ms/op, it does not depend on what else
// runs on the machine.
func (cs *contactsServer) dbRoundTrips(b *testing.B) int64 {
	b.Helper()
	var n int64
	for _, pid := range cs.backends(b) {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue // gone meanwhile
		}
		for line := range strings.Lines(string(raw)) {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				d, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += d
			}
		}
	}
	return n
}

// load runs b.N calls of do over conns concurrent connections (webtest.Load)
// and adds cpu_ms/op (serve and PostgreSQL together), app_cpu_ms/op (serve's
// part), pg_cpu_ms/op, load_cpu_ms/op (the load generator, not in cpu_ms/op)
// and db_rt/op (round trips to PostgreSQL). do gets the call's number (0 … b.N-1) and
// returns whether the response was what it should be.
//
// Unless warm is nil, 20 calls of it per connection come first, unmeasured,
// so that the figures are the steady state's: the first requests over new
// connections also open the pools' PostgreSQL connections, whose backends
// plan their first statements with cold catalog caches (16 at once took up
// to 600 ms, which was most of the listing's slowest percent). warm gets
// 0 … 20·conns-1.
func (cs *contactsServer) load(b *testing.B, conns int, warm, do func(i int) error) {
	b.Helper()
	if warm != nil {
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, conns)
		for range conns {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(20*conns); i = next.Add(1) - 1 {
					if err := warm(int(i)); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatalf("warm-up: %v", err)
		}
	}
	app0, pg0, load0 := cs.cpuTime(b)
	rt0 := cs.dbRoundTrips(b)
	webtest.Load(b, conns, do)
	app, pg, load := cs.cpuTime(b)
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(perOp(app-app0+pg-pg0), "cpu_ms/op")
	b.ReportMetric(perOp(app-app0), "app_cpu_ms/op")
	b.ReportMetric(perOp(pg-pg0), "pg_cpu_ms/op")
	b.ReportMetric(perOp(load-load0), "load_cpu_ms/op")
	b.ReportMetric(float64(cs.dbRoundTrips(b)-rt0)/float64(b.N), "db_rt/op")
}

func expect(status, want int, body []byte) error {
	if status != want {
		return fmt.Errorf("status %d, want %d: %.300s", status, want, body)
	}
	return nil
}

// BenchmarkContacts drives the contact API over loopback HTTP with the whole
// middleware stack against an account of one million contacts, seeded once
// (about half a minute) for all sub-benchmarks:
//
//	go test ./handlers/ -run '^$' -bench BenchmarkContacts -benchtime 2000x
//
// Targets: bulk of 1000 new contacts < 100 ms; single upsert ≥ 3000 req/s with
// p99 < 20 ms and GET /contacts?per_page=100 ≥ 1000 req/s with p99 < 30 ms (16
// connections); an updated_after sync page at any depth < 20 ms; page 5000
// < 100 ms.
//
// With -busy 2 two busy loops spin beside it (the busy machine's figures);
// app_cpu_ms/op is serve's part of cpu_ms/op, pg_cpu_ms/op PostgreSQL's;
// load_cpu_ms/op is the load generator's, which cpu_ms/op leaves out.
func BenchmarkContacts(b *testing.B) {
	cs := startContactsServer(b)
	dbtest.BusyLoops(b, *busy)
	var run atomic.Int64 // makes addresses unique across sub-benchmark runs

	bulk := func(name string, listIDs []int64) {
		b.Run(name, func(b *testing.B) {
			bodies := make([][]byte, b.N)
			for i := range bodies {
				r := run.Add(1)
				entries := make([]map[string]any, 1000)
				for j := range entries {
					entries[j] = map[string]any{"email": fmt.Sprintf("bulk%d-%d@example.net", r, j), "first_name": "Neu", "tags": []string{"bulk"}}
				}
				bodies[i], _ = json.Marshal(map[string]any{"contacts": entries, "list_ids": listIDs})
			}
			cs.load(b, 1, nil, func(i int) error {
				return cs.call(http.MethodPost, "/v1/contacts/bulk", bodies[i], func(st int, body []byte) error {
					if err := expect(st, http.StatusOK, body); err != nil {
						return err
					}
					if !bytes.Contains(body, []byte(`"created":1000`)) {
						return fmt.Errorf("not all created: %.300s", body)
					}
					return nil
				})
			})
		})
	}
	// 1000 contact.created events; on a list also 1000 list.joined.
	bulk("bulk_1000_new", []int64{})
	bulk("bulk_1000_new_on_list", []int64{cs.listID})

	b.Run("upsert_new_16conns", func(b *testing.B) {
		newContact := func(r int64) func(i int) error {
			return func(i int) error {
				body := fmt.Appendf(nil, `{"email":"u%d-%d@example.net","first_name":"Uwe","tags":["neu"]}`, r, i)
				return cs.call(http.MethodPost, "/v1/contacts", body, wantStatus(http.StatusCreated))
			}
		}
		cs.load(b, 16, newContact(run.Add(1)), newContact(run.Add(1)))
	})

	b.Run("upsert_existing_16conns", func(b *testing.B) {
		update := func(i int) error {
			g := 1 + (i*7919)%benchContacts
			body := fmt.Appendf(nil, `{"email":"c%07d@example.com","city":"Ort %d","tags":["x"]}`, g, i)
			return cs.call(http.MethodPost, "/v1/contacts", body, wantStatus(http.StatusOK))
		}
		// The warm-up's updates touch contacts from the far end of the account.
		cs.load(b, 16, func(i int) error { return update(benchContacts - 1 - i) }, update)
	})

	b.Run("get_by_id_16conns", func(b *testing.B) {
		var ids []int64
		if err := cs.db.SelectContext(context.Background(), &ids,
			`SELECT id FROM contacts WHERE account_id = $1 ORDER BY id LIMIT 100000`, cs.acct); err != nil {
			b.Fatal(err)
		}
		get := func(i int) error {
			return cs.call(http.MethodGet, fmt.Sprintf("/v1/contacts/%d", ids[(i*7919)%len(ids)]), nil, wantStatus(http.StatusOK))
		}
		cs.load(b, 16, get, get)
	})

	b.Run("list_per_page_100_16conns", func(b *testing.B) {
		list := func(int) error {
			return cs.call(http.MethodGet, "/v1/contacts?per_page=100", nil, wantStatus(http.StatusOK))
		}
		cs.load(b, 16, list, list)
	})

	b.Run("sync_page_random_depth", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		depths := make([]int, b.N)
		for i := range depths {
			depths[i] = rng.IntN(benchContacts)
		}
		cs.load(b, 1, nil, func(i int) error {
			// The keyset continuation of a sync (updated_after + after_id) at a
			// random depth; every other request uses updated_after alone.
			after := seedBase.Add(time.Duration(depths[i]) * 30 * time.Second).Format(time.RFC3339)
			q := "/v1/contacts?sort=updated_asc&per_page=100&updated_after=" + url.QueryEscape(after)
			if i%2 == 0 {
				q += "&after_id=1"
			}
			return cs.call(http.MethodGet, q, nil, wantStatus(http.StatusOK))
		})
	})

	b.Run("page_5000", func(b *testing.B) {
		cs.load(b, 1, nil, func(int) error {
			return cs.call(http.MethodGet, "/v1/contacts?page=5000&per_page=100", nil, wantStatus(http.StatusOK))
		})
	})

	for _, l := range []struct {
		name string
		id   int64
	}{{"list_members_page_100", cs.listID}, {"old_list_members_page_100", cs.oldListID}} {
		// The second list holds the oldest fifth of the account: its newest
		// member comes after 800,000 newer contacts in the account's order.
		b.Run(l.name, func(b *testing.B) {
			members := func(int) error {
				return cs.call(http.MethodGet, fmt.Sprintf("/v1/lists/%d/members?per_page=100", l.id), nil, wantStatus(http.StatusOK))
			}
			cs.load(b, 16, members, members)
		})
	}

	// The newest fifth, least recently updated first: the 800,000 contacts
	// before it in that order are no members (the writes of the benchmarks
	// before only move contacts to its end), so the walk's budget runs out and
	// each page sorts the list's members (store.memberSortSQL). One
	// connection: a page costs a few hundred milliseconds of PostgreSQL's time.
	b.Run("new_list_members_by_update_page_100", func(b *testing.B) {
		cs.load(b, 1, nil, func(int) error {
			return cs.call(http.MethodGet, fmt.Sprintf("/v1/lists/%d/members?per_page=100&sort=updated_asc", cs.newListID), nil, wantStatus(http.StatusOK))
		})
	})
}
