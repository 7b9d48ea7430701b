package mailer_test

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/mailer"
)

// parsed is a message read back with net/mail and mime/multipart.
type parsed struct {
	header mail.Header
	raw    string
	parts  []part // the body parts, in order, transfer-decoded
}

type part struct {
	contentType string
	charset     string
	body        string
}

func parse(t *testing.T, raw []byte) parsed {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("net/mail cannot read the message: %v\n%s", err, raw)
	}
	p := parsed{header: msg.Header, raw: string(raw)}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatalf("Content-Type: %v", err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		body, err := io.ReadAll(msg.Body)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Header.Get("Content-Transfer-Encoding") == "quoted-printable" {
			body = qpDecode(t, body)
		}
		p.parts = append(p.parts, part{contentType: mediaType, charset: params["charset"], body: string(body)})
		return p
	}
	if mediaType != "multipart/alternative" {
		t.Fatalf("Content-Type %q, want multipart/alternative", mediaType)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		pt, err := mr.NextPart() // decodes quoted-printable itself
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("multipart: %v", err)
		}
		body, err := io.ReadAll(pt)
		if err != nil {
			t.Fatal(err)
		}
		ct, ctParams, err := mime.ParseMediaType(pt.Header.Get("Content-Type"))
		if err != nil {
			t.Fatal(err)
		}
		p.parts = append(p.parts, part{contentType: ct, charset: ctParams["charset"], body: string(body)})
	}
	return p
}

func qpDecode(t *testing.T, b []byte) []byte {
	t.Helper()
	out, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func decodeHeader(t *testing.T, v string) string {
	t.Helper()
	s, err := new(mime.WordDecoder).DecodeHeader(v)
	if err != nil {
		t.Fatalf("decode header %q: %v", v, err)
	}
	return s
}

func newsletter() *mailer.Message {
	return &mailer.Message{
		From:           mailer.Address{Name: "Jürgen Müller, Bäckerei", Email: "news@baeckerei.example"},
		To:             mailer.Address{Name: "Änne Groß", Email: "anne@example.org"},
		ReplyTo:        "hilfe@baeckerei.example",
		Subject:        "Grüße aus Köln – Ihr Newsletter für März (Brötchen & Öfen)",
		HTML:           `<html><head><style>p{color:red}</style></head><body><h1>Hallo Änne</h1><p>Neue Brötchen &amp; mehr.</p><p><a href="https://baeckerei.example/angebot?x=1">Zum Angebot</a></p></body></html>`,
		UnsubscribeURL: "https://rundbrief.example/unsubscribe/tok123",
		Headers:        map[string]string{"X-Rundbrief-Campaign": "42"},
	}
}

func TestMessageMIME(t *testing.T) {
	m := newsletter()
	raw, err := m.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, raw)

	from, err := p.header.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Name != "Jürgen Müller, Bäckerei" || from[0].Address != "news@baeckerei.example" {
		t.Errorf("From = %v (%v), want Jürgen Müller, Bäckerei <news@baeckerei.example>", from, err)
	}
	to, err := p.header.AddressList("To")
	if err != nil || len(to) != 1 || to[0].Name != "Änne Groß" || to[0].Address != "anne@example.org" {
		t.Errorf("To = %v (%v)", to, err)
	}
	replyTo, err := p.header.AddressList("Reply-To")
	if err != nil || len(replyTo) != 1 || replyTo[0].Address != "hilfe@baeckerei.example" {
		t.Errorf("Reply-To = %v (%v)", replyTo, err)
	}
	rawSubject := p.header.Get("Subject")
	if !strings.Contains(rawSubject, "=?UTF-8?") {
		t.Errorf("Subject %q is not RFC 2047 encoded", rawSubject)
	}
	if got := decodeHeader(t, rawSubject); got != m.Subject {
		t.Errorf("Subject = %q, want %q", got, m.Subject)
	}
	if got, want := p.header.Get("Message-Id"), "<"+m.MessageID+">"; got != want || !strings.HasSuffix(m.MessageID, "@baeckerei.example") {
		t.Errorf("Message-ID = %q, MessageID field %q: want <…@baeckerei.example> equal to the field", got, m.MessageID)
	}
	if got := p.header.Get("List-Unsubscribe"); got != "<https://rundbrief.example/unsubscribe/tok123>" {
		t.Errorf("List-Unsubscribe = %q", got)
	}
	if got := p.header.Get("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe-Post = %q", got)
	}
	if got := p.header.Get("X-Rundbrief-Campaign"); got != "42" {
		t.Errorf("X-Rundbrief-Campaign = %q", got)
	}
	if _, err := p.header.Date(); err != nil {
		t.Errorf("Date: %v", err)
	}
	if p.header.Get("Mime-Version") != "1.0" {
		t.Errorf("MIME-Version = %q", p.header.Get("Mime-Version"))
	}
	if strings.Contains(p.raw, "go-mail") {
		t.Error("the library's User-Agent leaked into the message")
	}

	if len(p.parts) != 2 {
		t.Fatalf("%d parts, want text and html", len(p.parts))
	}
	text, html := p.parts[0], p.parts[1]
	if text.contentType != "text/plain" || !strings.EqualFold(text.charset, "utf-8") {
		t.Errorf("first part %s charset %s, want text/plain UTF-8", text.contentType, text.charset)
	}
	if html.contentType != "text/html" || !strings.EqualFold(html.charset, "utf-8") {
		t.Errorf("second part %s charset %s, want text/html UTF-8", html.contentType, html.charset)
	}
	if html.body != m.HTML {
		t.Errorf("html part = %q, want %q", html.body, m.HTML)
	}
	for _, want := range []string{"Hallo Änne", "Neue Brötchen & mehr.", "Zum Angebot <https://baeckerei.example/angebot?x=1>"} {
		if !strings.Contains(text.body, want) {
			t.Errorf("derived text part lacks %q:\n%s", want, text.body)
		}
	}
	for _, unwanted := range []string{"<h1>", "color:red"} {
		if strings.Contains(text.body, unwanted) {
			t.Errorf("derived text part contains %q:\n%s", unwanted, text.body)
		}
	}
	for _, line := range strings.Split(p.raw, "\r\n") {
		if len(line) > 998 {
			t.Errorf("line longer than RFC 5322 allows: %d", len(line))
		}
	}
	if strings.Contains(strings.ReplaceAll(p.raw, "\r\n", ""), "\n") {
		t.Error("bare LF in the message: every line must end in CRLF")
	}
}

func TestMessageKeepsGivenText(t *testing.T) {
	m := newsletter()
	m.Text = "Hallo Änne,\nhier der Text.\n"
	raw, err := m.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, raw)
	if len(p.parts) != 2 || p.parts[0].body != "Hallo Änne,\r\nhier der Text.\r\n" {
		t.Fatalf("text part = %q", p.parts[0].body)
	}
}

func TestMessageTextOnly(t *testing.T) {
	m := newsletter()
	m.HTML, m.Text = "", "Nur Text, ohne HTML: Grüße."
	raw, err := m.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, raw)
	if len(p.parts) != 1 || p.parts[0].contentType != "text/plain" || p.parts[0].body != m.Text {
		t.Fatalf("parts = %+v, want one text/plain part", p.parts)
	}
}

func TestMessageUnsubscribeHeaders(t *testing.T) {
	cases := []struct {
		url      string
		list     string
		oneClick bool
	}{
		{"https://rundbrief.example/unsubscribe/a", "<https://rundbrief.example/unsubscribe/a>", true},
		// RFC 8058 allows one-click only over https: a development base URL keeps the plain header.
		{"http://127.0.0.1:8080/unsubscribe/a", "<http://127.0.0.1:8080/unsubscribe/a>", false},
		{"", "", false},
	}
	for _, c := range cases {
		m := newsletter()
		m.UnsubscribeURL = c.url
		raw, err := m.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		p := parse(t, raw)
		if got := p.header.Get("List-Unsubscribe"); got != c.list {
			t.Errorf("%q: List-Unsubscribe = %q, want %q", c.url, got, c.list)
		}
		if got := p.header.Get("List-Unsubscribe-Post") != ""; got != c.oneClick {
			t.Errorf("%q: List-Unsubscribe-Post present = %t, want %t", c.url, got, c.oneClick)
		}
	}
}

// Values with CR/LF must never start a header line of their own.
func TestMessageHeaderInjection(t *testing.T) {
	m := newsletter()
	m.Subject = "Hallo\r\nBcc: evil@attacker.example\r\n\r\nbody"
	m.From.Name = "Shop\r\nBcc: evil@attacker.example"
	m.To.Name = "Kunde\nX-Evil: 1"
	m.Headers = map[string]string{"X-Rundbrief-Campaign": "7\r\nBcc: evil@attacker.example"}
	raw, err := m.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, raw)
	headerBlock, _, _ := strings.Cut(p.raw, "\r\n\r\n")
	for _, line := range strings.Split(headerBlock, "\r\n") {
		l := strings.ToLower(line)
		if strings.HasPrefix(l, "bcc:") || strings.HasPrefix(l, "x-evil:") {
			t.Errorf("injected header line %q", line)
		}
	}
	if len(p.header["Bcc"]) != 0 || len(p.header["X-Evil"]) != 0 {
		t.Errorf("injected headers parsed: %v", p.header)
	}
	if got := decodeHeader(t, p.header.Get("Subject")); strings.ContainsAny(got, "\r\n") || !strings.HasPrefix(got, "Hallo") {
		t.Errorf("Subject = %q", got)
	}
	if len(p.parts) != 2 || p.parts[1].body != m.HTML {
		t.Error("the body changed")
	}
}

func TestMessageValidate(t *testing.T) {
	cases := []struct {
		name   string
		change func(m *mailer.Message)
	}{
		{"no from", func(m *mailer.Message) { m.From.Email = "" }},
		{"from with name", func(m *mailer.Message) { m.From.Email = "Shop <news@example.com>" }},
		{"to with CRLF", func(m *mailer.Message) { m.To.Email = "anne@example.org\r\nBcc: x@y.example" }},
		{"bad to", func(m *mailer.Message) { m.To.Email = "not-an-address" }},
		{"bad reply-to", func(m *mailer.Message) { m.ReplyTo = "a@b.example, c@d.example" }},
		{"bad return path", func(m *mailer.Message) { m.ReturnPath = "bounce" }},
		{"no content", func(m *mailer.Message) { m.HTML, m.Text = "", "" }},
		{"javascript unsubscribe", func(m *mailer.Message) { m.UnsubscribeURL = "javascript:alert(1)" }},
		{"mailto unsubscribe", func(m *mailer.Message) { m.UnsubscribeURL = "mailto:u@example.com" }},
		{"unsubscribe with CRLF", func(m *mailer.Message) { m.UnsubscribeURL = "https://x.example/u\r\nBcc: y@z.example" }},
		{"unsubscribe with bracket", func(m *mailer.Message) { m.UnsubscribeURL = "https://x.example/u>, <https://evil.example" }},
		{"reserved header", func(m *mailer.Message) { m.Headers = map[string]string{"bcc": "x@y.example"} }},
		{"reserved header case", func(m *mailer.Message) { m.Headers = map[string]string{"List-unsubscribe": "<https://evil.example>"} }},
		{"header name with colon", func(m *mailer.Message) { m.Headers = map[string]string{"X-A: b\r\nBcc": "x"} }},
		{"bad message id", func(m *mailer.Message) { m.MessageID = "<abc@x>" }},
		{"message id without domain", func(m *mailer.Message) { m.MessageID = "abc" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newsletter()
			c.change(m)
			if _, err := m.Bytes(); !errors.Is(err, mailer.ErrInvalidMessage) {
				t.Fatalf("Bytes() error = %v, want ErrInvalidMessage", err)
			}
		})
	}
	if err := newsletter().Validate(); err != nil {
		t.Fatalf("valid message: %v", err)
	}
}

func TestMessageIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		id := mailer.NewMessageID("News@Example.COM")
		if seen[id] || !strings.HasSuffix(id, "@example.com") || strings.ContainsAny(id, "<> ") {
			t.Fatalf("message id %q duplicate or malformed", id)
		}
		seen[id] = true
	}
	m := newsletter()
	m.MessageID = "fixed.1@baeckerei.example"
	raw, err := m.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if got := parse(t, raw).header.Get("Message-Id"); got != "<fixed.1@baeckerei.example>" {
		t.Fatalf("given Message-ID not kept: %q", got)
	}
}

// Long and odd header values stay within RFC 5322's line length, fold only at
// spaces, and read back unchanged.
func TestMessageLongHeaders(t *testing.T) {
	m := newsletter()
	m.Subject = strings.Repeat("Lange Betreffzeile ", 12) + strings.Repeat("x", 1200)
	m.From.Name = `Shop "Zum Anker", Filiale Nord`
	m.To.Name = strings.Repeat("Müller-Lüdenscheidt ", 8)
	m.Headers = map[string]string{"X-B": "zwei", "X-A": "eins " + strings.Repeat("ü", 100)}
	raw, err := m.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, raw)
	headerBlock, _, _ := strings.Cut(p.raw, "\r\n\r\n")
	for _, line := range strings.Split(headerBlock, "\r\n") {
		if len(line) > 998 || (len(line) > 78 && strings.Contains(strings.TrimSpace(line), " ") && !strings.Contains(line, "Message-ID")) {
			t.Errorf("header line of %d characters: %.80q…", len(line), line)
		}
	}
	if got := decodeHeader(t, p.header.Get("Subject")); got != m.Subject {
		t.Errorf("Subject = %q", got)
	}
	from, err := p.header.AddressList("From")
	if err != nil || from[0].Name != m.From.Name {
		t.Errorf("From = %v (%v)", from, err)
	}
	to, err := p.header.AddressList("To")
	if err != nil || to[0].Name != strings.TrimSpace(m.To.Name) {
		t.Errorf("To = %v (%v)", to, err)
	}
	if decodeHeader(t, p.header.Get("X-A")) != m.Headers["X-A"] || p.header.Get("X-B") != "zwei" ||
		strings.Index(p.raw, "\r\nX-A:") > strings.Index(p.raw, "\r\nX-B:") {
		t.Errorf("extra headers X-A %q, X-B %q (in name order?)", p.header.Get("X-A"), p.header.Get("X-B"))
	}
}
