package mailer

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	_ "time/tzdata" // {{datum}} needs Europe/Berlin even on hosts without a zoneinfo database.
	"unicode"
	"unicode/utf8"
)

// This file is the placeholder engine (spec "Placeholders"). A template is
// compiled once per send into literal segments and placeholder references;
// each placeholder remembers the context it stands in (plain text, HTML, HTML
// attribute, link), so rendering per recipient is a loop of appends without
// any parsing.
//
// Rules, in the order the spec lists them, and the choices made where the
// spec leaves room:
//
//   - A placeholder is "{{", a name, an optional "|fallback", and "}}", with
//     no brace inside. Case and whitespace in the name are ignored:
//     {{ Vorname }} is {{vorname}}. Anything else (a lone "{{", "{{}}",
//     nested braces) is literal text.
//   - Precedence: built-ins > request placeholders (Values.Custom) > the
//     contact's custom_fields. Built-ins come first because the spec says they
//     cannot be overridden. Request placeholders beat custom_fields because
//     they are what the caller explicitly asked for in this very request,
//     while custom_fields are stored data that may hold an unrelated key of
//     the same name.
//   - A known placeholder whose value is empty renders its fallback, or
//     nothing. The fallback is part of the template, not data: it is inserted
//     exactly as written (trimmed), as if the author had typed it in place of
//     the placeholder, so "{{vorname|Liebe &amp; Freunde}}" stays correct HTML
//     and is never escaped twice.
//   - An unknown placeholder (a typo, or a custom field this recipient does
//     not have) is written back unchanged, braces and fallback included.
//   - Values are inserted raw in KindText (subject, preheader, text part). In
//     KindHTML they are HTML-escaped; in a link attribute (href, src, …) a
//     value inside the URL is percent-encoded, and a value that starts the
//     attribute value is taken as the URL itself (see escURLWhole).
//   - With CompileOptions.AppendUnsubscribe, a source without an
//     unsubscribe placeholder gets an unsubscribe line: in HTML a small
//     German paragraph before the last </body> (or at the end), in text
//     "Abmelden: <URL>" after a blank line.

// Kind says what a template's source is, which decides how values are escaped.
type Kind uint8

const (
	// KindHTML is HTML content: values are escaped for the spot they stand
	// in. It is the zero Kind on purpose, so a forgotten kind can never put
	// unescaped values into HTML.
	KindHTML Kind = iota
	// KindText is plain text (subject, preheader, text part): values are
	// inserted raw.
	KindText
)

// MaxCustomPlaceholders is the spec's limit on request placeholders per
// POST /emails/send.
const MaxCustomPlaceholders = 50

// CompileOptions adjusts Compile.
type CompileOptions struct {
	// AppendUnsubscribe adds an unsubscribe line when the source lacks
	// {{abmelde_link}} / {{unsubscribe_url}} (spec rule 3). Set it for the
	// body of newsletters, follow-ups and sequence mails; leave it off for
	// subjects, preheaders and transactional mails.
	AppendUnsubscribe bool
	// AppendImprint adds the imprint ({{impressum}}) with the unsubscribe
	// line when the source lacks {{impressum}} / {{imprint}}: marketing mail
	// must name its sender. Set it with AppendUnsubscribe when the account
	// has an imprint.
	AppendImprint bool
}

// Identity holds the account-wide values of {{firma}} / {{company}} and
// {{impressum}} / {{imprint}}, the same for every recipient of a send.
type Identity struct {
	Company string
	// Imprint is plain text; in HTML its line breaks become <br>.
	Imprint string
}

// Recipient holds the per-recipient values of the built-in placeholders.
type Recipient struct {
	FirstName, LastName string
	Email               string
	Address             string // street and house number
	Zip, City           string
	Phone, Note         string
	// CustomFields are the contact's custom_fields; every key is a
	// placeholder, matched ignoring case and whitespace.
	CustomFields map[string]string
	// UnsubscribeURL is the recipient's personal unsubscribe link, for
	// {{abmelde_link}} and the appended unsubscribe line.
	UnsubscribeURL string
}

// Values is everything a template is rendered with for one recipient.
type Values struct {
	Recipient Recipient
	// Custom are the request placeholders of POST /emails/send, the same for
	// every recipient of the request; see ValidateCustom.
	Custom map[string]string
	// Now is the clock for {{datum}}; the zero time means time.Now(). Set it
	// once per send so every recipient of a send gets the same date.
	Now time.Time
	// Sender fills the company and imprint placeholders.
	Sender Identity
}

// Template is a compiled template. It is immutable, so one Template may be
// rendered by many goroutines at once.
type Template struct {
	sizeHint int // expected output size, to grow buffers once
	segs     []segment
	names    []string // distinct placeholder names of the source, in order
	hasUnsub bool     // the source itself has an unsubscribe placeholder
	hasImpr  bool     // the source itself has an imprint placeholder
	usesDate bool     // render needs the Berlin time zone
	qpReady  bool     // the literals are encoded (PrepareQP)
	// today is the last {{datum}} text rendered and the day it is valid
	// for, shared by every render of the template (and its copies): a send
	// renders the same date for each recipient, and formatting it in the
	// Berlin zone each time cost a tenth of a render.
	today *dateMemo
}

// dateMemo holds the text of {{datum}} for one Berlin day.
type dateMemo struct{ p atomic.Pointer[dayText] }

// dayText is the date text valid from from (inclusive) to to (exclusive),
// both Unix seconds.
type dayText struct {
	from, to int64
	text     string
}

// text returns {{datum}} for the instant now (in Europe/Berlin), computing it
// only when now falls outside the day remembered last. Days are bounded by
// midnight in Berlin, so a day of 23 or 25 hours at a daylight-saving change
// is still one day.
func (m *dateMemo) text(now time.Time) (string, error) {
	sec := now.Unix()
	if d := m.p.Load(); d != nil && sec >= d.from && sec < d.to {
		return d.text, nil
	}
	loc, err := berlin()
	if err != nil {
		return "", fmt.Errorf("mailer: render {{datum}}: load time zone Europe/Berlin: %w", err)
	}
	local := now.In(loc)
	y, mo, day := local.Date()
	d := &dayText{from: time.Date(y, mo, day, 0, 0, 0, 0, loc).Unix(), to: time.Date(y, mo, day+1, 0, 0, 0, 0, loc).Unix(),
		text: local.Format(dateLayout)}
	m.p.Store(d)
	return d.text, nil
}

// segment is a literal run of the source or a placeholder reference.
type segment struct {
	// text is the literal text, or for a placeholder its source text,
	// written back when the name turns out to be unknown for a recipient.
	text string
	// name is the normalised placeholder name; "" marks a literal.
	name string
	// fallback is rendered for an empty value; "{{x|}}" and "{{x}}" are
	// the same.
	fallback string
	builtin  builtin
	mode     escMode
	// qp is a literal's text quoted-printable encoded from the start of a
	// line, and qpEnd the column it ends in (PrepareQP).
	qp    string
	qpEnd int
	// quoteIfEmpty marks a placeholder that is a whole unquoted attribute
	// value (title={{x}} >). Rendered empty, it becomes "" so the browser
	// does not take the next attribute as this one's value, which would
	// put later placeholders in a context other than the one compiled for.
	quoteIfEmpty bool
}

// builtin identifies a built-in placeholder; both spellings map to one.
type builtin uint8

const (
	notBuiltin builtin = iota
	bFirstName
	bLastName
	bFullName
	bEmail
	bAddress
	bZip
	bCity
	bPhone
	bNote
	bDate
	bUnsubscribe
	bCompany
	bImprint
)

// builtinFor maps a normalised name to its built-in, German name and English
// alias alike.
func builtinFor(name string) builtin {
	switch name {
	case "vorname", "first_name":
		return bFirstName
	case "nachname", "last_name":
		return bLastName
	case "name", "full_name":
		return bFullName
	case "email":
		return bEmail
	case "adresse", "address":
		return bAddress
	case "plz", "zip":
		return bZip
	case "ort", "city":
		return bCity
	case "telefon", "phone":
		return bPhone
	case "notiz", "note":
		return bNote
	case "datum", "date":
		return bDate
	case "abmelde_link", "unsubscribe_url":
		return bUnsubscribe
	case "firma", "company":
		return bCompany
	case "impressum", "imprint":
		return bImprint
	}
	return notBuiltin
}

// The appended unsubscribe lines. They are compiled like any source, so the
// URL gets the same escaping as an {{abmelde_link}} the author wrote.
const (
	unsubscribeFooterHTML = `<p style="margin:24px 0 0;font-size:12px;line-height:1.5;color:#6b7280;text-align:center;">` +
		`Sie möchten keine E-Mails mehr erhalten? <a href="{{abmelde_link}}" style="color:#6b7280;">Hier abmelden</a>.</p>`
	unsubscribeFooterText = "Abmelden: {{abmelde_link}}"
	imprintFooterHTML     = `<div style="margin:16px 0 0;font-size:12px;line-height:1.5;color:#6b7280;text-align:center;">{{impressum}}</div>`
	imprintFooterText     = "{{impressum}}"
)

// dateLayout is the German date format of {{datum}}, e.g. 22.11.2026.
const dateLayout = "02.01.2006"

// berlin loads the zone of {{datum}} once. sync.OnceValues keeps this a
// lazily computed constant rather than mutable state; loading per render
// would read the zone data each time.
var berlin = sync.OnceValues(func() (*time.Location, error) {
	return time.LoadLocation("Europe/Berlin")
})

// Compile parses src once into a Template. It never fails: everything that is
// not a well-formed placeholder is literal text, and unknown names are only
// known to be unknown per recipient.
func Compile(src string, kind Kind, opts CompileOptions) *Template {
	t := &Template{}
	var lx *htmlLexer
	if kind != KindText {
		lx = &htmlLexer{bodyEndSeg: -1}
	}
	t.segs = compileSegments(src, lx)
	seen := make(map[string]bool)
	for _, s := range t.segs {
		switch {
		case s.name == "" || seen[s.name]:
			continue
		case s.builtin == bUnsubscribe:
			t.hasUnsub = true
		case s.builtin == bImprint:
			t.hasImpr = true
		case s.builtin == bDate:
			if !t.usesDate {
				t.today = &dateMemo{}
			}
			t.usesDate = true
		}
		seen[s.name] = true
		t.names = append(t.names, s.name)
	}
	unsub, impr := opts.AppendUnsubscribe && !t.hasUnsub, opts.AppendImprint && !t.hasImpr
	if unsub || impr {
		t.segs = appendFooter(t.segs, src, lx, unsub, impr)
	}
	t.computeSizeHint()
	return t
}

// appendFooter adds the unsubscribe line to compiled segments: for text at
// the end, for HTML just before the last </body> (lx found it) so it stays
// inside the body where every client shows it, or at the end without one.
// With imprint, the imprint follows the unsubscribe line (or stands alone
// when the source has its own unsubscribe link).
func appendFooter(segs []segment, src string, lx *htmlLexer, unsub, imprint bool) []segment {
	if lx == nil {
		if sep := textFooterSeparator(src); sep != "" {
			segs = append(segs, segment{text: sep})
		}
		text := ""
		if unsub {
			text = unsubscribeFooterText
		}
		if imprint {
			if text != "" {
				text += "\n\n"
			}
			text += imprintFooterText
		}
		return append(segs, compileSegments(text, nil)...)
	}
	src2 := ""
	if unsub {
		src2 = unsubscribeFooterHTML
	}
	if imprint {
		src2 += imprintFooterHTML
	}
	footer := compileSegments(src2, &htmlLexer{bodyEndSeg: -1})
	if lx.bodyEndSeg < 0 {
		// The unsubscribe link must be visible even when the source ends in
		// the middle of a tag or comment, so close that first.
		if c := lx.closer(); c != "" {
			segs = append(segs, segment{text: c})
		}
		return append(segs, footer...)
	}
	lit := segs[lx.bodyEndSeg].text
	out := make([]segment, 0, len(segs)+len(footer)+1)
	out = append(out, segs[:lx.bodyEndSeg]...)
	if lx.bodyEndOff > 0 {
		out = append(out, segment{text: lit[:lx.bodyEndOff]})
	}
	out = append(out, footer...)
	out = append(out, segment{text: lit[lx.bodyEndOff:]})
	return append(out, segs[lx.bodyEndSeg+1:]...)
}

// computeSizeHint estimates the rendered size: the literals plus a typical
// value length per placeholder.
func (t *Template) computeSizeHint() {
	const perPlaceholder = 32
	for i := range t.segs {
		if t.segs[i].name == "" {
			t.sizeHint += len(t.segs[i].text)
		} else {
			t.sizeHint += perPlaceholder
		}
	}
}

// textFooterSeparator returns what goes between a text body and its appended
// unsubscribe line: a blank line, or nothing for an empty body.
func textFooterSeparator(src string) string {
	switch {
	case src == "":
		return ""
	case strings.HasSuffix(src, "\n\n"):
		return ""
	case strings.HasSuffix(src, "\n"):
		return "\n"
	}
	return "\n\n"
}

// compileSegments splits src into segments, asking lx (nil for plain text)
// for each placeholder's context.
func compileSegments(src string, lx *htmlLexer) []segment {
	var segs []segment
	lit := 0 // start of the pending literal
	for i := 0; ; {
		j := strings.Index(src[i:], "{{")
		if j < 0 {
			break
		}
		start := i + j
		end := placeholderEnd(src, start)
		if end < 0 {
			// Not a placeholder; a later "{{" may still start one, as in "{{{x}}".
			i = start + 1
			continue
		}
		namePart, fallback, _ := strings.Cut(src[start+2:end-2], "|")
		name := normalizeName(namePart)
		if name == "" {
			i = end // "{{}}", "{{ |x}}": literal text
			continue
		}
		if start > lit {
			segs = appendLiteral(segs, src[lit:start], lx)
		}
		s := segment{
			text:     src[start:end],
			name:     name,
			fallback: strings.TrimSpace(fallback),
			builtin:  builtinFor(name),
			mode:     escRaw,
		}
		if lx != nil {
			s.mode, s.quoteIfEmpty = lx.placeholder()
		}
		segs = append(segs, s)
		i, lit = end, end
	}
	if lit < len(src) {
		segs = appendLiteral(segs, src[lit:], lx)
	}
	// quoteIfEmpty needs to see what follows: only a placeholder ending
	// the value (whitespace, '>' or the end next) is the whole value.
	for i := range segs {
		if !segs[i].quoteIfEmpty || i+1 == len(segs) {
			continue
		}
		next := segs[i+1]
		segs[i].quoteIfEmpty = next.name == "" && (isHTMLSpace(next.text[0]) || next.text[0] == '>')
	}
	return segs
}

// appendLiteral appends a literal segment, letting the HTML lexer (if any)
// follow the markup so the next placeholder's context is known.
func appendLiteral(segs []segment, text string, lx *htmlLexer) []segment {
	if lx != nil {
		lx.feed(text, len(segs))
	}
	return append(segs, segment{text: text})
}

// placeholderEnd returns the index just after the "}}" closing the "{{" at
// start, or -1 when a brace comes first or nothing closes it.
func placeholderEnd(src string, start int) int {
	for k := start + 2; k < len(src); k++ {
		switch src[k] {
		case '{':
			return -1
		case '}':
			if k+1 < len(src) && src[k+1] == '}' {
				return k + 2
			}
			return -1
		}
	}
	return -1
}

// normalizeName lowercases s and drops all whitespace, the spec's "case and
// spaces inside the braces are ignored". Custom field keys are compared the
// same way (keyMatches).
func normalizeName(s string) string {
	simple := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || c <= ' ' || ('A' <= c && c <= 'Z') {
			simple = false
			break
		}
	}
	if simple {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if unicode.IsSpace(r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// keyMatches reports whether key normalises to name (already normalised)
// without allocating, for custom field keys stored in any case.
func keyMatches(key, name string) bool {
	for _, r := range key {
		if unicode.IsSpace(r) {
			continue
		}
		r = unicode.ToLower(r)
		if r < utf8.RuneSelf {
			if name == "" || name[0] != byte(r) {
				return false
			}
			name = name[1:]
			continue
		}
		n, size := utf8.DecodeRuneInString(name)
		if n != r {
			return false
		}
		name = name[size:]
	}
	return name == ""
}

// lookup finds name in m: the exact key first (the common case, and the only
// one for validated request placeholders), then any key that normalises to
// name. Of several such keys the smallest wins, so the result does not depend
// on map order.
func lookup(m map[string]string, name string) (string, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	var (
		best, val string
		found     bool
	)
	for k, v := range m {
		if keyMatches(k, name) && (!found || k < best) {
			best, val, found = k, v, true
		}
	}
	return val, found
}

// HasUnsubscribe reports whether the source itself contains an unsubscribe
// placeholder ({{abmelde_link}} or {{unsubscribe_url}}, any case or spacing).
// It stays false when Compile appended the unsubscribe line.
func (t *Template) HasUnsubscribe() bool { return t.hasUnsub }

// Placeholders returns the distinct placeholder names the source uses,
// normalised (lowercase, no spaces), in order of first use; the appended
// unsubscribe line is not counted. It is meant for validation and the UI
// (for example to warn about names that no contact or request fills).
func (t *Template) Placeholders() []string { return slices.Clone(t.names) }

// Render writes the template, filled for one recipient, to w. Into a
// *bytes.Buffer it writes without allocating once the buffer has grown, so
// callers sending many mails should reuse one buffer (Reset between
// recipients).
func (t *Template) Render(w io.Writer, v *Values) error {
	if buf, ok := w.(*bytes.Buffer); ok {
		buf.Grow(t.sizeHint)
		out, err := t.AppendTo(buf.AvailableBuffer(), v)
		if err != nil {
			return err
		}
		buf.Write(out) // a bytes.Buffer write cannot fail
		return nil
	}
	out, err := t.AppendTo(make([]byte, 0, t.sizeHint), v)
	if err != nil {
		return err
	}
	if _, err := w.Write(out); err != nil {
		return fmt.Errorf("mailer: write rendered template: %w", err)
	}
	return nil
}

// AppendTo appends the template, filled for one recipient, to dst and
// returns the extended slice. A nil v renders every placeholder as empty.
func (t *Template) AppendTo(dst []byte, v *Values) ([]byte, error) {
	if v == nil {
		v = &Values{}
	}
	today, err := t.todayText(v)
	if err != nil {
		return dst, err
	}
	for i := range t.segs {
		s := &t.segs[i]
		if s.name == "" {
			dst = append(dst, s.text...)
			continue
		}
		dst = appendPlaceholder(dst, s, v, today)
	}
	return dst, nil
}

// todayText returns the text of {{datum}} for v, or "" when the template has none.
func (t *Template) todayText(v *Values) (string, error) {
	if !t.usesDate {
		return "", nil
	}
	now := v.Now
	if now.IsZero() {
		now = time.Now()
	}
	return t.today.text(now)
}

// appendPlaceholder appends the placeholder s filled from v.
func appendPlaceholder(dst []byte, s *segment, v *Values, today string) []byte {
	if s.builtin == bDate {
		// Digits and dots need no escaping in any context.
		return append(dst, today...)
	}
	val, ok := resolve(s, v)
	switch {
	case !ok:
		return append(dst, s.text...)
	case val.empty() && s.fallback == "" && s.quoteIfEmpty:
		return append(dst, '"', '"')
	case val.empty():
		return append(dst, s.fallback...)
	case s.builtin == bImprint && s.mode == escHTML:
		return appendLinesHTML(dst, val.a)
	default:
		return val.appendTo(dst, s.mode)
	}
}

// PrepareQP encodes the template's literals for AppendQPTo once, so that a
// send encodes only the placeholders' values per recipient: the literals are
// most of a newsletter, and encoding each recipient's copy whole took a
// tenth of the send's CPU. Call it after BakeSender (which undoes it),
// before the template is shared.
func (t *Template) PrepareQP() {
	for i := range t.segs {
		if s := &t.segs[i]; s.name == "" {
			b, end := appendQPAt(nil, s.text, 0)
			s.qp, s.qpEnd = string(b), end
		}
	}
	t.qpReady = true
}

// AppendQPTo appends the template, filled for one recipient, quoted-printable
// encoded: it decodes to what AppendTo appends, and keeps appendQP's rules
// (CRLF line breaks, lines of at most 76 characters, no line starting with a
// dot). A literal starts on a new line, after a soft line break when needed,
// so that its encoding from PrepareQP fits wherever it lands. scratch holds
// each value before it is encoded and is returned for reuse.
func (t *Template) AppendQPTo(dst, scratch []byte, v *Values) (out, scratchOut []byte, err error) {
	if v == nil {
		v = &Values{}
	}
	today, err := t.todayText(v)
	if err != nil {
		return dst, scratch, err
	}
	col, afterCR := 0, false
	for i := range t.segs {
		s := &t.segs[i]
		if s.name != "" {
			scratch = appendPlaceholder(scratch[:0], s, v, today)
			val := scratch
			if len(val) == 0 {
				continue
			}
			if afterCR && val[0] == '\n' {
				val = val[1:] // appendQP took this CR and LF for one line break
			}
			dst, col = appendQPAt(dst, val, col)
			afterCR = scratch[len(scratch)-1] == '\r'
			continue
		}
		switch lit := s.text; {
		case lit == "":
			continue
		case afterCR && lit[0] == '\n':
			dst, col = appendQPAt(dst, lit[1:], col)
		case t.qpReady:
			if col > 0 {
				dst = append(dst, "=\r\n"...)
			}
			dst, col = append(dst, s.qp...), s.qpEnd
		default:
			dst, col = appendQPAt(dst, lit, col)
		}
		afterCR = s.text[len(s.text)-1] == '\r'
	}
	return dst, scratch, nil
}

// BakeSender fills the company and imprint placeholders once for a whole
// send: they are the same for every recipient, so they become literal text
// (escaped for their spot) and cost nothing per recipient. An empty value is
// left to the per-recipient fallbacks.
func (t *Template) BakeSender(id Identity) {
	if id.Company == "" && id.Imprint == "" {
		return
	}
	v := &Values{Sender: id}
	for i := range t.segs {
		s := &t.segs[i]
		if (s.builtin != bCompany || id.Company == "") && (s.builtin != bImprint || id.Imprint == "") {
			continue
		}
		val, _ := resolve(s, v)
		var out []byte
		if s.builtin == bImprint && s.mode == escHTML {
			out = appendLinesHTML(nil, val.a)
		} else {
			out = val.appendTo(nil, s.mode)
		}
		*s = segment{text: string(out)}
	}
	t.segs = mergeLiterals(t.segs)
	t.qpReady = false // the merged literals have no encoding yet
	t.sizeHint = 0
	t.computeSizeHint()
}

// mergeLiterals joins runs of adjacent literal segments (baking leaves a
// value between two literals), so that a render copies one run instead of
// several pieces.
func mergeLiterals(segs []segment) []segment {
	out := segs[:0]
	for _, s := range segs {
		if n := len(out); n > 0 && s.name == "" && out[n-1].name == "" {
			out[n-1].text += s.text
			continue
		}
		out = append(out, s)
	}
	return out
}

// appendLinesHTML appends multi-line text escaped for HTML, its line breaks
// as <br>.
func appendLinesHTML(dst []byte, text string) []byte {
	for first := true; ; first = false {
		line, rest, more := strings.Cut(text, "\n")
		if !first {
			dst = append(dst, "<br>"...)
		}
		dst = appendEscaped(dst, strings.TrimRight(line, "\r"), escHTML)
		if !more {
			return dst
		}
		text = rest
	}
}

// RenderString compiles src and renders it once, for one-off texts such as a
// test mail's subject. Sends to many recipients should Compile once instead.
func RenderString(src string, kind Kind, opts CompileOptions, v *Values) (string, error) {
	t := Compile(src, kind, opts)
	out, err := t.AppendTo(make([]byte, 0, t.sizeHint), v)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// value is a resolved placeholder value: a, or a and b joined by one space
// when both are set. The two parts let {{name}} be built without allocating.
type value struct{ a, b string }

func (v value) empty() bool { return v.a == "" && v.b == "" }

func (v value) appendTo(dst []byte, mode escMode) []byte {
	if v.b == "" {
		return appendEscaped(dst, v.a, mode)
	}
	if v.a == "" {
		return appendEscaped(dst, v.b, mode)
	}
	// Decide a whole-URL context once, from the start of the joined value.
	switch {
	case (mode == escURLWhole || mode == escURLWholeUnquoted) && !safeURLStart(v.a):
		mode = escURLPart
	case mode == escURLWhole:
		mode = escHTML
	case mode == escURLWholeUnquoted:
		mode = escHTMLUnquoted
	}
	dst = appendEscaped(dst, v.a, mode)
	dst = appendEscaped(dst, " ", mode)
	return appendEscaped(dst, v.b, mode)
}

// resolve finds the value of placeholder s for v, following the precedence
// built-ins > request placeholders > custom_fields; ok is false when no
// source knows the name.
func resolve(s *segment, v *Values) (value, bool) {
	r := &v.Recipient
	switch s.builtin {
	case bFirstName:
		return value{a: r.FirstName}, true
	case bLastName:
		return value{a: r.LastName}, true
	case bFullName:
		return value{a: strings.TrimSpace(r.FirstName), b: strings.TrimSpace(r.LastName)}, true
	case bEmail:
		return value{a: r.Email}, true
	case bAddress:
		return value{a: r.Address}, true
	case bZip:
		return value{a: r.Zip}, true
	case bCity:
		return value{a: r.City}, true
	case bPhone:
		return value{a: r.Phone}, true
	case bNote:
		return value{a: r.Note}, true
	case bUnsubscribe:
		return value{a: r.UnsubscribeURL}, true
	case bCompany:
		// The account's company wins; without one a request placeholder or
		// custom field of that name still fills it, as before the sender
		// settings existed.
		if v.Sender.Company != "" {
			return value{a: v.Sender.Company}, true
		}
	case bImprint:
		if v.Sender.Imprint != "" {
			return value{a: v.Sender.Imprint}, true
		}
	}
	if val, ok := lookup(v.Custom, s.name); ok {
		return value{a: val}, true
	}
	if val, ok := lookup(r.CustomFields, s.name); ok {
		return value{a: val}, true
	}
	// Company and imprint are built-ins all the same: empty, never unknown.
	return value{}, s.builtin != notBuiltin
}

// ValidateCustom checks the request placeholders of POST /emails/send (spec
// rule 5) and returns German messages by field, for a 422, or nil. Names that
// are built-ins are accepted but have no effect: built-ins are always filled
// per recipient.
func ValidateCustom(custom map[string]string) map[string]string {
	var errs map[string]string
	add := func(field, msg string) {
		if errs == nil {
			errs = make(map[string]string)
		}
		if _, ok := errs[field]; !ok {
			errs[field] = msg
		}
	}
	if len(custom) > MaxCustomPlaceholders {
		add("placeholders", fmt.Sprintf("Höchstens %d eigene Platzhalter pro Anfrage sind erlaubt.", MaxCustomPlaceholders))
	}
	for name := range custom {
		switch {
		case name == "":
			add("placeholders", "Ein Platzhaltername darf nicht leer sein.")
		case !validCustomName(name):
			add("placeholders."+name, "Der Platzhaltername darf nur Kleinbuchstaben (a–z), Ziffern, Unterstrich und Bindestrich enthalten.")
		}
	}
	return errs
}

// validCustomName reports whether name matches ^[a-z0-9_-]+$.
func validCustomName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// escMode is how a value is escaped, decided per placeholder at compile time
// from where it stands.
type escMode uint8

const (
	// escRaw inserts the value as is (KindText).
	escRaw escMode = iota
	// escHTML is for text content, comments and quoted attribute values:
	// & < > " ' become entities.
	escHTML
	// escHTMLUnquoted is for unquoted attribute values and spots inside a
	// tag: whitespace, = and ` are escaped too, so a value cannot end the
	// attribute and add one of its own.
	escHTMLUnquoted
	// escHTMLStrict is for comments and the content of script, style,
	// title and textarea: escHTMLUnquoted plus '-', so a value cannot end a
	// comment ("-->"), and whitespace escaped because inside <svg> a style
	// or title element is markup again.
	escHTMLStrict
	// escURLWhole is for a value that starts a link attribute's value
	// (href="{{abmelde_link}}"): the value is the URL itself, so it is only
	// HTML-escaped. A value whose scheme is not http, https, mailto or tel
	// (javascript:, data:, …) is percent-encoded instead, which turns it
	// into a harmless relative link.
	escURLWhole
	// escURLWholeUnquoted is escURLWhole in an unquoted attribute.
	escURLWholeUnquoted
	// escURLPart is for a value inside a link after other text
	// (href="https://x.test/?e={{email}}"): everything but the RFC 3986
	// unreserved characters is percent-encoded, as url.QueryEscape does,
	// except that a space becomes %20 rather than '+', because '+' means a
	// space only in form-encoded queries, not in paths or mailto: links.
	// The result needs no HTML escaping.
	escURLPart
)

// appendEscaped appends s to dst escaped for mode.
func appendEscaped(dst []byte, s string, mode escMode) []byte {
	switch mode {
	case escRaw:
		return append(dst, s...)
	case escHTML, escHTMLUnquoted, escHTMLStrict:
		return appendHTML(dst, s, mode)
	case escURLWhole:
		if !safeURLStart(s) {
			return appendURLPart(dst, s)
		}
		return appendHTML(dst, s, escHTML)
	case escURLWholeUnquoted:
		if !safeURLStart(s) {
			return appendURLPart(dst, s)
		}
		return appendHTML(dst, s, escHTMLUnquoted)
	case escURLPart:
		return appendURLPart(dst, s)
	}
	panic(fmt.Sprintf("mailer: unknown escape mode %d", mode))
}

// appendHTML appends s with the characters that are special in HTML text and
// attribute values replaced by entities, and more of them for the stricter
// modes escHTMLUnquoted and escHTMLStrict.
func appendHTML(dst []byte, s string, mode escMode) []byte {
	last := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch c := s[i]; c {
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case ' ', '\t', '\n', '\f', '\r', '=', '`', '-':
			if mode == escHTML || c == '-' && mode != escHTMLStrict {
				continue
			}
			dst = append(dst, s[last:i]...)
			dst = append(dst, '&', '#')
			dst = appendDecimal(dst, c)
			dst = append(dst, ';')
			last = i + 1
			continue
		default:
			continue
		}
		dst = append(dst, s[last:i]...)
		dst = append(dst, esc...)
		last = i + 1
	}
	return append(dst, s[last:]...)
}

// appendDecimal appends c in decimal, for numeric character references.
func appendDecimal(dst []byte, c byte) []byte {
	if c >= 100 {
		dst = append(dst, '0'+c/100)
	}
	if c >= 10 {
		dst = append(dst, '0'+c/10%10)
	}
	return append(dst, '0'+c%10)
}

// appendURLPart appends s percent-encoded as a URL component (see
// escURLPart).
func appendURLPart(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '~' {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', hex[c>>4], hex[c&15])
	}
	return dst
}

// safeURLStart reports whether s, used as a whole link, is relative or has
// the scheme http, https, mailto or tel. An allow-list rather than a
// block-list of javascript: and friends, because browsers drop tabs and line
// breaks inside a scheme ("java\nscript:").
func safeURLStart(s string) bool {
	// Browsers ignore leading spaces and control characters in a URL.
	// (Every byte up to the space; a loop, since strings.TrimLeft would build
	// its character set on every call of this per-recipient path.)
	for len(s) > 0 && s[0] <= ' ' {
		s = s[1:]
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ':':
			scheme := s[:i]
			return strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https") ||
				strings.EqualFold(scheme, "mailto") || strings.EqualFold(scheme, "tel")
		case '/', '?', '#':
			return true // relative: a colon after these is not a scheme
		}
	}
	return true
}

// htmlState is where htmlLexer stands in the markup.
type htmlState uint8

const (
	stData htmlState = iota
	stTagOpen
	stEndTagOpen
	stTagName
	stBeforeAttrName
	stAttrName
	stAfterAttrName
	stBeforeAttrValue
	stAttrValueDQ
	stAttrValueSQ
	stAttrValueUnquoted
	stComment
	stBogusComment
	stRawText
)

// htmlLexer follows an HTML source just far enough to know, at each
// placeholder, whether it stands in text, in a tag, in an attribute value and
// whether that attribute holds a URL. It is a much simplified version of the
// WHATWG tokenizer states: no entity decoding, no CDATA, no error recovery
// beyond what keeps the state sensible. Placeholders are opaque to it: their
// replacement is escaped so that it cannot change the state.
type htmlLexer struct {
	state     htmlState
	tagName   []byte // lowercased name of the current tag
	endTag    bool   // the current tag is an end tag
	attrName  []byte // lowercased name of the current attribute
	urlAttr   bool   // the current attribute value is a URL
	valueSeen bool   // the current value has had non-space content
	rawEnd    string // in stRawText: the element whose end tag ends it

	tagSeg, tagOff int // where the current tag's '<' is: segment, offset
	// bodyEndSeg/bodyEndOff locate the '<' of the last </body>, where the
	// unsubscribe footer goes; bodyEndSeg is -1 when there is none.
	bodyEndSeg, bodyEndOff int
}

func isHTMLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// feed advances the lexer over a literal run of the source; seg is the index
// the literal's segment will have.
func (lx *htmlLexer) feed(lit string, seg int) {
	for i := 0; i < len(lit); {
		c := lit[i]
		switch lx.state {
		case stData:
			j := strings.IndexByte(lit[i:], '<')
			if j < 0 {
				return
			}
			i += j + 1
			lx.state, lx.tagSeg, lx.tagOff = stTagOpen, seg, i-1
		case stTagOpen:
			switch {
			case c == '/':
				lx.state = stEndTagOpen
				i++
			case c == '!' && strings.HasPrefix(lit[i:], "!--"):
				i += 3
				// "<!-->" and "<!--->" are whole (empty) comments to a browser.
				switch {
				case strings.HasPrefix(lit[i:], ">"):
					lx.state = stData
					i++
				case strings.HasPrefix(lit[i:], "->"):
					lx.state = stData
					i += 2
				default:
					lx.state = stComment
				}
			case c == '!' || c == '?':
				lx.state = stBogusComment
				i++
			case isASCIILetter(c):
				lx.startTag(false)
			default:
				lx.state = stData // a lone '<' is text
			}
		case stEndTagOpen:
			switch {
			case isASCIILetter(c):
				lx.startTag(true)
			case c == '>':
				lx.state = stData
				i++
			default:
				lx.state = stBogusComment
			}
		case stTagName:
			switch {
			case isHTMLSpace(c) || c == '/':
				lx.tagNameDone(seg)
				lx.state = stBeforeAttrName
			case c == '>':
				lx.tagNameDone(seg)
				lx.closeTag()
			default:
				lx.tagName = append(lx.tagName, lowerASCII(c))
			}
			i++
		case stBeforeAttrName:
			switch {
			case isHTMLSpace(c) || c == '/':
				i++
			case c == '>':
				lx.closeTag()
				i++
			default:
				lx.startAttr()
			}
		case stAttrName:
			switch {
			case isHTMLSpace(c):
				lx.state = stAfterAttrName
			case c == '/':
				lx.state = stBeforeAttrName
			case c == '=':
				lx.state = stBeforeAttrValue
			case c == '>':
				lx.closeTag()
			default:
				lx.attrName = append(lx.attrName, lowerASCII(c))
			}
			i++
		case stAfterAttrName:
			switch {
			case isHTMLSpace(c):
				i++
			case c == '/':
				lx.state = stBeforeAttrName
				i++
			case c == '=':
				lx.state = stBeforeAttrValue
				i++
			case c == '>':
				lx.closeTag()
				i++
			default:
				lx.startAttr()
			}
		case stBeforeAttrValue:
			switch {
			case isHTMLSpace(c):
				i++
			case c == '"':
				lx.startValue(stAttrValueDQ)
				i++
			case c == '\'':
				lx.startValue(stAttrValueSQ)
				i++
			case c == '>':
				lx.closeTag()
				i++
			default:
				lx.startValue(stAttrValueUnquoted)
			}
		case stAttrValueDQ, stAttrValueSQ:
			quote := byte('"')
			if lx.state == stAttrValueSQ {
				quote = '\''
			}
			j := strings.IndexByte(lit[i:], quote)
			if j < 0 {
				lx.valueText(lit[i:])
				return
			}
			lx.valueText(lit[i : i+j])
			lx.state = stBeforeAttrName
			i += j + 1
		case stAttrValueUnquoted:
			switch {
			case isHTMLSpace(c):
				lx.state = stBeforeAttrName
			case c == '>':
				lx.closeTag()
			default:
				lx.valueSeen = true
			}
			i++
		case stComment:
			j, n := commentEnd(lit[i:])
			if j < 0 {
				return
			}
			lx.state = stData
			i += j + n
		case stBogusComment:
			j := strings.IndexByte(lit[i:], '>')
			if j < 0 {
				return
			}
			lx.state = stData
			i += j + 1
		case stRawText:
			j := rawTextEnd(lit[i:], lx.rawEnd)
			if j < 0 {
				return
			}
			// Hand the end tag to stData, which lexes it as a tag.
			lx.state = stData
			i += j
		}
	}
}

// placeholder returns the escaping for a placeholder at the current position
// and moves the state as its (non-empty) replacement text would; startsValue
// is true when it starts an unquoted attribute value (see quoteIfEmpty).
//
// Where the lexer may disagree with a browser it errs on the side of
// stricter escaping: a value escaped for an attribute is still safe in text,
// not the other way round.
func (lx *htmlLexer) placeholder() (mode escMode, startsValue bool) {
	switch lx.state {
	case stTagOpen, stEndTagOpen:
		// "<{{x}}": the value could start a tag name; escaping whitespace
		// and '=' keeps it from also adding attributes.
		lx.startTag(lx.state == stEndTagOpen)
		return escHTMLUnquoted, false
	case stTagName, stAttrName:
		return escHTMLUnquoted, false
	case stBeforeAttrName, stAfterAttrName:
		lx.startAttr()
		return escHTMLUnquoted, false
	case stBeforeAttrValue:
		lx.startValue(stAttrValueUnquoted)
		return lx.valueMode(true), true
	case stAttrValueDQ, stAttrValueSQ:
		return lx.valueMode(false), false
	case stAttrValueUnquoted:
		return lx.valueMode(true), false
	case stComment, stRawText:
		return escHTMLStrict, false
	}
	// Text and bogus comments ("<!DOCTYPE …>"): escaping '<' and '>' keeps
	// a value from opening or closing anything.
	return escHTML, false
}

// valueMode returns the escaping for a placeholder inside an attribute value
// and marks the value as started.
func (lx *htmlLexer) valueMode(unquoted bool) escMode {
	seen := lx.valueSeen
	lx.valueSeen = true
	switch {
	case lx.urlAttr && seen:
		return escURLPart
	case lx.urlAttr && unquoted:
		return escURLWholeUnquoted
	case lx.urlAttr:
		return escURLWhole
	case unquoted:
		return escHTMLUnquoted
	}
	return escHTML
}

// closer returns the markup that ends whatever the lexer is in, so that
// what follows is text again: "" in text, "-->" in a comment, `">` in a
// double-quoted attribute value, and so on.
func (lx *htmlLexer) closer() string {
	var c string
	switch lx.state {
	case stData, stTagOpen: // a '<' before "<p" is just text
		return ""
	case stComment:
		return "-->"
	case stBogusComment, stEndTagOpen:
		return ">"
	case stRawText:
		return "</" + lx.rawEnd + ">"
	case stAttrValueDQ:
		c = `">`
	case stAttrValueSQ:
		c = `'>`
	default: // inside a tag
		c = ">"
	}
	// Closing a <script>, <style>, … start tag enters its raw text.
	if name := string(lx.tagName); !lx.endTag && isRawTextElement(name) {
		c += "</" + name + ">"
	}
	return c
}

func (lx *htmlLexer) startTag(end bool) {
	lx.state, lx.endTag, lx.tagName = stTagName, end, lx.tagName[:0]
}

// tagNameDone notes a complete </body>, the footer's insertion point, when
// its '<' is in the literal being fed.
func (lx *htmlLexer) tagNameDone(seg int) {
	if lx.endTag && string(lx.tagName) == "body" && lx.tagSeg == seg {
		lx.bodyEndSeg, lx.bodyEndOff = seg, lx.tagOff
	}
}

// closeTag handles the '>' of a tag: the content of script, style, title and
// textarea is not markup, so a '<' or quote in it must not move the state.
func (lx *htmlLexer) closeTag() {
	lx.state = stData
	if name := string(lx.tagName); !lx.endTag && isRawTextElement(name) {
		lx.state, lx.rawEnd = stRawText, name
	}
}

// isRawTextElement reports whether the content of element name is text up
// to its end tag rather than markup.
func isRawTextElement(name string) bool {
	switch name {
	case "script", "style", "title", "textarea":
		return true
	}
	return false
}

func (lx *htmlLexer) startAttr() {
	lx.state, lx.attrName = stAttrName, lx.attrName[:0]
}

func (lx *htmlLexer) startValue(state htmlState) {
	lx.state, lx.valueSeen = state, false
	lx.urlAttr = isURLAttr(string(lx.attrName))
}

// valueText notes literal text of an attribute value.
func (lx *htmlLexer) valueText(s string) {
	if !lx.valueSeen && strings.TrimLeft(s, " \t\n\f\r") != "" {
		lx.valueSeen = true
	}
}

// isURLAttr reports whether an attribute holds a URL ("inside links", spec
// rule 6). background is listed because table-based mail layouts use it.
func isURLAttr(name string) bool {
	switch name {
	case "href", "src", "action", "formaction", "background", "cite", "poster",
		"longdesc", "xlink:href":
		return true
	}
	return false
}

// commentEnd returns the index and length of the first "-->" or "--!>" in s,
// both of which end a comment in a browser, or -1. One pass, so a source
// with many comments stays linear.
func commentEnd(s string) (int, int) {
	for off := 0; ; {
		j := strings.Index(s[off:], "--")
		if j < 0 {
			return -1, 0
		}
		j += off
		switch {
		case strings.HasPrefix(s[j+2:], ">"):
			return j, 3
		case strings.HasPrefix(s[j+2:], "!>"):
			return j, 4
		}
		off = j + 1
	}
}

// rawTextEnd returns the index in s of "</name" followed by a character that
// ends a tag name, case-insensitively, or -1.
func rawTextEnd(s, name string) int {
	for off := 0; ; {
		j := strings.Index(s[off:], "</")
		if j < 0 {
			return -1
		}
		k := off + j + 2
		if k+len(name) <= len(s) && strings.EqualFold(s[k:k+len(name)], name) {
			if e := k + len(name); e == len(s) || isHTMLSpace(s[e]) || s[e] == '/' || s[e] == '>' {
				return off + j
			}
		}
		off = k
	}
}
