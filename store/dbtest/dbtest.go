// Package dbtest gives tests real PostgreSQL databases. With TEST_DATABASE_URL set it
// creates databases on that server; otherwise it starts a throwaway cluster from the
// installed server binaries. Each test package migrates one template database once,
// and every NewDB is a cheap copy of it, dropped when the test ends.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/pgcluster"
)

// env is the one server of this test binary, set by Main before any test runs.
var env struct {
	adminURL string
	template string
	// strategy is appended to CREATE DATABASE: STRATEGY FILE_COPY on a
	// throwaway cluster of PostgreSQL 15 or later, else nothing (the server's
	// default). PostgreSQL 15's default, WAL_LOG, copies the template block by
	// block through the WAL, about half a CPU second for the migrated template;
	// FILE_COPY copies its files and, with the throwaway cluster's minimal WAL,
	// costs about a third less. It checkpoints first, which is cheap without
	// fsync but would burden a shared TEST_DATABASE_URL server, so only there.
	strategy string
	mu       sync.Mutex // CREATE DATABASE … TEMPLATE fails if two run at once
}

// Main prepares the server and the migrated template, runs the tests and cleans up.
// Call it from TestMain: func TestMain(m *testing.M) { dbtest.Main(m) }. m may
// wrap the *testing.M (webtest.Closing) to clean up after the tests.
func Main(m interface{ Run() int }) {
	os.Exit(run(m))
}

func run(m interface{ Run() int }) int {
	ctx := context.Background()
	adminURL := os.Getenv("TEST_DATABASE_URL")
	throwaway := adminURL == ""
	if throwaway {
		reapStale(ctx)
		dir, err := os.MkdirTemp("", "rbtest")
		if err != nil {
			fmt.Fprintln(os.Stderr, "dbtest:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "dbtest:", err)
			return 1
		}
		c, err := pgcluster.Start(ctx, dir, pgcluster.Options{Throwaway: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, "dbtest:", err)
			return 1
		}
		defer func() { _ = c.Stop() }()
		adminURL = c.URL("postgres")
	}
	env.adminURL = adminURL
	env.template = "rbtpl_" + token()
	if throwaway {
		v, err := serverVersion(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dbtest:", err)
			return 1
		}
		if v >= 150000 {
			env.strategy = " STRATEGY FILE_COPY"
		}
	}
	if err := createTemplate(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "dbtest:", err)
		return 1
	}
	defer dropDatabase(env.template)
	return m.Run()
}

// ownerFile names the test process that owns a throwaway cluster.
const ownerFile = "owner.pid"

// reapStale stops throwaway clusters whose test process is gone: a test binary
// killed by a timeout never runs its deferred Stop.
func reapStale(ctx context.Context) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "rbtest*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(string(b))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue // still running, or not ours to judge
		}
		if err := pgcluster.StopStale(ctx, dir); err != nil {
			fmt.Fprintln(os.Stderr, "dbtest: stale cluster:", err)
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

func createTemplate(ctx context.Context) error {
	if err := exec(ctx, "CREATE DATABASE "+env.template); err != nil {
		return err
	}
	db, err := store.Open(ctx, withDatabase(env.adminURL, env.template))
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Migrate(ctx)
}

// URL creates a fresh migrated database for this test and returns its URL; the
// database is dropped when the test ends. Use it to open several pools on one
// database, as several `rundbrief serve` processes would.
func URL(t testing.TB) string {
	t.Helper()
	if env.adminURL == "" {
		t.Fatal("dbtest: call dbtest.Main from TestMain")
	}
	name := "rbt_" + token()
	env.mu.Lock()
	err := exec(context.Background(), fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s%s", name, env.template, env.strategy))
	env.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropDatabase(name) })
	return withDatabase(env.adminURL, name)
}

// NewDB creates a fresh migrated database and opens a pool on it, both closed and
// dropped when the test ends.
func NewDB(t testing.TB) *store.DB {
	t.Helper()
	return Open(t, URL(t))
}

// cheapPasswords is the argon2id cost of the password hashes that pools opened
// by Open make: the smallest argon2id allows. Tests create an account (and so
// a hash) nearly each, and at the production cost (64 MiB, three passes) the
// hashing alone took a fifth of a CPU second per account. Sign-in, password
// checks and their failures behave the same at any cost: a hash carries its
// parameters.
func cheapPasswords() store.PasswordParams {
	return store.PasswordParams{Time: 1, Memory: 8, Threads: 1}
}

// Open opens one more pool on a database made by URL, closed when the test ends.
// Its password hashes are cheap (cheapPasswords).
func Open(t testing.TB, dbURL string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), dbURL, store.PasswordCost(cheapPasswords()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func exec(ctx context.Context, stmt string) error {
	db, err := sqlx.Open("postgres", env.adminURL)
	if err != nil {
		return fmt.Errorf("dbtest: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("dbtest: %s: %w", stmt, err)
	}
	return nil
}

func serverVersion(ctx context.Context) (int, error) {
	db, err := sqlx.Open("postgres", env.adminURL)
	if err != nil {
		return 0, fmt.Errorf("dbtest: %w", err)
	}
	defer db.Close()
	var v int
	if err := db.GetContext(ctx, &v, "SELECT current_setting('server_version_num')::int"); err != nil {
		return 0, fmt.Errorf("dbtest: server version: %w", err)
	}
	return v, nil
}

func dropDatabase(name string) {
	_ = exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
}

func withDatabase(raw, name string) string {
	u, err := url.Parse(raw)
	if err != nil {
		panic(fmt.Sprintf("dbtest: bad database URL: %v", err))
	}
	u.Path = "/" + name
	return u.String()
}

func token() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
