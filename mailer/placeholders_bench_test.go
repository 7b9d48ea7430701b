package mailer

import (
	"bytes"
	"strings"
	"testing"
)

// newsletter20KB is a newsletter of about 20 KB in the shape mail editors
// produce: a styled table layout, long paragraphs, five placeholders (one a
// link parameter) and a few links.
func newsletter20KB() string {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>Herbst-Newsletter</title>` +
		`<style>body{margin:0;font-family:Arial,sans-serif}td{padding:16px}a{color:#1d4ed8}</style></head>` +
		`<body><table role="presentation" width="100%" cellpadding="0" cellspacing="0"><tr><td>` +
		`<p style="font-size:12px;color:#6b7280">Newsletter vom {{datum}}</p>` +
		`<h1 style="font-size:24px">Hallo {{ Vorname | lieber Leser }},</h1>`)
	para := `<p style="font-size:16px;line-height:1.6;color:#111827">Der Herbst ist da, und mit ihm ` +
		`unsere neuen Angebote. Wir haben für Sie Produkte ausgewählt, die gut in die kalte Jahreszeit ` +
		`passen, und beantworten die häufigsten Fragen unserer Kundinnen und Kunden. ` +
		`<a href="https://shop.example.test/herbst?utm_source=newsletter&amp;utm_medium=email">Zum Angebot</a></p>`
	for i := 0; b.Len() < 20*1024-512; i++ {
		b.WriteString(para)
		if i == 10 {
			b.WriteString(`<p>Ihr Händler in {{ort}}: <a href="https://shop.example.test/filialen?e={{email}}&amp;k=1">Filiale finden</a></p>`)
		}
	}
	b.WriteString(`<p style="font-size:12px;color:#6b7280">Sie erhalten diese E-Mail, weil Sie unseren ` +
		`Newsletter abonniert haben. <a href="{{abmelde_link}}">Abmelden</a></p></td></tr></table></body></html>`)
	return b.String()
}

func benchValues() *Values {
	v := testValues()
	v.Recipient.CustomFields = map[string]string{"Kundennummer": "K-4711", "firma": "ACME & Söhne"}
	return v
}

// BenchmarkRender20KB measures the per-recipient cost of a send: one compiled
// template, one reused buffer.
func BenchmarkRender20KB(b *testing.B) {
	tmpl := Compile(newsletter20KB(), KindHTML, CompileOptions{AppendUnsubscribe: true})
	v := benchValues()
	var buf bytes.Buffer
	if err := tmpl.Render(&buf, v); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		buf.Reset()
		if err := tmpl.Render(&buf, v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRender20KBParallel is BenchmarkRender20KB on all cores at once,
// as the send workers share one Template.
func BenchmarkRender20KBParallel(b *testing.B) {
	tmpl := Compile(newsletter20KB(), KindHTML, CompileOptions{AppendUnsubscribe: true})
	v := benchValues()
	out, err := tmpl.AppendTo(nil, v)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var buf bytes.Buffer
		for pb.Next() {
			buf.Reset()
			if err := tmpl.Render(&buf, v); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkCompile20KB measures the once-per-send cost of parsing.
func BenchmarkCompile20KB(b *testing.B) {
	src := newsletter20KB()
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		Compile(src, KindHTML, CompileOptions{AppendUnsubscribe: true})
	}
}
