package store_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestIPAllowed(t *testing.T) {
	cases := []struct {
		allowed []string
		ip      string
		want    bool
	}{
		{nil, "203.0.113.9", true},
		{[]string{"203.0.113.9"}, "203.0.113.9", true},
		{[]string{"203.0.113.9"}, "203.0.113.10", false},
		{[]string{"10.0.0.0/8"}, "10.255.1.2", true},
		{[]string{"10.0.0.0/8"}, "11.0.0.1", false},
		{[]string{"192.168.1.0/24", "2001:db8::/32"}, "2001:db8:1::5", true},
		{[]string{"192.168.1.0/24", "2001:db8::/32"}, "2001:db9::5", false},
		{[]string{"127.0.0.1"}, "::ffff:127.0.0.1", true}, // IPv4-mapped form of the same address
	}
	for _, c := range cases {
		ip := netip.MustParseAddr(c.ip)
		if got := store.IPAllowed(c.allowed, ip); got != c.want {
			t.Errorf("IPAllowed(%v, %s) = %v, want %v", c.allowed, c.ip, got, c.want)
		}
	}
}

func TestOriginAllowed(t *testing.T) {
	cases := []struct {
		allowed []string
		origin  string
		want    bool
	}{
		{nil, "https://evil.test", true},
		{[]string{"https://app.example.com"}, "", true}, // not a browser request
		{[]string{"https://app.example.com"}, "https://app.example.com", true},
		{[]string{"https://app.example.com"}, "https://APP.example.com", true},
		{[]string{"https://app.example.com"}, "http://app.example.com", false},
		{[]string{"https://app.example.com"}, "https://app.example.com:8443", false},
		{[]string{"https://*.example.com"}, "https://shop.example.com", true},
		{[]string{"https://*.example.com"}, "https://a.b.example.com", true},
		{[]string{"https://*.example.com"}, "https://example.com", false},
		{[]string{"https://*.example.com"}, "https://evilexample.com", false},
		{[]string{"https://*.example.com"}, "https://example.com.evil.test", false},
		{[]string{"https://*.example.com"}, "http://shop.example.com", false},
	}
	for _, c := range cases {
		if got := store.OriginAllowed(c.allowed, c.origin); got != c.want {
			t.Errorf("OriginAllowed(%v, %q) = %v, want %v", c.allowed, c.origin, got, c.want)
		}
	}
}

func TestKeySettingsValidate(t *testing.T) {
	bad := -1
	s := store.KeySettings{Scopes: []string{"read", "admin"}, AllowedIPs: []string{"10.0.0.0/33"},
		AllowedOrigins: []string{"ftp://x.test"}, RateLimit: &bad}
	err := s.Validate()
	var ve *store.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Validate: %v, want ValidationError", err)
	}
	for _, f := range []string{"scopes", "allowed_ips", "allowed_origins", "rate_limit"} {
		if ve.Fields[f] == "" {
			t.Errorf("no error for %s in %v", f, ve.Fields)
		}
	}
	good := store.KeySettings{AllowedIPs: []string{" 10.1.2.3/8 ", "2001:db8::1"}, AllowedOrigins: []string{"https://*.Example.com/"}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(good.AllowedIPs, ","); got != "10.0.0.0/8,2001:db8::1/128" {
		t.Errorf("normalised IPs = %s", got)
	}
	if good.AllowedOrigins[0] != "https://*.example.com" || good.Scopes[0] != "*" {
		t.Errorf("normalised = %v %v", good.AllowedOrigins, good.Scopes)
	}
}

func TestKeyLifecycle(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	limit := 30
	k, full, err := db.CreateKey(ctx, acct, store.KeySettings{Name: "shop", Scopes: []string{"read", "send"},
		AllowedIPs: []string{"10.0.0.0/8"}, AllowedOrigins: []string{"https://*.example.com"}, RateLimit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(full, "rb_live_") || len(full) != 48 || strings.Trim(full[8:], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") != "" {
		t.Fatalf("key format: %q", full)
	}
	if k.Prefix != full[:12] {
		t.Errorf("prefix %q of %q", k.Prefix, full)
	}
	var stored int
	if err := db.GetContext(ctx, &stored, `SELECT count(*) FROM api_keys WHERE key_hash = $1 AND prefix = $2`, store.HashKey(full), k.Prefix); err != nil || stored != 1 {
		t.Fatalf("hash lookup: %d %v", stored, err)
	}
	var plain int
	if err := db.GetContext(ctx, &plain, `SELECT count(*) FROM api_keys WHERE position($1::bytea in key_hash) > 0`, []byte(full)); err != nil || plain != 0 {
		t.Fatalf("the plain key must not be stored: %d %v", plain, err)
	}

	p, err := db.Authenticate(ctx, full)
	if err != nil {
		t.Fatal(err)
	}
	if p.Account.ID != acct || p.Plan.Name != "business" || *p.Key.RateLimit != 30 || p.Key.AllowedOrigins[0] != "https://*.example.com" {
		t.Errorf("principal = %+v", p)
	}
	// One character changed (not to itself: a key may end in "x").
	wrong := full[:47] + "x"
	if full[47] == 'x' {
		wrong = full[:47] + "y"
	}
	if _, err := db.Authenticate(ctx, wrong); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("wrong key: %v", err)
	}

	renewed, newFull, err := db.RenewKey(ctx, acct, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	if newFull == full || renewed.Name != "shop" || strings.Join(renewed.Scopes, ",") != "read,send" || *renewed.RateLimit != 30 ||
		renewed.AllowedIPs[0] != "10.0.0.0/8" || renewed.AllowedOrigins[0] != "https://*.example.com" {
		t.Errorf("renewed key lost settings: %+v", renewed)
	}
	if _, err := db.Authenticate(ctx, full); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("renewed-away key still authenticates: %v", err)
	}
	if _, err := db.Authenticate(ctx, newFull); err != nil {
		t.Fatal(err)
	}
	if err := db.RevokeKey(ctx, acct, renewed.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Authenticate(ctx, newFull); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoked key still authenticates: %v", err)
	}
	other := newAccount(t, db, "business")
	if err := db.RevokeKey(ctx, other, k.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoking another account's key: %v", err)
	}
}

func TestKeyLimitHoldsUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "starter")
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, limited := 0, 0
	for range 40 {
		wg.Go(func() {
			_, _, err := db.CreateKey(ctx, acct, store.KeySettings{})
			mu.Lock()
			defer mu.Unlock()
			var le *store.LimitError
			switch {
			case err == nil:
				created++
			case errors.As(err, &le) && le.Limit == "api_keys" && le.Max == 25:
				limited++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if created != 25 || limited != 15 {
		t.Errorf("created %d, limited %d; want 25 and 15", created, limited)
	}
}

// Two pools on one database stand for two `rundbrief serve` processes.
func TestRevocationReachesOtherProcessWithinOneSecond(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := dbtest.URL(t)
	a, b := dbtest.Open(t, url), dbtest.Open(t, url)
	acct := newAccount(t, a, "business")
	k, full, err := a.CreateKey(ctx, acct, store.KeySettings{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, full); err != nil { // now cached in process a
		t.Fatal(err)
	}
	listening := make(chan struct{})
	go func() {
		close(listening)
		_ = a.ListenNotifications(ctx, url, nil)
	}()
	<-listening
	time.Sleep(100 * time.Millisecond) // let LISTEN register before the NOTIFY

	if err := b.RevokeKey(ctx, acct, k.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(store.KeyCacheTTL)
	for {
		_, err := a.Authenticate(ctx, full)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("process a still accepts the key revoked in process b after 1 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPlanChangeIsSeenAtOnce(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	_, full, err := db.CreateKey(ctx, acct, store.KeySettings{})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := db.Authenticate(ctx, full); !p.Plan.Has("ai") {
		t.Fatal("business plan lacks ai")
	}
	if err := db.SetPlan(ctx, acct, "free"); err != nil {
		t.Fatal(err)
	}
	p, err := db.Authenticate(ctx, full)
	if err != nil {
		t.Fatal(err)
	}
	var pe *store.PlanError
	if !errors.As(p.Plan.Require("api"), &pe) || pe.Feature != "api" {
		t.Errorf("free plan after SetPlan: %+v", p.Plan)
	}
	if err := db.SetPlan(ctx, acct, "gold"); err == nil {
		t.Error("unknown plan accepted")
	}
}

// Requests that find their key missing from the cache at the same moment (as
// every second, when its entry expires) wait for one look-up instead of
// running one each, and all get the principal it read.
func TestConcurrentKeyMissesShareOneLookUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := dbtest.URL(t)
	db, other := dbtest.Open(t, url), dbtest.Open(t, url)
	acct := newAccount(t, db, "business")
	k, full, err := db.CreateKey(ctx, acct, store.KeySettings{})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = db.ListenNotifications(ctx, url, nil) }()
	// The cache serves once the listener has acknowledged the key generation.
	for acked := false; !acked; {
		if err := other.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM key_cache_acks)`).Scan(&acked); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Hold the look-ups up on a lock of a table they read.
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `LOCK TABLE users IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	const callers = 8
	errs := make(chan error, callers)
	for range callers {
		go func() {
			p, err := db.Authenticate(ctx, full)
			if err == nil && p.Key.ID != k.ID {
				err = fmt.Errorf("principal of key %d, want %d", p.Key.ID, k.ID)
			}
			errs <- err
		}()
	}
	waiting := func() int {
		t.Helper()
		var n int
		if err := other.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'SELECT k.key_hash%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadline := time.Now().Add(5 * time.Second)
	for waiting() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no look-up reached the database")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // time for the other callers to start theirs, if they would
	if n := waiting(); n != 1 {
		t.Errorf("%d look-ups of one key at once, want 1", n)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	for range callers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
