package integration

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// Headers of a PayPal webhook transmission.
const (
	HeaderPayPalTransmissionID   = "Paypal-Transmission-Id"
	HeaderPayPalTransmissionTime = "Paypal-Transmission-Time"
	HeaderPayPalTransmissionSig  = "Paypal-Transmission-Sig"
	HeaderPayPalCertURL          = "Paypal-Cert-Url"
	HeaderPayPalAuthAlgo         = "Paypal-Auth-Algo"
)

// PayPalTolerance is how far a transmission's time may lie from now.
const PayPalTolerance = 300 * time.Second

// PayPalCertTTL is how long a fetched certificate is used before it is
// fetched again (it is verified against the roots on every use).
const PayPalCertTTL = 24 * time.Hour

// maxCertBytes bounds what a certificate download may be.
const maxCertBytes = 64 << 10

// PayPalHosts are the only hosts PayPal's signing certificates are fetched
// from (live and sandbox), always over https.
func PayPalHosts() []string {
	return []string{"api.paypal.com", "api.sandbox.paypal.com", "api-m.paypal.com", "api-m.sandbox.paypal.com"}
}

// PayPalCertNameSuffix is what the signing certificate's name must end with.
const PayPalCertNameSuffix = ".paypal.com"

// PayPalConfig configures the verification of PayPal's transmissions. The zero
// value is production: PayPal's hosts, the system roots. Tests inject their
// own root and host; serve never does.
type PayPalConfig struct {
	// Roots verify the certificate chain; nil: the system's roots.
	Roots *x509.CertPool
	// Hosts are the hosts (host or host:port) certificates may be fetched
	// from; nil: PayPalHosts.
	Hosts []string
	// Client fetches the certificates; nil: a client with a 5 s timeout that
	// follows no redirects.
	Client *http.Client
}

// paypalError is a refused PayPal transmission; msg is for the event log.
type paypalError struct{ msg string }

func (e *paypalError) Error() string { return "paypal: " + e.msg }

type paypalVerifier struct {
	db     *store.DB
	roots  *x509.CertPool
	hosts  []string
	client *http.Client
}

func newPayPalVerifier(db *store.DB, cfg PayPalConfig) *paypalVerifier {
	v := &paypalVerifier{db: db, roots: cfg.Roots, hosts: cfg.Hosts, client: cfg.Client}
	if v.hosts == nil {
		v.hosts = PayPalHosts()
	}
	if v.client == nil {
		v.client = &http.Client{Timeout: 5 * time.Second}
	}
	// A redirect could lead away from PayPal's hosts: never follow one.
	c := *v.client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	v.client = &c
	return v
}

// PayPalMessage is the signed string of a transmission:
// transmission_id|transmission_time|webhook_id|crc32(body) in decimal.
func PayPalMessage(transmissionID, transmissionTime, webhookID string, body []byte) string {
	return transmissionID + "|" + transmissionTime + "|" + webhookID + "|" + strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)
}

// allowedCertURL checks that raw is https on one of the allowed hosts.
func (v *paypalVerifier) allowedCertURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.User != nil || u.Host == "" {
		return false
	}
	return slices.Contains(v.hosts, strings.ToLower(u.Host))
}

// verify checks a transmission's headers: the algorithm, the time, the
// certificate (from an allowed host, chained to the roots, named for
// paypal.com) and the RSA-SHA256 signature of PayPalMessage with the
// integration's webhook id.
func (v *paypalVerifier) verify(ctx context.Context, accountID int64, h http.Header, body []byte, webhookID string, now time.Time) error {
	id, ts := h.Get(HeaderPayPalTransmissionID), h.Get(HeaderPayPalTransmissionTime)
	sig64, certURL := h.Get(HeaderPayPalTransmissionSig), h.Get(HeaderPayPalCertURL)
	if id == "" || ts == "" || sig64 == "" || certURL == "" {
		return errUnsigned
	}
	if algo := h.Get(HeaderPayPalAuthAlgo); algo != "" && algo != "SHA256withRSA" {
		return &paypalError{"Algorithmus " + algo + " wird nicht unterstützt"}
	}
	t, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return errUnsigned
	}
	sig, err := base64.StdEncoding.DecodeString(sig64)
	if err != nil {
		return errForged
	}
	if !v.allowedCertURL(certURL) {
		return &paypalError{"Zertifikat nicht von PayPal: " + certURL}
	}
	leaf, err := v.cert(ctx, accountID, certURL, now)
	if err != nil {
		return err
	}
	pub, ok := leaf.PublicKey.(*rsa.PublicKey)
	if !ok {
		return &paypalError{"Zertifikat ohne RSA-Schlüssel"}
	}
	digest := sha256.Sum256([]byte(PayPalMessage(id, ts, webhookID, body)))
	if rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig) != nil {
		return errForged
	}
	if d := now.Sub(t); d > PayPalTolerance || d < -PayPalTolerance {
		return errStale
	}
	return nil
}

// cert returns the verified signing certificate of certURL: from the cache in
// PostgreSQL while younger than PayPalCertTTL, otherwise fetched and cached.
// The chain is verified on every use, so an expired certificate fails even
// from the cache.
func (v *paypalVerifier) cert(ctx context.Context, accountID int64, certURL string, now time.Time) (*x509.Certificate, error) {
	pemText, fetched, err := v.db.IntegrationCert(ctx, accountID, certURL)
	cached := err == nil && now.Sub(fetched) < PayPalCertTTL
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if !cached {
		if pemText, err = v.fetch(ctx, certURL); err != nil {
			return nil, err
		}
	}
	leaf, err := v.check(pemText, now)
	if err != nil {
		return nil, err
	}
	if !cached {
		if err := v.db.SaveIntegrationCert(ctx, accountID, certURL, pemText, now); err != nil {
			return nil, err
		}
	}
	return leaf, nil
}

func (v *paypalVerifier) fetch(ctx context.Context, certURL string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, certURL, nil)
	if err != nil {
		return "", &paypalError{"Zertifikats-URL ungültig"}
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return "", &paypalError{"Zertifikat nicht abrufbar"}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", &paypalError{fmt.Sprintf("Zertifikat nicht abrufbar (HTTP %d)", resp.StatusCode)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxCertBytes+1))
	if err != nil || len(b) > maxCertBytes {
		return "", &paypalError{"Zertifikat nicht abrufbar"}
	}
	return string(b), nil
}

// check parses the PEM chain (leaf first) and verifies it against the roots
// at now; the leaf must be named for paypal.com.
func (v *paypalVerifier) check(pemText string, now time.Time) (*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := []byte(pemText)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, &paypalError{"Zertifikat nicht lesbar"}
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, &paypalError{"Zertifikat nicht lesbar"}
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	leaf := certs[0]
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: v.roots, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, &paypalError{"Zertifikatskette nicht vertrauenswürdig"}
	}
	named := strings.HasSuffix(strings.ToLower(leaf.Subject.CommonName), PayPalCertNameSuffix)
	for _, n := range leaf.DNSNames {
		named = named || strings.HasSuffix(strings.ToLower(n), PayPalCertNameSuffix)
	}
	if !named {
		return nil, &paypalError{"Zertifikat nicht auf paypal.com ausgestellt"}
	}
	return leaf, nil
}
