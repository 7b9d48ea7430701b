// Package integration connects payment providers (Stripe, Digistore24,
// CopeCart, PayPal and a generic signed JSON call) to Rundbrief: each
// integration has an inbound URL POST /hooks/{provider}/{token}; a call is
// verified with the provider's own signature scheme and a purchase turns the
// buyer into a contact, records the order and emits order.completed, in one
// transaction (store.ApplyOrder). Service is what the API, the portal and the
// public inbound route call.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/secret"
)

// MaxInboundBody is the largest body an inbound call may have; a larger one
// is refused with 413 before it is read further.
const MaxInboundBody = 256 << 10

// Config configures a Service.
type Config struct {
	// Box seals and opens the providers' secrets (RUNDBRIEF_SECRET).
	Box *secret.Box
	// BaseURL is the public root URL: inbound URLs are BaseURL/hooks/….
	BaseURL string
	// Now is the clock of signatures and records; nil: time.Now.
	Now func() time.Time
	// PayPal configures the certificate checks; the zero value is production.
	PayPal PayPalConfig
	// Client posts the test events to the service's own inbound URLs; nil: a
	// client with a 15 s timeout. It never follows a redirect (see SendTest).
	Client *http.Client
	Log    *slog.Logger
}

// Service manages integrations and receives the providers' calls.
type Service struct {
	db      *store.DB
	box     *secret.Box
	baseURL string
	now     func() time.Time
	paypal  *paypalVerifier
	client  *http.Client
	log     *slog.Logger
}

// New returns the integration service.
func New(db *store.DB, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	client := &http.Client{Timeout: 15 * time.Second}
	if cfg.Client != nil {
		c := *cfg.Client
		client = &c
	}
	// A test event goes to our own base URL and nowhere else: a redirect
	// (from a proxy in front, say) is answered as it is, never followed.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Service{db: db, box: cfg.Box, baseURL: strings.TrimRight(cfg.BaseURL, "/"), now: cfg.Now,
		paypal: newPayPalVerifier(db, cfg.PayPal), client: client, log: cfg.Log}
}

// InboundURL is the address the provider calls: {base}/hooks/{provider}/{token}.
func (s *Service) InboundURL(i store.Integration) string {
	return s.baseURL + "/hooks/" + url.PathEscape(i.Provider) + "/" + url.PathEscape(i.Token)
}

// requirePlan is a *store.PlanError unless the account's plan has integrations.
func (s *Service) requirePlan(ctx context.Context, accountID int64) error {
	a, err := s.db.Account(ctx, accountID)
	if err != nil {
		return err
	}
	p, err := s.db.Plan(ctx, a.Plan)
	if err != nil {
		return err
	}
	return p.Require(store.FeatureIntegrations)
}

// Create creates an integration with a new inbound token.
func (s *Service) Create(ctx context.Context, accountID int64, actor store.Actor, in store.IntegrationSettings) (store.Integration, error) {
	if err := s.requirePlan(ctx, accountID); err != nil {
		return store.Integration{}, err
	}
	return s.db.CreateIntegration(ctx, s.box, accountID, actor, in, s.now())
}

// Update applies a partial update.
func (s *Service) Update(ctx context.Context, accountID int64, actor store.Actor, id int64, p store.IntegrationPatch) (store.Integration, error) {
	if err := s.requirePlan(ctx, accountID); err != nil {
		return store.Integration{}, err
	}
	return s.db.UpdateIntegration(ctx, s.box, accountID, actor, id, p, s.now())
}

// Delete deletes an integration; its inbound URL answers 404 from now on.
func (s *Service) Delete(ctx context.Context, accountID int64, actor store.Actor, id int64) error {
	return s.db.DeleteIntegration(ctx, accountID, actor, id)
}

// Inbound is one call to an inbound URL.
type Inbound struct {
	Header http.Header
	Body   []byte
}

// Reply is the answer to a provider's call.
type Reply struct {
	Status      int
	ContentType string
	Body        string
	// Logged is the status the call was logged with.
	Logged string
}

func jsonReply(code int, logged, msg string) Reply {
	b, _ := json.Marshal(map[string]string{"status": logged, "message": msg})
	return Reply{Status: code, ContentType: "application/json", Body: string(b), Logged: logged}
}

// Receive handles a call to /hooks/{provider}/{token}, in this order: the
// integration is found by token and provider (store.ErrNotFound otherwise);
// the call is verified with the provider's scheme (401, logged as rejected,
// nothing else changes); an account whose plan lacks integrations gets 402
// (rejected); an inactive integration, an event of no interest or one without
// a usable address is logged as ignored (200); a purchase or refund is applied
// by store.ApplyOrder (processed or duplicate). Digistore24 is answered "OK",
// as it expects; the others with a small JSON object.
func (s *Service) Receive(ctx context.Context, provider, token string, in Inbound) (Reply, error) {
	ig, err := s.db.IntegrationByToken(ctx, provider, token)
	if err != nil {
		return Reply{}, err
	}
	now := s.now()
	call := store.IntegrationEvent{AccountID: ig.AccountID, IntegrationID: ig.ID, Payload: string(in.Body),
		ContentType: in.Header.Get("Content-Type"), ReceivedAt: now}
	log := func(status, msg string, ev store.ProviderEvent) error {
		call.Status, call.Error = status, msg
		call.EventType, call.ProviderEventID, call.OrderID, call.Email = ev.EventType, ev.ProviderEventID, ev.OrderID, ev.Email
		return s.db.LogIntegrationEvent(context.WithoutCancel(ctx), call)
	}

	ev, err := s.verify(ctx, ig.Integration, in, now)
	unreadable := errors.Is(err, errUnreadable)
	if err != nil && !unreadable {
		var pe *paypalError
		if !errors.As(err, &pe) && !errors.Is(err, errUnsigned) && !errors.Is(err, errForged) && !errors.Is(err, errStale) &&
			!errors.Is(err, errNoSecret) {
			return Reply{}, err // the database or the box failed: the provider retries
		}
		msg := rejection(err)
		if err := log(store.IntegrationRejected, msg, store.ProviderEvent{}); err != nil {
			return Reply{}, err
		}
		return jsonReply(http.StatusUnauthorized, store.IntegrationRejected, msg), nil
	}
	if !ig.PlanAllows {
		msg := "Der Tarif des Kontos enthält keine Integrationen."
		if err := log(store.IntegrationRejected, msg, ev); err != nil {
			return Reply{}, err
		}
		return jsonReply(http.StatusPaymentRequired, store.IntegrationRejected, msg), nil
	}
	ok := func(logged, msg string) Reply {
		if ig.Provider == store.ProviderDigistore24 {
			return Reply{Status: http.StatusOK, ContentType: "text/plain; charset=utf-8", Body: "OK", Logged: logged}
		}
		return jsonReply(http.StatusOK, logged, msg)
	}
	ignore := func(msg string) (Reply, error) {
		if err := log(store.IntegrationIgnored, msg, ev); err != nil {
			return Reply{}, err
		}
		return ok(store.IntegrationIgnored, msg), nil
	}
	switch {
	case unreadable:
		return ignore("Der Inhalt ist nicht lesbar.")
	case !ig.Active:
		return ignore("Die Integration ist deaktiviert.")
	case ev.Kind == "":
		return ignore("Ereignis " + ev.EventType + " wird nicht verarbeitet.")
	}
	if ev.Email != "" {
		email, err := store.ParseEmail(ev.Email)
		if err != nil {
			return ignore("Keine gültige E-Mail-Adresse: " + ev.Email)
		}
		ev.Email = email
	}
	if ev.Kind == store.OrderPurchase && ev.Email == "" {
		return ignore("Der Kauf nennt keine E-Mail-Adresse.")
	}
	if strings.TrimSpace(ev.OrderID) == "" {
		return ignore("Das Ereignis nennt keine Bestellnummer.")
	}
	status, err := s.db.ApplyOrder(ctx, ig, ev, call)
	var le *store.LimitError
	var ve *store.ValidationError
	switch {
	case errors.As(err, &le):
		// Retried by the provider later, when the account has room again.
		msg := "Kontaktlimit des Tarifs erreicht."
		if err := log(store.IntegrationIgnored, msg, ev); err != nil {
			return Reply{}, err
		}
		return jsonReply(http.StatusServiceUnavailable, store.IntegrationIgnored, msg), nil
	case errors.As(err, &ve):
		return ignore(fmt.Sprintf("Daten nicht übernehmbar: %v", ve.Fields))
	case err != nil:
		return Reply{}, err
	}
	return ok(status, ""), nil
}

// verify checks the call with the integration's provider scheme and reads it.
func (s *Service) verify(ctx context.Context, ig store.Integration, in Inbound, now time.Time) (store.ProviderEvent, error) {
	sec, err := store.OpenIntegrationSecret(s.box, ig)
	if err != nil {
		return store.ProviderEvent{}, err
	}
	if sec == "" {
		return store.ProviderEvent{}, errNoSecret
	}
	var ev store.ProviderEvent
	switch ig.Provider {
	case store.ProviderStripe:
		if err := verifyStripe(in.Header, in.Body, sec, now); err != nil {
			return ev, err
		}
		ev, err = parseStripe(in.Body)
	case store.ProviderDigistore24:
		params, verr := verifyDigistore(in.Body, sec)
		if verr != nil {
			return ev, verr
		}
		ev, err = parseDigistore(params)
	case store.ProviderCopeCart:
		if err := verifyCopeCart(in.Header, in.Body, sec); err != nil {
			return ev, err
		}
		ev, err = parseCopeCart(in.Body)
	case store.ProviderPayPal:
		if err := s.paypal.verify(ctx, ig.AccountID, in.Header, in.Body, sec, now); err != nil {
			return ev, err
		}
		ev, err = parsePayPal(in.Body)
	case store.ProviderGeneric:
		if err := verifyGeneric(in.Header, in.Body, sec); err != nil {
			return ev, err
		}
		ev, err = parseGeneric(in.Body)
	default:
		return ev, fmt.Errorf("integration: unknown provider %q", ig.Provider)
	}
	if err != nil {
		// Verified, so it is the provider's: logged as ignored, not refused.
		return store.ProviderEvent{}, errUnreadable
	}
	return ev, nil
}

// ErrNoTestEvent is SendTest for PayPal: only PayPal can sign its calls (with
// its certificate), so its test events come from PayPal's webhook simulator.
var ErrNoTestEvent = store.Invalid("provider", "PayPal signiert seine Aufrufe selbst: bitte den Webhook-Simulator im PayPal-Developer-Dashboard verwenden.")

// TestBuyer is the address of the sample purchase a test event sends.
const TestBuyer = "testkauf@example.com"

// SendTest posts a correctly signed sample purchase over HTTP to the
// integration's own inbound URL, as the provider would: the call passes the
// route, the body limit, the verification and the effect of a real one. The
// service signs it and makes the request, and only to the configured base URL
// (InboundURL; redirects are not followed), so no address an account chooses
// is ever called. The sample buyer TestBuyer becomes a contact like a real
// buyer would, with a new order id each time. Reply.Logged is the status the
// call was logged with.
func (s *Service) SendTest(ctx context.Context, accountID, id int64) (Reply, error) {
	ig, err := s.db.Integration(ctx, accountID, id)
	if err != nil {
		return Reply{}, err
	}
	if ig.Provider == store.ProviderPayPal {
		return Reply{}, ErrNoTestEvent
	}
	sec, err := store.OpenIntegrationSecret(s.box, ig)
	if err != nil {
		return Reply{}, err
	}
	if sec == "" {
		return Reply{}, store.Invalid("secret", "Bitte zuerst den Schlüssel des Anbieters hinterlegen.")
	}
	target, err := s.ownURL(s.InboundURL(ig))
	if err != nil {
		return Reply{}, err
	}
	orderID := "test_" + store.RandomString(12)
	in := Sample(ig.Provider, sec, orderID, s.now())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(in.Body))
	if err != nil {
		return Reply{}, fmt.Errorf("integration: test event: %w", err)
	}
	req.Header = in.Header
	res, err := s.client.Do(req)
	if err != nil {
		s.log.Warn("integration test event: own inbound URL unreachable", "url", s.baseURL, "err", err)
		return Reply{}, store.Invalid("inbound_url", "Die eigene Eingangsadresse "+s.baseURL+" ist von diesem Server aus nicht erreichbar (RUNDBRIEF_BASE_URL prüfen).")
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return Reply{}, fmt.Errorf("integration: test event: %w", err)
	}
	reply := Reply{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"), Body: string(body)}
	// What the call was logged as: its entry in the event log (Digistore24
	// is answered a bare OK), else the status the JSON answer names.
	switch logged, err := s.db.IntegrationEventStatus(ctx, accountID, ig.ID, orderID); {
	case err == nil:
		reply.Logged = logged
	case errors.Is(err, store.ErrNotFound):
		var answer struct {
			Status string `json:"status"`
		}
		if json.Unmarshal(body, &answer) == nil {
			reply.Logged = answer.Status
		}
	default:
		return Reply{}, err
	}
	return reply, nil
}

// ownURL checks that target is below the configured base URL (same scheme,
// host and path prefix), the one place SendTest may post to.
func (s *Service) ownURL(target string) (string, error) {
	base, err := url.Parse(s.baseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return "", fmt.Errorf("integration: test event: base URL %q is no http(s) URL", s.baseURL)
	}
	t, err := url.Parse(target)
	if err != nil || t.Scheme != base.Scheme || t.Host != base.Host || !strings.HasPrefix(t.Path, base.Path+"/hooks/") {
		return "", fmt.Errorf("integration: test event: %q is not below the base URL", target)
	}
	return target, nil
}

// Sample is a correctly signed sample purchase of provider (not paypal) with
// orderID, signed at now: what SendTest posts, and a model of what each
// provider sends.
func Sample(provider, secret, orderID string, now time.Time) Inbound {
	h := http.Header{}
	var body []byte
	switch provider {
	case store.ProviderStripe:
		body, _ = json.Marshal(map[string]any{"id": "evt_" + orderID, "object": "event", "type": "checkout.session.completed",
			"data": map[string]any{"object": map[string]any{"id": "cs_" + orderID, "object": "checkout.session",
				"payment_intent": "pi_" + orderID, "payment_status": "paid", "amount_total": 4900, "currency": "eur",
				"customer_details": map[string]any{"email": TestBuyer, "name": "Erika Mustermann"},
				"metadata":         map[string]any{"product": "Online-Kurs"}}}})
		h.Set("Content-Type", "application/json")
		h.Set(HeaderStripeSignature, StripeSignature(body, secret, now))
	case store.ProviderDigistore24:
		p := url.Values{"event": {"on_payment"}, "order_id": {orderID}, "transaction_id": {"t" + orderID}, "email": {TestBuyer},
			"address_first_name": {"Erika"}, "address_last_name": {"Mustermann"}, "product_id": {"12345"},
			"product_name": {"Online-Kurs"}, "amount_brutto": {"49.00"}, "currency": {"EUR"}}
		p.Set(ParamDigistoreSign, DigistoreSign(p, secret))
		body = []byte(p.Encode())
		h.Set("Content-Type", "application/x-www-form-urlencoded")
	case store.ProviderCopeCart:
		body, _ = json.Marshal(map[string]any{"event_type": "payment.made", "order_id": orderID, "transaction_id": "t" + orderID,
			"buyer_email": TestBuyer, "buyer_firstname": "Erika", "buyer_lastname": "Mustermann", "product_name": "Online-Kurs",
			"product_id": "12345", "transaction_amount": 49.0, "transaction_currency": "EUR"})
		h.Set("Content-Type", "application/json")
		h.Set(HeaderCopeCartSignature, CopeCartSignature(body, secret))
	default:
		body, _ = json.Marshal(map[string]any{"event": "order.completed", "order_id": orderID, "email": TestBuyer,
			"first_name": "Erika", "last_name": "Mustermann", "product": "Online-Kurs", "amount": 49.0, "currency": "EUR"})
		h.Set("Content-Type", "application/json")
		h.Set(HeaderGenericSignature, GenericSignature(body, secret))
	}
	return Inbound{Header: h, Body: body}
}
