package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/store/webhook"
)

// The receiver-side verification shown in docs/webhooks.md. The text between
// the BEGIN and END lines is copied into the guide verbatim, and
// TestWebhookGuideQuotesTheGoExample keeps the two identical, so the Go
// example a reader copies is the one that compiles and runs here.

// BEGIN docs/webhooks.md Go
// signatureTolerance is how far a delivery's timestamp may be from the
// receiver's clock; older deliveries are refused, so a recorded request
// cannot be replayed later.
const signatureTolerance = 5 * time.Minute

// verifyServiceSignature checks X-Service-Signature ("t=<unix>,v1=<hex>",
// one v1 entry per active secret): the hex HMAC-SHA256 of "<t>.<raw body>",
// keyed with the whole secret string "whsec_…".
func verifyServiceSignature(secret, header string, body []byte, now time.Time) bool {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	if !signedRecently(ts, now) {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range sigs {
		if got, err := hex.DecodeString(s); err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

// verifyStandardWebhook checks the Standard Webhooks headers: webhook-signature
// ("v1,<base64>", space-separated, one per active secret) is the base64
// HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>", keyed with the
// bytes the secret's part after "whsec_" decodes to.
func verifyStandardWebhook(secret, id, ts, signatures string, body []byte, now time.Time) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || id == "" || !signedRecently(ts, now) {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, entry := range strings.Fields(signatures) {
		version, sig, _ := strings.Cut(entry, ",")
		if got, err := base64.StdEncoding.DecodeString(sig); version == "v1" && err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

// signedRecently reports whether the Unix timestamp ts is within
// signatureTolerance of now.
func signedRecently(ts string, now time.Time) bool {
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	d := now.Sub(time.Unix(unix, 0))
	return d > -signatureTolerance && d < signatureTolerance
}

// END docs/webhooks.md Go

// exampleSecret and exampleBody stand for a webhook's secret and a delivery's
// raw body.
const (
	exampleSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/3nSBgQ4gr0="
	exampleBody   = `{"id":"evt_8fJ2kLq0","event":"contact.created","created_at":"2026-11-22T05:02:04+01:00","data":{"contact":{"id":7}}}`
)

// The receiver checks X-Service-Signature against the raw body: a changed
// body, another secret or an old timestamp fails.
func ExampleSignatureHeader_verify() {
	sent := time.Unix(1795600000, 0)
	body := []byte(exampleBody)
	header := webhook.SignatureHeader(sent, body, []string{exampleSecret})
	now := sent.Add(2 * time.Second)

	fmt.Println("genuine:", verifyServiceSignature(exampleSecret, header, body, now))
	fmt.Println("changed body:", verifyServiceSignature(exampleSecret, header, []byte(exampleBody+" "), now))
	fmt.Println("other secret:", verifyServiceSignature("whsec_"+strings.Repeat("A", 44), header, body, now))
	fmt.Println("an hour later:", verifyServiceSignature(exampleSecret, header, body, sent.Add(time.Hour)))
	// Output:
	// genuine: true
	// changed body: false
	// other secret: false
	// an hour later: false
}

// The same delivery verified with the Standard Webhooks headers; during a
// secret rotation both secrets sign, and either verifies.
func ExampleStandardSignature_verify() {
	sent := time.Unix(1795600000, 0)
	body := []byte(exampleBody)
	const previous = "whsec_c2VjcmV0LWJlZm9yZS10aGUtcm90YXRpb24tMzJieXRlcyE="
	sig, err := webhook.StandardSignature("evt_8fJ2kLq0", sent, body, []string{exampleSecret, previous})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := strconv.FormatInt(sent.Unix(), 10)
	now := sent.Add(2 * time.Second)

	fmt.Println("entries:", len(strings.Fields(sig)))
	fmt.Println("new secret:", verifyStandardWebhook(exampleSecret, "evt_8fJ2kLq0", ts, sig, body, now))
	fmt.Println("previous secret:", verifyStandardWebhook(previous, "evt_8fJ2kLq0", ts, sig, body, now))
	fmt.Println("other id:", verifyStandardWebhook(exampleSecret, "evt_other", ts, sig, body, now))
	// Output:
	// entries: 2
	// new secret: true
	// previous secret: true
	// other id: false
}
