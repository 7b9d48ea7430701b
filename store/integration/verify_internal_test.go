package integration

import (
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	stripewebhook "github.com/stripe/stripe-go/v85/webhook"
)

func TestStripeSchemeMatchesStripeGo(t *testing.T) {
	const secret = "whsec_test_secret"
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"evt_1","type":"checkout.session.completed"}`)

	// stripe-go accepts what Rundbrief's test event signs …
	if err := stripewebhook.ValidatePayloadIgnoringTolerance(body, StripeSignature(body, secret, now), secret); err != nil {
		t.Fatalf("stripe-go refuses the test event's signature: %v", err)
	}
	// … and Rundbrief accepts what stripe-go signs, also among several v1.
	sp := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: now})
	good := sp.Header
	_, v1, _ := strings.Cut(good, ",")
	several := "t=" + strings.TrimPrefix(strings.Split(good, ",")[0], "t=") + ",v1=" + strings.Repeat("0", 64) + "," + v1
	for _, c := range []struct {
		name   string
		header string
		at     time.Time
		want   error
	}{
		{"valid", good, now, nil},
		{"several v1, one valid", several, now, nil},
		{"299 s old", good, now.Add(299 * time.Second), nil},
		{"301 s old", good, now.Add(301 * time.Second), errStale},
		{"from the future", good, now.Add(-301 * time.Second), errStale},
		{"other secret", stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: "whsec_other", Timestamp: now}).Header, now, errForged},
		{"v0 only", strings.Replace(good, "v1=", "v0=", 1), now, errUnsigned},
		{"empty", "", now, errUnsigned},
	} {
		h := http.Header{}
		if c.header != "" {
			h.Set(HeaderStripeSignature, c.header)
		}
		if err := verifyStripe(h, body, secret, c.at); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func TestDigistoreSignAsPinned(t *testing.T) {
	p := url.Values{"order_id": {"A1"}, "email": {"k@example.com"}, "empty": {""}, "amount": {"49.00"}, "sha_sign": {"ignored"}}
	// decisions.md: sorted by name, empty skipped, name=value + passphrase each,
	// upper-case hex SHA-512.
	sum := sha512.Sum512([]byte("amount=49.00pw" + "email=k@example.compw" + "order_id=A1pw"))
	want := strings.ToUpper(hex.EncodeToString(sum[:]))
	if got := DigistoreSign(p, "pw"); got != want {
		t.Fatalf("sha_sign %s, want %s", got, want)
	}
	p.Set("sha_sign", strings.ToLower(want)) // case of the hex does not matter
	if _, err := verifyDigistore([]byte(p.Encode()), "pw"); err != nil {
		t.Fatal(err)
	}
	if _, err := verifyDigistore([]byte(p.Encode()), "other"); !errors.Is(err, errForged) {
		t.Fatalf("other passphrase: %v", err)
	}
}

func TestGenericAndCopeCartSignatures(t *testing.T) {
	body := []byte(`{"event":"order.completed"}`)
	h := http.Header{HeaderGenericSignature: {GenericSignature(body, "k")}}
	if err := verifyGeneric(h, body, "k"); err != nil {
		t.Fatal(err)
	}
	h.Set(HeaderGenericSignature, strings.TrimPrefix(GenericSignature(body, "k"), "sha256="))
	if err := verifyGeneric(h, body, "k"); !errors.Is(err, errUnsigned) {
		t.Fatalf("without sha256=: %v", err)
	}
	c := http.Header{HeaderCopeCartSignature: {CopeCartSignature(body, "k")}}
	if err := verifyCopeCart(c, body, "k"); err != nil {
		t.Fatal(err)
	}
	if err := verifyCopeCart(c, append(body, ' '), "k"); !errors.Is(err, errForged) {
		t.Fatalf("changed body: %v", err)
	}
}

func TestPayPalMessage(t *testing.T) {
	// crc32 (IEEE) of "hello" is 907060870, written in decimal.
	if got := PayPalMessage("id1", "2026-11-25T10:00:00Z", "WH1", []byte("hello")); got != "id1|2026-11-25T10:00:00Z|WH1|907060870" {
		t.Fatalf("message %q", got)
	}
	v := newPayPalVerifier(nil, PayPalConfig{})
	for u, ok := range map[string]bool{
		"https://api.paypal.com/v1/notifications/certs/CERT-1":         true,
		"https://api.sandbox.paypal.com/v1/notifications/certs/CERT-1": true,
		"http://api.paypal.com/cert":                                   false,
		"https://api.paypal.com.evil.test/cert":                        false,
		"https://user@api.paypal.com/cert":                             false,
		"https://127.0.0.1/cert":                                       false,
	} {
		if v.allowedCertURL(u) != ok {
			t.Errorf("%s allowed: %v", u, !ok)
		}
	}
}
