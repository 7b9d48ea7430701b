package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/secret"
)

// UserAgent names the sender and its version in every request.
const UserAgent = "Rundbrief-Webhooks/1.0"

// DeliveryTimeout is how long a receiver has to answer 2xx.
const DeliveryTimeout = 4 * time.Second

// MaxAttempts is the number of automatic attempts of a delivery: the first and
// five retries.
const MaxAttempts = 6

// Response bodies are read only this far; the delivery log keeps the first
// excerptLen bytes.
const (
	maxResponseRead = 4 << 10
	excerptLen      = 1 << 10
)

// RetryDelays are the pauses after failed attempt 1 … 5: 1, 5, 30, 120 and 720
// minutes.
func RetryDelays() []time.Duration {
	return []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 12 * time.Hour}
}

// NextAttempt returns when the attempt after failed attempt number attempt
// (from 1), made at at, is due; false when the attempts are used up.
func NextAttempt(attempt int, at time.Time) (time.Time, bool) {
	delays := RetryDelays()
	if attempt < 1 || attempt > len(delays) {
		return time.Time{}, false
	}
	return at.Add(delays[attempt-1]), true
}

// deliverer makes one attempt of a claimed delivery: it signs the stored body,
// POSTs it with the documented headers and judges the answer.
type deliverer struct {
	client  *http.Client
	box     *secret.Box
	now     func() time.Time
	timeout time.Duration
}

// attempt POSTs job and returns its result. manual is a resend: a delivery that
// had finished gets no automatic retries after it.
func (d *deliverer) attempt(ctx context.Context, job store.DeliveryJob, manual bool) store.AttemptResult {
	at := d.now()
	res := store.AttemptResult{DeliveryID: job.ID, AccountID: job.AccountID, WebhookID: job.WebhookID, Attempt: job.Attempt, At: at}
	start := time.Now()
	d.send(ctx, job, at, &res)
	res.Duration = time.Since(start)
	retry := !res.Succeeded && !res.Gone && !job.Test &&
		!(manual && (job.Status == store.DeliverySucceeded || job.Status == store.DeliveryFailed))
	if retry {
		if next, ok := NextAttempt(job.Attempt, at); ok {
			res.NextAttemptAt = &next
		}
	}
	return res
}

func (d *deliverer) send(ctx context.Context, job store.DeliveryJob, at time.Time, res *store.AttemptResult) {
	secrets, err := store.OpenWebhookSecrets(d.box, job.AccountID, job.WebhookID, job.SecretSealed, job.PreviousSealed, job.PreviousExpires, at)
	if err != nil {
		// RUNDBRIEF_SECRET changed: nothing can be signed until it is restored.
		res.Error = "Der Signaturschlüssel kann nicht gelesen werden (RUNDBRIEF_SECRET geändert?)."
		return
	}
	body := []byte(job.Payload)
	std, err := StandardSignature(job.EventPublicID, at, body, secrets)
	if err != nil {
		res.Error = "Der Signaturschlüssel ist ungültig."
		return
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, job.URL, bytes.NewReader(body))
	if err != nil {
		res.Error = "Die URL des Webhooks ist ungültig."
		return
	}
	h := req.Header
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("User-Agent", UserAgent)
	h.Set("X-Service-Event", job.Event)
	h.Set("X-Service-Delivery", job.PublicID)
	h.Set("X-Service-Event-Id", job.EventPublicID)
	h.Set("X-Service-Attempt", strconv.Itoa(job.Attempt))
	h.Set("X-Service-Signature", SignatureHeader(at, body, secrets))
	h.Set("Webhook-Id", job.EventPublicID)
	h.Set("Webhook-Timestamp", strconv.FormatInt(at.Unix(), 10))
	h.Set("Webhook-Signature", std)
	resp, err := d.client.Do(req)
	if err != nil {
		res.Error = describe(err, d.timeout)
		return
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseRead))
	res.StatusCode = resp.StatusCode
	res.Excerpt = excerpt(raw)
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		res.Succeeded = true
	case code == http.StatusGone:
		res.Gone = true
		res.Error = "HTTP 410 Gone: den Empfänger gibt es nicht mehr; der Webhook wurde pausiert."
	case code >= 300 && code < 400:
		res.Error = fmt.Sprintf("HTTP %d: Weiterleitungen werden nicht verfolgt; bitte die Ziel-URL direkt eintragen.", code)
	default:
		res.Error = fmt.Sprintf("HTTP %d: erwartet wird eine Antwort 2xx.", code)
	}
}

// excerpt is the start of a response body, cut at a character boundary.
func excerpt(b []byte) string {
	if len(b) > excerptLen {
		b = b[:excerptLen]
		for i := 0; i < utf8.UTFMax && !utf8.Valid(b); i++ {
			b = b[:len(b)-1] // a character cut in half at the end
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// describe explains a failed request in German for the delivery log.
func describe(err error, timeout time.Duration) string {
	var blocked *BlockedAddressError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &blocked):
		return fmt.Sprintf("Die Adresse %s ist nicht öffentlich erreichbar; Webhooks an localhost und private Netze werden nicht gesendet.", blocked.Addr)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Sprintf("Zeitüberschreitung: keine Antwort innerhalb von %s.", germanDuration(timeout))
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("Der Host %q lässt sich nicht auflösen.", dnsErr.Name)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "Verbindung abgelehnt: unter dieser Adresse nimmt niemand Verbindungen an."
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "Die Verbindung wurde vom Empfänger geschlossen, bevor eine Antwort kam."
	case strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509:"):
		return "TLS-Fehler: das Zertifikat des Empfängers ist ungültig oder die Verschlüsselung schlug fehl."
	}
	return "Die Anfrage ist fehlgeschlagen: " + err.Error()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// germanDuration writes 4 s as "4 Sekunden" and 200 ms as "200 Millisekunden".
func germanDuration(d time.Duration) string {
	if d%time.Second == 0 {
		if d == time.Second {
			return "1 Sekunde"
		}
		return fmt.Sprintf("%d Sekunden", d/time.Second)
	}
	return fmt.Sprintf("%d Millisekunden", d.Milliseconds())
}
