package integration

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Headers and parameters of the providers' signatures.
const (
	HeaderStripeSignature   = "Stripe-Signature"
	HeaderCopeCartSignature = "X-Copecart-Signature"
	HeaderGenericSignature  = "X-Signature"
	ParamDigistoreSign      = "sha_sign"
)

// StripeTolerance is how far a Stripe-Signature's timestamp may lie from now.
const StripeTolerance = 300 * time.Second

// errUnsigned and errForged are the reasons a call is refused; their text is
// what the event log shows.
var (
	errUnsigned = errors.New("Signatur fehlt")
	errForged   = errors.New("Signatur stimmt nicht")
	errStale    = errors.New("Zeitstempel der Signatur außerhalb von 300 Sekunden")
	errNoSecret = errors.New("Kein Schlüssel hinterlegt: bitte in der Integration eintragen")
)

// hmacSHA256 is the HMAC-SHA256 of msg keyed with key.
func hmacSHA256(key string, msg ...[]byte) []byte {
	m := hmac.New(sha256.New, []byte(key))
	for _, b := range msg {
		m.Write(b)
	}
	return m.Sum(nil)
}

// verifyStripe checks Stripe's scheme: Stripe-Signature "t=<unix>,v1=<hex>[,v1=…]"
// where each v1 may be the HMAC-SHA256 of "<t>.<body>" keyed with the endpoint
// secret (whsec_…, the whole string); t within StripeTolerance of now.
func verifyStripe(h http.Header, body []byte, secret string, now time.Time) error {
	raw := h.Get(HeaderStripeSignature)
	if raw == "" {
		return errUnsigned
	}
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(raw, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return errUnsigned
	}
	want := hmacSHA256(secret, []byte(ts), []byte("."), body)
	ok := false
	for _, s := range sigs {
		// Every entry is compared, so the time taken says nothing about which matched.
		if hmac.Equal(s, want) {
			ok = true
		}
	}
	if !ok {
		return errForged
	}
	if d := now.Sub(time.Unix(t, 0)); d > StripeTolerance || d < -StripeTolerance {
		return errStale
	}
	return nil
}

// StripeSignature is the Stripe-Signature header of body at t (the test event).
func StripeSignature(body []byte, secret string, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(hmacSHA256(secret, []byte(ts), []byte("."), body))
}

// DigistoreSign computes Digistore24's sha_sign over the IPN parameters as
// decisions.md pins it: every parameter but sha_sign, sorted by name, empty
// ones skipped, each appended as name=value followed by the passphrase; the
// upper-case hex SHA-512 of the whole. A repeated name counts with its last
// value (as PHP, Digistore24's own language, reads a form).
func DigistoreSign(params url.Values, passphrase string) string {
	names := make([]string, 0, len(params))
	for k := range params {
		if k != ParamDigistoreSign {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	h := sha512.New()
	for _, k := range names {
		vs := params[k]
		if len(vs) == 0 || vs[len(vs)-1] == "" {
			continue
		}
		h.Write([]byte(k + "=" + vs[len(vs)-1] + passphrase))
	}
	return strings.ToUpper(hex.EncodeToString(h.Sum(nil)))
}

// verifyDigistore checks the sha_sign of a Digistore24 IPN (a form body).
func verifyDigistore(body []byte, passphrase string) (url.Values, error) {
	params, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, errUnsigned
	}
	given := strings.ToUpper(strings.TrimSpace(params.Get(ParamDigistoreSign)))
	if given == "" {
		return nil, errUnsigned
	}
	if !hmac.Equal([]byte(given), []byte(DigistoreSign(params, passphrase))) {
		return nil, errForged
	}
	return params, nil
}

// CopeCartSignature is the X-Copecart-Signature of body: the base64 of the
// HMAC-SHA256 of the raw body keyed with the IPN secret.
func CopeCartSignature(body []byte, secret string) string {
	return base64.StdEncoding.EncodeToString(hmacSHA256(secret, body))
}

// verifyCopeCart checks CopeCart's signature header; the HMAC is accepted in
// base64 (CopeCart's form) or hex.
func verifyCopeCart(h http.Header, body []byte, secret string) error {
	raw := strings.TrimSpace(h.Get(HeaderCopeCartSignature))
	if raw == "" {
		return errUnsigned
	}
	want := hmacSHA256(secret, body)
	got, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(got) != len(want) {
		if got, err = hex.DecodeString(raw); err != nil {
			return errForged
		}
	}
	if !hmac.Equal(got, want) {
		return errForged
	}
	return nil
}

// GenericSignature is the X-Signature of body: sha256=<hex HMAC-SHA256>.
func GenericSignature(body []byte, secret string) string {
	return "sha256=" + hex.EncodeToString(hmacSHA256(secret, body))
}

// verifyGeneric checks X-Signature: sha256=<hex HMAC-SHA256 of the body>.
func verifyGeneric(h http.Header, body []byte, secret string) error {
	raw := strings.TrimSpace(h.Get(HeaderGenericSignature))
	if raw == "" {
		return errUnsigned
	}
	hexSig, ok := strings.CutPrefix(raw, "sha256=")
	if !ok {
		return errUnsigned
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return errForged
	}
	if !hmac.Equal(got, hmacSHA256(secret, body)) {
		return errForged
	}
	return nil
}

// rejection is the German reason of a refused call for the event log.
func rejection(err error) string {
	var pe *paypalError
	switch {
	case errors.As(err, &pe):
		return "PayPal: " + pe.msg
	case errors.Is(err, errUnsigned), errors.Is(err, errForged), errors.Is(err, errStale), errors.Is(err, errNoSecret):
		return err.Error()
	}
	return fmt.Sprintf("Prüfung fehlgeschlagen: %v", err)
}
