package views_test

import (
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// Texts that count read in the singular for one ("1 Tag später", not
// "1 Tage später") and say something sensible for none.
func TestTextsThatCountAgreeWithTheNumber(t *testing.T) {
	day := func(position, delay int) string {
		doc := render(t, views.SequenceDayItem(store.Sequence{ID: 1}, store.SequenceDay{ID: 2, Position: position, DelayDays: delay},
			false, false, nil, views.EditorExtras{}))
		return text(tid(doc, "sequence-day-delay"))
	}
	checks := func(c mailer.Checklist) (links, images string) {
		doc := render(t, views.NewsletterSendPage(shell("owner"), views.NewsletterSend{Checks: c}))
		return text(tid(doc, "check-links")), text(tid(doc, "check-images"))
	}
	links1, images1 := checks(mailer.Checklist{Links: 1, Images: 1})
	links0, images0 := checks(mailer.Checklist{})
	_, noAlt1 := checks(mailer.Checklist{Images: 3, ImagesNoAlt: 1})
	_, noAlt2 := checks(mailer.Checklist{Images: 3, ImagesNoAlt: 2})
	for _, c := range []struct{ got, want string }{
		{day(1, 1), "1 Tag nach dem Eintritt"},
		{day(1, 3), "3 Tage nach dem Eintritt"},
		{day(2, 1), "1 Tag später"},
		{day(2, 2), "2 Tage später"},
		{links1, "1 Link, eine vollständige Adresse."},
		{links0, "Keine Links."},
		{images1, "1 Bild, mit Alternativtext."},
		{images0, "Keine Bilder."},
		{noAlt1, "1 von 3 Bildern hat keinen Alternativtext"},
		{noAlt2, "2 von 3 Bildern haben keinen Alternativtext"},
	} {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("%q does not say %q", c.got, c.want)
		}
	}

	story := func(lists ...int64) string {
		doc := render(t, views.StoryCalendarPage(shell("owner"), views.StoryCalendar{Settings: store.StorySettings{SendTime: "08:00", ListIDs: lists}}))
		return text(tid(doc, "story-settings-summary"))
	}
	for _, c := range []struct{ got, want string }{
		{story(), "Versand um 08:00 Uhr, aber noch an keine Liste: Wählen Sie die Story-Listen in den Einstellungen."},
		{story(4), "Versand um 08:00 Uhr an 1 Liste."},
		{story(4, 5), "Versand um 08:00 Uhr an 2 Listen."},
	} {
		if c.got != c.want {
			t.Errorf("story summary %q, want %q", c.got, c.want)
		}
	}
}
