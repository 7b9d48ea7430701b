package handlers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/handlers"
	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/portal"
	"github.com/rundbrief/rundbrief/handlers/public"
	"github.com/rundbrief/rundbrief/handlers/webtest"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/botguard"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/imports"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/services"
)

func TestMain(m *testing.M) { dbtest.Main(webtest.Closing(m)) }

// server is a running application over loopback with its workers, as `serve` wires it.
type server struct {
	*httptest.Server
	db     *store.DB
	dbURL  string
	apiLog *store.APILogWriter
}

func startServer(tb testing.TB, rateLimit int) *server {
	tb.Helper()
	url := dbtest.URL(tb)
	db := dbtest.Open(tb, url)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	apiLog := store.NewAPILogWriter(db, log)
	var wg sync.WaitGroup
	wg.Go(func() { _ = apiLog.Run(ctx) })
	wg.Go(func() { _ = db.ListenNotifications(ctx, url, log) })
	wg.Go(func() { _ = db.RunContactIndexMerge(ctx, store.ContactIndexMergeInterval, log) })
	box, err := secret.NewBox("benchmark secret, at least 32 characters long")
	if err != nil {
		tb.Fatal(err)
	}
	p, err := portal.New(&services.Set{DB: db, Imports: imports.New(db), Box: box, Log: log}, portal.Config{BaseURL: "http://rundbrief.test"})
	if err != nil {
		tb.Fatal(err)
	}
	guard := botguard.New("benchmark secret, at least 32 characters long", time.Now)
	pub, err := public.New(&services.Set{DB: db, Guard: guard, Tokens: testTokens(tb), Log: log}, public.Config{BaseURL: "http://rundbrief.test"})
	if err != nil {
		tb.Fatal(err)
	}
	app := handlers.New(api.New(&services.Set{DB: db, APILog: apiLog, Log: log, Guard: guard}, api.Config{BaseURL: "http://rundbrief.test", RateLimit: rateLimit}), p, pub)
	srv := httptest.NewServer(app)
	tb.Cleanup(func() {
		srv.Close()
		cancel()
		wg.Wait()
	})
	return &server{Server: srv, db: db, dbURL: url, apiLog: apiLog}
}

// BenchmarkAuthenticatedMe drives GET /v1/me over loopback with 16 connections and
// the whole middleware stack (authentication, shared rate limit, API log), then
// measures how long a key revoked through another pool keeps working.
func BenchmarkAuthenticatedMe(b *testing.B) {
	const conns = 16
	ctx := context.Background()
	s := startServer(b, 1_000_000_000)
	acct, err := s.db.CreateAccount(ctx, store.NewAccount{Name: "Bench", Email: "bench@example.com", Password: "benchmark-password"})
	if err != nil {
		b.Fatal(err)
	}
	key, full, err := s.db.CreateKey(ctx, acct.Account.ID, store.KeySettings{})
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
	get := func() (int, error) {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/me", nil)
		req.Header.Set("Authorization", "Bearer "+full)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if st, err := get(); err != nil || st != http.StatusOK {
		b.Fatalf("warm-up: %d %v", st, err)
	}

	webtest.Load(b, conns, func(int) error {
		st, err := get()
		if err == nil && st != http.StatusOK {
			err = fmt.Errorf("status %d", st)
		}
		return err
	})

	// Revoke through a second pool, as another `rundbrief serve` process would.
	other := dbtest.Open(b, s.dbURL)
	revokedAt := time.Now()
	if err := other.RevokeKey(ctx, acct.Account.ID, key.ID); err != nil {
		b.Fatal(err)
	}
	for {
		st, err := get()
		if err != nil {
			b.Fatal(err)
		}
		if st == http.StatusUnauthorized {
			break
		}
		if time.Since(revokedAt) > 5*time.Second {
			b.Fatal("revoked key still accepted after 5 s")
		}
	}
	refused := time.Since(revokedAt)
	if refused > time.Second {
		b.Errorf("revoked key refused only after %v, want within 1 s", refused)
	}
	b.ReportMetric(float64(refused.Microseconds())/1000, "revoke_ms")
}

func testTokens(tb testing.TB) *mailer.Tokens {
	tb.Helper()
	t, err := mailer.NewTokens("test secret for link tokens, at least 32 characters")
	if err != nil {
		tb.Fatal(err)
	}
	return t
}
