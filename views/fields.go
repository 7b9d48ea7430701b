package views

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// FieldsView is the settings page of the custom field definitions: the
// account's fields and the form that adds one, as typed, with its errors.
type FieldsView struct {
	Fields []store.ContactField
	New    FieldForm
	// Edit is the row whose change failed, shown with its errors; "" none.
	Edit FieldForm
}

// FieldForm is a field definition as typed in the portal.
type FieldForm struct {
	Key, Label, Type string
	Errors           map[string]string
}

// fieldTypeOptions are the types to choose from, selected the given one.
func fieldTypeOptions(t Text, selected string) []Option {
	out := make([]Option, 0, 4)
	for _, typ := range store.FieldTypes() {
		out = append(out, Option{Value: typ, Label: t.Fields.Types[typ], Selected: typ == selected || selected == "" && typ == store.FieldText})
	}
	return out
}

// customFieldLabel is how the portal names a contact's field: the definition's
// label, or the key without one.
func customFieldLabel(key string, defs map[string]store.ContactField) string {
	if d, ok := defs[key]; ok && d.Label != "" {
		return d.Label
	}
	return key
}

// FormatFieldValue writes a custom field's value as its type says, in the
// language's format: numbers 1.234,5, dates 24.12.2026, yes/no as words. A
// value that does not fit the type is written as stored, and ok is false.
func FormatFieldValue(t Text, v any, typ string) (s string, ok bool) {
	raw := customValue(v)
	switch typ {
	case store.FieldNumber:
		var f float64
		var err error
		switch x := v.(type) {
		case json.Number:
			f, err = x.Float64()
		case string:
			f, err = strconv.ParseFloat(strings.TrimSpace(x), 64)
		default:
			return raw, false
		}
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return raw, false
		}
		return formatNumber(t, f), true
	case store.FieldDate:
		x, isText := v.(string)
		if !isText {
			return raw, false
		}
		x = strings.TrimSpace(x)
		for _, layout := range []string{time.DateOnly, time.RFC3339Nano} {
			if d, err := time.Parse(layout, x); err == nil {
				if layout != time.DateOnly {
					d = d.In(store.Berlin)
				}
				return d.Format(t.Fields.DateLayout), true
			}
		}
		return raw, false
	case store.FieldBoolean:
		var b, parsed bool
		switch x := v.(type) {
		case bool:
			b, parsed = x, true
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true", "ja", "yes", "1":
				b, parsed = true, true
			case "false", "nein", "no", "0":
				b, parsed = false, true
			}
		case json.Number:
			switch x.String() {
			case "1":
				b, parsed = true, true
			case "0":
				b, parsed = false, true
			}
		}
		if !parsed {
			return raw, false
		}
		if b {
			return t.Fields.Yes, true
		}
		return t.Fields.No, true
	}
	return raw, true
}

// formatNumber writes f with the language's separators and as many decimals
// as it has (up to six): 1234.5 → 1.234,5, -1000000 → -1.000.000.
func formatNumber(t Text, f float64) string {
	s := strconv.FormatFloat(math.Abs(f), 'f', -1, 64)
	if strings.ContainsAny(s, "e") {
		s = strconv.FormatFloat(math.Abs(f), 'f', 6, 64)
	}
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 6 {
		frac = frac[:6]
	}
	frac = strings.TrimRight(frac, "0")
	n, err := strconv.ParseInt(whole, 10, 64)
	var b strings.Builder
	if f < 0 {
		b.WriteByte('-')
	}
	if err == nil {
		b.WriteString(formatInt(t, n))
	} else {
		b.WriteString(whole) // beyond int64: digits as they are
	}
	if frac != "" {
		b.WriteString(t.Format.Decimal)
		b.WriteString(frac)
	}
	return b.String()
}
