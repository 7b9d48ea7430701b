package inbox

import (
	"bufio"
	"errors"
	"io"
	"mime"
	"strings"
	"time"
	"unicode/utf8"

	gomessage "github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // decodes the usual non-UTF-8 charsets (ISO-8859-x, Windows-125x, …)
	"github.com/emersion/go-message/mail"
	"github.com/microcosm-cc/bluemonday"

	"github.com/rundbrief/rundbrief/store"
)

// How much of a message is kept: bodies beyond these sizes are cut, attachments
// only counted. A message is parsed as it streams from the server, so memory
// stays bounded by these, not by the message's size.
const (
	maxTextBytes  = 256 << 10
	maxHTMLBytes  = 512 << 10
	maxAttachList = 50
)

// parseMessage reads one RFC 5322 message from r (streamed) into what is
// stored. A message it cannot parse at all still yields its place (uid), so
// that the sync moves on.
func parseMessage(r io.Reader, policy *bluemonday.Policy) store.NewInboxMessage {
	var out store.NewInboxMessage
	mr, err := mail.CreateReader(bufio.NewReaderSize(r, 32<<10))
	if err != nil && !gomessage.IsUnknownCharset(err) && !gomessage.IsUnknownEncoding(err) {
		out.Subject = "(nicht lesbare Nachricht)"
		_, _ = io.Copy(io.Discard, r)
		return out
	}
	h := mr.Header
	if list, err := h.AddressList("From"); err == nil && len(list) > 0 {
		out.From = address(list[0])
	} else if raw := h.Get("From"); raw != "" {
		out.From = store.InboxAddress{Email: store.NormalizeEmail(strings.Trim(raw, "<> "))}
	}
	if list, err := h.AddressList("To"); err == nil {
		for _, a := range list {
			out.To = append(out.To, address(a))
		}
	}
	out.Subject, _ = h.Subject()
	out.Subject = cleanText(out.Subject, 998)
	out.MessageID, _ = h.MessageID()
	out.MessageID = cleanText(out.MessageID, 500)
	if ids, err := h.MsgIDList("In-Reply-To"); err == nil && len(ids) > 0 {
		out.InReplyTo = cleanText(ids[0], 500)
	}
	if ids, err := h.MsgIDList("References"); err == nil {
		for _, id := range ids {
			if len(out.References) < 100 {
				out.References = append(out.References, cleanText(id, 500))
			}
		}
	}
	if d, err := h.Date(); err == nil && store.ValidTime(d) {
		out.ReceivedAt = d
	}
	out.Automated = automated(h)

	var text, html strings.Builder
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if gomessage.IsUnknownCharset(err) && p != nil {
				_, _ = io.Copy(io.Discard, p.Body)
				continue
			}
			break
		}
		switch ph := p.Header.(type) {
		case *mail.InlineHeader:
			ct, _, _ := ph.ContentType()
			disp, _, _ := ph.ContentDisposition()
			switch {
			case disp == "attachment":
				out.Attachments = appendAttachment(out.Attachments, ph.Header.Get("Content-Type"), "", p.Body)
			case ct == "text/plain" && text.Len() < maxTextBytes:
				readInto(&text, p.Body, maxTextBytes)
			case ct == "text/html" && html.Len() < maxHTMLBytes:
				readInto(&html, p.Body, maxHTMLBytes)
			case strings.HasPrefix(ct, "text/"):
				_, _ = io.Copy(io.Discard, p.Body)
			default:
				out.Attachments = appendAttachment(out.Attachments, ct, "", p.Body)
			}
		case *mail.AttachmentHeader:
			name, _ := ph.Filename()
			ct, _, _ := ph.ContentType()
			out.Attachments = appendAttachment(out.Attachments, ct, name, p.Body)
		}
	}
	_, _ = io.Copy(io.Discard, r)
	out.Text = cleanText(text.String(), maxTextBytes)
	if html.Len() > 0 {
		out.HTML = cleanText(policy.Sanitize(html.String()), maxHTMLBytes)
		if out.Text == "" {
			out.Text = cleanText(textFromHTML(out.HTML), maxTextBytes)
		}
	}
	return out
}

func address(a *mail.Address) store.InboxAddress {
	email := a.Address
	if e, err := store.ParseEmail(email); err == nil {
		email = e
	} else {
		email = store.NormalizeEmail(email)
	}
	return store.InboxAddress{Email: cleanText(email, 320), Name: cleanText(a.Name, 200)}
}

// automated reports a mail that no automatic reply may answer: one sent by a
// machine (Auto-Submitted other than "no"), from a mailing list (List-Id,
// List-Unsubscribe) or marked bulk (Precedence bulk, list, junk).
func automated(h mail.Header) bool {
	if v := strings.ToLower(strings.TrimSpace(h.Get("Auto-Submitted"))); v != "" && v != "no" {
		return true
	}
	if h.Get("List-Id") != "" || h.Get("List-Unsubscribe") != "" || h.Get("X-Autoreply") != "" || h.Get("X-Autorespond") != "" {
		return true
	}
	switch strings.ToLower(strings.TrimSpace(h.Get("Precedence"))) {
	case "bulk", "list", "junk", "auto_reply":
		return true
	}
	return false
}

func appendAttachment(list []store.InboxAttachment, contentType, name string, body io.Reader) []store.InboxAttachment {
	n, _ := io.Copy(io.Discard, body)
	if len(list) >= maxAttachList {
		return list
	}
	if ct, _, err := mime.ParseMediaType(contentType); err == nil {
		contentType = ct
	}
	return append(list, store.InboxAttachment{Filename: cleanText(name, 255), ContentType: cleanText(contentType, 255), Size: n})
}

func readInto(b *strings.Builder, r io.Reader, limit int) {
	_, _ = io.Copy(b, io.LimitReader(r, int64(limit-b.Len())))
	_, _ = io.Copy(io.Discard, r)
}

// cleanText makes s storable: valid UTF-8 without NUL, at most max bytes.
func cleanText(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.ReplaceAll(s, "\x00", "")
	if len(s) > max {
		s = s[:max]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

// textFromHTML is a plain text of sanitised HTML, for messages without a text
// part (search and previews).
func textFromHTML(s string) string {
	p := bluemonday.StrictPolicy()
	s = strings.NewReplacer("<br>", "\n", "<br/>", "\n", "</p>", "\n\n", "</div>", "\n").Replace(s)
	return strings.TrimSpace(htmlUnescape(p.Sanitize(s)))
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&quot;", `"`, "&nbsp;", " ").Replace(s)
}

// receivedAt is when the message arrived: the server's INTERNALDATE, else its
// Date header, else now.
func receivedAt(internal, header time.Time) time.Time {
	switch {
	case !internal.IsZero() && store.ValidTime(internal):
		return internal
	case !header.IsZero():
		return header
	}
	return time.Now()
}
