package views_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// TestSMTPErrorText: the common SMTP replies and dial errors read as German
// sentences; the raw reply is what the detail keeps.
func TestSMTPErrorText(t *testing.T) {
	e := views.German().SMTPErrors
	for raw, want := range map[string]string{
		"535 5.7.8 Username and Password not accepted":                                     e.Auth,
		"535-5.7.8 Authentication credentials invalid":                                     e.Auth,
		"550 5.7.1 Relaying denied":                                                        e.Relay,
		"554 5.7.1 <x@example.org>: Relay access denied":                                   e.Relay,
		"550 5.1.1 <nobody@example.org>: Recipient address rejected: User unknown":         e.Mailbox,
		"552 5.2.2 Mailbox full":                                                           e.MailboxFull,
		"552 5.3.4 Message size exceeds fixed limit":                                       e.TooBig,
		"553 5.7.1 <info@shop.de>: Sender address rejected: not owned by user x":           e.Sender,
		"554 5.7.1 Service unavailable; client host blocked using zen.spamhaus.org":        e.Policy,
		"421 4.7.0 Try again later, closing connection":                                    e.Temporary,
		"451 4.3.0 Temporary lookup failure":                                               e.Temporary,
		"550 Requested action not taken":                                                   e.Rejected,
		"dial tcp 203.0.113.7:587: connect: connection refused":                            e.Refused,
		"dial tcp: lookup smtp.nirgendwo.example: no such host":                            e.DNS,
		"dial tcp 203.0.113.7:25: i/o timeout":                                             e.Timeout,
		"context deadline exceeded":                                                        e.Timeout,
		"dial tcp 10.0.0.1:25: connect: network is unreachable":                            e.Unreachable,
		"tls: failed to verify certificate: x509: certificate signed by unknown authority": e.Certificate,
		"tls: first record does not look like a TLS handshake":                             e.TLS,
		"EOF":                e.Closed,
		"etwas ganz anderes": e.Failed,
		"":                   "",
	} {
		if got := views.SMTPErrorText(views.German(), raw); got != want {
			t.Errorf("%q: %q, want %q", raw, got, want)
		}
	}
}

// TestSMTPErrorShowsReply: the component says it in German and keeps the
// server's reply as the detail.
func TestSMTPErrorShowsReply(t *testing.T) {
	doc := render(t, views.SMTPError("535 5.7.8 Error: authentication failed"))
	if got := text(tid(doc, "smtp-error-text")); !strings.HasPrefix(got, "Die Anmeldung am SMTP-Server ist fehlgeschlagen") {
		t.Errorf("text %q", got)
	}
	if got := text(tid(doc, "smtp-error-detail")); got != "535 5.7.8 Error: authentication failed" {
		t.Errorf("detail %q", got)
	}
}

// TestFormatFieldValue: numbers and dates in German, yes/no as words, a value
// that does not fit its type as stored.
func TestFormatFieldValue(t *testing.T) {
	tx := views.German()
	for _, c := range []struct {
		v    any
		typ  string
		want string
		ok   bool
	}{
		{json.Number("1234.5"), store.FieldNumber, "1.234,5", true},
		{json.Number("-1000000"), store.FieldNumber, "-1.000.000", true},
		{json.Number("0.25"), store.FieldNumber, "0,25", true},
		{"42", store.FieldNumber, "42", true},
		{"viele", store.FieldNumber, "viele", false},
		{"2026-12-24", store.FieldDate, "24.12.2026", true},
		{"24.12.2026", store.FieldDate, "24.12.2026", false},
		{true, store.FieldBoolean, "Ja", true},
		{"false", store.FieldBoolean, "Nein", true},
		{"vielleicht", store.FieldBoolean, "vielleicht", false},
		{json.Number("1234.5"), store.FieldText, "1234.5", true},
		{"blau", "", "blau", true},
	} {
		if got, ok := views.FormatFieldValue(tx, c.v, c.typ); got != c.want || ok != c.ok {
			t.Errorf("%v as %s: %q %v, want %q %v", c.v, c.typ, got, ok, c.want, c.ok)
		}
	}
}

// TestActivitySentence: changed fields by their German names, old → new where
// recorded.
func TestActivitySentence(t *testing.T) {
	tx := views.German()
	for details, want := range map[string]string{
		`{"changed":["first_name"]}`:                                 "Geändert: Vorname.",
		`{"changed":["first_name","city","tags"]}`:                   "Geändert: Vorname, Ort und Schlagwörter.",
		`{"changed":["subject","custom_fields.punkte"]}`:             "Geändert: Betreff und Feld punkte.",
		`{"key":"x","changes":{"type":{"from":"text","to":"date"}}}`: "Typ: Text → Datum.",
		`{"email":"a@example.com","from":"member","to":"admin"}`:     "Rolle: Mitglied → Administrator.",
		`{"name":"Presse"}`:                                          "",
	} {
		a := store.Activity{Action: "user.role_changed", Details: json.RawMessage(details)}
		if got := views.ActivitySentence(tx, a); got != want {
			t.Errorf("%s: %q, want %q", details, got, want)
		}
	}
}
