package mailer

import (
	"crypto/rand"
	"encoding/base64"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// This file is the MIME writer: it appends a Message in RFC 5322 form to a
// byte slice, so that a sender renders message after message into one reused
// buffer (and knows the size up front, which BDAT needs). It replaced
// go-mail's writer, which built a tree of parts, header maps and a
// quoted-printable writer per message and cost more than the SMTP exchange.
//
// The output:
//
//	Date, MIME-Version, Message-ID, Subject, From, To, Reply-To,
//	List-Unsubscribe(-Post), the extra headers (sorted), then either
//	  Content-Type: text/plain; charset=UTF-8 (quoted-printable), or
//	  multipart/alternative with the text part first and the HTML part last.
//
// Header values are ASCII: text with non-ASCII characters becomes RFC 2047
// encoded-words (Q encoding, UTF-8, at most 75 characters each), and lines are
// folded at spaces to stay within 78 characters where the value allows it.
// Bodies are quoted-printable with CRLF line ends; a dot at the start of a
// line is encoded too (=2E), so no line of a message starts with a dot and
// SMTP's dot-stuffing never has to change it. The multipart boundary starts
// with "=_", which quoted-printable text cannot contain.

// mimeWriter renders messages. It is not safe for concurrent use: each
// SMTPSender holds one.
type mimeWriter struct {
	boundary string // random prefix of the multipart boundaries
	seq      uint64 // makes each message's boundary unique
	scratch  []byte // a header value before folding
	// The From header of the last message: a campaign's messages all have
	// the same sender, so it is formatted once.
	from      Address
	fromValue string
	valid     validAddresses
	// splitTail leaves a message's encoded attachments (the same block for
	// every message of a send) out of the output and sets tail to them
	// instead: the SMTP sender writes them straight from the block.
	splitTail bool
	tail      []byte
}

func newMIMEWriter() *mimeWriter {
	return &mimeWriter{boundary: "=_rb" + rand.Text()[:16] + "."}
}

const (
	mimeTextPart = "Content-Type: text/plain; charset=UTF-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
	mimeHTMLPart = "Content-Type: text/html; charset=UTF-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
)

// appendMessage prepares m (MessageID, Date, validation) and appends it.
func (w *mimeWriter) appendMessage(dst []byte, m *Message) ([]byte, error) {
	w.tail = nil
	if err := m.prepare(&w.valid); err != nil {
		return dst, err
	}
	dst = append(dst, "Date: "...)
	dst = m.Date.AppendFormat(dst, time.RFC1123Z)
	dst = append(dst, "\r\nMIME-Version: 1.0\r\nMessage-ID: <"...)
	dst = append(dst, m.MessageID...)
	dst = append(dst, ">\r\n"...)
	dst = w.appendText(dst, "Subject", cleanHeader(m.Subject))
	if m.From != w.from || w.fromValue == "" {
		w.from, w.fromValue = m.From, m.From.String()
	}
	dst = appendFolded(dst, "From", w.fromValue)
	dst = appendFolded(dst, "To", m.To.String())
	if m.ReplyTo != "" {
		dst = append(dst, "Reply-To: <"...)
		dst = append(dst, m.ReplyTo...)
		dst = append(dst, ">\r\n"...)
	}
	if m.UnsubscribeURL != "" {
		dst = append(dst, "List-Unsubscribe: <"...)
		dst = append(dst, m.UnsubscribeURL...)
		dst = append(dst, ">\r\n"...)
		// RFC 8058 allows one-click only over https.
		if strings.HasPrefix(m.UnsubscribeURL, "https:") {
			dst = append(dst, "List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"...)
		}
	}
	switch len(m.Headers) {
	case 0:
	case 1:
		for name, value := range m.Headers {
			dst = w.appendText(dst, name, cleanHeader(value))
		}
	default:
		for _, name := range slices.Sorted(maps.Keys(m.Headers)) {
			dst = w.appendText(dst, name, cleanHeader(m.Headers[name]))
		}
	}
	if m.Calendar != "" {
		return w.appendWithCalendar(dst, m), nil
	}
	if m.attachments.Len() > 0 {
		dst = append(dst, "Content-Type: multipart/mixed;\r\n boundary=\""...)
		dst = append(dst, m.attachments.boundary...)
		dst = append(dst, "\"\r\n\r\n--"...)
		dst = append(dst, m.attachments.boundary...)
		dst = append(dst, "\r\n"...)
		dst = w.appendBody(dst, m)
		if w.splitTail {
			// The sender writes the shared block itself (smtpwire.go), so a
			// message never copies it.
			w.tail = m.attachments.block
			return dst, nil
		}
		return append(dst, m.attachments.block...), nil
	}
	return w.appendBody(dst, m), nil
}

// appendBody appends the body: a text part, or the multipart/alternative of
// text and HTML, each with its Content-Type header.
func (w *mimeWriter) appendBody(dst []byte, m *Message) []byte {
	if !m.hasHTML() {
		dst = append(dst, mimeTextPart...)
		dst = m.appendText(dst)
		if len(dst) < 2 || dst[len(dst)-1] != '\n' {
			// A soft line break ends the message with CRLF, as SMTP wants,
			// without adding a line break to the text.
			dst = append(dst, "=\r\n"...)
		}
		return dst
	}
	w.seq++
	dst = append(dst, "Content-Type: multipart/alternative;\r\n boundary=\""...)
	mark := len(dst)
	dst = append(dst, w.boundary...)
	dst = strconv.AppendUint(dst, w.seq, 36)
	boundary := dst[mark:]
	dst = append(dst, "\"\r\n\r\n--"...)
	dst = append(dst, boundary...)
	dst = append(dst, "\r\n"+mimeTextPart...)
	dst = m.appendText(dst)
	dst = append(dst, "\r\n--"...)
	dst = append(dst, dst[mark:mark+len(boundary)]...)
	dst = append(dst, "\r\n"+mimeHTMLPart...)
	dst = m.appendHTML(dst)
	dst = append(dst, "\r\n--"...)
	dst = append(dst, dst[mark:mark+len(boundary)]...)
	dst = append(dst, "--\r\n"...)
	return dst
}

// hasHTML reports whether the message has an HTML part.
func (m *Message) hasHTML() bool {
	return len(m.htmlQP) > 0 || len(m.htmlBody) > 0 || m.HTML != ""
}

// appendHTML appends the HTML part's body, quoted-printable encoded.
func (m *Message) appendHTML(dst []byte) []byte {
	switch {
	case len(m.htmlQP) > 0:
		return append(dst, m.htmlQP...)
	case len(m.htmlBody) > 0:
		return appendQP(dst, m.htmlBody)
	}
	return appendQP(dst, m.HTML)
}

// appendText appends the text part's body, derived from the HTML when the
// message has none.
func (m *Message) appendText(dst []byte) []byte {
	switch {
	case len(m.textQP) > 0:
		return append(dst, m.textQP...)
	case len(m.textBody) > 0:
		return appendQP(dst, m.textBody)
	case m.Text != "":
		return appendQP(dst, m.Text)
	case len(m.htmlBody) > 0:
		return appendQP(dst, TextFromHTML(string(m.htmlBody)))
	}
	return appendQP(dst, TextFromHTML(m.HTML))
}

// appendText appends an unstructured header (Subject, extra headers): as
// is when it is ASCII, else as encoded-words. A value with a word too long
// for one line is encoded too, since encoded-words can be split anywhere.
func (w *mimeWriter) appendText(dst []byte, name, value string) []byte {
	if !needsEncoding(value) {
		return appendFolded(dst, name, value)
	}
	w.scratch = appendQWords(w.scratch[:0], value)
	return appendFolded(dst, name, w.scratch)
}

// maxHeaderWord is the longest run without spaces a header value may keep
// unencoded (RFC 5322 allows 998 characters per line).
const maxHeaderWord = 900

// needsEncoding reports whether an unstructured header value must become
// encoded-words: it has bytes outside printable ASCII, or a word too long to
// fold.
func needsEncoding(s string) bool {
	word := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ':
			word = 0
			continue
		case c < ' ' || c > '~':
			return true
		}
		if word++; word > maxHeaderWord {
			return true
		}
	}
	return false
}

// appendFolded appends "name: value\r\n", folding at the spaces of value so
// that lines stay within 78 characters where its words allow. value is ASCII
// without CR or LF.
func appendFolded[S string | []byte](dst []byte, name string, value S) []byte {
	dst = append(dst, name...)
	dst = append(dst, ':')
	col := len(name) + 1
	for i := 0; ; {
		j := i
		for j < len(value) && value[j] != ' ' {
			j++
		}
		// Every word follows a space: the value's own, or the one after the
		// colon. Folding turns it into CRLF and that space; never before an
		// empty word, which would leave a line of white space only.
		if j > i && col+1+(j-i) > 78 {
			dst = append(dst, "\r\n"...)
			col = 0
		}
		dst = append(dst, ' ')
		dst = append(dst, value[i:j]...)
		col += 1 + j - i
		if j >= len(value) {
			break
		}
		i = j + 1
	}
	return append(dst, "\r\n"...)
}

// appendQWords appends s as RFC 2047 encoded-words (UTF-8, Q encoding)
// separated by spaces, each at most 75 characters, never splitting a
// character between two words.
func appendQWords(dst []byte, s string) []byte {
	const prefix, suffix = "=?UTF-8?q?", "?="
	const room = 75 - len(prefix) - len(suffix)
	dst = append(dst, prefix...)
	used := 0
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		n := 0
		for k := i; k < i+size; k++ {
			n += qWordLen(s[k])
		}
		if used+n > room {
			dst = append(dst, suffix+" "+prefix...)
			used = 0
		}
		for k := i; k < i+size; k++ {
			c := s[k]
			switch {
			case c == ' ':
				dst = append(dst, '_')
			case qWordLen(c) == 1:
				dst = append(dst, c)
			default:
				dst = append(dst, '=', upperHex[c>>4], upperHex[c&15])
			}
		}
		used += n
		i += size
	}
	return append(dst, suffix...)
}

// qWordLen is the length of byte c in a Q-encoded word.
func qWordLen(c byte) int {
	if c == ' ' || c > ' ' && c <= '~' && c != '=' && c != '?' && c != '_' {
		return 1
	}
	return 3
}

const upperHex = "0123456789ABCDEF"

// qpRun marks the bytes quoted-printable keeps as they are: printable ASCII
// except "=", and space and tab except at the end of a line.
var qpRun = func() (t [256]bool) {
	for c := '!'; c <= '~'; c++ {
		t[c] = c != '='
	}
	t[' '], t['\t'] = true, true
	return t
}()

// qpPlain8 reports whether the eight bytes of x are all kept as they are
// (space included, tab not): printable ASCII from ' ' to '~' except '='.
// Checking a word at a time made the encoding of a newsletter's HTML about a
// fifth faster (BenchmarkAppendQP); it serves the values a send encodes per
// recipient (Template.AppendQPTo) and every body encoded whole.
func qpPlain8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := (x - ones*' ') & ^x & highs         // a byte under ' '
	above := ((x + ones*(0x7f-'~')) | x) & highs // a byte over '~'
	eq := x ^ ones*'='
	equals := (eq - ones) & ^eq & highs // a byte that is '='
	return below|above|equals == 0
}

// qpLineMax is the longest encoded line without its soft line break's "=".
const qpLineMax = 75

// appendQP appends s quoted-printable encoded (RFC 2045): line breaks (LF,
// CRLF or CR) become CRLF, lines are at most 76 characters with soft line
// breaks, trailing spaces and a leading dot are encoded.
func appendQP[S string | []byte](dst []byte, s S) []byte {
	dst, _ = appendQPAt(dst, s, 0)
	return dst
}

// appendQPAt is appendQP for s starting in column col of the current line;
// it returns the column where s ended. A space or tab at the end of s is
// encoded: what follows may be a line break.
func appendQPAt[S string | []byte](dst []byte, s S, col int) ([]byte, int) {
	for i := 0; i < len(s); {
		c := s[i]
		if qpRun[c] {
			if col == qpLineMax {
				dst = append(dst, "=\r\n"...)
				col = 0
			}
			if col == 0 && c == '.' {
				dst = append(dst, "=2E"...)
				col, i = 3, i+1
				continue
			}
			// The run of bytes kept as they are that fits on the line.
			j, end := i+1, min(len(s), i+qpLineMax-col)
			for j+8 <= end && qpPlain8(uint64(s[j])|uint64(s[j+1])<<8|uint64(s[j+2])<<16|uint64(s[j+3])<<24|
				uint64(s[j+4])<<32|uint64(s[j+5])<<40|uint64(s[j+6])<<48|uint64(s[j+7])<<56) {
				j += 8
			}
			for j < end && qpRun[s[j]] {
				j++
			}
			if k := j - 1; (s[k] == ' ' || s[k] == '\t') && (j == len(s) || s[j] == '\r' || s[j] == '\n') {
				j = k // a space at the end of a line is encoded below
			}
			if j > i {
				dst = append(dst, s[i:j]...)
				col, i = col+j-i, j
				continue
			}
		}
		switch c {
		case '\n':
			dst = append(dst, '\r', '\n')
			col, i = 0, i+1
			continue
		case '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
			dst = append(dst, '\r', '\n')
			col, i = 0, i+1
			continue
		}
		if col+3 > qpLineMax {
			dst = append(dst, "=\r\n"...)
			col = 0
		}
		dst = append(dst, '=', upperHex[c>>4], upperHex[c&15])
		col, i = col+3, i+1
	}
	return dst, col
}

// appendWithCalendar appends the body of a message with an invitation:
//
//	multipart/mixed
//	  multipart/alternative: text, HTML (when given), text/calendar; method=…
//	  application/ics attachment invite.ics (the same object)
//
// as calendar programs send invitations themselves.
func (w *mimeWriter) appendWithCalendar(dst []byte, m *Message) []byte {
	w.seq++
	mixed := w.boundary + strconv.FormatUint(w.seq, 36) + "m"
	alt := w.boundary + strconv.FormatUint(w.seq, 36) + "a"
	method := calendarMethod(m.Calendar)
	dst = append(dst, "Content-Type: multipart/mixed;\r\n boundary=\""+mixed+"\"\r\n\r\n--"+mixed+"\r\n"...)
	dst = append(dst, "Content-Type: multipart/alternative;\r\n boundary=\""+alt+"\"\r\n\r\n--"+alt+"\r\n"+mimeTextPart...)
	dst = m.appendText(dst)
	if m.hasHTML() {
		dst = append(dst, "\r\n--"+alt+"\r\n"+mimeHTMLPart...)
		dst = m.appendHTML(dst)
	}
	dst = append(dst, "\r\n--"+alt+"\r\nContent-Type: text/calendar; charset=UTF-8; method="+method+
		"\r\nContent-Transfer-Encoding: base64\r\n\r\n"...)
	dst = appendBase64Lines(dst, m.Calendar)
	dst = append(dst, "--"+alt+"--\r\n\r\n--"+mixed+"\r\n"+
		"Content-Type: application/ics; name=\"invite.ics\"\r\nContent-Disposition: attachment; filename=\"invite.ics\"\r\n"+
		"Content-Transfer-Encoding: base64\r\n\r\n"...)
	dst = appendBase64Lines(dst, m.Calendar)
	return append(dst, "--"+mixed+"--\r\n"...)
}

// calendarMethod is the METHOD of an iCalendar object (REQUEST when it names
// none or an unusual one), for the text/calendar part's method parameter.
func calendarMethod(cal string) string {
	for line := range strings.Lines(cal) {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "METHOD:"); ok {
			for _, c := range v {
				if c < 'A' || c > 'Z' {
					return "REQUEST"
				}
			}
			if v != "" {
				return v
			}
		}
	}
	return "REQUEST"
}

// appendBase64Lines appends s in base64, in lines of 76 characters, each
// ended by CRLF.
func appendBase64Lines(dst []byte, s string) []byte {
	enc := base64.StdEncoding.AppendEncode(nil, []byte(s))
	for len(enc) > 76 {
		dst = append(dst, enc[:76]...)
		dst = append(dst, "\r\n"...)
		enc = enc[76:]
	}
	dst = append(dst, enc...)
	return append(dst, "\r\n"...)
}
