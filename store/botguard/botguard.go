// Package botguard keeps bots off public sign-up forms without third parties: a
// signed render stamp enforces a minimum fill time, and an optional proof-of-work
// challenge (the ALTCHA v1 scheme, so the ALTCHA widget can solve it too) makes
// mass submissions expensive. Single use of a solved challenge is the caller's
// job (store it until it expires): this package only does the cryptography.
package botguard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Errors a submission can fail with.
var (
	ErrInvalid = errors.New("botguard: invalid proof")
	ErrExpired = errors.New("botguard: proof expired")
	ErrTooFast = errors.New("botguard: form submitted too fast")
)

// Algorithm is the only hash the challenges use.
const Algorithm = "SHA-256"

// Guard signs and verifies stamps and challenges with a key derived from the
// service secret.
type Guard struct {
	key []byte
	now func() time.Time
}

// New derives the guard's key from secret (RUNDBRIEF_SECRET); now is the clock.
func New(secret string, now func() time.Time) *Guard {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("rundbrief botguard v1"))
	if now == nil {
		now = time.Now
	}
	return &Guard{key: m.Sum(nil), now: now}
}

func (g *Guard) mac(parts ...string) string {
	m := hmac.New(sha256.New, g.key)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(m.Sum(nil))
}

// Stamp marks when a form was rendered, bound to the form: "<unix>.<mac>".
func (g *Guard) Stamp(form string) string {
	ts := strconv.FormatInt(g.now().Unix(), 10)
	return ts + "." + g.mac("stamp", form, ts)
}

// CheckStamp verifies a stamp of form and that at least minFill passed since it was
// rendered; stamps older than maxAge are refused so they cannot be collected.
func (g *Guard) CheckStamp(form, stamp string, minFill, maxAge time.Duration) error {
	ts, sig, ok := strings.Cut(stamp, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(g.mac("stamp", form, ts))) {
		return ErrInvalid
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrInvalid
	}
	age := g.now().Sub(time.Unix(unix, 0))
	switch {
	case age < minFill:
		return ErrTooFast
	case age > maxAge:
		return ErrExpired
	}
	return nil
}

// Challenge is what the client solves: find number n ≤ MaxNumber with
// SHA-256(Salt + n) = Challenge. Field names are ALTCHA's.
type Challenge struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	MaxNumber int    `json:"maxnumber"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
}

// NewChallenge creates a challenge valid for ttl. maxNumber sets the work: a
// browser needs on average maxNumber/2 hashes (50,000 take well under a second).
func (g *Guard) NewChallenge(maxNumber int, ttl time.Duration) (Challenge, error) {
	saltBytes := make([]byte, 12)
	if _, err := rand.Read(saltBytes); err != nil {
		return Challenge{}, fmt.Errorf("botguard: %w", err)
	}
	n, err := rand.Int(rand.Reader, big.NewInt(int64(maxNumber)+1))
	if err != nil {
		return Challenge{}, fmt.Errorf("botguard: %w", err)
	}
	salt := hex.EncodeToString(saltBytes) + "?expires=" + strconv.FormatInt(g.now().Add(ttl).Unix(), 10) + "&"
	challenge := hashHex(salt + n.String())
	return Challenge{Algorithm: Algorithm, Challenge: challenge, MaxNumber: maxNumber, Salt: salt, Signature: g.sign(challenge)}, nil
}

// sign is ALTCHA's signature: HMAC-SHA256 of the challenge, hex.
func (g *Guard) sign(challenge string) string {
	m := hmac.New(sha256.New, g.key)
	m.Write([]byte(challenge))
	return hex.EncodeToString(m.Sum(nil))
}

// Solution is the client's answer; the widget posts it base64-encoded as JSON.
type Solution struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	Number    int64  `json:"number"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
}

// Verify checks a base64 JSON solution and returns the challenge it solved (the
// caller records it until Expires to refuse a second use) and when it expires.
func (g *Guard) Verify(payload string) (challenge string, expires time.Time, err error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(payload))
	if err != nil {
		return "", time.Time{}, ErrInvalid
	}
	var s Solution
	if err := json.Unmarshal(raw, &s); err != nil || s.Algorithm != Algorithm || s.Number < 0 {
		return "", time.Time{}, ErrInvalid
	}
	if !hmac.Equal([]byte(s.Signature), []byte(g.sign(s.Challenge))) ||
		!hmac.Equal([]byte(hashHex(s.Salt+strconv.FormatInt(s.Number, 10))), []byte(s.Challenge)) {
		return "", time.Time{}, ErrInvalid
	}
	_, query, _ := strings.Cut(s.Salt, "?")
	params, err := url.ParseQuery(query)
	if err != nil {
		return "", time.Time{}, ErrInvalid
	}
	exp, err := strconv.ParseInt(params.Get("expires"), 10, 64)
	if err != nil {
		return "", time.Time{}, ErrInvalid // every challenge of ours expires
	}
	expires = time.Unix(exp, 0)
	if g.now().After(expires) {
		return "", time.Time{}, ErrExpired
	}
	return s.Challenge, expires, nil
}

// Solve finds the number of a challenge by brute force, as a browser would. Tests
// and the Go client use it; it gives up after MaxNumber.
func Solve(c Challenge) (string, error) {
	for n := 0; n <= c.MaxNumber; n++ {
		if hashHex(c.Salt+strconv.Itoa(n)) == c.Challenge {
			b, err := json.Marshal(Solution{Algorithm: c.Algorithm, Challenge: c.Challenge, Number: int64(n), Salt: c.Salt, Signature: c.Signature})
			if err != nil {
				return "", err
			}
			return base64.StdEncoding.EncodeToString(b), nil
		}
	}
	return "", errors.New("botguard: no solution")
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
