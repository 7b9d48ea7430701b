package public_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	stripewebhook "github.com/stripe/stripe-go/v85/webhook"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/handlers/public"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/botguard"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/integration"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/services"
)

// paypalCA is a self-made certificate authority standing in for PayPal's:
// tests trust it through the service's configuration (never in production),
// and a TLS server on an allowed test host serves the signing certificate.
type paypalCA struct {
	roots    *x509.CertPool
	key      *rsa.PrivateKey // the signing certificate's key
	srv      *httptest.Server
	fetches  atomic.Int64
	certPEM  []byte
	roguePEM []byte // a certificate for the same name that no trusted root signed
}

func newPayPalCA(t testing.TB) *paypalCA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Test PayPal Root"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "messageverificationcerts.paypal.com"},
		DNSNames: []string{"messageverificationcerts.paypal.com"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	rogueDER, err := x509.CreateCertificate(rand.Reader, leaf, leaf, &key.PublicKey, key) // self-signed
	if err != nil {
		t.Fatal(err)
	}
	ca := &paypalCA{roots: x509.NewCertPool(), key: key,
		certPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		roguePEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rogueDER})}
	ca.roots.AddCert(caCert)
	ca.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ca.fetches.Add(1)
		if r.URL.Path == "/rogue.pem" {
			_, _ = w.Write(ca.roguePEM)
			return
		}
		_, _ = w.Write(ca.certPEM)
	}))
	t.Cleanup(ca.srv.Close)
	return ca
}

// hookSite serves the API and the public pages (with the inbound route) of one
// business account over loopback.
// hookSecret seals the integrations' secrets; a serve process on the same
// database (the benchmark's) must be given it to read them.
const hookSecret = "integration tests secret, at least 32 characters"

type hookSite struct {
	url   string
	dbURL string
	db    *store.DB
	acct  int64
	c     *apitest.Client
	ca    *paypalCA
	http  *http.Client
}

func newHookSite(t testing.TB, plan string) *hookSite {
	t.Helper()
	dbURL := dbtest.URL(t)
	db := dbtest.Open(t, dbURL)
	ca := newPayPalCA(t)
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	box, err := secret.NewBox(hookSecret)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := mailer.NewTokens(hookSecret)
	if err != nil {
		t.Fatal(err)
	}
	svc := integration.New(db, integration.Config{Box: box, BaseURL: base, Log: log, PayPal: integration.PayPalConfig{
		Roots: ca.roots, Hosts: []string{ca.srv.Listener.Addr().String()}, Client: ca.srv.Client()}})
	set := &services.Set{DB: db, APILog: store.NewAPILogWriter(db, log), Log: log, Box: box, Tokens: tokens,
		Guard: botguard.New("integration tests", time.Now), Integrations: svc}
	pub, err := public.New(set, public.Config{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	a := api.New(set, api.Config{BaseURL: base, RateLimit: 1_000_000})
	r := chi.NewRouter()
	r.Mount("/v1", a.Handler())
	pub.Routes(r)
	srv.Config.Handler = r
	srv.Start()
	t.Cleanup(srv.Close)

	res, err := db.CreateAccount(context.Background(), store.NewAccount{Name: "Kursschmiede", Email: "owner@kurs.test", Password: "a long password", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := db.CreateKey(context.Background(), res.Account.ID, store.KeySettings{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c := apitest.NewURLClient(t, base, apitest.NewValidator(t, api.OpenAPIDocument()))
	c.Header.Set("Authorization", "Bearer "+key)
	return &hookSite{url: base, dbURL: dbURL, db: db, acct: res.Account.ID, c: c, ca: ca, http: &http.Client{}}
}

func (s *hookSite) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.db.GetContext(context.Background(), &n, query, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

// post sends a call to an inbound URL and returns the status and body.
func (s *hookSite) post(t *testing.T, inbound string, in integration.Inbound) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, inbound, strings.NewReader(string(in.Body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = in.Header.Clone()
	res, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

type integrationJSON struct {
	ID         int64    `json:"id"`
	Provider   string   `json:"provider"`
	HasSecret  bool     `json:"has_secret"`
	Token      string   `json:"token"`
	InboundURL string   `json:"inbound_url"`
	ListIDs    []int64  `json:"list_ids"`
	Tags       []string `json:"tags"`
}

// provider signs calls as one payment provider would.
type provider struct {
	name   string
	secret string
	// purchase and refund are correctly signed calls about orderID by email.
	purchase func(s *hookSite, orderID, email string, at time.Time) integration.Inbound
	refund   func(s *hookSite, orderID, email string, at time.Time) integration.Inbound
	// unsign removes the signature from a call.
	unsign func(in integration.Inbound) integration.Inbound
	// stale is false for schemes that sign no time (replays are idempotent).
	stale bool
	// ok is the body of a successful answer.
	ok func(t *testing.T, body string)
}

func jsonOK(t *testing.T, body string) {
	t.Helper()
	var v struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || (v.Status != "processed" && v.Status != "duplicate") {
		t.Fatalf("answer %q", body)
	}
}

func hexHMAC(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// digistoreSign is decisions.md's sha_sign, written out independently of the
// service: sorted names, empty values skipped, name=value+passphrase, SHA-512,
// upper-case hex.
func digistoreSign(p url.Values, pass string) string {
	var keys []string
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		if k == "sha_sign" || p.Get(k) == "" {
			continue
		}
		b.WriteString(k + "=" + p.Get(k) + pass)
	}
	sum := sha512.Sum512([]byte(b.String()))
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

func jsonBody(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func (s *hookSite) paypalSign(body []byte, webhookID, certPath string, at time.Time) http.Header {
	id := "tx-" + store.RandomString(8)
	ts := at.UTC().Format(time.RFC3339)
	msg := fmt.Sprintf("%s|%s|%s|%d", id, ts, webhookID, crc32.ChecksumIEEE(body))
	sum := sha256.Sum256([]byte(msg))
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.ca.key, crypto.SHA256, sum[:])
	if err != nil {
		panic(err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("PAYPAL-TRANSMISSION-ID", id)
	h.Set("PAYPAL-TRANSMISSION-TIME", ts)
	h.Set("PAYPAL-TRANSMISSION-SIG", base64.StdEncoding.EncodeToString(sig))
	h.Set("PAYPAL-CERT-URL", s.ca.srv.URL+certPath)
	h.Set("PAYPAL-AUTH-ALGO", "SHA256withRSA")
	return h
}

func providers() []provider {
	dropHeader := func(name string) func(integration.Inbound) integration.Inbound {
		return func(in integration.Inbound) integration.Inbound {
			in.Header = in.Header.Clone()
			in.Header.Del(name)
			return in
		}
	}
	return []provider{
		{
			name: "stripe", secret: "whsec_" + "c3RyaXBlIHRlc3Qgc2VjcmV0", stale: true, ok: jsonOK,
			purchase: func(s *hookSite, orderID, email string, at time.Time) integration.Inbound {
				body := jsonBody(map[string]any{"id": "evt_" + orderID, "object": "event", "type": "checkout.session.completed",
					"data": map[string]any{"object": map[string]any{"id": "cs_" + orderID, "object": "checkout.session",
						"payment_intent": "pi_" + orderID, "payment_status": "paid", "amount_total": 4900, "currency": "eur",
						"customer_details": map[string]any{"email": email, "name": "Erika Mustermann"},
						"metadata":         map[string]any{"product": "Online-Kurs"}}}})
				sp := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: "whsec_" + "c3RyaXBlIHRlc3Qgc2VjcmV0", Timestamp: at})
				return integration.Inbound{Header: http.Header{"Content-Type": {"application/json"}, "Stripe-Signature": {sp.Header}}, Body: body}
			},
			refund: func(s *hookSite, orderID, email string, at time.Time) integration.Inbound {
				body := jsonBody(map[string]any{"id": "evt_r" + orderID, "type": "charge.refunded",
					"data": map[string]any{"object": map[string]any{"id": "ch_" + orderID, "object": "charge", "payment_intent": "pi_" + orderID,
						"amount_refunded": 4900, "currency": "eur", "billing_details": map[string]any{"email": email}}}})
				sp := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: "whsec_" + "c3RyaXBlIHRlc3Qgc2VjcmV0", Timestamp: at})
				return integration.Inbound{Header: http.Header{"Content-Type": {"application/json"}, "Stripe-Signature": {sp.Header}}, Body: body}
			},
			unsign: dropHeader("Stripe-Signature"),
		},
		{
			name: "digistore24", secret: "ipn-passphrase-4711",
			ok: func(t *testing.T, body string) {
				if body != "OK" {
					t.Fatalf("Digistore24 expects OK, got %q", body)
				}
			},
			purchase: func(s *hookSite, orderID, email string, at time.Time) integration.Inbound {
				p := url.Values{"event": {"on_payment"}, "order_id": {orderID}, "transaction_id": {"t" + orderID}, "email": {email},
					"address_first_name": {"Erika"}, "address_last_name": {"Mustermann"}, "product_id": {"4711"},
					"product_name": {"Online-Kurs"}, "amount_brutto": {"49.00"}, "currency": {"EUR"}, "voucher_code": {""}}
				p.Set("sha_sign", digistoreSign(p, "ipn-passphrase-4711"))
				return integration.Inbound{Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, Body: []byte(p.Encode())}
			},
			refund: func(s *hookSite, orderID, email string, at time.Time) integration.Inbound {
				p := url.Values{"event": {"on_refund"}, "order_id": {orderID}, "transaction_id": {"r" + orderID}, "email": {email}}
				p.Set("sha_sign", digistoreSign(p, "ipn-passphrase-4711"))
				return integration.Inbound{Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, Body: []byte(p.Encode())}
			},
			unsign: func(in integration.Inbound) integration.Inbound {
				p, _ := url.ParseQuery(string(in.Body))
				p.Del("sha_sign")
				return integration.Inbound{Header: in.Header, Body: []byte(p.Encode())}
			},
		},
		{
			name: "copecart", secret: "copecart-ipn-secret", ok: jsonOK,
			purchase: func(s *hookSite, orderID, email string, at time.Time) integration.Inbound {
				body := jsonBody(map[string]any{"event_type": "payment.made", "order_id": orderID, "transaction_id": "t" + orderID,
					"buyer_email": email, "buyer_firstname": "Erika", "buyer_lastname": "Mustermann", "product_name": "Online-Kurs",
					"transaction_amount": "49.00", "transaction_currency": "EUR"})
				m := hmac.New(sha256.New, []byte("copecart-ipn-secret"))
				m.Write(body)
				return integration.Inbound{Header: http.Header{"Content-Type": {"application/json"},
					"X-Copecart-Signature": {base64.StdEncoding.EncodeToString(m.Sum(nil))}}, Body: body}
			},
			refund: func(s *hookSite, orderID, email string, at time.Time) integration.Inbound {
				body := jsonBody(map[string]any{"event_type": "payment.refunded", "order_id": orderID, "transaction_id": "r" + orderID, "buyer_email": email})
				m := hmac.New(sha256.New, []byte("copecart-ipn-secret"))
				m.Write(body)
				return integration.Inbound{Header: http.Header{"Content-Type": {"application/json"},
					"X-Copecart-Signature": {base64.StdEncoding.EncodeToString(m.Sum(nil))}}, Body: body}
			},
			unsign: dropHeader("X-Copecart-Signature"),
		},
		{
			name: "paypal", secret: "8PT597110X687430LKGECATA", stale: true, ok: jsonOK,
			purchase: func(s *hookSite, orderID, email string, at time.Time) integration.Inbound {
				body := jsonBody(map[string]any{"id": "WH-" + orderID, "event_type": "CHECKOUT.ORDER.COMPLETED", "resource": map[string]any{
					"id": orderID, "status": "COMPLETED",
					"payer": map[string]any{"email_address": email, "name": map[string]any{"given_name": "Erika", "surname": "Mustermann"}},
					"purchase_units": []any{map[string]any{"amount": map[string]any{"currency_code": "EUR", "value": "49.00"},
						"items": []any{map[string]any{"name": "Online-Kurs", "quantity": "1", "unit_amount": map[string]any{"currency_code": "EUR", "value": "49.00"}}}}}}})
				return integration.Inbound{Header: s.paypalSign(body, "8PT597110X687430LKGECATA", "/cert.pem", at), Body: body}
			},
			refund: func(s *hookSite, orderID, email string, at time.Time) integration.Inbound {
				body := jsonBody(map[string]any{"id": "WH-r" + orderID, "event_type": "PAYMENT.CAPTURE.REFUNDED", "resource": map[string]any{
					"id": "RF" + orderID, "supplementary_data": map[string]any{"related_ids": map[string]any{"order_id": orderID}}}})
				return integration.Inbound{Header: s.paypalSign(body, "8PT597110X687430LKGECATA", "/cert.pem", at), Body: body}
			},
			unsign: dropHeader("Paypal-Transmission-Sig"),
		},
		{
			name: "generic", secret: "generic-hmac-key", ok: jsonOK,
			purchase: func(s *hookSite, orderID, email string, at time.Time) integration.Inbound {
				body := jsonBody(map[string]any{"event": "order.completed", "order_id": orderID, "email": email, "first_name": "Erika",
					"last_name": "Mustermann", "product": "Online-Kurs", "amount": 49.0, "currency": "EUR"})
				return integration.Inbound{Header: http.Header{"Content-Type": {"application/json"},
					"X-Signature": {"sha256=" + hexHMAC("generic-hmac-key", body)}}, Body: body}
			},
			refund: func(s *hookSite, orderID, email string, at time.Time) integration.Inbound {
				body := jsonBody(map[string]any{"event": "order.refunded", "order_id": orderID, "email": email})
				return integration.Inbound{Header: http.Header{"Content-Type": {"application/json"},
					"X-Signature": {"sha256=" + hexHMAC("generic-hmac-key", body)}}, Body: body}
			},
			unsign: dropHeader("X-Signature"),
		},
	}
}

// forge re-signs a call's body with the wrong secret by changing the body
// after signing: the signature no longer matches.
func forge(in integration.Inbound) integration.Inbound {
	b := []byte(strings.Replace(string(in.Body), "Online-Kurs", "Gratis-Kurs", 1))
	if string(b) == string(in.Body) {
		b = append(slices.Clone(in.Body), ' ')
	}
	return integration.Inbound{Header: in.Header, Body: b}
}

func (s *hookSite) createIntegration(t testing.TB, p provider, listID int64) integrationJSON {
	t.Helper()
	res := s.c.Request(http.MethodPost, "/v1/integrations", map[string]any{"provider": p.name, "name": p.name + " Shop",
		"secret": p.secret, "list_ids": []int64{listID}, "tags": []string{"kunde"}})
	if res.Status != http.StatusCreated {
		t.Fatalf("create integration: %d %s", res.Status, res.Body)
	}
	var ig integrationJSON
	res.Data(t, &ig)
	if !ig.HasSecret || ig.InboundURL != s.url+"/hooks/"+p.name+"/"+ig.Token || strings.Contains(string(res.Body), p.secret) {
		t.Fatalf("integration answer %s", res.Body)
	}
	return ig
}

func TestIntegrationProviders(t *testing.T) {
	t.Parallel()
	for _, p := range providers() {
		t.Run(p.name, func(t *testing.T) {
			s := newHookSite(t, "business")
			ctx := context.Background()
			list, err := s.db.CreateList(ctx, s.acct, store.Actor{Type: store.ActorSystem}, store.ListInput{Name: ptr("Kunden")})
			if err != nil {
				t.Fatal(err)
			}
			ig := s.createIntegration(t, p, list.ID)
			orders := func() int {
				return s.count(t, `SELECT count(*) FROM integration_orders WHERE account_id = $1`, s.acct)
			}
			completed := func() int {
				return s.count(t, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'order.completed'`, s.acct)
			}
			contacts := func() int { return s.count(t, `SELECT count(*) FROM contacts WHERE account_id = $1`, s.acct) }
			logged := func(status string) int {
				return s.count(t, `SELECT count(*) FROM integration_events WHERE account_id = $1 AND status = $2`, s.acct, status)
			}
			now := time.Now()

			// Refused: unsigned, forged, stale, and to a wrong token.
			buy := p.purchase(s, "ORD-1", "Erika@Example.COM", now)
			refused := []struct {
				name string
				in   integration.Inbound
			}{{"unsigned", p.unsign(buy)}, {"forged", forge(buy)}}
			if p.stale {
				refused = append(refused, struct {
					name string
					in   integration.Inbound
				}{"stale", p.purchase(s, "ORD-1", "erika@example.com", now.Add(-10*time.Minute))})
			}
			for _, r := range refused {
				if code, body := s.post(t, ig.InboundURL, r.in); code != http.StatusUnauthorized {
					t.Fatalf("%s: %d %s", r.name, code, body)
				}
			}
			if contacts() != 0 || orders() != 0 || completed() != 0 || logged("rejected") != len(refused) {
				t.Fatalf("refused calls changed something: contacts %d orders %d events %d rejected %d", contacts(), orders(), completed(), logged("rejected"))
			}
			if code, _ := s.post(t, s.url+"/hooks/"+p.name+"/"+strings.Repeat("x", 32), buy); code != http.StatusNotFound {
				t.Fatalf("unknown token: %d", code)
			}

			// A signed purchase: contact, order and one event.
			code, body := s.post(t, ig.InboundURL, buy)
			if code != http.StatusOK {
				t.Fatalf("purchase: %d %s", code, body)
			}
			p.ok(t, body)
			c, err := s.db.ContactByEmail(ctx, s.acct, "Erika@example.com")
			if err != nil {
				t.Fatalf("buyer not a contact: %v", err)
			}
			if c.Source != store.SourceIntegration || c.FirstName != "Erika" || c.LastName != "Mustermann" || c.Status != store.StatusSubscribed ||
				!slices.Contains(c.Tags, "kunde") || !slices.Contains(c.Tags, "product:Online-Kurs") || len(c.Lists) != 1 || c.Lists[0].ID != list.ID {
				t.Fatalf("contact %+v", c)
			}
			if orders() != 1 || completed() != 1 || logged("processed") != 1 {
				t.Fatalf("after purchase: orders %d events %d processed %d", orders(), completed(), logged("processed"))
			}
			var payload struct {
				Integration store.OrderIntegrationRef `json:"integration"`
				Order       store.OrderRef            `json:"order"`
				Contact     struct {
					ID int64 `json:"id"`
				} `json:"contact"`
			}
			var raw string
			if err := s.db.GetContext(ctx, &raw, `SELECT payload::text FROM events WHERE account_id = $1 AND name = 'order.completed'`, s.acct); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(raw), &payload); err != nil {
				t.Fatal(err)
			}
			if payload.Order.Product != "Online-Kurs" || payload.Order.Amount != 49 || payload.Order.Currency != "EUR" ||
				payload.Order.Provider != p.name || payload.Contact.ID != c.ID || payload.Integration.ID != ig.ID {
				t.Fatalf("order.completed %s", raw)
			}

			// A replay and 10 concurrent replays change nothing more.
			if code, body := s.post(t, ig.InboundURL, p.purchase(s, "ORD-1", "erika@example.com", time.Now())); code != http.StatusOK {
				t.Fatalf("replay: %d %s", code, body)
			}
			var wg sync.WaitGroup
			codes := make([]int, 10)
			for n := range codes {
				wg.Go(func() { codes[n], _ = s.post(t, ig.InboundURL, buy) })
			}
			wg.Wait()
			for _, code := range codes {
				if code != http.StatusOK {
					t.Fatalf("concurrent replay: %v", codes)
				}
			}
			if contacts() != 1 || orders() != 1 || completed() != 1 || logged("processed") != 1 || logged("duplicate") != 11 {
				t.Fatalf("replays: contacts %d orders %d events %d processed %d duplicate %d", contacts(), orders(), completed(),
					logged("processed"), logged("duplicate"))
			}

			// Refund: tagged refunded, the order marked; a repeat is a duplicate.
			if code, body := s.post(t, ig.InboundURL, p.refund(s, "ORD-1", "erika@example.com", time.Now())); code != http.StatusOK {
				t.Fatalf("refund: %d %s", code, body)
			}
			if c, _ = s.db.ContactByEmail(ctx, s.acct, "erika@example.com"); !slices.Contains(c.Tags, store.TagRefunded) {
				t.Fatalf("refunded contact %v", c.Tags)
			}
			if n := s.count(t, `SELECT count(*) FROM integration_orders WHERE account_id = $1 AND refunded_at IS NOT NULL`, s.acct); n != 1 {
				t.Fatalf("refunded orders %d", n)
			}
			if code, _ := s.post(t, ig.InboundURL, p.refund(s, "ORD-1", "erika@example.com", time.Now())); code != http.StatusOK || logged("duplicate") != 12 {
				t.Fatalf("repeated refund: %d, duplicates %d", code, logged("duplicate"))
			}

			// A blocked address and an unsubscribed contact are never resubscribed.
			if _, err := s.db.BlockAddresses(ctx, s.acct, store.Actor{Type: store.ActorSystem}, []string{"blocked@example.com"},
				store.Unsubscribe{Source: store.UnsubManual}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.db.UnsubscribeContact(ctx, s.acct, store.Actor{Type: store.ActorSystem}, c.ID, store.Unsubscribe{Source: store.UnsubLink}); err != nil {
				t.Fatal(err)
			}
			for _, buyer := range []struct{ order, email string }{{"ORD-2", "blocked@example.com"}, {"ORD-3", "erika@example.com"}} {
				if code, body := s.post(t, ig.InboundURL, p.purchase(s, buyer.order, buyer.email, time.Now())); code != http.StatusOK {
					t.Fatalf("purchase by %s: %d %s", buyer.email, code, body)
				}
				bc, err := s.db.ContactByEmail(ctx, s.acct, buyer.email)
				if err != nil || bc.Status != store.StatusUnsubscribed {
					t.Fatalf("%s resubscribed: %v %+v", buyer.email, err, bc)
				}
			}
			if orders() != 3 || completed() != 3 {
				t.Fatalf("orders %d events %d", orders(), completed())
			}

			// The event log, validated against openapi.json.
			res := s.c.Request(http.MethodGet, fmt.Sprintf("/v1/integrations/%d/events?per_page=100", ig.ID), nil)
			var events []struct {
				Status  string  `json:"status"`
				OrderID *string `json:"order_id"`
				Error   *string `json:"error"`
			}
			res.Data(t, &events)
			if res.Status != http.StatusOK || len(events) != len(refused)+1+11+2+2 {
				t.Fatalf("events: %d, %d entries", res.Status, len(events))
			}
			if last := events[len(events)-1]; last.Status != "rejected" || last.Error == nil {
				t.Fatalf("oldest event %+v", last)
			}
		})
	}
}

func TestIntegrationPayPalCertificates(t *testing.T) {
	t.Parallel()
	s := newHookSite(t, "business")
	var p provider
	for _, x := range providers() {
		if x.name == "paypal" {
			p = x
		}
	}
	ig := s.createIntegration(t, p, s.list(t))
	rejected := func() int {
		return s.count(t, `SELECT count(*) FROM integration_events WHERE account_id = $1 AND status = 'rejected'`, s.acct)
	}

	// Three good calls fetch the certificate once: it is cached in PostgreSQL.
	for n := range 3 {
		if code, body := s.post(t, ig.InboundURL, p.purchase(s, fmt.Sprintf("PP-%d", n), "kaeufer@example.com", time.Now())); code != http.StatusOK {
			t.Fatalf("call %d: %d %s", n, code, body)
		}
	}
	if n := s.ca.fetches.Load(); n != 1 {
		t.Fatalf("certificate fetched %d times", n)
	}
	if n := s.count(t, `SELECT count(*) FROM integration_certs WHERE account_id = $1`, s.acct); n != 1 {
		t.Fatalf("cached certificates %d", n)
	}

	body := []byte(`{"id":"WH-X","event_type":"CHECKOUT.ORDER.COMPLETED","resource":{"id":"PP-X","payer":{"email_address":"x@example.com"}}}`)
	cases := []struct {
		name string
		h    http.Header
	}{
		// Signed correctly, but the certificate is not from an allowed host.
		{"foreign host", func() http.Header {
			h := s.paypalSign(body, p.secret, "/cert.pem", time.Now())
			h.Set("Paypal-Cert-Url", "https://evil.example/cert.pem")
			return h
		}()},
		{"plain http", func() http.Header {
			h := s.paypalSign(body, p.secret, "/cert.pem", time.Now())
			h.Set("Paypal-Cert-Url", strings.Replace(s.ca.srv.URL, "https://", "http://", 1)+"/cert.pem")
			return h
		}()},
		// From the allowed host, but chained to no trusted root.
		{"untrusted certificate", s.paypalSign(body, p.secret, "/rogue.pem", time.Now())},
		// Signed over another webhook id.
		{"other webhook id", s.paypalSign(body, "OTHER-WEBHOOK", "/cert.pem", time.Now())},
		{"wrong algorithm", func() http.Header {
			h := s.paypalSign(body, p.secret, "/cert.pem", time.Now())
			h.Set("Paypal-Auth-Algo", "SHA1withRSA")
			return h
		}()},
	}
	for n, c := range cases {
		if code, out := s.post(t, ig.InboundURL, integration.Inbound{Header: c.h, Body: body}); code != http.StatusUnauthorized {
			t.Fatalf("%s: %d %s", c.name, code, out)
		}
		if rejected() != n+1 {
			t.Fatalf("%s: not logged as rejected", c.name)
		}
	}
	if n := s.count(t, `SELECT count(*) FROM contacts WHERE account_id = $1 AND email = 'x@example.com'`, s.acct); n != 0 {
		t.Fatal("a refused call created a contact")
	}
}

func (s *hookSite) list(t testing.TB) int64 {
	t.Helper()
	l, err := s.db.CreateList(context.Background(), s.acct, store.Actor{Type: store.ActorSystem}, store.ListInput{Name: ptr("Kunden " + store.RandomString(4))})
	if err != nil {
		t.Fatal(err)
	}
	return l.ID
}

func TestIntegrationInboundRules(t *testing.T) {
	t.Parallel()
	s := newHookSite(t, "business")
	p := providers()[4] // generic
	ig := s.createIntegration(t, p, s.list(t))
	status := func() string {
		var v string
		if err := s.db.GetContext(context.Background(), &v, `SELECT status || ':' || error FROM integration_events WHERE account_id = $1 ORDER BY id DESC LIMIT 1`, s.acct); err != nil {
			t.Fatal(err)
		}
		return v
	}

	// Bodies are bounded: 413, nothing logged.
	big := integration.Inbound{Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"x":"` + strings.Repeat("a", integration.MaxInboundBody) + `"}`)}
	if code, _ := s.post(t, ig.InboundURL, big); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("large body: %d", code)
	}
	// The provider of the URL must be the integration's.
	if code, _ := s.post(t, strings.Replace(ig.InboundURL, "/generic/", "/stripe/", 1), p.purchase(s, "G-1", "a@example.com", time.Now())); code != http.StatusNotFound {
		t.Fatalf("other provider's path: %d", code)
	}
	// Verified events of no interest are ignored.
	other := jsonBody(map[string]any{"event": "customer.created", "order_id": "G-0", "email": "a@example.com"})
	in := integration.Inbound{Header: http.Header{"X-Signature": {"sha256=" + hexHMAC(p.secret, other)}}, Body: other}
	if code, _ := s.post(t, ig.InboundURL, in); code != http.StatusOK || !strings.HasPrefix(status(), "ignored:") {
		t.Fatalf("other event: %d %s", code, status())
	}
	// An inactive integration verifies and ignores.
	if res := s.c.Request(http.MethodPatch, fmt.Sprintf("/v1/integrations/%d", ig.ID), map[string]any{"active": false}); res.Status != http.StatusOK {
		t.Fatalf("deactivate: %d %s", res.Status, res.Body)
	}
	if code, _ := s.post(t, ig.InboundURL, p.purchase(s, "G-1", "a@example.com", time.Now())); code != http.StatusOK || !strings.HasPrefix(status(), "ignored:") {
		t.Fatalf("inactive: %d %s", code, status())
	}
	// Without a secret every call is refused.
	if res := s.c.Request(http.MethodPatch, fmt.Sprintf("/v1/integrations/%d", ig.ID), map[string]any{"active": true, "secret": ""}); res.Status != http.StatusOK {
		t.Fatalf("remove secret: %d %s", res.Status, res.Body)
	}
	if code, _ := s.post(t, ig.InboundURL, p.purchase(s, "G-1", "a@example.com", time.Now())); code != http.StatusUnauthorized || !strings.HasPrefix(status(), "rejected:") {
		t.Fatalf("no secret: %d %s", code, status())
	}
	if res := s.c.Request(http.MethodPatch, fmt.Sprintf("/v1/integrations/%d", ig.ID), map[string]any{"secret": p.secret}); res.Status != http.StatusOK {
		t.Fatalf("set secret: %d %s", res.Status, res.Body)
	}
	// A plan without integrations: 402, logged as rejected, nothing created.
	if err := s.db.SetPlan(context.Background(), s.acct, "pro"); err != nil {
		t.Fatal(err)
	}
	if code, _ := s.post(t, ig.InboundURL, p.purchase(s, "G-1", "a@example.com", time.Now())); code != http.StatusPaymentRequired || !strings.HasPrefix(status(), "rejected:") {
		t.Fatalf("plan without integrations: %d %s", code, status())
	}
	if n := s.count(t, `SELECT count(*) FROM contacts WHERE account_id = $1`, s.acct); n != 0 {
		t.Fatalf("contacts %d", n)
	}
	// A purchase of two products of one order: two items, two events.
	if err := s.db.SetPlan(context.Background(), s.acct, "business"); err != nil {
		t.Fatal(err)
	}
	for _, product := range []string{"Kurs A", "Kurs B", "Kurs A"} {
		body := jsonBody(map[string]any{"event": "order.completed", "order_id": "MULTI", "email": "b@example.com", "product": product, "amount": 10, "currency": "eur"})
		if code, out := s.post(t, ig.InboundURL, integration.Inbound{Header: http.Header{"X-Signature": {"sha256=" + hexHMAC(p.secret, body)}}, Body: body}); code != http.StatusOK {
			t.Fatalf("item %s: %d %s", product, code, out)
		}
	}
	if n := s.count(t, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'order.completed'`, s.acct); n != 2 {
		t.Fatalf("order.completed per item: %d", n)
	}

	// One transaction: a buyer the plan has no room for leaves no order behind
	// (503, so that the provider retries once there is room).
	if _, err := s.db.ExecContext(context.Background(), `UPDATE plans SET max_contacts = 1 WHERE name = 'business'`); err != nil {
		t.Fatal(err)
	}
	if code, out := s.post(t, ig.InboundURL, p.purchase(s, "FULL-1", "c@example.com", time.Now())); code != http.StatusServiceUnavailable ||
		!strings.HasPrefix(status(), "ignored:") {
		t.Fatalf("over the contact limit: %d %s %s", code, out, status())
	}
	if n := s.count(t, `SELECT count(*) FROM integration_orders WHERE account_id = $1 AND order_id = 'FULL-1'`, s.acct); n != 0 {
		t.Fatal("an order was recorded without its contact")
	}
	if _, err := s.db.ExecContext(context.Background(), `UPDATE plans SET max_contacts = 1000000 WHERE name = 'business'`); err != nil {
		t.Fatal(err)
	}
	if code, _ := s.post(t, ig.InboundURL, p.purchase(s, "FULL-1", "c@example.com", time.Now())); code != http.StatusOK || status() != "processed:" {
		t.Fatalf("retry with room: %d %s", code, status())
	}
}

func TestIntegrationSendTest(t *testing.T) {
	t.Parallel()
	s := newHookSite(t, "business")
	svc := integration.New(s.db, integration.Config{Box: mustBox(t), BaseURL: s.url})
	for _, p := range providers() {
		ig := s.createIntegration(t, p, s.list(t))
		reply, err := svc.SendTest(context.Background(), s.acct, ig.ID)
		if p.name == "paypal" {
			if err == nil {
				t.Fatal("paypal test event without PayPal's certificate")
			}
			continue
		}
		if err != nil || reply.Logged != store.IntegrationProcessed {
			t.Fatalf("%s: %v %+v", p.name, err, reply)
		}
		// Another account's integration is not found.
		if _, err := svc.SendTest(context.Background(), s.acct+1000, ig.ID); err == nil {
			t.Fatalf("%s: test of another account's integration", p.name)
		}
	}
	c, err := s.db.ContactByEmail(context.Background(), s.acct, integration.TestBuyer)
	if err != nil || !slices.Contains(c.Tags, "product:Online-Kurs") {
		t.Fatalf("test buyer: %v %+v", err, c)
	}
}

// TestIntegrationSendTestOverHTTP: the test event is a real, correctly signed
// HTTP call to the integration's inbound URL below the configured base URL
// (here a recording proxy in front of the site), and a redirect from there is
// answered as it is, never followed to another address.
func TestIntegrationSendTestOverHTTP(t *testing.T) {
	t.Parallel()
	s := newHookSite(t, "business")
	site, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		method, path, signature string
		body                    []byte
	}
	var mu sync.Mutex
	var calls []seen
	redirect := false
	proxy := httputil.NewSingleHostReverseProxy(site)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, seen{r.Method, r.URL.Path, r.Header.Get(integration.HeaderGenericSignature), body})
		mu.Unlock()
		if redirect {
			http.Redirect(w, r, elsewhere(t), http.StatusTemporaryRedirect)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	svc := integration.New(s.db, integration.Config{Box: mustBox(t), BaseURL: front.URL + "/"})
	p := providers()[4] // generic
	ig := s.createIntegration(t, p, s.list(t))
	token := ig.InboundURL[strings.LastIndex(ig.InboundURL, "/")+1:]
	reply, err := svc.SendTest(context.Background(), s.acct, ig.ID)
	if err != nil || reply.Status != http.StatusOK || reply.Logged != store.IntegrationProcessed {
		t.Fatalf("test event: %v %+v", err, reply)
	}
	if len(calls) != 1 || calls[0].method != http.MethodPost || calls[0].path != "/hooks/generic/"+token ||
		calls[0].signature != integration.GenericSignature(calls[0].body, p.secret) {
		t.Fatalf("calls %+v", calls)
	}

	redirect = true
	reply, err = svc.SendTest(context.Background(), s.acct, ig.ID)
	if err != nil || reply.Status != http.StatusTemporaryRedirect || len(calls) != 2 {
		t.Fatalf("redirected test event: %v %+v, %d calls", err, reply, len(calls))
	}

	// A base URL nobody answers at is a clear error, not a 5xx.
	front.Close()
	_, err = svc.SendTest(context.Background(), s.acct, ig.ID)
	var ve *store.ValidationError
	if !errors.As(err, &ve) || ve.Fields["inbound_url"] == "" {
		t.Fatalf("unreachable base URL: %v", err)
	}
}

// elsewhere is a server that fails the test when it is called.
func elsewhere(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("a redirect of a test event was followed")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func mustBox(t *testing.T) *secret.Box {
	b, err := secret.NewBox(hookSecret)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
