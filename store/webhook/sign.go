package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// SignatureHeader is X-Service-Signature: "t=<unix>,v1=<hex>" with one v1 entry
// per secret, each the hex HMAC-SHA256 keyed with the whole secret string
// (whsec_…) over "<unix>.<body>". This is exactly Stripe's scheme, so Stripe's
// verification libraries accept it; they try every v1 entry, which is how both
// secrets verify during a rotation.
func SignatureHeader(t time.Time, body []byte, secrets []string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=" + ts)
	for _, s := range secrets {
		mac := hmac.New(sha256.New, []byte(s))
		mac.Write([]byte(ts))
		mac.Write([]byte{'.'})
		mac.Write(body)
		b.WriteString(",v1=" + hex.EncodeToString(mac.Sum(nil)))
	}
	return b.String()
}

// StandardSignature is the Standard Webhooks webhook-signature header: one
// "v1,<base64>" entry per secret, separated by spaces, each the standard base64
// HMAC-SHA256 over "<msgID>.<unix>.<body>", keyed with the bytes the secret's
// base64 part (after whsec_) decodes to.
func StandardSignature(msgID string, t time.Time, body []byte, secrets []string) (string, error) {
	ts := strconv.FormatInt(t.Unix(), 10)
	entries := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, store.WebhookSecretPrefix))
		if err != nil {
			return "", fmt.Errorf("webhook: secret is not whsec_ + base64: %w", err)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(msgID + "." + ts + "."))
		mac.Write(body)
		entries = append(entries, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(entries, " "), nil
}
