package appointment_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/appointment"
)

// TestInvitationTimesAndText: local times carry TZID=Europe/Berlin; a time in
// the second occurrence of the doubled hour (25 October 2026, clocks going
// back) is written in UTC, since a local time there means the first; text is
// escaped and long lines folded at 75 octets without splitting a character.
func TestInvitationTimesAndText(t *testing.T) {
	first := time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC) // 02:30 CEST
	second := first.Add(time.Hour)                          // 02:30 CET
	inv := appointment.Invitation{
		Method: appointment.MethodRequest, UID: "abc@rundbrief", Stamp: first, Start: first, End: second,
		Summary:     "Beratung; Ü, \"Zitat\"",
		Description: strings.Repeat("Überlänge äöü ", 20) + "\nzweite Zeile",
		Organizer:   store.AppointmentHost{Name: "Praxis \"Sonne\"", Email: "inhaber@praxis.test"},
		Attendee:    "Erika", AttendeeTo: "erika@example.com",
	}
	ics := inv.ICS()
	p := icsProps(t, ics)
	if got := p["DTSTART;TZID=Europe/Berlin"]; len(got) != 1 || got[0] != "20261025T023000" {
		t.Errorf("DTSTART of the first 02:30: %v", got)
	}
	if got := p["DTEND"]; len(got) != 1 || got[0] != "20261025T013000Z" {
		t.Errorf("DTEND in the second 02:30: %v (%v)", got, p)
	}
	if got := p["SUMMARY"]; len(got) != 1 || got[0] != `Beratung\; Ü\, "Zitat"` {
		t.Errorf("SUMMARY %v", got)
	}
	if got := p["DESCRIPTION"]; len(got) != 1 || !strings.HasSuffix(got[0], `\nzweite Zeile`) || !strings.Contains(got[0], "Überlänge äöü Überlänge") {
		t.Errorf("DESCRIPTION %v", got)
	}
	if _, ok := p[`ORGANIZER;CN="Praxis Sonne"`]; !ok {
		t.Errorf("ORGANIZER not quoted safely: %v", p)
	}
	for _, l := range strings.Split(ics, "\r\n") {
		if !utf8.ValidString(l) {
			t.Errorf("folding split a character: %q", l)
		}
	}
}
