package mailer

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/textproto"
	"strings"
)

// ReadMessage is a stored message taken apart for display (the development
// outbox): its header fields in order with decoded values, and its first plain
// text and HTML bodies, decoded.
type ReadMessage struct {
	Headers     []HeaderField
	Text        string
	HTML        string
	Attachments []ReadAttachment
}

// ReadAttachment is an attachment part of a message, decoded.
type ReadAttachment struct {
	Filename    string
	ContentType string
	Data        []byte
}

// HeaderField is one header field of a message.
type HeaderField struct {
	Name  string
	Value string
}

// maxMIMEDepth bounds how deep ReadMail follows nested multiparts.
const maxMIMEDepth = 8

// ReadMail parses a whole RFC 5322 message. Encoded words in header values
// (RFC 2047) and the bodies' transfer encodings (quoted-printable, base64) are
// decoded; the bodies' charset is taken as UTF-8, which is what the mailer
// writes. A part that cannot be read ends the walk with an error.
func ReadMail(raw []byte) (ReadMessage, error) {
	head, body, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		head, body, _ = bytes.Cut(raw, []byte("\n\n"))
	}
	var m ReadMessage
	dec := mime.WordDecoder{}
	for _, line := range unfold(string(head)) {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		if d, err := dec.DecodeHeader(value); err == nil {
			value = d
		}
		m.Headers = append(m.Headers, HeaderField{Name: strings.TrimSpace(name), Value: value})
	}
	h := textproto.MIMEHeader{}
	for _, f := range m.Headers {
		h.Add(f.Name, f.Value)
	}
	if err := m.walk(h, bytes.NewReader(body), 0); err != nil {
		return m, fmt.Errorf("mailer: read mail: %w", err)
	}
	return m, nil
}

// unfold joins folded header lines (continuations start with a space or tab).
func unfold(head string) []string {
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(head, "\r\n", "\n"), "\n") {
		if (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")) && len(out) > 0 {
			out[len(out)-1] += " " + strings.TrimSpace(line)
			continue
		}
		out = append(out, line)
	}
	return out
}

func (m *ReadMessage) walk(h textproto.MIMEHeader, body io.Reader, depth int) error {
	ct := h.Get("Content-Type")
	if ct == "" {
		ct = "text/plain"
	}
	mediaType, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return err
	}
	if strings.HasPrefix(mediaType, "multipart/") {
		if depth >= maxMIMEDepth {
			return fmt.Errorf("multipart nested deeper than %d", maxMIMEDepth)
		}
		mr := multipart.NewReader(body, params["boundary"])
		for {
			part, err := mr.NextRawPart() // the transfer encoding is decoded below
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if err := m.walk(part.Header, part, depth+1); err != nil {
				return err
			}
		}
	}
	attachment := strings.HasPrefix(strings.ToLower(h.Get("Content-Disposition")), "attachment")
	if !attachment && (mediaType != "text/plain" || m.Text != "") && (mediaType != "text/html" || m.HTML != "") {
		return nil
	}
	var r io.Reader = body
	switch strings.ToLower(strings.TrimSpace(h.Get("Content-Transfer-Encoding"))) {
	case "quoted-printable":
		r = quotedprintable.NewReader(body)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, &newlineSkipper{r: bufio.NewReader(body)})
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if attachment {
		_, dp, _ := mime.ParseMediaType(h.Get("Content-Disposition"))
		m.Attachments = append(m.Attachments, ReadAttachment{Filename: dp["filename"], ContentType: mediaType, Data: b})
		return nil
	}
	text := strings.ToValidUTF8(string(b), "\uFFFD")
	if mediaType == "text/plain" {
		m.Text = strings.ReplaceAll(text, "\r\n", "\n")
	} else {
		m.HTML = text
	}
	return nil
}

// newlineSkipper drops line breaks, which base64 bodies carry every 76 characters.
type newlineSkipper struct{ r *bufio.Reader }

func (s *newlineSkipper) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c, err := s.r.ReadByte()
		if err != nil {
			return n, err
		}
		if c == '\r' || c == '\n' {
			continue
		}
		p[n] = c
		n++
	}
	return n, nil
}
