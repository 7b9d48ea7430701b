package store

import (
	"strconv"
	"strings"
	"testing"
)

// listRefsLiteral prints refs as PostgreSQL prints contactLists' array: every
// element quoted (it holds commas), " and \ escaped.
func listRefsLiteral(refs []ListRef) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, r := range refs {
		if i > 0 {
			b.WriteByte(',')
		}
		e := strconv.FormatInt(r.ID, 10) + "," + r.Color + "," + r.Name
		b.WriteString(`"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(e) + `"`)
	}
	b.WriteByte('}')
	return b.String()
}

func TestScanListRefsReadsWhatPostgreSQLPrints(t *testing.T) {
	for _, refs := range [][]ListRef{
		{},
		{{ID: 7, Color: "#3b82f6", Name: "Kunden"}},
		{{ID: 1, Color: "#000000", Name: `Kunden, "VIP" {2026}`}, {ID: 22, Color: "#ffffff", Name: `C:\Pfad\`},
			{ID: 333, Color: "#123abc", Name: "NULL"}, {ID: 4444, Color: "#abcdef", Name: ",,,"}, {ID: 9, Color: "#00ff00", Name: "Grüße ✉ \t\n"},
			{ID: 10, Color: "#00ff00", Name: ""}, {ID: 9223372036854775807, Color: "#00ff00", Name: `\"`}},
	} {
		lit := listRefsLiteral(refs)
		got, ok := scanListRefs([]byte(lit))
		if !ok || len(got) != len(refs) {
			t.Fatalf("%s: %+v, %v", lit, got, ok)
		}
		for i := range refs {
			if got[i] != refs[i] {
				t.Errorf("%s: element %d = %+v, want %+v", lit, i, got[i], refs[i])
			}
		}
		var l ListRefs
		if err := l.Scan([]byte(lit)); err != nil || l == nil {
			t.Errorf("Scan(%s) = %+v, %v", lit, l, err)
		}
	}
	for _, bad := range []string{"", "{", "}", `{"1,#a"}`, `{"x,#a,b"}`, `{"1,#a,b"`, `{"1,#a,b",}`, `{"1,#a,b"x}`, `{1,2}`,
		`{"99999999999999999999,#a,b"}`, `{"1,#a,b\"}`} {
		if refs, ok := scanListRefs([]byte(bad)); ok {
			t.Errorf("%q read as %+v", bad, refs)
		}
	}
}

// FuzzScanListRefs: whatever scanListRefs accepts, lib/pq's parser reads the
// same way.
func FuzzScanListRefs(f *testing.F) {
	f.Add(`{}`)
	f.Add(`{"1,#3b82f6,Kunden","2,#000000,\"VIP\", {x}","3,#ffffff,C:\\Pfad\\"}`)
	f.Add(`{"1,#a,b",NULL}`)
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := scanListRefs([]byte(s))
		if !ok {
			return
		}
		want, err := listRefsViaPQ([]byte(s))
		if err != nil {
			t.Fatalf("%q: scanListRefs read %+v, lib/pq refuses it: %v", s, got, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %+v, lib/pq %+v", s, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%q: element %d = %+v, lib/pq %+v", s, i, got[i], want[i])
			}
		}
	})
}

// BenchmarkListRefsScan reads a contact's two lists as a page read does, with
// lib/pq's general parser (how Scan read them before) and with Scan.
func BenchmarkListRefsScan(b *testing.B) {
	src := []byte(listRefsLiteral([]ListRef{{ID: 1812, Color: "#3b82f6", Name: "Bestand"}, {ID: 1814, Color: "#f97316", Name: "Neukunden"}}))
	b.Run("lib_pq", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := listRefsViaPQ(src); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scanListRefs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var l ListRefs
			if err := l.Scan(src); err != nil || len(l) != 2 {
				b.Fatal("not read")
			}
		}
	})
}
