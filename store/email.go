package store

import (
	"fmt"
	"net"
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/unicode/norm"
)

// This file is the one normalisation of email addresses (decisions.md
// "Addresses"): every address that enters Rundbrief (API, portal, import,
// forms, sign-in, test mails, blocked addresses) passes ParseEmail, and every
// lookup by address uses NormalizeEmail, so an address has one stored form.
//
// The stored form is: trimmed; NFKC-folded; lower-cased; the domain in its
// IDNA ASCII form (idna.Lookup, UTS 46), so müller@exämple.de and
// müller@xn--exmple-cua.de are one contact. NFKC rather than NFC because the
// domain's UTS 46 mapping already folds full-width and other compatibility
// forms (ｅｘａｍｐｌｅ.org is example.org); folding the local part the same way
// keeps one rule for the whole address, so ａ@example.org is a@example.org
// instead of a look-alike second contact. No real mailbox depends on a
// compatibility character in its local part.
//
// Refused (422 on the field): invisible characters (zero-width, soft hyphen,
// variation selectors, other default-ignorable code points), bidirectional
// and other control characters, whitespace inside the address, address
// literals (a@[127.0.0.1]) and bare IP addresses, and domains that are no
// valid IDNA host name (a@-example.org, a@xn--.org, a@example..org).

// German messages of the email check, shown on the field.
const (
	msgEmail          = "Bitte eine gültige E-Mail-Adresse angeben."
	msgEmailInvisible = "Die E-Mail-Adresse enthält unsichtbare Zeichen oder Steuerzeichen."
	msgEmailLiteral   = "Eine IP-Adresse statt einer Domain (wie a@[127.0.0.1]) ist nicht erlaubt."
	msgEmailDomain    = "Die Domain der E-Mail-Adresse ist ungültig."
)

// Limits of RFC 5321: 64 octets local part, 253 the domain, 254 the path.
const (
	maxEmailLen  = 254
	maxLocalLen  = 64
	maxDomainLen = 253
	maxLabelLen  = 63
)

// EmailError says why an address was refused; its message is German and
// meant for the field it came from.
type EmailError struct {
	Message string
}

func (e *EmailError) Error() string { return e.Message }

// ParseEmail returns the stored form of an address (see the top of this
// file), or an *EmailError saying why it is refused.
func ParseEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || !utf8.ValidString(s) {
		return "", &EmailError{msgEmail}
	}
	for _, r := range s {
		if invisibleRune(r) {
			return "", &EmailError{msgEmailInvisible}
		}
	}
	s = strings.ToLower(norm.NFKC.String(s))
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 {
		return "", &EmailError{msgEmail}
	}
	local, domain := s[:at], s[at+1:]
	if len(local) > maxLocalLen || strings.ContainsAny(local, " <>\"()[]\\,;:@") {
		return "", &EmailError{msgEmail}
	}
	if strings.HasPrefix(domain, "[") || net.ParseIP(domain) != nil {
		return "", &EmailError{msgEmailLiteral}
	}
	ascii, ok := asciiDomain(domain)
	if !ok {
		return "", &EmailError{msgEmailDomain}
	}
	addr := local + "@" + ascii
	// net/mail checks the local part's syntax (dot-atom, RFC 6532 UTF-8);
	// an address it rewrites (comments, quoting) is not a plain one.
	if a, err := mail.ParseAddress(addr); err != nil || a.Address != addr || a.Name != "" || len(addr) > maxEmailLen {
		return "", &EmailError{msgEmail}
	}
	return addr, nil
}

// asciiDomain returns the IDNA ASCII form of a lower-cased domain, and false
// when it is no valid host name of at least two labels. idna.Lookup maps
// "xn--" to an empty label and lets empty labels through, so the labels are
// checked on the result.
func asciiDomain(domain string) (string, bool) {
	ascii, err := idna.Lookup.ToASCII(domain)
	if err != nil || len(ascii) > maxDomainLen {
		return "", false
	}
	labels := strings.Split(ascii, ".")
	if len(labels) < 2 {
		return "", false
	}
	for _, l := range labels {
		if l == "" || len(l) > maxLabelLen {
			return "", false
		}
	}
	// A top-level domain of digits only is an IP address in disguise.
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "", false
	}
	return ascii, true
}

// invisibleRune reports the characters an address may not contain because
// they are invisible or change how the text around them is shown: controls
// (Cc), format characters (Cf: zero-width, soft hyphen, bidi controls and
// isolates, BOM), whitespace and separators other than the plain space,
// variation selectors and the other default-ignorable code points (Hangul
// fillers, combining grapheme joiner, …).
func invisibleRune(r rune) bool {
	if r == ' ' {
		return false // visible, and refused as a plain syntax error
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) || unicode.In(r, unicode.Z) ||
		unicode.Is(unicode.Variation_Selector, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

// NormalizeEmail is the form an address is looked up by (blocked list,
// contact by address): ParseEmail's result, or, for an address that
// ParseEmail refuses, the trimmed lower-cased input, which no address stored
// since this rule matches (older rows stored that way still do).
func NormalizeEmail(s string) string {
	if e, err := ParseEmail(s); err == nil {
		return e
	}
	return strings.ToLower(strings.TrimSpace(s))
}

// ValidEmail reports whether s is a plain address (local@domain, no display
// name) that ParseEmail accepts.
func ValidEmail(s string) bool {
	_, err := ParseEmail(s)
	return err == nil
}

// normEmail normalises the address in *v in place, or adds ParseEmail's
// message to field.
func normEmail(errs Errs, field string, v *string) {
	e, err := ParseEmail(*v)
	if err != nil {
		errs.Add(field, err.Error())
		return
	}
	*v = e
}

// emailProblem is the message for one address of a list field ("to",
// "emails"): the address quoted, then why it is refused.
func emailProblem(raw string, err error) string {
	raw = strings.TrimSpace(raw)
	if err.Error() == msgEmail {
		return fmt.Sprintf("%q ist keine gültige E-Mail-Adresse.", raw)
	}
	return fmt.Sprintf("%q: %s", raw, err.Error())
}

// DisplayEmail is a stored address as people read it: a domain label in its
// IDNA ASCII form ("xn--mller-kva") is shown in Unicode ("müller") when every
// character of it is Latin, as German, French or Turkish names are. Labels in
// other scripts keep their ASCII form, as browsers do for mixed and
// confusable scripts: a Cyrillic "раураl" must not read as "paypal" in the
// inbox. The result is for showing only; the stored form stays the key.
func DisplayEmail(stored string) string {
	at := strings.LastIndexByte(stored, '@')
	if at < 0 || !strings.Contains(stored[at+1:], "xn--") {
		return stored
	}
	labels := strings.Split(stored[at+1:], ".")
	for i, l := range labels {
		if !strings.HasPrefix(l, "xn--") {
			continue
		}
		u, err := idna.Display.ToUnicode(l)
		if err != nil || !latinLabel(u) {
			continue
		}
		labels[i] = u
	}
	return stored[:at+1] + strings.Join(labels, ".")
}

// latinLabel reports whether a Unicode label is letters of the Latin script,
// digits and hyphens only.
func latinLabel(l string) bool {
	for _, r := range l {
		if r >= utf8.RuneSelf {
			if !unicode.Is(unicode.Latin, r) {
				return false
			}
		} else if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// asciiSearch is a search text with every whole domain label written in
// Unicode turned into its stored ASCII form, so that "müller.de" or
// "@müller" find info@xn--mller-kva.de; "" when the text has no such label
// (a name like "Müller" is searched as typed as well). Only whole labels can
// match: punycode is not a substring of itself.
func asciiSearch(q string) string {
	q = strings.ToLower(norm.NFKC.String(strings.TrimSpace(q)))
	at := strings.LastIndexByte(q, '@')
	local, domain := "", q
	if at >= 0 {
		local, domain = q[:at+1], q[at+1:]
	}
	labels := strings.Split(domain, ".")
	changed := false
	for i, l := range labels {
		if l == "" || !hasNonASCII(l) {
			continue
		}
		a, err := idna.Lookup.ToASCII(l)
		if err != nil || strings.Contains(a, ".") {
			continue
		}
		labels[i], changed = a, true
	}
	if !changed {
		return ""
	}
	return local + strings.Join(labels, ".")
}

func hasNonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	return false
}
