package store

import (
	"strings"
	"time"
	"unicode/utf8"
)

// ValidText reports whether PostgreSQL can take s as text or inside jsonb: it
// refuses invalid UTF-8 and the NUL character with an error, so every value a
// client sends is checked against this before it reaches a statement.
func ValidText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// ValidTime reports whether t lies in the years 1 to 9999, in UTC and in
// Europe/Berlin: the range that timestamps and dates are read and written in
// (ISO 8601 with four-digit years). Year 0 and beyond are refused as input.
func ValidTime(t time.Time) bool {
	for _, y := range []int{t.UTC().Year(), t.In(Berlin).Year()} {
		if y < 1 || y > 9999 {
			return false
		}
	}
	return true
}
