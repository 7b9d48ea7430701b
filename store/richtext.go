package store

import (
	"regexp"
	"strings"
	"sync"

	"github.com/microcosm-cc/bluemonday"
)

// Rich text is the HTML that the portal's rich-text editor (Trix, vendored in
// static/) writes. It is stored as the mail's html wrapped in one marker
// element, RichTextOpen … RichTextClose, so that the editor knows to open it
// in rich-text mode again without a column of its own, and so that every path
// that stores a mail (resolveContentTx) recognises it and sanitises it: the
// editor runs in the browser, so what it posts is not trusted. HTML written
// by hand in the HTML mode is the account's own template code (tables,
// styles, conditional comments) and is not touched.

// Markers of rich-text HTML.
const (
	RichTextOpen  = `<div class="rb-richtext">`
	RichTextClose = `</div>`
)

// IsRichText reports whether html was written by the rich-text editor.
func IsRichText(html string) bool {
	return strings.HasPrefix(strings.TrimSpace(html), RichTextOpen)
}

// RichTextBody is the editor's HTML inside the marker (html itself when it
// carries none).
func RichTextBody(html string) string {
	s := strings.TrimSpace(html)
	if !strings.HasPrefix(s, RichTextOpen) {
		return html
	}
	return strings.TrimSuffix(strings.TrimPrefix(s, RichTextOpen), RichTextClose)
}

// SanitizeRichText keeps of body (the editor's HTML, with or without the
// marker) the text formatting, links (http, https, mailto, relative and
// placeholders such as {{abmelde_link}}) and images (http and https only),
// and drops everything else: scripts, event handlers, styles, forms, frames,
// javascript: and data: URLs. The result carries the marker.
func SanitizeRichText(body string) string {
	clean := richTextPolicy().Sanitize(RichTextBody(body))
	// bluemonday escapes the braces of a placeholder link ({{abmelde_link}});
	// braces are inert inside a quoted attribute, so the placeholder comes back.
	clean = placeholderBraces.Replace(clean)
	// An image keeps its natural size as width and height; in a mail it must
	// still shrink to the 600 px column and to phones.
	clean = strings.ReplaceAll(clean, "<img ", `<img style="max-width:100%;height:auto" `)
	return RichTextOpen + clean + RichTextClose
}

var placeholderBraces = strings.NewReplacer("%7B%7B", "{{", "%7D%7D", "}}", "%7b%7b", "{{", "%7d%7d", "}}")

var (
	richTextOnce sync.Once
	richText     *bluemonday.Policy
)

// trixAttrs are the attributes Trix keeps an image's caption and size in; they
// are JSON read by the editor (which sanitises them itself) and inert in a mail.
var trixAttrs = regexp.MustCompile(`^[\pL\pN\s\p{P}\p{S}]*$`)

// richTextPolicy is bluemonday's policy for user content plus what Trix
// writes: figures with their data attributes, image sizes and alt texts.
// Built once: a policy is safe for concurrent use once configured.
func richTextPolicy() *bluemonday.Policy {
	richTextOnce.Do(func() {
		p := bluemonday.UGCPolicy()
		p.AllowImages()
		p.AllowAttrs("alt", "width", "height").OnElements("img")
		p.AllowAttrs("data-trix-attachment", "data-trix-content-type", "data-trix-attributes").Matching(trixAttrs).OnElements("figure")
		p.AllowAttrs("class").Matching(regexp.MustCompile(`^[a-z0-9_ -]*$`)).OnElements("figure", "figcaption")
		p.AllowElements("figure", "figcaption", "del")
		// Images only from the web (the account's signed image URLs among them):
		// no data: URLs, which mail clients block and which bloat the mail.
		p.AllowURLSchemes("http", "https", "mailto")
		richText = p
	})
	return richText
}
