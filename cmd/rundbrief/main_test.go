package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// cli runs one command line against the database at dbURL and returns its output.
func cli(t *testing.T, dbURL string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), args, env(map[string]string{"DATABASE_URL": dbURL}), &out, quiet())
	return out.String(), err
}

func TestAccountAndKeyCommands(t *testing.T) {
	url := dbtest.URL(t)
	out, err := cli(t, url, "account", "create", "--name", "Acme", "--email", "owner@acme.test", "--plan", "pro", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var acct struct {
		ID       int64  `json:"id"`
		Name     string `json:"name"`
		Plan     string `json:"plan"`
		Password string `json:"password"`
	}
	if err := json.Unmarshal([]byte(out), &acct); err != nil || acct.ID == 0 || acct.Name != "Acme" || acct.Plan != "pro" || len(acct.Password) != 20 {
		t.Fatalf("account create --json: %q %v", out, err)
	}
	if out, _ := cli(t, url, "account", "create", "--name", "B", "--email", "b@b.test", "--password", "a given password"); strings.Contains(out, "a given password") || !strings.Contains(out, "plan business") {
		t.Errorf("account create: %q", out)
	}

	out, err = cli(t, url, "key", "create", "--account", fmt.Sprint(acct.ID), "--name", "shop", "--scopes", "read,send",
		"--ips", "10.0.0.0/8,203.0.113.7", "--origins", "https://*.example.com", "--rate-limit", "60", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var key struct {
		ID             int64    `json:"id"`
		Key            string   `json:"key"`
		Scopes         []string `json:"scopes"`
		AllowedIPs     []string `json:"allowed_ips"`
		AllowedOrigins []string `json:"allowed_origins"`
		RateLimit      *int     `json:"rate_limit"`
	}
	if err := json.Unmarshal([]byte(out), &key); err != nil || !strings.HasPrefix(key.Key, "rb_live_") || len(key.Key) != 48 ||
		strings.Join(key.Scopes, ",") != "read,send" || len(key.AllowedIPs) != 2 || key.AllowedOrigins[0] != "https://*.example.com" || *key.RateLimit != 60 {
		t.Fatalf("key create --json: %q %v", out, err)
	}

	out, err = cli(t, url, "key", "renew", fmt.Sprint(key.ID), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var renewed struct {
		ID     int64    `json:"id"`
		Key    string   `json:"key"`
		Scopes []string `json:"scopes"`
	}
	if err := json.Unmarshal([]byte(out), &renewed); err != nil || renewed.Key == key.Key || renewed.ID == key.ID || strings.Join(renewed.Scopes, ",") != "read,send" {
		t.Fatalf("key renew: %q %v", out, err)
	}
	if _, err := cli(t, url, "key", "revoke", fmt.Sprint(key.ID)); err == nil {
		t.Error("revoking the renewed-away key again should fail")
	}
	if out, err := cli(t, url, "key", "revoke", fmt.Sprint(renewed.ID)); err != nil || !strings.Contains(out, "revoked") {
		t.Errorf("key revoke: %q %v", out, err)
	}
	if out, err := cli(t, url, "account", "set-plan", fmt.Sprint(acct.ID), "starter"); err != nil || !strings.Contains(out, "starter") {
		t.Errorf("set-plan: %q %v", out, err)
	}

	// Operator mistakes are clear errors, not panics or silent successes.
	var uerr usageError
	for _, args := range [][]string{
		{}, {"frobnicate"}, {"key"}, {"key", "create"}, {"key", "renew"}, {"key", "renew", "x"}, {"account", "set-plan", "1"},
		{"account", "create", "--bogus"},
	} {
		if _, err := cli(t, url, args...); !errors.As(err, &uerr) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	for _, args := range [][]string{
		{"account", "create", "--name", "X", "--email", "not-an-email"},
		{"account", "set-plan", fmt.Sprint(acct.ID), "gold"},
		{"key", "create", "--account", fmt.Sprint(acct.ID), "--scopes", "admin"},
		{"key", "create", "--account", "999999"},
	} {
		if _, err := cli(t, url, args...); err == nil || errors.As(err, &uerr) {
			t.Errorf("%v: %v, want a domain error", args, err)
		}
	}
}

func TestConfig(t *testing.T) {
	c, err := loadConfig(env(map[string]string{}))
	if err != nil || c.Addr != "127.0.0.1:8080" || c.BaseURL != "http://127.0.0.1:8080" || c.DataDir != "./data" || c.RateLimit != 120 || c.WebhookAllowPrivate || c.SMTPAllowPrivate ||
		c.DBMaxConns != 40 || c.SendLanes != 4 || c.SendBatchSize != 100 {
		t.Errorf("defaults: %+v %v", c, err)
	}
	c, err = loadConfig(env(map[string]string{"RUNDBRIEF_BASE_URL": "https://news.example.com/", "RUNDBRIEF_RATE_LIMIT": "60", "RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE": "true",
		"RUNDBRIEF_SMTP_ALLOW_PRIVATE": "1", "RUNDBRIEF_DB_MAX_CONNS": "25", "RUNDBRIEF_UPGRADE_URL": "https://example.com/tarife",
		"RUNDBRIEF_SEND_LANES": "8", "RUNDBRIEF_SEND_BATCH_SIZE": "250"}))
	if err != nil || c.BaseURL != "https://news.example.com" || c.RateLimit != 60 || !c.WebhookAllowPrivate || !c.SMTPAllowPrivate || c.DBMaxConns != 25 ||
		c.UpgradeURL != "https://example.com/tarife" || c.SendLanes != 8 || c.SendBatchSize != 250 {
		t.Errorf("explicit: %+v %v", c, err)
	}
	_, err = loadConfig(env(map[string]string{"RUNDBRIEF_ADDR": "nope", "RUNDBRIEF_RATE_LIMIT": "-1", "RUNDBRIEF_SMTP_URL": "http://x",
		"RUNDBRIEF_SECRET": "short", "RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE": "maybe", "RUNDBRIEF_SMTP_ALLOW_PRIVATE": "ja", "RUNDBRIEF_DB_MAX_CONNS": "9",
		"RUNDBRIEF_UPGRADE_URL": "javascript:alert(1)", "RUNDBRIEF_SEND_LANES": "0", "RUNDBRIEF_SEND_BATCH_SIZE": "1001"}))
	for _, name := range []string{"RUNDBRIEF_ADDR", "RUNDBRIEF_RATE_LIMIT", "RUNDBRIEF_SMTP_URL", "RUNDBRIEF_SECRET", "RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE",
		"RUNDBRIEF_SMTP_ALLOW_PRIVATE", "RUNDBRIEF_DB_MAX_CONNS", "RUNDBRIEF_UPGRADE_URL", "RUNDBRIEF_SEND_LANES", "RUNDBRIEF_SEND_BATCH_SIZE"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("bad %s not reported: %v", name, err)
		}
	}
}

// TestConfigDBMaxConns checks the connection bound's parsing: the smallest
// bound the store runs with is accepted, anything below or not a number is a
// start-up error that names the variable and the minimum.
func TestConfigDBMaxConns(t *testing.T) {
	for _, c := range []struct {
		value string
		want  int // 0: rejected
	}{
		{"", 40}, {"10", 10}, {"25", 25}, {"400", 400},
		{"9", 0}, {"1", 0}, {"0", 0}, {"-40", 0}, {"forty", 0}, {"40.5", 0}, {" 40", 0},
	} {
		cfg, err := loadConfig(env(map[string]string{"RUNDBRIEF_DB_MAX_CONNS": c.value}))
		switch {
		case c.want == 0 && (err == nil || !strings.Contains(err.Error(), "RUNDBRIEF_DB_MAX_CONNS") || !strings.Contains(err.Error(), "at least 10")):
			t.Errorf("%q: %v, want an error naming RUNDBRIEF_DB_MAX_CONNS and its minimum", c.value, err)
		case c.want != 0 && (err != nil || cfg.DBMaxConns != c.want):
			t.Errorf("%q: %d %v, want %d", c.value, cfg.DBMaxConns, err, c.want)
		}
	}
	// The private cluster makes room for two serve processes and the CLI: at
	// the default, PostgreSQL's stock max_connections.
	if n := privateClusterConns(40); n != 100 {
		t.Errorf("private cluster for two processes of 40: max_connections %d, want 100", n)
	}
}

// TestServeWithoutDatabaseURL runs the README's start command path: no DATABASE_URL,
// so serve creates a private cluster in the data dir, serves, and on shutdown
// stops the cluster again.
func TestServeWithoutDatabaseURL(t *testing.T) {
	// Like a user's ./data: reachable by the unprivileged user PostgreSQL runs as
	// when the tests run as root (t.TempDir's parent is private).
	dataDir, err := os.MkdirTemp("", "rbserve")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dataDir) })
	if err := os.Chmod(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve"}, env(map[string]string{"RUNDBRIEF_DATA_DIR": dataDir, "RUNDBRIEF_ADDR": addr}), io.Discard, quiet())
	}()
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v1/")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"version":"1.1.0"`)) {
				t.Fatalf("GET /v1/: %d %s", resp.StatusCode, body)
			}
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("serve did not answer within 90 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The CLI joins the running private cluster instead of starting another.
	var out bytes.Buffer
	if err := run(context.Background(), []string{"account", "create", "--name", "A", "--email", "a@a.test", "--json"},
		env(map[string]string{"RUNDBRIEF_DATA_DIR": dataDir}), &out, quiet()); err != nil {
		t.Fatalf("CLI beside serve: %v", err)
	}
	if secret, err := os.ReadFile(filepath.Join(dataDir, "secret")); err != nil || len(bytes.TrimSpace(secret)) < 32 {
		t.Errorf("dev secret: %q %v", secret, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not shut down")
	}
	if _, err := os.Stat(filepath.Join(dataDir, "postgres", "data", "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the private cluster still runs after shutdown: %v", err)
	}
	if _, err := http.Get("http://" + addr + "/v1/"); err == nil {
		t.Error("still listening after shutdown")
	}
}

func TestAccountCredit(t *testing.T) {
	url := dbtest.URL(t)
	out, err := cli(t, url, "account", "create", "--name", "Acme", "--email", "credit@acme.test", "--plan", "pro", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var acct struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal([]byte(out), &acct); err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprint(acct.ID)

	out, err = cli(t, url, "account", "credit", id, "25")
	if err != nil || out != fmt.Sprintf("Account %d: AI credit topped up by 25.00 EUR; balance 25.00 EUR\n", acct.ID) {
		t.Fatalf("credit 25: %q %v", out, err)
	}
	out, err = cli(t, url, "account", "credit", "--json", id, "12,5")
	var res struct {
		AccountID  int64   `json:"account_id"`
		AmountEUR  float64 `json:"amount_eur"`
		BalanceEUR float64 `json:"balance_eur"`
	}
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.AccountID != acct.ID || res.AmountEUR != 12.5 || res.BalanceEUR != 37.5 {
		t.Fatalf("credit --json 12,5: %q %v", out, err)
	}
	// The ledger holds both top-ups; the balance is what the API reports.
	db := dbtest.Open(t, url)
	if b, err := db.AIBalance(context.Background(), acct.ID); err != nil || b.String() != "37.50" {
		t.Errorf("balance %s %v", b, err)
	}

	var uerr usageError
	for _, args := range [][]string{
		{"account", "credit"}, {"account", "credit", id}, {"account", "credit", "x", "5"}, {"account", "credit", id, "-5"},
		{"account", "credit", id, "5 EUR"}, {"account", "credit", id, "1.23456"}, {"account", "credit", id, "5", "--bogus"},
	} {
		if _, err := cli(t, url, args...); !errors.As(err, &uerr) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	for _, args := range [][]string{{"account", "credit", id, "0"}, {"account", "credit", id, "1000000"}, {"account", "credit", "999999", "5"}} {
		if _, err := cli(t, url, args...); err == nil || errors.As(err, &uerr) {
			t.Errorf("%v: %v, want a domain error", args, err)
		}
	}
	if b, _ := db.AIBalance(context.Background(), acct.ID); b.String() != "37.50" {
		t.Errorf("refused top-ups changed the balance: %s", b)
	}
}

func TestNewAIService(t *testing.T) {
	for _, c := range []struct {
		cfg     Config
		enabled bool
		err     string
	}{
		{Config{AIAnthropicURL: "https://api.anthropic.com"}, false, ""},
		{Config{AIAnthropicURL: "https://api.anthropic.com", AIAnthropicKey: "sk"}, true, ""},
		{Config{AIAnthropicURL: "https://api.anthropic.com", AIFallbackURL: "http://localhost:11434", AIFallbackModel: "llama3.1:8b"}, true, ""},
		{Config{AIAnthropicURL: "https://api.anthropic.com", AIFallbackURL: "http://localhost:11434"}, false, "RUNDBRIEF_AI_FALLBACK_MODEL"},
		{Config{AIAnthropicURL: "api.anthropic.com", AIAnthropicKey: "sk"}, false, "RUNDBRIEF_AI_ANTHROPIC_URL"},
		{Config{AIAnthropicURL: "https://api.anthropic.com", AIFallbackURL: "ftp://x", AIFallbackModel: "m"}, false, "RUNDBRIEF_AI_FALLBACK_URL"},
	} {
		providers, err := aiProviders(c.cfg, quiet())
		svc := ai.NewService(nil, providers)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.err)
		case c.err == "" && (err != nil || svc.Enabled() != c.enabled):
			t.Errorf("%+v: enabled=%v %v, want enabled=%v", c.cfg, svc.Enabled(), err, c.enabled)
		}
	}
}
