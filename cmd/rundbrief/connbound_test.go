package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/rundbrief/rundbrief/store/pgcluster"
)

// TestTwoServeProcessesStayWithinTheirBound runs two `serve` processes with
// RUNDBRIEF_DB_MAX_CONNS=25 against a server that allows 60 connections, puts
// 200 concurrent requests on them, and checks that every request succeeds,
// that no process was refused a connection ("too many clients"), and that the
// two never held more than 2×25 connections at once: under load they queue for
// their pools' connections instead.
func TestTwoServeProcessesStayWithinTheirBound(t *testing.T) {
	const (
		perProcess = 25
		serverMax  = 60
		appName    = "rbbound" // marks the serve processes' sessions in pg_stat_activity
		clients    = 200
		perClient  = 3
	)
	ctx := context.Background()
	// Reachable by the unprivileged user PostgreSQL runs as when the tests run
	// as root (t.TempDir's parent is private).
	dir, err := os.MkdirTemp("", "rbbound")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cluster, err := pgcluster.Start(ctx, dir, pgcluster.Options{Throwaway: true, MaxConnections: serverMax})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	monitor, err := sqlx.Open("postgres", cluster.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer monitor.Close()
	monitor.SetMaxOpenConns(1)
	if err := monitor.GetContext(ctx, new(int), `SELECT 1 WHERE current_setting('max_connections') = $1`, fmt.Sprint(serverMax)); err != nil {
		t.Fatalf("the cluster's max_connections is not %d: %v", serverMax, err)
	}
	if err := ensureDatabase(ctx, cluster.URL("postgres"), "rundbrief"); err != nil {
		t.Fatal(err)
	}
	dbURL := cluster.URL("rundbrief")

	// The CLI migrates the database and makes the account and its key.
	out, err := cli(t, dbURL, "account", "create", "--name", "Last", "--email", "last@example.com", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var acct struct{ ID int64 }
	if err := json.Unmarshal([]byte(out), &acct); err != nil {
		t.Fatal(err)
	}
	out, err = cli(t, dbURL, "key", "create", "--account", fmt.Sprint(acct.ID), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var key struct{ Key string }
	if err := json.Unmarshal([]byte(out), &key); err != nil || key.Key == "" {
		t.Fatalf("key create: %q %v", out, err)
	}

	bin := filepath.Join(t.TempDir(), "rundbrief")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", appName)
	u.RawQuery = q.Encode()
	procs := []*serveProcess{
		startServeBinary(t, bin, u.String(), perProcess),
		startServeBinary(t, bin, u.String(), perProcess),
	}

	// The peak of the serve processes' sessions, sampled until the load ends.
	stop := make(chan struct{})
	peak := make(chan int, 1)
	var monitorErr error
	go func() {
		most := 0
		for {
			var n int
			if err := monitor.GetContext(ctx, &n, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, appName); err != nil {
				monitorErr = err
				break
			}
			most = max(most, n)
			select {
			case <-stop:
				peak <- most
				return
			default:
			}
			time.Sleep(2 * time.Millisecond)
		}
		peak <- most
	}()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for c := range clients {
		wg.Go(func() {
			<-start
			for i := range perClient {
				p := procs[(c+i)%len(procs)]
				// Writes and unfiltered pages take the generic pool,
				// filtered pages the main pool, every request the
				// relaxed pool's rate counter.
				method, path, body, want := http.MethodGet, "", "", http.StatusOK
				switch (c + i) % 3 {
				case 0:
					method, path, want = http.MethodPost, "/v1/contacts", http.StatusCreated
					body = fmt.Sprintf(`{"email":"last%d-%d@example.net","first_name":"Lena","tags":["last"]}`, c, i)
				case 1:
					path = "/v1/contacts?per_page=100&tag=last"
				default:
					path = "/v1/contacts?per_page=100"
				}
				req, err := http.NewRequest(method, p.base+path, strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				req.Header.Set("Authorization", "Bearer "+key.Key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s %s: %v", method, path, err))
					mu.Unlock()
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s %s: %d %.200s", method, path, resp.StatusCode, b))
					mu.Unlock()
				}
			}
		})
	}
	// Every request that reaches the contacts table waits for this lock while
	// holding its connection, so the pools fill up to their bounds and the
	// remaining requests queue for them. The lock goes when both processes'
	// main and generic pools (7 and 10 of 25 each) are all waiting.
	db, err := sqlx.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	lockTx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lockTx.Rollback() }()
	if _, err := lockTx.ExecContext(ctx, `LOCK TABLE contacts IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	close(start)
	const full = 2 * (7 + 10)
	waiting := 0
	for range 5000 {
		if err := monitor.GetContext(ctx, &waiting, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, appName); err != nil {
			t.Fatal(err)
		}
		if waiting >= full {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := lockTx.Commit(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(stop)
	most := <-peak
	if monitorErr != nil {
		t.Fatalf("pg_stat_activity: %v", monitorErr)
	}

	var created int
	if err := db.GetContext(ctx, &created, `SELECT count(*) FROM contacts WHERE account_id = $1`, acct.ID); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		p.stop(t)
	}
	if len(failures) > 0 {
		t.Errorf("%d of %d requests failed, first: %s", len(failures), clients*perClient, failures[0])
	}
	if waiting < full {
		t.Errorf("only %d requests waited for the lock at once, want the %d connections of both processes' main and generic pools", waiting, full)
	}
	if want := clients * perClient / 3; created != want {
		t.Errorf("%d contacts created, want %d", created, want)
	}
	for i, p := range procs {
		if logs := p.logs(); strings.Contains(logs, "too many clients") || strings.Contains(logs, "level=ERROR") {
			t.Errorf("serve process %d logged an error:\n%s", i+1, logs)
		}
	}
	t.Logf("peak of the two processes' connections: %d (bound 2×%d)", most, perProcess)
	if most > 2*perProcess {
		t.Errorf("the two processes held %d connections at once, more than 2×%d", most, perProcess)
	}
}

// serveProcess is a `rundbrief serve` child process and its log.
type serveProcess struct {
	cmd  *exec.Cmd
	base string // http://host:port
	mu   sync.Mutex
	log  bytes.Buffer
	done chan error
}

// startServe starts bin as `serve` on a free loopback port and waits until it
// listens.
func startServeBinary(t *testing.T, bin, dbURL string, maxConns int) *serveProcess {
	t.Helper()
	p := &serveProcess{cmd: exec.Command(bin, "serve"), done: make(chan error, 1)}
	p.cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"DATABASE_URL=" + dbURL,
		"RUNDBRIEF_ADDR=127.0.0.1:0",
		"RUNDBRIEF_DB_MAX_CONNS=" + fmt.Sprint(maxConns),
		"RUNDBRIEF_DATA_DIR=" + t.TempDir(),
		"RUNDBRIEF_SECRET=connection-bound test secret, 32+ characters",
		"RUNDBRIEF_RATE_LIMIT=1000000",
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			if strings.Contains(line, "rundbrief listening") {
				for _, f := range strings.Fields(line) {
					if a, ok := strings.CutPrefix(f, "addr="); ok {
						addr <- a
					}
				}
			}
		}
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() }) // after stop, or when the test failed before it
	select {
	case a := <-addr:
		p.base = "http://" + a
	case err := <-p.done:
		t.Fatalf("serve exited before listening: %v\n%s", err, p.logs())
	case <-time.After(2 * time.Minute):
		t.Fatalf("serve did not listen within 2 minutes\n%s", p.logs())
	}
	return p
}

func (p *serveProcess) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// stop shuts the process down as Ctrl-C would and checks that it ends cleanly.
func (p *serveProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("serve: %v\n%s", err, p.logs())
		}
	case <-time.After(time.Minute):
		t.Errorf("serve did not stop within a minute\n%s", p.logs())
	}
}
