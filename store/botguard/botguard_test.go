package botguard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestStamp(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	g := New("a secret of the service, 32+ chars long", c.now)
	stamp := g.Stamp("form-abc")
	cases := []struct {
		name  string
		after time.Duration
		form  string
		stamp string
		want  error
	}{
		{"in time", 5 * time.Second, "form-abc", stamp, nil},
		{"too fast", time.Second, "form-abc", stamp, ErrTooFast},
		{"too old", 25 * time.Hour, "form-abc", stamp, ErrExpired},
		{"other form", 5 * time.Second, "form-xyz", stamp, ErrInvalid},
		{"forged time", 5 * time.Second, "form-abc", "1799999000" + stamp[10:], ErrInvalid},
		{"garbage", 5 * time.Second, "form-abc", "nope", ErrInvalid},
	}
	for _, tc := range cases {
		c.t = time.Unix(1_800_000_000, 0).Add(tc.after)
		if err := g.CheckStamp(tc.form, tc.stamp, 3*time.Second, 24*time.Hour); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		c.t = time.Unix(1_800_000_000, 0)
	}
	other := New("another secret of another service....", c.now)
	c.t = c.t.Add(5 * time.Second)
	if err := other.CheckStamp("form-abc", stamp, 3*time.Second, time.Hour); !errors.Is(err, ErrInvalid) {
		t.Errorf("stamp accepted under another secret: %v", err)
	}
}

func TestChallengeRoundTrip(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	g := New("a secret of the service, 32+ chars long", c.now)
	ch, err := g.NewChallenge(5000, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The ALTCHA v1 construction, computed independently.
	key := hmac.New(sha256.New, []byte("a secret of the service, 32+ chars long"))
	key.Write([]byte("rundbrief botguard v1"))
	m := hmac.New(sha256.New, key.Sum(nil))
	m.Write([]byte(ch.Challenge))
	if ch.Signature != hex.EncodeToString(m.Sum(nil)) || ch.Algorithm != "SHA-256" || ch.MaxNumber != 5000 {
		t.Errorf("challenge %+v", ch)
	}
	payload, err := Solve(ch)
	if err != nil {
		t.Fatal(err)
	}
	got, expires, err := g.Verify(payload)
	if err != nil || got != ch.Challenge || !expires.Equal(c.t.Add(10*time.Minute)) {
		t.Fatalf("Verify: %q %v %v", got, expires, err)
	}

	var s Solution
	raw, _ := base64.StdEncoding.DecodeString(payload)
	_ = json.Unmarshal(raw, &s)
	tamper := func(f func(*Solution)) string {
		x := s
		f(&x)
		b, _ := json.Marshal(x)
		return base64.StdEncoding.EncodeToString(b)
	}
	bad := map[string]string{
		"wrong number":     tamper(func(x *Solution) { x.Number = (x.Number + 1) % 5001 }),
		"forged signature": tamper(func(x *Solution) { x.Signature = hex.EncodeToString(make([]byte, 32)) }),
		"own challenge": tamper(func(x *Solution) {
			x.Salt = "00?expires=9999999999&"
			x.Number = 1
			sum := sha256.Sum256([]byte(x.Salt + strconv.Itoa(1)))
			x.Challenge = hex.EncodeToString(sum[:])
		}),
		"other algorithm": tamper(func(x *Solution) { x.Algorithm = "SHA-1" }),
		"not base64":      "%%%",
		"not json":        base64.StdEncoding.EncodeToString([]byte("{")),
	}
	for name, p := range bad {
		if _, _, err := g.Verify(p); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	c.t = c.t.Add(11 * time.Minute)
	if _, _, err := g.Verify(payload); !errors.Is(err, ErrExpired) {
		t.Errorf("expired: %v", err)
	}
}
