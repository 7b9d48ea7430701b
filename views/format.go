package views

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// sprintf fills a format string of Text (e.g. Common.PageOf).
func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// ByCount picks a text's form for exactly one over its form for any other
// count: German nouns and verbs change with the number ("1 Kontakt wartet",
// "2 Kontakte warten"), so a text that counts has both, with the same
// verbs, and the caller fills the one chosen.
func ByCount[N ~int | ~int64](n N, one, other string) string {
	if n == 1 {
		return one
	}
	return other
}

// formatTime writes t in Europe/Berlin in the language's layout.
func formatTime(tx Text, t time.Time) string {
	return t.In(store.Berlin).Format(tx.Format.DateTime)
}

// formatTimePtr is formatTime for an optional time; nil reads "never".
func formatTimePtr(tx Text, t *time.Time) string {
	if t == nil {
		return tx.Format.Never
	}
	return formatTime(tx, *t)
}

// formatInt writes n with the language's thousands separator: 1.000.000.
func formatInt(tx Text, n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString(tx.Format.Thousands)
		}
		b.WriteRune(c)
	}
	return b.String()
}

// formatDecimal writes f with one or two decimals and the language's separator.
func formatDecimal(tx Text, f float64, decimals int) string {
	return strings.Replace(strconv.FormatFloat(f, 'f', decimals, 64), ".", tx.Format.Decimal, 1)
}

// formatBytes writes a size in decimal units (1 KB = 1000 B), as the plans state them.
func formatBytes(tx Text, n int64) string {
	units := tx.Format.Bytes
	f := float64(n)
	i := 0
	for f >= 1000 && i < len(units)-1 {
		f /= 1000
		i++
	}
	if i == 0 || f == float64(int64(f)) {
		return formatDecimal(tx, f, 0) + " " + units[i]
	}
	return formatDecimal(tx, f, 1) + " " + units[i]
}

// formatEUR writes an amount in euros with two decimals.
func formatEUR(tx Text, f float64) string {
	return fmt.Sprintf(tx.Format.EuroAmount, formatDecimal(tx, f, 2))
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// derefString is *s, or "" for nil (an optional text not given).
func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// boolAttr writes a boolean into a data attribute, for tests and scripts.
func boolAttr(b bool) string { return strconv.FormatBool(b) }
