package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
)

// TestRichTextSanitisedWhenStored: the rich-text editor's HTML is sanitised in
// the one content path, on create and on update, while HTML written in the
// HTML mode is kept as it was typed.
func TestRichTextSanitisedWhenStored(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	dirty := store.RichTextOpen + `<div>Hallo {{vorname}}<script>alert(1)</script></div>` +
		`<div><img src="x" onerror="alert(2)"><a href="javascript:alert(3)">böse</a> <a href="https://example.org/a" onclick="x()">gut</a>` +
		` <a href="{{abmelde_link}}">abmelden</a></div>` +
		`<figure data-trix-attachment="{&quot;alt&quot;:&quot;Logo&quot;}"><img src="https://cdn.example.org/logo.png" alt="Logo" width="120" height="40" style="position:fixed"></figure>` +
		`<iframe src="https://evil.example"></iframe><img src="data:image/png;base64,AAAA">` + store.RichTextClose
	check := func(what, html string) {
		t.Helper()
		if !store.IsRichText(html) {
			t.Fatalf("%s: marker lost: %s", what, html)
		}
		for _, bad := range []string{"<script", "alert(1)", "onerror", "javascript:", "onclick", "<iframe", "data:image", "position:fixed"} {
			if strings.Contains(html, bad) {
				t.Errorf("%s: %q kept: %s", what, bad, html)
			}
		}
		for _, good := range []string{"Hallo {{vorname}}", `href="https://example.org/a"`, `src="https://cdn.example.org/logo.png"`, `alt="Logo"`,
			`width="120"`, `href="{{abmelde_link}}"`, "data-trix-attachment", `<img style="max-width:100%;height:auto" src="https://cdn.example.org/logo.png"`} {
			if !strings.Contains(html, good) {
				t.Errorf("%s: %q lost: %s", what, good, html)
			}
		}
	}
	c := e.newsletter(t, store.NewsletterInput{Subject: str("Rich"), HTML: &dirty})
	check("create", c.HTML)
	u, err := e.db.UpdateNewsletter(ctx, e.acct, apiActor, c.ID, store.NewsletterInput{HTML: &dirty})
	if err != nil {
		t.Fatal(err)
	}
	check("update", u.HTML)

	// Hand-written HTML (no marker) is the account's own template code.
	own := `<table style="width:600px"><tr><td onclick="x()">Hallo</td></tr></table>`
	u, err = e.db.UpdateNewsletter(ctx, e.acct, apiActor, c.ID, store.NewsletterInput{HTML: &own})
	if err != nil || u.HTML != own {
		t.Fatalf("own html changed: %q %v", u.HTML, err)
	}
}

// BenchmarkSanitizeRichText sanitises a typical rich-text newsletter (about
// 6 KB: paragraphs, links, a list, two images) as every save does.
func BenchmarkSanitizeRichText(b *testing.B) {
	var sb strings.Builder
	for i := range 20 {
		fmt.Fprintf(&sb, `<div>Absatz %d mit <strong>fett</strong>, <a href="https://example.org/%d">Link</a> und {{vorname}}.</div>`, i, i)
	}
	sb.WriteString(`<ul><li>eins</li><li>zwei</li></ul><figure data-trix-attachment="{&quot;alt&quot;:&quot;x&quot;}"><img src="https://cdn.example.org/a.png" alt="a" width="600" height="300"></figure>`)
	sb.WriteString(`<img src="https://cdn.example.org/b.png" onerror="alert(1)"><script>alert(2)</script>`)
	html := store.RichTextOpen + sb.String() + store.RichTextClose
	b.SetBytes(int64(len(html)))
	b.ReportAllocs()
	for b.Loop() {
		_ = store.SanitizeRichText(html)
	}
}
