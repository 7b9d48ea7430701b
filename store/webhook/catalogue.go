package webhook

import (
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// EventKind describes one of the 17 event kinds for GET /webhooks/events, with
// the sample data a test send carries.
type EventKind struct {
	Name        string
	Description string // German
	// Sample is data shaped like the real event's data, for test sends.
	Sample func(now time.Time) any
}

// Catalogue returns the 17 event kinds in the order of store.EventKinds.
func Catalogue() []EventKind {
	contact := func(now time.Time, status string) store.ContactData {
		t := store.EventTime(now)
		return store.ContactData{
			ID: 1, Email: "erika.mustermann@example.com", FirstName: "Erika", LastName: "Mustermann",
			Address: "Heidestraße 17", Zip: "51147", City: "Köln", Phone: "+49 221 1234567", Note: "",
			Tags: []string{"kunde"}, Status: status, Source: "api", CustomFields: store.CustomFields{},
			DOIConfirmedAt: nil, CreatedAt: t, UpdatedAt: t,
			Lists: []store.ListRef{{ID: 1, Name: "Newsletter", Color: "#4f46e5"}},
		}
	}
	list := map[string]any{"id": 1, "name": "Newsletter"}
	return []EventKind{
		{store.EventContactCreated, "Ein Kontakt wurde angelegt (Portal, Import, API, Formular, Integration).",
			func(now time.Time) any { return map[string]any{"contact": contact(now, "subscribed")} }},
		{store.EventContactUpdated, "Daten, Status oder Listen eines Kontakts haben sich geändert (auch nach Double-Opt-in-Bestätigung); changed nennt die Felder.",
			func(now time.Time) any {
				return map[string]any{"contact": contact(now, "subscribed"), "changed": []string{"first_name", "tags"}}
			}},
		{store.EventContactDeleted, "Ein Kontakt wurde gelöscht.",
			func(now time.Time) any { return map[string]any{"contact": contact(now, "subscribed")} }},
		{store.EventContactUnsubscribed, "Ein Kontakt hat sich abgemeldet (Link, One-Click, manuell, API).",
			func(now time.Time) any {
				return map[string]any{"contact": contact(now, "unsubscribed"), "email": "erika.mustermann@example.com",
					"source": "link", "reason": nil, "campaign_id": 1}
			}},
		{store.EventListJoined, "Ein aktiver Kontakt wurde einer Liste hinzugefügt.",
			func(now time.Time) any { return map[string]any{"list": list, "contact": contact(now, "subscribed")} }},
		{store.EventListLeft, "Ein Kontakt wurde aus einer Liste entfernt.",
			func(now time.Time) any { return map[string]any{"list": list, "contact": contact(now, "subscribed")} }},
		{store.EventEmailSent, "Eine E-Mail (Einzelversand, Newsletter, Story, Sequenz-Tag) wurde an SMTP übergeben.",
			func(time.Time) any {
				return map[string]any{"campaign_id": 1, "contact_id": 1, "email": "erika.mustermann@example.com",
					"message_id": "beispiel-0001@example.com"}
			}},
		{store.EventEmailOpened, "Erste Öffnung einer E-Mail (Bots herausgefiltert).",
			func(now time.Time) any {
				return map[string]any{"campaign_id": 1, "contact_id": 1, "email": "erika.mustermann@example.com",
					"opened_at": store.EventTime(now)}
			}},
		{store.EventEmailClicked, "Erster Klick je Link einer E-Mail (Bots herausgefiltert).",
			func(now time.Time) any {
				return map[string]any{"campaign_id": 1, "contact_id": 1, "email": "erika.mustermann@example.com",
					"opened_at": store.EventTime(now), "url": "https://example.com/angebot"}
			}},
		{store.EventEmailBounced, "SMTP hat einen Empfänger endgültig abgelehnt, oder ein Bounce wurde erfasst.",
			func(time.Time) any {
				return map[string]any{"campaign_id": 1, "email": "erika.mustermann@example.com", "code": "550",
					"reason": "550 5.1.1 user unknown"}
			}},
		{store.EventNewsletterSent, "Ein Newsletter ist fertig versendet.",
			func(time.Time) any {
				return map[string]any{"newsletter": map[string]any{"id": 1, "name": "Frühlingsangebote", "queued": 1200,
					"sent": 1195, "failed": 5}}
			}},
		{store.EventSequenceCompleted, "Ein Teilnehmer hat den letzten Tag einer Story-Sequenz erhalten.",
			func(now time.Time) any {
				return map[string]any{"sequence": map[string]any{"id": 1, "name": "Willkommensserie"}, "contact": contact(now, "subscribed")}
			}},
		{store.EventABTestCompleted, "Ein A/B-Test hat einen Gewinner.",
			func(time.Time) any {
				return map[string]any{"ab_test": map[string]any{"id": 1, "winner": "B", "metric": "opens", "confidence": 0.97}}
			}},
		{store.EventAppointmentBooked, "Ein Termin wurde gebucht (Portal, API oder öffentliche Buchungsseite).",
			func(now time.Time) any {
				return map[string]any{"appointment": map[string]any{"id": 1, "name": "Erika Mustermann",
					"email": "erika.mustermann@example.com", "phone": "+49 30 1234567", "note": "", "source": "booking_page",
					"contact_id": 1, "starts_at": store.EventTime(now.Add(24 * time.Hour)),
					"ends_at": store.EventTime(now.Add(24*time.Hour + 30*time.Minute))}}
			}},
		{store.EventInboxReceived, "Eine neue Nachricht ist im verbundenen Postfach eingegangen.",
			func(now time.Time) any {
				return map[string]any{"message": map[string]any{"id": 1, "from": "erika.mustermann@example.com",
					"subject": "Frage zu meiner Bestellung", "received_at": store.EventTime(now)}}
			}},
		{store.EventInboxReplied, "Aus dem Postfach wurde geantwortet; source ist user, ai oder rule.",
			func(time.Time) any {
				return map[string]any{"message_id": 1, "reply_id": 2, "to": "erika.mustermann@example.com",
					"subject": "Re: Frage zu meiner Bestellung", "source": "user"}
			}},
		{store.EventOrderCompleted, "Eine Zahlungsanbieter-Integration hat einen Kauf gemeldet.",
			func(now time.Time) any {
				return map[string]any{"integration": map[string]any{"id": 1, "provider": "stripe"},
					"order": map[string]any{"provider": "stripe", "order_id": "ord_beispiel", "product": "Online-Kurs",
						"amount": 49.0, "currency": "EUR"},
					"contact": contact(now, "subscribed")}
			}},
	}
}

// Kind returns the catalogue entry of name.
func Kind(name string) (EventKind, bool) {
	for _, k := range Catalogue() {
		if k.Name == name {
			return k, true
		}
	}
	return EventKind{}, false
}
