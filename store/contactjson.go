package store

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends the contact as the API shows it (its Data), so that a
// page of contacts is written straight from the rows read: converting the page
// to ContactData first copied some 30 KB per page of 100.
func (c *Contact) AppendJSON(b []byte) ([]byte, error) {
	return c.Data().AppendJSON(b)
}

// AppendJSON appends the contact as encoding/json would write it, without
// reflection: a page of 100 contacts is the listing's largest cost in Go after
// reading the rows, and the events of every contact change carry one too.
// contactjson_test.go holds it to encoding/json's output byte for byte.
func (d ContactData) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, d.ID, 10)
	for _, f := range [...]struct {
		key string
		val string
	}{
		{`,"email":`, d.Email}, {`,"first_name":`, d.FirstName}, {`,"last_name":`, d.LastName},
		{`,"address":`, d.Address}, {`,"zip":`, d.Zip}, {`,"city":`, d.City}, {`,"phone":`, d.Phone},
		{`,"note":`, d.Note},
	} {
		b = append(b, f.key...)
		b = appendJSONString(b, f.val)
	}
	b = append(b, `,"tags":`...)
	if d.Tags == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, t := range d.Tags {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, t)
		}
		b = append(b, ']')
	}
	b = append(b, `,"status":`...)
	b = appendJSONString(b, d.Status)
	b = append(b, `,"source":`...)
	b = appendJSONString(b, d.Source)
	b = append(b, `,"custom_fields":`...)
	switch {
	case d.CustomFields == nil:
		b = append(b, "null"...)
	case len(d.CustomFields) == 0:
		b = append(b, "{}"...)
	default:
		cf, err := json.Marshal(map[string]any(d.CustomFields))
		if err != nil {
			return nil, err
		}
		b = append(b, cf...)
	}
	b = append(b, `,"doi_confirmed_at":`...)
	if d.DOIConfirmedAt == nil {
		b = append(b, "null"...)
	} else {
		b = d.DOIConfirmedAt.appendJSON(b)
	}
	b = append(b, `,"created_at":`...)
	b = d.CreatedAt.appendJSON(b)
	b = append(b, `,"updated_at":`...)
	b = d.UpdatedAt.appendJSON(b)
	b = append(b, `,"lists":`...)
	if d.Lists == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, l := range d.Lists {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = strconv.AppendInt(b, l.ID, 10)
			b = append(b, `,"name":`...)
			b = appendJSONString(b, l.Name)
			b = append(b, `,"color":`...)
			b = appendJSONString(b, l.Color)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// MarshalJSON writes the contact as AppendJSON does.
func (d ContactData) MarshalJSON() ([]byte, error) {
	return d.AppendJSON(make([]byte, 0, 512))
}

// appendJSON appends the time as its MarshalJSON writes it.
func (t EventTime) appendJSON(b []byte) []byte {
	b = append(b, '"')
	b = time.Time(t).In(Berlin).AppendFormat(b, time.RFC3339)
	return append(b, '"')
}

// AppendJSONString appends s as a JSON string the way encoding/json writes it
// (the API's envelopes written by hand use it).
func AppendJSONString(b []byte, s string) []byte { return appendJSONString(b, s) }

// appendJSONString appends s as a JSON string the way encoding/json does:
// HTML-safe (<, > and & escaped), invalid UTF-8 replaced, U+2028 and U+2029
// escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
