package mailer_test

import (
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
)

func TestMarkdownToHTML(t *testing.T) {
	src := "# Hallo {{ Vorname | Freund }}\n\n" +
		"Ein [Link](https://x.test/p?e={{email}}&n={{vorname}}) und **fett**, ~~weg~~.\n\n" +
		"| a | b |\n|---|---|\n| {{ort}} | 2 |\n\n" +
		"<div class=\"raw\">roh</div>\n\n" +
		"https://auto.test/{{email}}\n\n" +
		"rbph0x steht schon im Text, {{nachname}} auch.\n"
	got, err := mailer.MarkdownToHTML(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<h1>Hallo {{ Vorname | Freund }}</h1>",
		`<a href="https://x.test/p?e={{email}}&amp;n={{vorname}}">Link</a>`,
		"<strong>fett</strong>", "<del>weg</del>",
		"<td>{{ort}}</td>",
		`<div class="raw">roh</div>`,
		`<a href="https://auto.test/{{email}}">https://auto.test/{{email}}</a>`,
		"rbph0x steht schon im Text, {{nachname}} auch.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
}

func TestCampaignLinks(t *testing.T) {
	html := `<html><body>
<!-- <a href="https://commented.test/">no</a> -->
<script>var s = '<a href="https://script.test/">no</a>';</script>
<A HREF="https://Upper.test/x?a=1&amp;b=2">eins</A>
<a title="x" href='https://single.test/?e={{email}}'>zwei</a>
<a href=https://unquoted.test/p>drei</a>
<a href="mailto:info@example.com">nein</a> <a href="#top">nein</a> <a href="{{abmelde_link}}">nein</a>
<a data-notrack href="https://notrack.test/">nein</a>
<area href="http://area.test/" alt="vier">
<img src="https://img.test/x.png">
</body></html>`
	links, err := mailer.CampaignLinks(store.Campaign{HTML: html})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.LinkInput{
		{URL: "https://Upper.test/x?a=1&b=2"},
		{URL: "https://single.test/?e={{email}}", Personalized: true},
		{URL: "https://unquoted.test/p"},
		{URL: "http://area.test/"},
	}
	if len(links) != len(want) {
		t.Fatalf("links %+v", links)
	}
	for i := range want {
		if links[i] != want[i] {
			t.Errorf("link %d: %+v, want %+v", i, links[i], want[i])
		}
	}
	if l, err := mailer.CampaignLinks(store.Campaign{Text: "nur Text https://x.test/"}); err != nil || len(l) != 0 {
		t.Errorf("text-only campaign: %v %v", l, err)
	}
}
