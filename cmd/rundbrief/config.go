package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
)

// Config is the whole service configuration, read once from the environment.
type Config struct {
	DatabaseURL         string // empty: a private cluster under DataDir/postgres
	Addr                string
	BaseURL             string
	DataDir             string
	DBMaxConns          int // bounds all PostgreSQL connections of the process together
	Secret              string
	RateLimit           int
	WebhookAllowPrivate bool
	SMTPAllowPrivate    bool
	SMTPURL             string
	AIAnthropicKey      string
	AIAnthropicURL      string
	AIFallbackURL       string
	AIFallbackKey       string
	AIFallbackModel     string
	MetricsToken        string // empty: /metrics is open
	// UpgradeURL is where the portal's plan page sends accounts to change
	// their plan (RUNDBRIEF_UPGRADE_URL); empty: the page names the operator.
	UpgradeURL string
	// SendLanes and SendBatchSize tune this process's send worker
	// (RUNDBRIEF_SEND_LANES, RUNDBRIEF_SEND_BATCH_SIZE): its lanes, each with
	// one SMTP connection, and how many recipients a lane claims at once.
	SendLanes, SendBatchSize int
}

// loadConfig reads RUNDBRIEF_* and DATABASE_URL and checks them.
func loadConfig(getenv func(string) string) (Config, error) {
	c := Config{
		DatabaseURL:     getenv("DATABASE_URL"),
		Addr:            or(getenv("RUNDBRIEF_ADDR"), "127.0.0.1:8080"),
		DataDir:         or(getenv("RUNDBRIEF_DATA_DIR"), "./data"),
		Secret:          getenv("RUNDBRIEF_SECRET"),
		SMTPURL:         getenv("RUNDBRIEF_SMTP_URL"),
		AIAnthropicKey:  getenv("RUNDBRIEF_AI_ANTHROPIC_KEY"),
		AIAnthropicURL:  or(getenv("RUNDBRIEF_AI_ANTHROPIC_URL"), "https://api.anthropic.com"),
		AIFallbackURL:   getenv("RUNDBRIEF_AI_FALLBACK_URL"),
		AIFallbackKey:   getenv("RUNDBRIEF_AI_FALLBACK_KEY"),
		AIFallbackModel: getenv("RUNDBRIEF_AI_FALLBACK_MODEL"),
		MetricsToken:    getenv("RUNDBRIEF_METRICS_TOKEN"),
		UpgradeURL:      getenv("RUNDBRIEF_UPGRADE_URL"),
	}
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("RUNDBRIEF_ADDR %q: expected host:port", c.Addr))
	}
	c.BaseURL = strings.TrimRight(or(getenv("RUNDBRIEF_BASE_URL"), "http://"+c.Addr), "/")
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("RUNDBRIEF_BASE_URL %q: expected an http(s) URL", c.BaseURL))
	}
	if c.UpgradeURL != "" {
		if u, err := url.Parse(c.UpgradeURL); err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "mailto") ||
			(u.Scheme != "mailto" && u.Host == "") || (u.Scheme == "mailto" && u.Opaque == "") {
			errs = append(errs, fmt.Errorf("RUNDBRIEF_UPGRADE_URL %q: expected an http(s) or mailto: URL", c.UpgradeURL))
		}
	}
	c.RateLimit = 120
	if s := getenv("RUNDBRIEF_RATE_LIMIT"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("RUNDBRIEF_RATE_LIMIT %q: expected a positive integer", s))
		}
		c.RateLimit = n
	}
	c.DBMaxConns = store.DefaultMaxConns
	if s := getenv("RUNDBRIEF_DB_MAX_CONNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < store.MinMaxConns {
			errs = append(errs, fmt.Errorf("RUNDBRIEF_DB_MAX_CONNS %q: expected an integer of at least %d (connections of this process to PostgreSQL, all pools and listeners together)", s, store.MinMaxConns))
		}
		c.DBMaxConns = n
	}
	c.SendLanes, c.SendBatchSize = mailer.DefaultLanes, mailer.DefaultBatchSize
	for _, v := range []struct {
		name     string
		dst      *int
		min, max int
	}{{"RUNDBRIEF_SEND_LANES", &c.SendLanes, 1, mailer.MaxLanes}, {"RUNDBRIEF_SEND_BATCH_SIZE", &c.SendBatchSize, 1, mailer.MaxBatchSize}} {
		if s := getenv(v.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < v.min || n > v.max {
				errs = append(errs, fmt.Errorf("%s %q: expected an integer from %d to %d", v.name, s, v.min, v.max))
			}
			*v.dst = n
		}
	}
	if s := getenv("RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE %q: expected true or false", s))
		}
		c.WebhookAllowPrivate = b
	}
	if s := getenv("RUNDBRIEF_SMTP_ALLOW_PRIVATE"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("RUNDBRIEF_SMTP_ALLOW_PRIVATE %q: expected true or false", s))
		}
		c.SMTPAllowPrivate = b
	}
	if c.SMTPURL != "" {
		if u, err := url.Parse(c.SMTPURL); err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Host == "" {
			errs = append(errs, errors.New("RUNDBRIEF_SMTP_URL: expected smtp://user:pass@host:port or smtps://…"))
		}
	}
	if c.Secret != "" && len(c.Secret) < 32 {
		errs = append(errs, errors.New("RUNDBRIEF_SECRET: use at least 32 characters"))
	}
	return c, errors.Join(errs...)
}

// ensureSecret fills Secret from DataDir/secret, generating that file on first use:
// fine for development, but production should set RUNDBRIEF_SECRET.
func (c *Config) ensureSecret(log *slog.Logger) error {
	if c.Secret != "" {
		return nil
	}
	path := filepath.Join(c.DataDir, "secret")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		c.Secret = strings.TrimSpace(string(b))
		return nil
	}
	if err := os.MkdirAll(c.DataDir, 0o755); err != nil { // the cluster inside runs as another user when we are root
		return fmt.Errorf("secret: %w", err)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	c.Secret = base64.RawURLEncoding.EncodeToString(b)
	if err := os.WriteFile(path, []byte(c.Secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	log.Warn("RUNDBRIEF_SECRET is not set: generated one into the data dir; set it explicitly in production", "file", path)
	return nil
}

func or(v, fallback string) string {
	if v == "" {
		return fallback
	}
	return v
}
