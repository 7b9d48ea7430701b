package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/rundbrief/rundbrief/store"
)

// errUnreadable is a verified body that is not what the provider sends.
var errUnreadable = errors.New("Inhalt nicht lesbar")

// num is an amount that providers send as a JSON number or a string.
type num float64

func (n *num) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*n = 0
		return nil
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", "."), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return errUnreadable
	}
	*n = num(f)
	return nil
}

// str is an id that providers send as a JSON string or number.
type str string

func (s *str) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = str(v)
		return nil
	}
	if string(b) == "null" {
		*s = ""
		return nil
	}
	*s = str(b)
	return nil
}

func decodeJSON(body []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return errUnreadable
	}
	return nil
}

// splitName splits a full name at its first space: providers that know only
// "Erika Mustermann" give first and last name this way.
func splitName(full string) (string, string) {
	first, last, _ := strings.Cut(strings.TrimSpace(full), " ")
	return first, strings.TrimSpace(last)
}

// stripeZeroDecimal are the currencies Stripe counts in whole units.
var stripeZeroDecimal = map[string]bool{"bif": true, "clp": true, "djf": true, "gnf": true, "jpy": true, "kmf": true,
	"krw": true, "mga": true, "pyg": true, "rwf": true, "ugx": true, "vnd": true, "vuv": true, "xaf": true, "xof": true, "xpf": true}

func stripeAmount(minor float64, currency string) float64 {
	if stripeZeroDecimal[strings.ToLower(currency)] {
		return minor
	}
	return minor / 100
}

// parseStripe reads checkout.session.completed (and
// checkout.session.async_payment_succeeded) as a purchase and charge.refunded
// as a refund. The order id is the payment intent (which the refund names
// too), the product the session's metadata "product".
func parseStripe(body []byte) (store.ProviderEvent, error) {
	var e struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			Object struct {
				ID              str               `json:"id"`
				PaymentIntent   str               `json:"payment_intent"`
				PaymentStatus   string            `json:"payment_status"`
				AmountTotal     num               `json:"amount_total"`
				AmountRefunded  num               `json:"amount_refunded"`
				Currency        string            `json:"currency"`
				CustomerEmail   string            `json:"customer_email"`
				ReceiptEmail    string            `json:"receipt_email"`
				Metadata        map[string]string `json:"metadata"`
				CustomerDetails struct {
					Email string `json:"email"`
					Name  string `json:"name"`
				} `json:"customer_details"`
				BillingDetails struct {
					Email string `json:"email"`
				} `json:"billing_details"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := decodeJSON(body, &e); err != nil {
		return store.ProviderEvent{}, err
	}
	o := e.Data.Object
	ev := store.ProviderEvent{EventType: e.Type, ProviderEventID: e.ID, OrderID: string(o.PaymentIntent), Currency: o.Currency}
	if ev.OrderID == "" {
		ev.OrderID = string(o.ID)
	}
	switch e.Type {
	case "checkout.session.completed", "checkout.session.async_payment_succeeded":
		if o.PaymentStatus == "unpaid" {
			return ev, nil // paid later: async_payment_succeeded follows
		}
		ev.Kind = store.OrderPurchase
		ev.Email = first(o.CustomerDetails.Email, o.CustomerEmail)
		ev.FirstName, ev.LastName = splitName(o.CustomerDetails.Name)
		ev.Items = []store.OrderItem{{Product: first(o.Metadata["product"], o.Metadata["product_name"]),
			Amount: stripeAmount(float64(o.AmountTotal), o.Currency)}}
	case "charge.refunded":
		ev.Kind = store.OrderRefund
		ev.Email = first(o.BillingDetails.Email, o.ReceiptEmail)
	}
	return ev, nil
}

func first(vs ...string) string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// parseDigistore reads a Digistore24 IPN: on_payment is a purchase,
// on_refund and on_chargeback are refunds; everything else (connection_test,
// on_rebill_cancelled, …) needs nothing.
func parseDigistore(p url.Values) (store.ProviderEvent, error) {
	ev := store.ProviderEvent{EventType: p.Get("event"), OrderID: p.Get("order_id"), Currency: p.Get("currency"),
		ProviderEventID: first(p.Get("transaction_id"), p.Get("order_id"))}
	switch ev.EventType {
	case "on_payment":
		ev.Kind = store.OrderPurchase
	case "on_refund", "on_chargeback":
		ev.Kind = store.OrderRefund
	default:
		return ev, nil
	}
	ev.Email = p.Get("email")
	ev.FirstName, ev.LastName = first(p.Get("address_first_name"), p.Get("first_name")), first(p.Get("address_last_name"), p.Get("last_name"))
	var amount num
	if raw := first(p.Get("amount_brutto"), p.Get("amount"), p.Get("transaction_amount")); raw != "" {
		if err := amount.UnmarshalJSON([]byte(raw)); err != nil {
			return store.ProviderEvent{}, err
		}
	}
	ev.Items = []store.OrderItem{{Product: first(p.Get("product_name"), p.Get("product_id")), Amount: float64(amount)}}
	return ev, nil
}

// parseCopeCart reads a CopeCart IPN (JSON): payment.made is a purchase,
// payment.refunded and payment.charged_back are refunds.
func parseCopeCart(body []byte) (store.ProviderEvent, error) {
	var e struct {
		EventType           string `json:"event_type"`
		OrderID             str    `json:"order_id"`
		TransactionID       str    `json:"transaction_id"`
		BuyerEmail          string `json:"buyer_email"`
		BuyerFirstName      string `json:"buyer_firstname"`
		BuyerLastName       string `json:"buyer_lastname"`
		ProductName         string `json:"product_name"`
		ProductID           str    `json:"product_id"`
		Amount              num    `json:"amount"`
		TransactionAmount   num    `json:"transaction_amount"`
		Currency            string `json:"currency"`
		TransactionCurrency string `json:"transaction_currency"`
	}
	if err := decodeJSON(body, &e); err != nil {
		return store.ProviderEvent{}, err
	}
	ev := store.ProviderEvent{EventType: e.EventType, OrderID: string(e.OrderID), ProviderEventID: first(string(e.TransactionID), string(e.OrderID)),
		Currency: first(e.TransactionCurrency, e.Currency), Email: e.BuyerEmail, FirstName: e.BuyerFirstName, LastName: e.BuyerLastName}
	switch e.EventType {
	case "payment.made", "payment.succeeded", "payment.completed":
		ev.Kind = store.OrderPurchase
		amount := e.TransactionAmount
		if amount == 0 {
			amount = e.Amount
		}
		ev.Items = []store.OrderItem{{Product: first(e.ProductName, string(e.ProductID)), Amount: float64(amount)}}
	case "payment.refunded", "payment.charged_back", "payment.chargeback":
		ev.Kind = store.OrderRefund
	}
	return ev, nil
}

type paypalMoney struct {
	Value        num    `json:"value"`
	CurrencyCode string `json:"currency_code"`
}

// parsePayPal reads CHECKOUT.ORDER.COMPLETED as a purchase (each item of each
// purchase unit an order item; a unit without items counts by its
// description) and PAYMENT.CAPTURE.REFUNDED as a refund of the order its
// supplementary data names.
func parsePayPal(body []byte) (store.ProviderEvent, error) {
	var e struct {
		ID        string `json:"id"`
		EventType string `json:"event_type"`
		Resource  struct {
			ID    string `json:"id"`
			Payer struct {
				Email string `json:"email_address"`
				Name  struct {
					GivenName string `json:"given_name"`
					Surname   string `json:"surname"`
				} `json:"name"`
			} `json:"payer"`
			PurchaseUnits []struct {
				ReferenceID string      `json:"reference_id"`
				Description string      `json:"description"`
				Amount      paypalMoney `json:"amount"`
				Items       []struct {
					Name       string      `json:"name"`
					Quantity   num         `json:"quantity"`
					UnitAmount paypalMoney `json:"unit_amount"`
				} `json:"items"`
			} `json:"purchase_units"`
			SupplementaryData struct {
				RelatedIDs struct {
					OrderID string `json:"order_id"`
				} `json:"related_ids"`
			} `json:"supplementary_data"`
		} `json:"resource"`
	}
	if err := decodeJSON(body, &e); err != nil {
		return store.ProviderEvent{}, err
	}
	r := e.Resource
	ev := store.ProviderEvent{EventType: e.EventType, ProviderEventID: e.ID}
	switch e.EventType {
	case "CHECKOUT.ORDER.COMPLETED":
		ev.Kind, ev.OrderID, ev.Email = store.OrderPurchase, r.ID, r.Payer.Email
		ev.FirstName, ev.LastName = r.Payer.Name.GivenName, r.Payer.Name.Surname
		for _, u := range r.PurchaseUnits {
			ev.Currency = first(ev.Currency, u.Amount.CurrencyCode)
			if len(u.Items) == 0 {
				ev.Items = append(ev.Items, store.OrderItem{Product: first(u.Description, u.ReferenceID), Amount: float64(u.Amount.Value)})
			}
			for _, it := range u.Items {
				q := float64(it.Quantity)
				if q == 0 {
					q = 1
				}
				ev.Items = append(ev.Items, store.OrderItem{Product: it.Name, Amount: float64(it.UnitAmount.Value) * q})
			}
		}
	case "PAYMENT.CAPTURE.REFUNDED":
		ev.Kind, ev.OrderID = store.OrderRefund, r.SupplementaryData.RelatedIDs.OrderID
	}
	return ev, nil
}

// parseGeneric reads the generic body decisions.md pins: event
// (order.completed or order.refunded), order_id, email, first_name, last_name,
// product, amount (currency units), currency; an optional event_id names the
// call in the log.
func parseGeneric(body []byte) (store.ProviderEvent, error) {
	var e struct {
		Event     string `json:"event"`
		EventID   str    `json:"event_id"`
		OrderID   str    `json:"order_id"`
		Email     string `json:"email"`
		FirstName string `json:"first_name"`
		LastName  string `json:"last_name"`
		Product   string `json:"product"`
		Amount    num    `json:"amount"`
		Currency  string `json:"currency"`
	}
	if err := decodeJSON(body, &e); err != nil {
		return store.ProviderEvent{}, err
	}
	ev := store.ProviderEvent{EventType: e.Event, ProviderEventID: first(string(e.EventID), string(e.OrderID)), OrderID: string(e.OrderID),
		Email: e.Email, FirstName: e.FirstName, LastName: e.LastName, Currency: e.Currency}
	switch e.Event {
	case "order.completed":
		ev.Kind = store.OrderPurchase
		ev.Items = []store.OrderItem{{Product: e.Product, Amount: float64(e.Amount)}}
	case "order.refunded":
		ev.Kind = store.OrderRefund
	}
	return ev, nil
}
