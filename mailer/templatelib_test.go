package mailer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/store"
)

// TestLibraryDesignsRender renders every design of the template library once,
// as a newsletter would be sent (the layout design around a sample content),
// and checks the HTML: one table layout, German, responsive, inline styles,
// every image with alt text, every link absolute after rendering, the
// unsubscribe link and the imprint below it.
func TestLibraryDesignsRender(t *testing.T) {
	tokens, err := NewTokens("library test secret, at least 32 characters long")
	if err != nil {
		t.Fatal(err)
	}
	links := LinkBuilder{BaseURL: "https://rundbrief.test", Tokens: tokens}
	designs := store.LibraryDesigns()
	if len(designs) < 8 {
		t.Fatalf("%d designs, want at least 8", len(designs))
	}
	categories := map[string]bool{}
	for _, d := range designs {
		categories[d.Category] = true
		t.Run(d.Key, func(t *testing.T) {
			c := store.Campaign{ID: 1, AccountID: 1, Kind: store.KindNewsletter, Type: store.TypeNewsletter,
				Subject: d.Subject, Preheader: d.Preheader, HTML: d.HTML}
			assets := &Assets{Identity: Identity{Company: "Beispiel GmbH", Imprint: "Beispiel GmbH\nMusterweg 2, 10115 Berlin"}}
			if store.IsLayout(d.HTML) {
				tpl := store.Template{Key: d.Key, HTML: d.HTML}
				assets.Layout = &tpl
				c.Subject = "Eine Geschichte"
				c.HTML = `<p>Es war einmal, {{vorname}}. <a href="https://www.example.com/weiter">Weiter</a></p>`
			}
			u, err := CompilePreview(c, assets, links)
			if err != nil {
				t.Fatal(err)
			}
			r, err := u.Render(SampleRecipient())
			if err != nil {
				t.Fatal(err)
			}
			doc, err := goquery.NewDocumentFromReader(strings.NewReader(r.HTML))
			if err != nil {
				t.Fatal(err)
			}
			if lang, _ := doc.Find("html").Attr("lang"); lang != "de" {
				t.Errorf("lang %q", lang)
			}
			if n := doc.Find("body > table").Length(); n != 1 {
				t.Errorf("%d top-level tables, want one table layout", n)
			}
			if role, _ := doc.Find("body > table").Attr("role"); role != "presentation" {
				t.Errorf("layout table role %q", role)
			}
			if vp, _ := doc.Find(`meta[name="viewport"]`).Attr("content"); !strings.Contains(vp, "width=device-width") {
				t.Errorf("no viewport meta")
			}
			if !strings.Contains(r.HTML, "max-width:600px") {
				t.Errorf("no 600 px container")
			}
			if doc.Find("style, link[rel=stylesheet], script").Length() != 0 {
				t.Errorf("styles must be inline")
			}
			doc.Find("img").Each(func(_ int, img *goquery.Selection) {
				alt, ok := img.Attr("alt")
				src, _ := img.Attr("src")
				style, _ := img.Attr("style")
				if !ok || strings.TrimSpace(alt) == "" {
					t.Errorf("image %s without alt", src)
				}
				if !strings.HasPrefix(src, "https://") {
					t.Errorf("image source %q not absolute", src)
				}
				if !strings.Contains(style, "max-width:") && !strings.Contains(style, "width:100%") {
					t.Errorf("image %s does not shrink on small screens", src)
				}
			})
			n := 0
			doc.Find("a").Each(func(_ int, a *goquery.Selection) {
				n++
				href, _ := a.Attr("href")
				if !strings.HasPrefix(href, "https://") {
					t.Errorf("link %q not absolute after rendering", href)
				}
			})
			if n == 0 {
				t.Errorf("no links")
			}
			text := doc.Text()
			unsub := strings.Index(r.HTML, "https://rundbrief.test"+UnsubscribePath)
			imprint := strings.Index(r.HTML, "Musterweg 2, 10115 Berlin")
			if unsub < 0 || imprint < unsub {
				t.Errorf("unsubscribe link at %d, imprint at %d: want the imprint below", unsub, imprint)
			}
			if strings.Contains(r.HTML, "{{") || strings.Contains(r.Subject, "{{") {
				t.Errorf("placeholders left: %s", r.Subject)
			}
			for _, w := range []string{" Sie ", "abmelden"} {
				if !strings.Contains(strings.ToLower(text), strings.ToLower(w)) {
					t.Errorf("German text %q missing", w)
				}
			}
			// Fixed widths beyond a 320 px screen only with max-width beside them.
			doc.Find("[style]").Each(func(_ int, s *goquery.Selection) {
				style, _ := s.Attr("style")
				if strings.Contains(style, "width:600px") && !strings.Contains(style, "max-width") {
					t.Errorf("fixed width: %s", style)
				}
			})
			if bytes.Count([]byte(r.HTML), []byte("<body")) != 1 {
				t.Errorf("more than one body")
			}
		})
	}
	for _, c := range []string{"newsletter", "announcement", "product_launch", "event", "welcome", "story", "digest", "reengagement"} {
		if !categories[c] {
			t.Errorf("no design of category %s", c)
		}
	}
}
