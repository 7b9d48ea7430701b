package appointment

import (
	"fmt"
	"html"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

var (
	weekdaysDE = [...]string{"Sonntag", "Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag"}
	monthsDE   = [...]string{"Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September",
		"Oktober", "November", "Dezember"}
)

// FormatDay is e.g. "Dienstag, 1. Dezember 2026" (Berlin).
func FormatDay(t time.Time) string {
	l := t.In(store.Berlin)
	return fmt.Sprintf("%s, %d. %s %d", weekdaysDE[l.Weekday()], l.Day(), monthsDE[l.Month()-1], l.Year())
}

// FormatWhen is e.g. "Dienstag, 1. Dezember 2026, 09:00–09:30 Uhr" (Berlin).
func FormatWhen(start, end time.Time) string {
	return FormatDay(start) + ", " + start.In(store.Berlin).Format("15:04") + "–" + end.In(store.Berlin).Format("15:04") + " Uhr"
}

func title(set store.AppointmentSettings, host store.AppointmentHost) string {
	if strings.TrimSpace(set.Title) != "" {
		return set.Title
	}
	return "Termin mit " + host.Name
}

// invitation is the iCalendar object of a (changed) appointment.
func invitation(set store.AppointmentSettings, host store.AppointmentHost, a store.Appointment, method string, now time.Time) string {
	return Invitation{
		Method: method, UID: a.UID, Sequence: a.Sequence, Stamp: now, Start: a.Start, End: a.End,
		Summary: title(set, host), Description: set.Description, Organizer: host, Attendee: a.Name, AttendeeTo: a.Email,
	}.ICS()
}

// bookerMail is the mail to the booker about a change: "booked" (with the
// cancellation link), "rescheduled" or "cancelled", each with the invitation
// (METHOD:REQUEST, or METHOD:CANCEL for a cancellation). It goes through the
// account's own SMTP route, as the account's mail does.
func (s *Service) bookerMail(set store.AppointmentSettings, host store.AppointmentHost, a store.Appointment, change string, now time.Time) store.QueuedMail {
	t := title(set, host)
	when := FormatWhen(a.Start, a.End)
	greeting := "Hallo " + a.Name + ","
	m := store.QueuedMail{To: a.Email, ContactID: a.ContactID, AccountRoute: true}
	var lines []string
	method := MethodRequest
	switch change {
	case "cancelled":
		m.Kind = store.SystemMailAppointmentCancellation
		m.Subject = "Abgesagt: " + t + " am " + FormatDay(a.Start)
		lines = []string{greeting, "Ihr Termin „" + t + "“ am " + when + " ist abgesagt.",
			"Die Kalendereinladung im Anhang entfernt ihn aus Ihrem Kalender."}
		method = MethodCancel
	case "rescheduled":
		m.Kind = store.SystemMailAppointmentRescheduled
		m.Subject = "Verschoben: " + t + " am " + FormatDay(a.Start)
		lines = []string{greeting, "Ihr Termin „" + t + "“ wurde verschoben auf " + when + ".",
			"Die Kalendereinladung im Anhang aktualisiert ihn in Ihrem Kalender."}
	default:
		m.Kind = store.SystemMailAppointmentConfirmation
		m.Subject = "Bestätigt: " + t + " am " + FormatDay(a.Start)
		lines = []string{greeting, "vielen Dank für Ihre Buchung. Ihr Termin „" + t + "“ ist bestätigt: " + when + ".",
			"Mit der Kalendereinladung im Anhang tragen Sie ihn in Ihren Kalender ein."}
	}
	m.Calendar = invitation(set, host, a, method, now)
	var cancelURL string
	if a.CancelPath != "" {
		cancelURL = s.baseURL + a.CancelPath
		lines = append(lines, "Falls Sie nicht kommen können, sagen Sie den Termin bitte hier ab:")
	}
	m.Text = strings.Join(lines, "\n\n") + "\n"
	var h strings.Builder
	for _, l := range lines {
		h.WriteString("<p>" + html.EscapeString(l) + "</p>\n")
	}
	if cancelURL != "" {
		m.Text += "\n" + cancelURL + "\n"
		h.WriteString(`<p><a href="` + html.EscapeString(cancelURL) + `">Termin absagen</a></p>` + "\n")
	}
	m.Text += "\nViele Grüße\n" + host.Name + "\n"
	h.WriteString("<p>Viele Grüße<br>" + html.EscapeString(host.Name) + "</p>\n")
	m.HTML = h.String()
	return m
}

// ownerMail notifies the account's owner of a change.
func ownerMail(set store.AppointmentSettings, host store.AppointmentHost, a store.Appointment, change string) store.QueuedMail {
	t := title(set, host)
	when := FormatWhen(a.Start, a.End)
	var subject, head string
	switch change {
	case "cancelled":
		subject, head = "Termin abgesagt: "+a.Name+", "+FormatDay(a.Start), "Ein Termin wurde abgesagt."
	case "rescheduled":
		subject, head = "Termin verschoben: "+a.Name+", "+FormatDay(a.Start), "Ein Termin wurde verschoben."
	default:
		subject, head = "Neuer Termin: "+a.Name+", "+FormatDay(a.Start), "Es wurde ein neuer Termin gebucht."
	}
	lines := []string{head, "Termin: " + t, "Wann: " + when, "Name: " + a.Name, "E-Mail: " + a.Email}
	if a.Phone != "" {
		lines = append(lines, "Telefon: "+a.Phone)
	}
	if a.Note != "" {
		lines = append(lines, "Nachricht: "+a.Note)
	}
	var h strings.Builder
	for _, l := range lines {
		h.WriteString("<p>" + html.EscapeString(l) + "</p>\n")
	}
	return store.QueuedMail{Kind: store.SystemMailAppointmentOwner, Owner: true, Subject: subject,
		Text: strings.Join(lines, "\n") + "\n", HTML: h.String()}
}

// reminderMail is the reminder to the booker.
func reminderMail(j store.ReminderJob) store.QueuedMail {
	t := j.Title
	if strings.TrimSpace(t) == "" {
		t = "Termin mit " + j.AccountName
	}
	when := FormatWhen(j.Start, j.End)
	lines := []string{"Hallo " + j.Name + ",", "wir erinnern Sie an Ihren Termin „" + t + "“: " + when + ".",
		"Falls Sie nicht kommen können, sagen Sie bitte mit dem Link aus Ihrer Bestätigung ab oder antworten Sie auf diese E-Mail.",
		"Viele Grüße\n" + j.AccountName}
	var h strings.Builder
	for _, l := range lines {
		h.WriteString("<p>" + strings.ReplaceAll(html.EscapeString(l), "\n", "<br>") + "</p>\n")
	}
	return store.QueuedMail{Kind: store.SystemMailAppointmentReminder, To: j.Email, ContactID: j.ContactID, AccountRoute: true,
		Subject: "Erinnerung: " + t + " am " + FormatDay(j.Start), Text: strings.Join(lines, "\n\n") + "\n", HTML: h.String()}
}
