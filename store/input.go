package store

import (
	"net/url"
	"regexp"
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

var hhmm = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$`)

// ClockMinutes turns a wall-clock time "HH:MM" into minutes after midnight
// ("24:00", the end of a day, is 1440): the one reading of the send times of
// story emails and sequences and of the appointment book's weekly hours.
func ClockMinutes(s string) (int, bool) {
	if !hhmm.MatchString(s) {
		return 0, false
	}
	return int(s[0]-'0')*600 + int(s[1]-'0')*60 + int(s[3]-'0')*10 + int(s[4]-'0'), true
}

// maxWebURLLen bounds the web addresses an account stores (a form's success
// redirect, the privacy policy): longer ones are no real page's address.
const maxWebURLLen = 2000

// validWebURL accepts an absolute http(s) URL with a host and no user info: an
// address visitors are sent to or shown as a link must not carry credentials.
func validWebURL(s string) bool {
	if len(s) > maxWebURLLen || strings.ContainsAny(s, " \t\r\n\x00") {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}
