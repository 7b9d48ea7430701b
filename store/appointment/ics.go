package appointment

import (
	"strconv"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// iCalendar methods (RFC 5546) of the invitations.
const (
	MethodRequest = "REQUEST"
	MethodCancel  = "CANCEL"
)

// Invitation is what an iCalendar object of an appointment says.
type Invitation struct {
	Method      string // MethodRequest or MethodCancel
	UID         string // stable for the appointment's life
	Sequence    int    // raised by every reschedule and the cancellation
	Stamp       time.Time
	Start, End  time.Time
	Summary     string
	Description string
	Organizer   store.AppointmentHost
	Attendee    string // the booker's name
	AttendeeTo  string // the booker's address
}

// vtimezone describes Europe/Berlin since 1996 (EU rules: last Sunday of March
// and October), so that DTSTART;TZID=Europe/Berlin means the same everywhere.
const vtimezone = "BEGIN:VTIMEZONE\r\n" +
	"TZID:Europe/Berlin\r\n" +
	"BEGIN:DAYLIGHT\r\n" +
	"TZOFFSETFROM:+0100\r\n" +
	"TZOFFSETTO:+0200\r\n" +
	"TZNAME:CEST\r\n" +
	"DTSTART:19700329T020000\r\n" +
	"RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU\r\n" +
	"END:DAYLIGHT\r\n" +
	"BEGIN:STANDARD\r\n" +
	"TZOFFSETFROM:+0200\r\n" +
	"TZOFFSETTO:+0100\r\n" +
	"TZNAME:CET\r\n" +
	"DTSTART:19701025T030000\r\n" +
	"RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU\r\n" +
	"END:STANDARD\r\n" +
	"END:VTIMEZONE\r\n"

// ICS writes the invitation as an RFC 5545 object (CRLF lines, folded at 75
// octets, text escaped). Times are local to Europe/Berlin with its VTIMEZONE;
// a time in the second occurrence of a doubled hour (clocks going back) is
// written in UTC instead, since a local time there means the first.
func (inv Invitation) ICS() string {
	var b strings.Builder
	line := func(s string) { writeFolded(&b, s) }
	line("BEGIN:VCALENDAR")
	line("VERSION:2.0")
	line("PRODID:-//Rundbrief//Terminbuchung//DE")
	line("CALSCALE:GREGORIAN")
	line("METHOD:" + inv.Method)
	b.WriteString(vtimezone)
	line("BEGIN:VEVENT")
	line("UID:" + inv.UID)
	line("SEQUENCE:" + strconv.Itoa(inv.Sequence))
	line("DTSTAMP:" + inv.Stamp.UTC().Format("20060102T150405Z"))
	line("DTSTART" + icsTime(inv.Start))
	line("DTEND" + icsTime(inv.End))
	line("SUMMARY:" + icsText(inv.Summary))
	if inv.Description != "" {
		line("DESCRIPTION:" + icsText(inv.Description))
	}
	if inv.Organizer.Email != "" {
		line("ORGANIZER;CN=" + icsParam(inv.Organizer.Name) + ":mailto:" + inv.Organizer.Email)
	}
	line("ATTENDEE;CN=" + icsParam(inv.Attendee) + ";ROLE=REQ-PARTICIPANT;PARTSTAT=ACCEPTED;RSVP=FALSE:mailto:" + inv.AttendeeTo)
	if inv.Method == MethodCancel {
		line("STATUS:CANCELLED")
	} else {
		line("STATUS:CONFIRMED")
	}
	line("TRANSP:OPAQUE")
	line("END:VEVENT")
	line("END:VCALENDAR")
	return b.String()
}

// icsTime is ";TZID=Europe/Berlin:20261201T090000", or ":20261025T010000Z"
// for the second occurrence of a doubled local time.
func icsTime(t time.Time) string {
	l := t.In(store.Berlin)
	if e := l.Add(-time.Hour); e.Hour() == l.Hour() && e.Minute() == l.Minute() {
		return ":" + t.UTC().Format("20060102T150405Z")
	}
	return ";TZID=Europe/Berlin:" + l.Format("20060102T150405")
}

// icsText escapes a TEXT value (RFC 5545 3.3.11).
func icsText(s string) string {
	r := strings.NewReplacer(`\`, `\\`, ";", `\;`, ",", `\,`, "\r\n", `\n`, "\n", `\n`, "\r", `\n`)
	return r.Replace(s)
}

// icsParam quotes a parameter value; DQUOTE cannot appear inside one.
func icsParam(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '"' || r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	return `"` + s + `"`
}

// writeFolded writes one content line folded at 75 octets (never inside a
// UTF-8 sequence), ended by CRLF.
func writeFolded(b *strings.Builder, s string) {
	limit := 75
	for len(s) > limit {
		cut := limit
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		b.WriteString(s[:cut])
		b.WriteString("\r\n ")
		s = s[cut:]
		limit = 74 // the leading space counts
	}
	b.WriteString(s)
	b.WriteString("\r\n")
}
