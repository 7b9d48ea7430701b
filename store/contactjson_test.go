package store_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// reflected has ContactData's fields without its MarshalJSON: what
// encoding/json writes by reflection.
type reflected store.ContactData

func contactDataCases() []store.ContactData {
	doi := store.EventTime(time.Date(2026, 3, 29, 1, 30, 0, 123, time.UTC)) // the night summer time starts
	return []store.ContactData{
		{},
		{ID: 1, Email: "a@example.com", Tags: []string{}, CustomFields: store.CustomFields{}, Lists: []store.ListRef{},
			CreatedAt: store.EventTime(time.Date(2026, 11, 25, 2, 0, 0, 0, time.UTC)), UpdatedAt: store.EventTime(time.Now())},
		{ID: 9223372036854775807, Email: "x+y@example.com", FirstName: `Zoë "Zo" <b>&</b>`, LastName: "Ünal\u2028\u2029",
			Address: "Straße 1\n2. OG\t\\", Zip: "\x00\x01\x1f\x7f", City: "Köln \xff\xfe invalid", Phone: "+49 (0) 30 / 123",
			Note: "\b\f\r emoji 😀 and </script>", Tags: []string{"kunde", "<vip>", ""}, Status: "pending", Source: "form",
			CustomFields:   store.CustomFields{"z": "last", "a": json.Number("1.50"), "flag": true, "html": "<&>", "nil": nil},
			DOIConfirmedAt: &doi, CreatedAt: doi, UpdatedAt: store.EventTime(time.Date(2026, 7, 1, 12, 0, 0, 0, time.FixedZone("x", 3600))),
			Lists: []store.ListRef{{ID: 3, Name: "Kunden & Partner", Color: "#4f46e5"}, {ID: 7, Name: "", Color: ""}}},
	}
}

func TestContactDataJSONIsEncodingJSONs(t *testing.T) {
	for i, d := range contactDataCases() {
		want, err := json.Marshal(reflected(d))
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.AppendJSON([]byte("prefix"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("case %d:\n got %s\nwant prefix%s", i, got, want)
		}
		viaMarshal, err := json.Marshal(d)
		if err != nil || !bytes.Equal(viaMarshal, want) {
			t.Errorf("case %d: json.Marshal = %s, %v", i, viaMarshal, err)
		}
	}
}

// FuzzContactDataJSON holds the string escaping to encoding/json's for any text.
func FuzzContactDataJSON(f *testing.F) {
	for _, s := range []string{"", "plain", `"\`, "<>&", "\u2028", "\xff", "\x00\x1f", "ä😀"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, name, tag string) {
		d := store.ContactData{FirstName: name, Note: name + tag, Tags: []string{tag},
			Lists: []store.ListRef{{Name: tag}}, CustomFields: store.CustomFields{tag: name}}
		want, err := json.Marshal(reflected(d))
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.AppendJSON(nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("got %s, %v\nwant %s", got, err, want)
		}
	})
}
