package mailer

import (
	"net/url"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/net/html"

	"github.com/rundbrief/rundbrief/store"
)

// Checklist is what a send confirmation checks of a mail's content before it
// goes out: facts, not verdicts; the portal words them.
type Checklist struct {
	Subject         bool     // a subject is set
	SubjectTooLong  bool     // over 70 characters: phones cut it off
	SubjectShouting bool     // a word in capitals or "!!"
	Preheader       bool     // a preheader is set
	Links           int      // links in the content
	BadLinks        []string // links that are not absolute http(s) URLs (nor placeholders or mailto:)
	Images          int
	ImagesNoAlt     int      // images without alt text
	SpamWords       []string // spam-prone words found in subject, preheader and text
	Unsubscribe     bool     // the content places the unsubscribe link itself (else it is appended)
}

// spamWords are words that spam filters and readers distrust in marketing
// mail, German and English, lower case.
var spamWords = []string{
	"gratis", "kostenlos", "gewinnspiel", "gewinner", "100 % garantiert", "garantiert", "risikofrei", "nur heute",
	"jetzt kaufen", "sofort bestellen", "klicken sie hier", "hier klicken", "geld verdienen", "schnell reich",
	"kredit ohne schufa", "free", "winner", "click here", "buy now", "act now", "limited time", "casino", "viagra",
}

// CheckContent inspects a campaign's content as it will be rendered (Markdown
// as HTML), before placeholders are filled in.
func CheckContent(c store.Campaign) Checklist {
	var ck Checklist
	subject := strings.TrimSpace(c.Subject)
	ck.Subject = subject != ""
	ck.SubjectTooLong = len([]rune(subject)) > 70
	ck.SubjectShouting = strings.Contains(subject, "!!") || hasShoutedWord(subject)
	ck.Preheader = strings.TrimSpace(c.Preheader) != ""
	htmlSrc, textSrc, err := ContentSources(c)
	if err != nil {
		htmlSrc, textSrc = "", ""
	}
	lower := strings.ToLower(subject + "\n" + c.Preheader + "\n" + textSrc + "\n" + htmlText(htmlSrc))
	for _, w := range spamWords {
		if containsWord(lower, w) {
			ck.SpamWords = append(ck.SpamWords, w)
		}
	}
	ck.Unsubscribe = Compile(htmlSrc, KindHTML, CompileOptions{}).HasUnsubscribe() ||
		Compile(textSrc, KindText, CompileOptions{}).HasUnsubscribe()
	z := html.NewTokenizer(strings.NewReader(htmlSrc))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		switch tok.Data {
		case "a":
			href, ok := attrOf(tok, "href")
			if !ok {
				continue
			}
			ck.Links++
			if !linkOK(href) && !slices.Contains(ck.BadLinks, href) {
				ck.BadLinks = append(ck.BadLinks, href)
			}
		case "img":
			ck.Images++
			if alt, _ := attrOf(tok, "alt"); strings.TrimSpace(alt) == "" {
				ck.ImagesNoAlt++
			}
		}
	}
	return ck
}

func attrOf(t html.Token, name string) (string, bool) {
	for _, a := range t.Attr {
		if a.Key == name {
			return a.Val, true
		}
	}
	return "", false
}

// linkOK: an absolute http(s) URL with a host, a mailto: or tel: link, or a
// placeholder that becomes one (the unsubscribe link, {{…}} in the URL).
func linkOK(href string) bool {
	href = strings.TrimSpace(href)
	if strings.HasPrefix(href, "{{") || strings.HasPrefix(href, "mailto:") || strings.HasPrefix(href, "tel:") {
		return true
	}
	u, err := url.Parse(strings.ReplaceAll(strings.ReplaceAll(href, "{{", ""), "}}", ""))
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && strings.Contains(u.Host, ".")
}

// htmlText is the visible text of an HTML source, for the word checks.
func htmlText(src string) string {
	var b strings.Builder
	z := html.NewTokenizer(strings.NewReader(src))
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.StartTagToken:
			if n, _ := z.TagName(); string(n) == "style" || string(n) == "script" {
				skip++
			}
		case html.EndTagToken:
			if n, _ := z.TagName(); (string(n) == "style" || string(n) == "script") && skip > 0 {
				skip--
			}
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
				b.WriteByte(' ')
			}
		}
	}
}

// containsWord finds w in s at word boundaries, so that "free" does not
// match "freedom".
func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(w)
		before := start == 0 || !isWordRune(rune(s[start-1]))
		after := end == len(s) || !isWordRune(rune(s[end]))
		if before && after {
			return true
		}
		i = start + 1
	}
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r >= 0x80 }

// hasShoutedWord: a word of four or more letters all in capitals.
func hasShoutedWord(s string) bool {
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }) {
		if len([]rune(w)) >= 4 && strings.ToUpper(w) == w && strings.ToLower(w) != w {
			return true
		}
	}
	return false
}
