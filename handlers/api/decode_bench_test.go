package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkCheckJSON is the cost of the value walk that every JSON body passes
// before it is decoded: a newsletter with 2 MB of html, and a bulk upsert of
// 1,000 contacts with custom fields.
func BenchmarkCheckJSON(b *testing.B) {
	contacts := make([]map[string]any, 1000)
	for i := range contacts {
		contacts[i] = map[string]any{"email": fmt.Sprintf("c%d@example.org", i), "first_name": "Erika", "city": "Köln",
			"tags": []string{"a", "b"}, "custom_fields": map[string]any{"plz": "50667", "score": 12.5}}
	}
	bulk, err := json.Marshal(map[string]any{"contacts": contacts})
	if err != nil {
		b.Fatal(err)
	}
	html, err := json.Marshal(map[string]any{"name": "N", "subject": "S", "html": "<p>" + strings.Repeat("Hallo Welt, ", 2<<20/12) + "</p>"})
	if err != nil {
		b.Fatal(err)
	}
	for name, body := range map[string][]byte{"html-2MB": html, "bulk-1000": bulk} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if fields, err := checkJSON(body); err != nil || len(fields) > 0 {
					b.Fatal(err, fields)
				}
			}
		})
	}
}
