package store

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// KeyPrefix is the fixed live prefix every API key starts with.
const KeyPrefix = "rb_live_"

// keyRandomLen is the number of random characters after the prefix.
const keyRandomLen = 40

// Scopes an API key can hold.
var validScopes = []string{"read", "write", "send", "ai", "*"}

// APIKey is a stored key. Only a SHA-256 of the key is kept: the key has 238 bits of
// entropy, so a fast hash is safe and keeps authentication cheap.
type APIKey struct {
	ID             int64          `db:"id"`
	AccountID      int64          `db:"account_id"`
	Name           string         `db:"name"`
	Prefix         string         `db:"prefix"`
	Scopes         pq.StringArray `db:"scopes"`
	AllowedIPs     pq.StringArray `db:"allowed_ips"`
	AllowedOrigins pq.StringArray `db:"allowed_origins"`
	RateLimit      *int           `db:"rate_limit"`
	CreatedAt      time.Time      `db:"created_at"`
	LastUsedAt     *time.Time     `db:"last_used_at"`
	RevokedAt      *time.Time     `db:"revoked_at"`
}

// KeySettings are the restrictions of a key, given at creation and kept on renewal.
type KeySettings struct {
	Name           string
	Scopes         []string // empty: "*"
	AllowedIPs     []string // addresses or CIDR ranges; empty: any
	AllowedOrigins []string // exact origins or https://*.domain; empty: any
	RateLimit      *int     // requests per minute, at most the service default
}

// Validate normalises the settings and reports every invalid field.
func (s *KeySettings) Validate() error {
	errs := Errs{}
	s.Name = strings.TrimSpace(s.Name)
	if len(s.Scopes) == 0 {
		s.Scopes = []string{"*"}
	}
	for _, sc := range s.Scopes {
		if !slices.Contains(validScopes, sc) {
			errs.Add("scopes", fmt.Sprintf("Unbekannter Bereich %q (erlaubt: read, write, send, ai, *).", sc))
		}
	}
	slices.Sort(s.Scopes)
	s.Scopes = slices.Compact(s.Scopes)
	for i, ip := range s.AllowedIPs {
		p, err := ParseIPOrCIDR(ip)
		if err != nil {
			errs.Add("allowed_ips", fmt.Sprintf("%q ist weder eine IP-Adresse noch ein CIDR-Bereich.", ip))
			continue
		}
		s.AllowedIPs[i] = p.String()
	}
	for i, o := range s.AllowedOrigins {
		norm, ok := normaliseOrigin(o)
		if !ok {
			errs.Add("allowed_origins", fmt.Sprintf("%q ist kein gültiger Origin (z. B. https://example.com oder https://*.example.com).", o))
			continue
		}
		s.AllowedOrigins[i] = norm
	}
	if s.RateLimit != nil && *s.RateLimit < 1 {
		errs.Add("rate_limit", "Das Limit muss mindestens 1 Anfrage pro Minute sein.")
	}
	return errs.Err()
}

// ParseIPOrCIDR parses "203.0.113.7" as a single-address prefix and "10.0.0.0/8" as a range.
func ParseIPOrCIDR(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// normaliseOrigin accepts scheme://host[:port] with an optional leading "*." label.
func normaliseOrigin(o string) (string, bool) {
	o = strings.TrimRight(strings.TrimSpace(o), "/")
	u, err := url.Parse(strings.Replace(o, "://*.", "://wildcard.", 1))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return "", false
	}
	return strings.ToLower(o), true
}

// IPAllowed reports whether ip may use a key restricted to allowed (empty: any).
func IPAllowed(allowed []string, ip netip.Addr) bool {
	if len(allowed) == 0 {
		return true
	}
	ip = ip.Unmap()
	for _, s := range allowed {
		if p, err := ParseIPOrCIDR(s); err == nil && p.Contains(ip) {
			return true
		}
	}
	return false
}

// OriginAllowed reports whether a browser origin may use a key restricted to allowed.
// A request without Origin is not a browser request and passes; "https://*.example.com"
// matches every subdomain of example.com (at any depth) but not example.com itself.
func OriginAllowed(allowed []string, origin string) bool {
	if len(allowed) == 0 || origin == "" {
		return true
	}
	origin = strings.ToLower(origin)
	for _, a := range allowed {
		if a == origin {
			return true
		}
		scheme, host, ok := strings.Cut(a, "://*.")
		if !ok {
			continue
		}
		rest, ok := strings.CutPrefix(origin, scheme+"://")
		if ok && strings.HasSuffix(rest, "."+host) && len(rest) > len(host)+1 {
			return true
		}
	}
	return false
}

// HashKey is how a key is looked up: SHA-256 of the full key.
func HashKey(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return sum[:]
}

func newKey() (full, prefix string) {
	full = KeyPrefix + RandomString(keyRandomLen)
	return full, full[:len(KeyPrefix)+4]
}

const keyColumns = `id, account_id, name, prefix, scopes, allowed_ips, allowed_origins, rate_limit, created_at, last_used_at, revoked_at`

const countActiveKeys = `SELECT count(*) FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL`

const lockAccount = `SELECT a.plan FROM accounts a WHERE a.id = $1 FOR UPDATE`

const insertKey = `INSERT INTO api_keys (account_id, name, prefix, key_hash, scopes, allowed_ips, allowed_origins, rate_limit, renewed_from)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ` + keyColumns

// CreateKey creates an API key and returns it with the full key, which is never
// retrievable again.
func (db *DB) CreateKey(ctx context.Context, accountID int64, s KeySettings) (APIKey, string, error) {
	if err := s.Validate(); err != nil {
		return APIKey{}, "", err
	}
	var k APIKey
	var full string
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		k, full, err = insertKeyTx(ctx, tx, accountID, s, nil)
		return err
	})
	return k, full, err
}

func insertKeyTx(ctx context.Context, tx *sqlx.Tx, accountID int64, s KeySettings, renewedFrom *int64) (APIKey, string, error) {
	// Locking the account row serialises key creation per account, so the limit holds
	// under concurrent requests.
	var planName string
	if err := tx.GetContext(ctx, &planName, lockAccount, accountID); err != nil {
		return APIKey{}, "", notFound("create key", err)
	}
	var plan Plan
	if err := tx.GetContext(ctx, &plan, selectPlan, planName); err != nil {
		return APIKey{}, "", fmt.Errorf("store: create key: %w", err)
	}
	var active int64
	if err := tx.GetContext(ctx, &active, countActiveKeys, accountID); err != nil {
		return APIKey{}, "", fmt.Errorf("store: create key: %w", err)
	}
	if active >= plan.MaxAPIKeys {
		return APIKey{}, "", &LimitError{Limit: "api_keys", Max: plan.MaxAPIKeys, UpgradeURL: plan.UpgradeURL}
	}
	full, prefix := newKey()
	var k APIKey
	err := tx.GetContext(ctx, &k, insertKey, accountID, s.Name, prefix, HashKey(full),
		pq.StringArray(s.Scopes), pq.StringArray(nonNil(s.AllowedIPs)), pq.StringArray(nonNil(s.AllowedOrigins)), s.RateLimit, renewedFrom)
	if err != nil {
		return APIKey{}, "", fmt.Errorf("store: create key: %w", err)
	}
	return k, full, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

const revokeKey = `UPDATE api_keys SET revoked_at = now() WHERE account_id = $1 AND id = $2 AND revoked_at IS NULL
RETURNING ` + keyColumns

// RevokeKey invalidates a key at once: when it returns, no process accepts the
// key any more (changeKeys).
func (db *DB) RevokeKey(ctx context.Context, accountID, id int64) error {
	return db.changeKeys(ctx, func(tx *sqlx.Tx) error {
		var k APIKey
		if err := tx.GetContext(ctx, &k, revokeKey, accountID, id); err != nil {
			return notFound("revoke key", err)
		}
		return nil
	})
}

// RenewKey creates a new key with the same settings and revokes the old one at
// once: when it returns, no process accepts the old key any more (changeKeys).
func (db *DB) RenewKey(ctx context.Context, accountID, id int64) (APIKey, string, error) {
	var k APIKey
	var full string
	err := db.changeKeys(ctx, func(tx *sqlx.Tx) error {
		var old APIKey
		if err := tx.GetContext(ctx, &old, revokeKey, accountID, id); err != nil {
			return notFound("renew key", err)
		}
		var err error
		k, full, err = insertKeyTx(ctx, tx, accountID, KeySettings{
			Name: old.Name, Scopes: old.Scopes, AllowedIPs: old.AllowedIPs, AllowedOrigins: old.AllowedOrigins, RateLimit: old.RateLimit,
		}, &old.ID)
		return err
	})
	if err != nil {
		return APIKey{}, "", err
	}
	return k, full, nil
}

const updateKeySettings = `UPDATE api_keys SET name = $3, scopes = $4, allowed_ips = $5, allowed_origins = $6, rate_limit = $7
WHERE account_id = $1 AND id = $2 AND revoked_at IS NULL RETURNING ` + keyColumns

// UpdateKey replaces the settings of an active key.
func (db *DB) UpdateKey(ctx context.Context, accountID, id int64, s KeySettings) (APIKey, error) {
	if err := s.Validate(); err != nil {
		return APIKey{}, err
	}
	var k APIKey
	err := db.changeKeys(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &k, updateKeySettings, accountID, id, s.Name, pq.StringArray(s.Scopes),
			pq.StringArray(nonNil(s.AllowedIPs)), pq.StringArray(nonNil(s.AllowedOrigins)), s.RateLimit); err != nil {
			return notFound("update key", err)
		}
		return nil
	})
	return k, err
}

const selectKeys = `SELECT ` + keyColumns + ` FROM api_keys WHERE account_id = $1 ORDER BY revoked_at IS NOT NULL, id DESC`

// Keys lists an account's keys, active ones first.
func (db *DB) Keys(ctx context.Context, accountID int64) ([]APIKey, error) {
	var ks []APIKey
	if err := db.SelectContext(ctx, &ks, selectKeys, accountID); err != nil {
		return nil, fmt.Errorf("store: list keys: %w", err)
	}
	return ks, nil
}

const selectKeyAccount = `SELECT account_id FROM api_keys WHERE id = $1`

// KeyAccount returns the account a key belongs to. Only the operator's CLI, which
// names keys by id alone, needs it.
func (db *DB) KeyAccount(ctx context.Context, id int64) (int64, error) {
	var accountID int64
	if err := db.GetContext(ctx, &accountID, selectKeyAccount, id); err != nil {
		return 0, notFound("key account", err)
	}
	return accountID, nil
}

// Principal is who an API request acts as: the key, its account, the account's
// owner and plan.
type Principal struct {
	Key     APIKey
	Account Account
	Owner   User
	Plan    Plan
}

const selectPrincipal = `SELECT k.key_hash,
  k.id, k.account_id, k.name, k.prefix, k.scopes, k.allowed_ips, k.allowed_origins, k.rate_limit, k.created_at, k.last_used_at, k.revoked_at,
  a.id AS "account.id", a.name AS "account.name", a.plan AS "account.plan", a.blocked_at AS "account.blocked_at", a.created_at AS "account.created_at",
  p.name AS "plan.name", p.features AS "plan.features", p.max_contacts AS "plan.max_contacts", p.max_lists AS "plan.max_lists",
  p.max_sends_per_day AS "plan.max_sends_per_day", p.max_storage_bytes AS "plan.max_storage_bytes", p.max_webhooks AS "plan.max_webhooks",
  p.max_api_keys AS "plan.max_api_keys", p.upgrade_url AS "plan.upgrade_url",
  u.id AS "owner.id", u.account_id AS "owner.account_id", u.email AS "owner.email", u.name AS "owner.name",
  u.role AS "owner.role", u.created_at AS "owner.created_at"
FROM api_keys k JOIN accounts a ON a.id = k.account_id JOIN plans p ON p.name = a.plan
JOIN LATERAL (SELECT id, account_id, email, name, role, created_at FROM users
              WHERE account_id = a.id AND role = 'owner' ORDER BY id LIMIT 1) u ON true
WHERE k.key_hash = $1 AND k.revoked_at IS NULL`

// Authenticate returns the principal of an active key, or ErrNotFound for a missing,
// wrong or revoked one. Results are cached for at most KeyCacheTTL while the
// notification listener runs; a key change returns only once every process's
// cache has dropped what it changed (changeKeys).
func (db *DB) Authenticate(ctx context.Context, key string) (Principal, error) {
	if len(key) != len(KeyPrefix)+keyRandomLen || !strings.HasPrefix(key, KeyPrefix) {
		return Principal{}, ErrNotFound
	}
	hash := HashKey(key)
	if p, ok := db.keys.get(hash); ok {
		return p, nil
	}
	f, lead, gen := db.keys.join(hash)
	if !lead {
		select {
		case <-f.done:
		case <-ctx.Done():
			return Principal{}, fmt.Errorf("store: authenticate: %w", ctx.Err())
		}
		if p, ok := db.keys.shared(f); ok {
			return p, nil
		}
		// The look-up failed or predates a key change: look up anew.
		return db.lookUpKey(ctx, hash, db.keys.generation())
	}
	if f == nil {
		return db.lookUpKey(ctx, hash, gen)
	}
	return db.leadLookUp(ctx, hash, f, gen)
}

// leadLookUp runs the look-up that concurrent misses of the key wait for and
// lands it however it ends, so that no waiter is left behind.
func (db *DB) leadLookUp(ctx context.Context, hash []byte, f *keyFlight, gen uint64) (p Principal, err error) {
	err = errors.New("store: authenticate: look-up did not finish")
	defer func() { db.keys.land(hash, f, p, err) }()
	return db.lookUpKey(ctx, hash, gen)
}

// lookUpKey reads the principal of a key's hash and caches it under gen
// (unless the cache was flushed since gen was taken).
func (db *DB) lookUpKey(ctx context.Context, hash []byte, gen uint64) (Principal, error) {
	start := time.Now()
	var row struct {
		KeyHash []byte `db:"key_hash"`
		APIKey
		Account Account `db:"account"`
		Plan    Plan    `db:"plan"`
		Owner   User    `db:"owner"`
	}
	if err := db.GetContext(ctx, &row, selectPrincipal, hash); err != nil {
		return Principal{}, notFound("authenticate", err)
	}
	// The index found the row by hash; compare in constant time all the same, so that
	// no code path branches on how much of a key matched.
	if subtle.ConstantTimeCompare(row.KeyHash, hash) != 1 {
		return Principal{}, ErrNotFound
	}
	p := Principal{Key: row.APIKey, Account: row.Account, Owner: row.Owner, Plan: row.Plan}
	db.keys.put(hash, p, gen, start)
	return p, nil
}

const touchKeys = `UPDATE api_keys k SET last_used_at = v.used
FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[]) AS v(account_id, id, used)
WHERE k.account_id = v.account_id AND k.id = v.id AND (k.last_used_at IS NULL OR k.last_used_at < v.used)`

// TouchKeys records when keys were last used, in one statement for a whole batch.
func (db *DB) TouchKeys(ctx context.Context, accountIDs, keyIDs []int64, used []time.Time) error {
	if len(keyIDs) == 0 {
		return nil
	}
	if _, err := db.ExecContext(ctx, touchKeys, pq.Int64Array(accountIDs), pq.Int64Array(keyIDs), pq.Array(used)); err != nil {
		return fmt.Errorf("store: touch keys: %w", err)
	}
	return nil
}
