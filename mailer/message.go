package mailer

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/mail"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/k3a/html2text"
)

// This file defines messages: one recipient per Message, rendered to RFC 5322
// by the MIME writer in mime.go. The rules:
//
//   - Header safety: every free-text header value (subject, display names, extra
//     headers) has its control characters (CR, LF, NUL, TAB …) replaced by spaces
//     before encoding, so no value can start a header of its own. Addresses must be
//     bare addresses and parse with net/mail; URLs must parse with net/url, which
//     refuses control characters.
//   - Non-ASCII header text is RFC 2047 encoded (Q encoding, UTF-8); bodies are
//     quoted-printable UTF-8.
//   - HTML without a text part gets one derived with html2text, so every HTML mail
//     is multipart/alternative (text first, HTML last: the preferred part).
//   - Message-ID is random at the From domain; it is filled in on first use so the
//     caller can store it (email.sent events carry it). A campaign mail's is
//     derived from the campaign and the recipient instead (campaignMessageID), so
//     that every attempt at one recipient carries the same one.
//   - An unsubscribe URL adds List-Unsubscribe; an https one also adds
//     List-Unsubscribe-Post: List-Unsubscribe=One-Click (RFC 8058, which allows
//     one-click only over https; an http URL in development gets the plain header).

// ErrInvalidMessage means a Message cannot be built (missing or malformed field).
// It is permanent for that message but no bounce: the recipient was never asked.
var ErrInvalidMessage = errors.New("mailer: invalid message")

// Address is a mailbox: a bare email address and an optional display name.
type Address struct {
	Name  string
	Email string
}

// String formats the address for a header, RFC 2047-encoding a non-ASCII name.
func (a Address) String() string {
	return (&mail.Address{Name: cleanHeader(a.Name), Address: a.Email}).String()
}

// Message is one email to one recipient; an iCalendar invitation travels in
// Calendar, other files as attachments.
type Message struct {
	From Address
	To   Address
	// ReplyTo is an optional bare address for the Reply-To header.
	ReplyTo string
	// ReturnPath is the envelope sender (SMTP MAIL FROM), where bounces go;
	// empty: From.Email.
	ReturnPath string
	Subject    string
	// HTML is the HTML body; Text the plain-text body. With HTML alone, Text is
	// derived from it (TextFromHTML). At least one is required.
	HTML string
	Text string
	// UnsubscribeURL is the recipient's personal unsubscribe URL (http or https);
	// empty: no List-Unsubscribe headers (transactional mail).
	UnsubscribeURL string
	// Headers are extra header fields, e.g. "X-Rundbrief-Campaign" or
	// "Precedence". Names are letters, digits and hyphens; the headers this type
	// sets itself (From, To, Subject, Message-ID, List-Unsubscribe, MIME headers …)
	// cannot be given here.
	Headers map[string]string
	// MessageID without angle brackets. Empty: a new random ID at the From domain
	// is set on first Send or WriteTo, so the caller can read it afterwards.
	MessageID string
	// Date of the message; zero: the time of first Send or WriteTo.
	Date time.Time
	// Calendar is an optional iCalendar object (RFC 5545) carried as an
	// invitation (iMIP, RFC 6047): a text/calendar part with the object's
	// METHOD beside the text and HTML, and the same object as the attachment
	// invite.ics, so that calendar programs offer to add or remove it.
	Calendar string

	// htmlBody and textBody, when set, are the bodies as the send pipeline
	// rendered them into its reused buffers, used instead of HTML and Text.
	// They are valid until the pipeline renders the next message, which it
	// does after Send returned.
	htmlBody, textBody []byte
	// htmlQP and textQP are such bodies already quoted-printable encoded
	// (Template.AppendQPTo), used instead of the others.
	htmlQP, textQP []byte
	// attachments, when set, are the send's attachment parts, encoded once
	// (attach.go): the body then goes into a multipart/mixed with them.
	attachments *AttachmentParts
}

// reservedHeaders are set from the Message's own fields only.
var reservedHeaders = []string{
	"from", "to", "cc", "bcc", "reply-to", "sender", "return-path", "subject", "date", "message-id",
	"mime-version", "content-type", "content-transfer-encoding", "list-unsubscribe", "list-unsubscribe-post",
}

// NewMessageID returns a new unique Message-ID (without angle brackets) at the
// domain of fromEmail: 130 random bits and the domain.
func NewMessageID(fromEmail string) string {
	return strings.ToLower(rand.Text()) + "@" + messageIDDomain(fromEmail)
}

// messageIDInfo separates the MACs of Message-IDs from those of the link
// tokens made with the same key: a token's signed bytes start with its version
// byte (1), these with this text.
const messageIDInfo = "rundbrief message-id v1\x00"

// campaignMessageID returns the Message-ID (without angle brackets) of a
// campaign's mail to one recipient, at the domain of fromEmail: the same for
// every attempt, so that a mail sent again after a crash (sent, but its outcome
// not yet recorded) carries the id of the first and receivers that drop
// repeated ids drop it. The left part is a MAC of the two ids under the link
// token key (96 bits, base32): unique like the random ids, and it reveals
// neither the ids nor how many mails the service sent.
func campaignMessageID(tokens *Tokens, campaignID, recipientID int64, fromEmail string) string {
	var raw [len(messageIDInfo) + 2*binary.MaxVarintLen64 + tokenMACLen]byte
	b := append(raw[:0], messageIDInfo...)
	b = binary.AppendUvarint(b, uint64(campaignID))
	b = binary.AppendUvarint(b, uint64(recipientID))
	n := len(b)
	b = tokens.appendMAC(b, false, "")
	return strings.ToLower(messageIDEncoding.EncodeToString(b[n:])) + "@" + messageIDDomain(fromEmail)
}

// messageIDEncoding writes the MAC of a campaign mail's Message-ID.
var messageIDEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// messageIDDomain is the right part of a Message-ID from fromEmail: its domain,
// or localhost.
func messageIDDomain(fromEmail string) string {
	if at := strings.LastIndexByte(fromEmail, '@'); at >= 0 && at < len(fromEmail)-1 {
		return strings.ToLower(fromEmail[at+1:])
	}
	return "localhost"
}

// TextFromHTML derives a plain-text part from HTML: block elements become line
// breaks, links keep their text with the URL in angle brackets, lists get dashes,
// head, style and script are dropped.
func TextFromHTML(html string) string {
	text := html2text.HTML2TextWithOptions(html, html2text.WithUnixLineBreaks(), html2text.WithLinksInnerText(), html2text.WithListSupport())
	return strings.TrimSpace(text) + "\n"
}

// Validate reports the first problem that keeps the message from being built, as
// an error wrapping ErrInvalidMessage.
func (m *Message) Validate() error { return m.validate(nil) }

// validate is Validate; known, when set, says which addresses passed before
// (a campaign's messages share From and Reply-To).
func (m *Message) validate(known *validAddresses) error {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidMessage, fmt.Sprintf(format, args...))
	}
	if !(known != nil && known.from == m.From.Email && m.From.Email != "") && !bareAddress(m.From.Email) {
		return invalid("from address %q", m.From.Email)
	}
	if !bareAddress(m.To.Email) {
		return invalid("to address %q", m.To.Email)
	}
	if m.ReplyTo != "" && !(known != nil && known.replyTo == m.ReplyTo) && !bareAddress(m.ReplyTo) {
		return invalid("reply-to address %q", m.ReplyTo)
	}
	if m.ReturnPath != "" && !bareAddress(m.ReturnPath) {
		return invalid("return path %q", m.ReturnPath)
	}
	if m.HTML == "" && m.Text == "" && len(m.htmlBody) == 0 && len(m.textBody) == 0 && len(m.htmlQP) == 0 && len(m.textQP) == 0 {
		return invalid("no content")
	}
	if m.UnsubscribeURL != "" {
		u, err := url.Parse(m.UnsubscribeURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsAny(m.UnsubscribeURL, "<> ,") {
			return invalid("unsubscribe URL %q", m.UnsubscribeURL)
		}
	}
	if m.MessageID != "" && !validMessageID(m.MessageID) {
		return invalid("message id %q", m.MessageID)
	}
	for name := range m.Headers {
		if !validHeaderName(name) {
			return invalid("header name %q", name)
		}
		for _, r := range reservedHeaders {
			if strings.EqualFold(name, r) {
				return invalid("header %q is set from the message's fields", name)
			}
		}
	}
	return nil
}

// bareAddress accepts local@domain with no display name, comments or line breaks.
func bareAddress(s string) bool {
	if s == "" || len(s) > 254 || strings.ContainsAny(s, " <>\"\r\n\t") {
		return false
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && a.Name == ""
}

// validMessageID accepts id-left@id-right with printable ASCII and no brackets.
func validMessageID(s string) bool {
	at := strings.IndexByte(s, '@')
	if at <= 0 || at == len(s)-1 || len(s) > 250 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '<' || c == '>' || c == '"' || c == '\\' || c == '(' || c == ')' || c == ',' {
			return false
		}
	}
	return true
}

func validHeaderName(s string) bool {
	if s == "" || len(s) > 76 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// cleanHeader makes a free-text header value safe: every control character (CR and
// LF above all) becomes a space, and the ends are trimmed.
func cleanHeader(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return strings.TrimSpace(s)
	}
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s))
}

// prepare fills MessageID and Date when empty and validates the message.
// known, when set, remembers the From and Reply-To addresses that passed.
func (m *Message) prepare(known *validAddresses) error {
	if m.MessageID == "" {
		m.MessageID = NewMessageID(m.From.Email)
	}
	if m.Date.IsZero() {
		m.Date = time.Now()
	}
	if err := m.validate(known); err != nil {
		return err
	}
	if known != nil {
		known.from, known.replyTo = m.From.Email, m.ReplyTo
	}
	return nil
}

// validAddresses are the From and Reply-To addresses of the last message a
// mimeWriter wrote, which passed validation.
type validAddresses struct{ from, replyTo string }

// envelope returns the SMTP MAIL FROM and RCPT TO addresses.
func (m *Message) envelope() (from, to string) {
	from = m.ReturnPath
	if from == "" {
		from = m.From.Email
	}
	return from, m.To.Email
}

// WriteTo writes the message in RFC 5322 form (CRLF line ends) to w, filling
// MessageID and Date first when they are empty.
func (m *Message) WriteTo(w io.Writer) (int64, error) {
	b, err := m.Bytes()
	if err != nil {
		return 0, err
	}
	n, err := w.Write(b)
	return int64(n), err
}

// Bytes returns the message in RFC 5322 form, as WriteTo writes it.
func (m *Message) Bytes() ([]byte, error) {
	return newMIMEWriter().appendMessage(nil, m)
}
