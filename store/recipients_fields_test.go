package store

import (
	"maps"
	"testing"
)

// The fast path for custom fields says exactly what the JSON decoder and
// Strings say, and leaves everything unusual to them.
func TestFlatCustomFields(t *testing.T) {
	cases := []struct {
		json string
		fast bool // handled by the fast path
	}{
		{`{"kundennummer": "K-1"}`, true},
		{`{"a": "x", "n": 12.50, "neg": -3e2, "t": true, "f": false, "z": null}`, true},
		{` { "a" : "Grüße" , "b":"" } `, true},
		{`{}`, true},
		{`{"a": "x", "a": "y"}`, true},
		{`{"a": "say \"hi\""}`, false},
		{`{"a": "\u00fc"}`, false},
		{`{"a": {"b": "c"}}`, false},
		{`{"a": ["b"]}`, false},
		{`{"a": 1.2.3}`, false},
		{`{"a": "x",}`, false},
		{`{"a": "x"} trailing`, false},
		{`["a"]`, false},
	}
	for _, c := range cases {
		got, ok := flatCustomFields([]byte(c.json))
		if ok != c.fast {
			t.Errorf("%s: fast path %t, want %t", c.json, ok, c.fast)
			continue
		}
		if !ok {
			continue
		}
		var cf CustomFields
		if err := cf.Scan([]byte(c.json)); err != nil {
			t.Fatalf("%s: decoder: %v", c.json, err)
		}
		if want := cf.Strings(); !maps.Equal(got, want) {
			t.Errorf("%s: fast path %v, decoder %v", c.json, got, want)
		}
	}
	r := QueuedRecipient{CustomFields: []byte(`{"a": "say \"hi\"", "n": 1}`)}
	if got, err := r.CustomFieldStrings(); err != nil || got["a"] != `say "hi"` || got["n"] != "1" {
		t.Errorf("fallback: %v, %v", got, err)
	}
}
