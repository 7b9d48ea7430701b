package mailer_test

import (
	"slices"
	"testing"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
)

func TestCheckContent(t *testing.T) {
	good := mailer.CheckContent(store.Campaign{Subject: "Unsere Herbstneuheiten", Preheader: "Drei neue Brote ab Montag",
		HTML: `<p>Hallo {{vorname}},</p><p><a href="https://baeckerei.example/herbst">Ansehen</a> <a href="mailto:info@baeckerei.example">Schreiben</a>
<a href="{{abmelde_link}}">Austragen</a></p><img src="https://baeckerei.example/brot.jpg" alt="Ein Laib Dinkelbrot">`})
	if !good.Subject || !good.Preheader || good.SubjectTooLong || good.SubjectShouting || len(good.BadLinks) != 0 ||
		good.Links != 3 || good.Images != 1 || good.ImagesNoAlt != 0 || len(good.SpamWords) != 0 || !good.Unsubscribe {
		t.Errorf("a clean newsletter: %+v", good)
	}

	bad := mailer.CheckContent(store.Campaign{Subject: "JETZT KAUFEN!! Alles gratis und risikofrei, nur heute, solange der Vorrat reicht, wirklich",
		Markdown: "Hallo!\n\n[Hier](/angebot) und [dort](www.example.com) und [ok](https://example.com/a).\n\n![](https://example.com/x.png)\n\nFree shipping, freedom."})
	if bad.Subject != true || bad.Preheader || !bad.SubjectTooLong || !bad.SubjectShouting {
		t.Errorf("subject checks: %+v", bad)
	}
	if !slices.Equal(bad.BadLinks, []string{"/angebot", "www.example.com"}) {
		t.Errorf("bad links %v", bad.BadLinks)
	}
	if bad.Images != 1 || bad.ImagesNoAlt != 1 {
		t.Errorf("images %d, without alt %d", bad.Images, bad.ImagesNoAlt)
	}
	for _, w := range []string{"gratis", "risikofrei", "nur heute", "jetzt kaufen", "free"} {
		if !slices.Contains(bad.SpamWords, w) {
			t.Errorf("spam word %q not found in %v", w, bad.SpamWords)
		}
	}
	if bad.Unsubscribe {
		t.Error("no placeholder, yet Unsubscribe")
	}
	// "freedom" alone is no spam word.
	if ck := mailer.CheckContent(store.Campaign{Subject: "Freedom", HTML: "<p>freedom</p>"}); len(ck.SpamWords) != 0 {
		t.Errorf("word boundaries: %v", ck.SpamWords)
	}
}
