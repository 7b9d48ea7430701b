package mailer

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// marker is put into every value in FuzzRender; the fuzzer's sources that do
// not contain "zq" must not get any of its markup characters raw in HTML.
const marker = `<zq"zq'zq>zq&`

// unknownPlaceholder names nothing FuzzRender fills, so it must survive.
const unknownPlaceholder = "{{zz_unbekannt|Fallback}}"

func fuzzValues() *Values {
	return &Values{
		Recipient: Recipient{
			FirstName: marker, LastName: marker, Email: marker, Address: marker,
			Zip: marker, City: marker, Phone: marker, Note: marker,
			UnsubscribeURL: marker,
			CustomFields:   map[string]string{"feld": marker, "Groß Feld": marker, "leer": ""},
		},
		Custom: map[string]string{"code": marker, "link": "javascript:" + marker},
		Now:    time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC),
	}
}

func FuzzRender(f *testing.F) {
	for _, seed := range []string{
		"",
		"Hallo {{vorname|Freund}}, {{ Nachname }}!",
		"<html><body><p>Hi {{name}}</p></body></html>",
		`<a href="https://x.test/?e={{email}}&c={{code}}">{{ort}}</a>`,
		`<a href="{{abmelde_link}}">weg</a> <a href={{link}}>x</a>`,
		`<img src='{{feld}}' alt={{groß feld}}>`,
		"<!-- {{vorname}} --><script>var a = '{{plz}}';</script><style>p{}</style>",
		"{{{vorname}}} {{}} {{|x}} {{a{{b}}c}} }}{{",
		"<p title=\"{{datum}}\" {{notiz}}>{{leer|nichts}}</p></BODY>",
		"<{{vorname}} {{vorname}}={{vorname}}>",
		"</{{vorname}}><!{{vorname}}><?{{vorname}}>",
		"<textarea>{{vorname}}</textarea><title>{{ort}}</title>",
		"no placeholders < > \" ' & </body>",
	} {
		f.Add(seed, true, true)
		f.Add(seed, false, false)
	}
	f.Fuzz(func(t *testing.T, src string, html, appendUnsub bool) {
		kind := KindText
		if html {
			kind = KindHTML
		}
		opts := CompileOptions{AppendUnsubscribe: appendUnsub}
		v := fuzzValues()

		tmpl := Compile(src, kind, opts)
		out, err := tmpl.AppendTo(nil, v)
		if err != nil {
			t.Fatalf("AppendTo: %v", err)
		}

		// Render and AppendTo agree, also into a buffer with content.
		var buf bytes.Buffer
		buf.WriteString("x")
		if err := tmpl.Render(&buf, v); err != nil {
			t.Fatalf("Render: %v", err)
		}
		if buf.String() != "x"+string(out) {
			t.Fatalf("Render = %q, AppendTo = %q", buf.String(), out)
		}

		// Without placeholders the output is the input, plus the footer.
		if !strings.Contains(src, "{{") {
			if !appendUnsub {
				if string(out) != src {
					t.Fatalf("no placeholders: got %q, want the input %q", out, src)
				}
			} else if !isInputPlusFooter(string(out), src, kind, v) {
				t.Fatalf("no placeholders: got %q, want the input %q plus the footer", out, src)
			}
		}

		// No value can bring markup characters into HTML unescaped.
		if html && !strings.Contains(src, "zq") {
			// (Neutralising javascript: links is checked in TestURLEncodingInLinks;
			// here "javascript:" may legitimately appear as text.)
			for _, bad := range []string{"<zq", `zq"`, "zq'", "zq>", "zq&z"} {
				if strings.Contains(string(out), bad) && !strings.Contains(src, bad) {
					t.Fatalf("value escaped badly: %q in %q (source %q)", bad, out, src)
				}
			}
		}

		// Unknown placeholders survive wherever they stand.
		for _, s := range []string{unknownPlaceholder + src, src + unknownPlaceholder} {
			out, err := RenderString(s, kind, opts, v)
			if err != nil {
				t.Fatalf("RenderString: %v", err)
			}
			if !strings.Contains(out, unknownPlaceholder) {
				t.Fatalf("unknown placeholder lost: %q from %q", out, s)
			}
		}
	})
}

// isInputPlusFooter reports whether out is src with the rendered unsubscribe
// footer inserted: in text at the end, in HTML before a </body> or at the end
// after markup that closes an open tag or comment.
func isInputPlusFooter(out, src string, kind Kind, v *Values) bool {
	if kind == KindText {
		footer, err := RenderString(textFooterSeparator(src)+unsubscribeFooterText, kind, CompileOptions{}, v)
		return err == nil && out == src+footer
	}
	footer, err := RenderString(unsubscribeFooterHTML, kind, CompileOptions{}, v)
	if err != nil {
		return false
	}
	for off := 0; ; {
		i := strings.Index(out[off:], footer)
		if i < 0 {
			return false
		}
		i += off
		before, after := out[:i], out[i+len(footer):]
		if before+after == src {
			return true
		}
		if after == "" && strings.HasPrefix(before, src) && isCloser(before[len(src):]) {
			return true
		}
		off = i + 1
	}
}

// isCloser reports whether s is markup htmlLexer.closer can return.
func isCloser(s string) bool {
	for _, first := range []string{"", "-->", ">", `">`, `'>`} {
		rest, ok := strings.CutPrefix(s, first)
		if !ok {
			continue
		}
		if rest == "" && first != "" {
			return true
		}
		for _, el := range []string{"script", "style", "title", "textarea"} {
			if rest == "</"+el+">" {
				return true
			}
		}
	}
	return false
}
