package ai

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/net/html"
)

// ErrStructure means the model changed the tag structure of an HTML source.
var ErrStructure = errors.New("ai: answer changed the HTML structure")

// freeAttr reports whether an attribute's value is prose that may be rewritten with
// the text.
func freeAttr(key string) bool { return key == "alt" || key == "title" }

// structure is the sequence of everything in an HTML fragment except its text: start
// and end tags with their attributes (sorted, values exact, alt and title left out),
// comments (Outlook's conditional comments live there), the doctype, and the content
// of <style> and <script>, which are code rather than text. Two fragments with the
// same structure differ only in their visible text.
func structure(fragment string) []string {
	z := html.NewTokenizer(strings.NewReader(fragment))
	var out []string
	raw := false // the next text token is the content of <style> or <script>
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return out // io.EOF: the tokenizer accepts any input, so nothing else ends it
		case html.StartTagToken, html.SelfClosingTagToken:
			t := z.Token()
			attrs := make([]string, 0, len(t.Attr))
			for _, a := range t.Attr {
				if !freeAttr(a.Key) {
					attrs = append(attrs, a.Key+"="+a.Val)
				}
			}
			slices.Sort(attrs)
			out = append(out, "<"+t.Data+" "+strings.Join(attrs, " ")+">")
			raw = t.Data == "style" || t.Data == "script"
		case html.EndTagToken:
			t := z.Token()
			out = append(out, "</"+t.Data+">")
			raw = false
		case html.CommentToken:
			out = append(out, "<!--"+strings.TrimSpace(string(z.Text()))+"-->")
		case html.DoctypeToken:
			out = append(out, "<!DOCTYPE "+string(z.Text())+">")
		case html.TextToken:
			if raw {
				out = append(out, "raw:"+strings.TrimSpace(string(z.Text())))
			}
		}
	}
}

// checkStructure returns ErrStructure (with the first difference, for the log) when
// answer's tag structure differs from source's.
func checkStructure(source, answer string) error {
	want, got := structure(source), structure(answer)
	for i := 0; i < max(len(want), len(got)); i++ {
		w, g := "(end)", "(end)"
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			return fmt.Errorf("%w: element %d is %q, expected %q", ErrStructure, i+1, g, w)
		}
	}
	return nil
}

// htmlText is the readable text of an HTML fragment (the text field of an HTML
// result, and the source of suggestions drawn from HTML): visible text only, a line
// break for <br>, a blank line between blocks, whitespace collapsed.
func htmlText(fragment string) string {
	z := html.NewTokenizer(strings.NewReader(fragment))
	var b strings.Builder
	skip := 0 // inside <style>, <script>, <head>, <title>
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		switch tt {
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "style", "script", "head", "title":
				if tt == html.StartTagToken {
					skip++
				} else if tt == html.EndTagToken && skip > 0 {
					skip--
				}
			case "br":
				b.WriteString("\n")
			case "td", "th":
				b.WriteString(" ")
			case "p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "li", "ul", "ol", "tr", "table", "blockquote", "hr",
				"section", "article", "header", "footer", "center", "pre":
				b.WriteString("\n\n")
			}
		}
	}
	var lines []string
	blank := true
	for _, line := range strings.Split(b.String(), "\n") {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			if !blank {
				lines = append(lines, "")
			}
			blank = true
			continue
		}
		lines = append(lines, line)
		blank = false
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// hasText reports whether an HTML fragment contains any visible text.
func hasText(fragment string) bool {
	z := html.NewTokenizer(strings.NewReader(fragment))
	raw := false
	for {
		switch z.Next() {
		case html.ErrorToken:
			return false
		case html.StartTagToken:
			name, _ := z.TagName()
			raw = string(name) == "style" || string(name) == "script"
		case html.EndTagToken:
			raw = false
		case html.TextToken:
			if !raw && strings.TrimSpace(html.UnescapeString(string(z.Text()))) != "" {
				return true
			}
		}
	}
}

var codeFence = regexp.MustCompile("(?s)^```[a-zA-Z]*\\s*\n(.*?)\n?```$")

// cleanAnswer removes what models add around an answer despite the instructions: a
// Markdown code fence, and the <<<TEXT … TEXT>>> markers of the prompt echoed back.
func cleanAnswer(s string) string {
	s = strings.TrimSpace(s)
	if m := codeFence.FindStringSubmatch(s); m != nil {
		s = strings.TrimSpace(m[1])
	}
	s = strings.TrimSpace(strings.TrimPrefix(s, "<<<TEXT"))
	s = strings.TrimSpace(strings.TrimSuffix(s, "TEXT>>>"))
	return s
}

var ideaBullet = regexp.MustCompile(`^(?:\d{1,2}\s*[.):]|[-*•–·])\s*`)

// parseIdeas reads n suggestions, one per line, from an answer: numbering, bullets
// and quotes are removed, empty lines and lines that introduce the list ("Hier sind
// …:") are skipped. Fewer than n usable lines is an error; more are cut to n.
func parseIdeas(answer string, n int) ([]string, error) {
	var out []string
	for _, line := range strings.Split(answer, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(ideaBullet.ReplaceAllString(line, ""))
		line = strings.TrimSpace(strings.Trim(line, "*_")) // Markdown emphasis
		for _, q := range [...][2]string{{`"`, `"`}, {"„", "“"}, {"“", "”"}, {"»", "«"}, {"«", "»"}, {"'", "'"}} {
			if len(line) > len(q[0])+len(q[1]) && strings.HasPrefix(line, q[0]) && strings.HasSuffix(line, q[1]) {
				line = strings.TrimSpace(line[len(q[0]) : len(line)-len(q[1])])
				break
			}
		}
		if line == "" || strings.HasSuffix(line, ":") {
			continue
		}
		out = append(out, line)
	}
	if len(out) < n {
		return nil, fmt.Errorf("ai: answer has %d suggestions, expected %d", len(out), n)
	}
	return out[:n], nil
}
