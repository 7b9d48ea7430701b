package mailer

import (
	"bytes"
	"testing"

	"github.com/rundbrief/rundbrief/store"
)

// BenchmarkRender20KBLayout is BenchmarkRender20KB with the content in the
// library's letter layout, the imprint appended: what a layout adds per
// recipient (it is applied once per send, at compile time).
func BenchmarkRender20KBLayout(b *testing.B) {
	d, ok := store.LibraryDesign("brief")
	if !ok {
		b.Fatal("no layout design")
	}
	tmpl := Compile(applyLayout(d.HTML, newsletter20KB()), KindHTML, CompileOptions{AppendUnsubscribe: true, AppendImprint: true})
	v := benchValues()
	v.Sender = Identity{Company: "Beispiel GmbH", Imprint: "Beispiel GmbH\nMusterweg 2\n10115 Berlin"}
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
