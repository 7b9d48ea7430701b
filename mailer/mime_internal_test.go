package mailer

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"mime"
	"mime/quotedprintable"
	"net/textproto"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
)

// checkQP encodes s and checks the result: it decodes to s with CRLF line
// ends, has only printable ASCII, lines of at most 76 characters and no line
// that starts with a dot.
func checkQP(t *testing.T, s string) {
	t.Helper()
	checkEncodedQP(t, s, appendQP(nil, s))
}

// checkEncodedQP checks that enc is a valid quoted-printable encoding of s,
// as checkQP describes.
func checkEncodedQP(t *testing.T, s string, enc []byte) {
	t.Helper()
	dec, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(enc)))
	if err != nil {
		t.Fatalf("%q: decode %q: %v", s, enc, err)
	}
	want := strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n"), "\n", "\r\n")
	if string(dec) != want {
		t.Fatalf("%q encoded as %q decodes to %q", s, enc, dec)
	}
	for _, line := range strings.Split(string(enc), "\r\n") {
		if len(line) > 76 || strings.HasPrefix(line, ".") {
			t.Fatalf("%q: encoded line %q", s, line)
		}
		for i := 0; i < len(line); i++ {
			if c := line[i]; (c < ' ' || c > '~') && c != '\t' {
				t.Fatalf("%q: byte %#x in encoded line %q", s, c, line)
			}
		}
	}
}

func TestQuotedPrintable(t *testing.T) {
	for _, s := range []string{
		"", "a", ".", "..", ".a\n.b", "a \nb\t\nc ", "x = y", "Grüße aus Köln",
		strings.Repeat("a", 75), strings.Repeat("a", 76), strings.Repeat("a", 200),
		strings.Repeat("ä", 60), strings.Repeat("a", 74) + " b", strings.Repeat("a", 75) + ".b",
		strings.Repeat("a", 74) + "=", "line\r\nbreaks\rold\nmac", "trailing space \r\n", "tab\t",
	} {
		checkQP(t, s)
	}
	alphabet := []string{"a", "b", " ", "\t", ".", "=", "\r", "\n", "\r\n", "ä", "€", "\x00", "\x7f", "<p>", strings.Repeat("x", 40)}
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var b strings.Builder
		for range r.IntN(60) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		checkQP(t, b.String())
	}
}

// TestQPPlain8 checks the word-at-a-time test against the byte table: every
// byte value at every position of a word, and random words (a borrow or carry
// from one byte must not hide another).
func TestQPPlain8(t *testing.T) {
	want := func(w [8]byte) bool {
		for _, c := range w {
			if !qpRun[c] || c == '\t' {
				return false
			}
		}
		return true
	}
	word := func(w [8]byte) uint64 {
		var x uint64
		for i, c := range w {
			x |= uint64(c) << (8 * i)
		}
		return x
	}
	for c := range 256 {
		for pos := range 8 {
			w := [8]byte{'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a'}
			w[pos] = byte(c)
			if got := qpPlain8(word(w)); got != want(w) {
				t.Fatalf("%q: qpPlain8 = %v", w, got)
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	edges := []byte{0, 1, '\t', 0x1f, ' ', '!', '<', '=', '>', '~', 0x7f, 0x80, 0xc3, 0xfe, 0xff}
	for range 200000 {
		var w [8]byte
		for i := range w {
			if r.IntN(2) == 0 {
				w[i] = edges[r.IntN(len(edges))]
			} else {
				w[i] = byte(r.IntN(256))
			}
		}
		if got := qpPlain8(word(w)); got != want(w) {
			t.Fatalf("%q: qpPlain8 = %v", w, got)
		}
	}
}

// TestAppendQPTo renders random templates encoded (AppendQPTo) and checks
// that they decode to the plain rendering (AppendTo) under appendQP's rules,
// with the literals encoded in advance (PrepareQP) and without: literals and
// values meet at every column, with line breaks, dots, trailing spaces and a
// CR and LF split between a literal and a value.
func TestAppendQPTo(t *testing.T) {
	pieces := []string{"a", "b", " ", "\t", ".", "=", "\r", "\n", "\r\n", "ä", "€", "\x7f", "<p>",
		strings.Repeat("x", 40), strings.Repeat("y", 75), "{{vorname}}", "{{nachname}}", "{{email}}", "{{notiz}}"}
	random := func(r *rand.Rand, n int, names bool) string {
		var b strings.Builder
		for range r.IntN(n) {
			p := pieces[r.IntN(len(pieces))]
			if !names && strings.HasPrefix(p, "{{") {
				p = "z"
			}
			b.WriteString(p)
		}
		return b.String()
	}
	r := rand.New(rand.NewPCG(5, 6))
	var enc, scratch []byte
	for i := range 4000 {
		kind := KindText
		if i%2 == 1 {
			kind = KindHTML
		}
		tmpl := Compile(random(r, 40, true), kind, CompileOptions{})
		if i%3 != 0 {
			tmpl.PrepareQP()
		}
		v := &Values{Recipient: Recipient{FirstName: random(r, 6, false), LastName: random(r, 6, false),
			Email: random(r, 3, false), Note: random(r, 8, false)}}
		plain, err := tmpl.AppendTo(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		if enc, scratch, err = tmpl.AppendQPTo(enc[:0], scratch, v); err != nil {
			t.Fatal(err)
		}
		checkEncodedQP(t, string(plain), enc)
	}
	// With its buffers grown, a recipient's rendering allocates nothing.
	tmpl := Compile("<p>Hallo {{vorname}},</p>\n<p>"+strings.Repeat("Neuigkeiten aus der Backstube. ", 20)+"</p>", KindHTML, CompileOptions{})
	tmpl.PrepareQP()
	v := &Values{Recipient: Recipient{FirstName: "Änne"}}
	if allocs := testing.AllocsPerRun(100, func() {
		enc, scratch, _ = tmpl.AppendQPTo(enc[:0], scratch, v)
	}); allocs != 0 {
		t.Errorf("AppendQPTo: %v allocations per rendering", allocs)
	}
}

func FuzzQuotedPrintable(f *testing.F) {
	f.Add("Hallo .\n.Punkt = gleich \t\nGrüße")
	f.Fuzz(func(t *testing.T, s string) { checkQP(t, s) })
}

func TestFoldedHeaders(t *testing.T) {
	for _, value := range []string{
		"", "kurz", strings.Repeat("wort ", 40), strings.Repeat("x", 120) + " y", "zwei  Leerzeichen" + strings.Repeat(" z", 50),
	} {
		out := string(appendFolded(nil, "Subject", value))
		if !strings.HasSuffix(out, "\r\n") {
			t.Fatalf("%q: no CRLF at the end", out)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\r\n"), "\r\n")
		for i, line := range lines {
			if len(line) > 78 && strings.Contains(strings.TrimSpace(line), " ") {
				t.Errorf("%q: line %q could have been folded", value, line)
			}
			if i > 0 && (!strings.HasPrefix(line, " ") || strings.TrimSpace(line) == "") {
				t.Errorf("%q: continuation line %q", value, line)
			}
		}
		if unfolded := strings.Join(lines, ""); unfolded != "Subject: "+value {
			t.Errorf("unfolded %q, want %q", unfolded, "Subject: "+value)
		}
	}
}

func TestEncodedWords(t *testing.T) {
	for _, s := range []string{"Grüße", strings.Repeat("Änderung für Sie ", 20), "a_b=c?d", strings.Repeat("€", 40), strings.Repeat("x", 950)} {
		enc := string(appendQWords(nil, s))
		for _, word := range strings.Split(enc, " ") {
			if len(word) > 75 || !strings.HasPrefix(word, "=?UTF-8?q?") || !strings.HasSuffix(word, "?=") {
				t.Fatalf("%q: encoded word %q", s, word)
			}
		}
		dec, err := new(mime.WordDecoder).DecodeHeader(enc)
		if err != nil || dec != s {
			t.Fatalf("%q encoded as %q decodes to %q (%v)", s, enc, dec, err)
		}
	}
}

func TestDotStuff(t *testing.T) {
	for _, msg := range []string{"", ".", "a\r\n.\r\n", ".a\r\n..b\r\nc", "x\r\n.\r\ny\r\n"} {
		out := string(dotStuff(nil, []byte(msg)))
		body, ok := strings.CutSuffix(out, "\r\n.\r\n")
		if !ok {
			t.Fatalf("%q: stuffed %q lacks the end", msg, out)
		}
		lines := strings.Split(body, "\r\n")
		for i, line := range lines {
			if line == "." {
				t.Fatalf("%q: stuffed %q has a lone dot inside", msg, out)
			}
			lines[i] = strings.TrimPrefix(line, ".")
		}
		if got, want := strings.Join(lines, "\r\n")+"\r\n", strings.TrimSuffix(msg, "\r\n")+"\r\n"; got != want && !(msg == "" && got == "\r\n") {
			t.Fatalf("%q: unstuffed %q", msg, got)
		}
	}
}

func TestReadReply(t *testing.T) {
	cases := []struct {
		in     string
		expect int
		code   int    // 0: no reply error
		msg    string // of the reply error
		proto  bool   // a protocol error
	}{
		{"250 OK\r\n", 2, 0, "", false},
		{"250-smtp.example\r\n250-PIPELINING\r\n250 CHUNKING\r\n", 2, 0, "", false},
		{"354 go ahead\r\n", 3, 0, "", false},
		{"550-5.1.1 no such\r\n550 5.1.1 user\r\n", 2, 550, "5.1.1 no such\n5.1.1 user", false},
		{"421 closing\n", 2, 421, "closing", false},
		{"250\r\n", 2, 0, "", false},
		{"hello\r\n", 2, 0, "", true},
		{"250-a\r\n251 b\r\n", 2, 0, "", true},
		{"250 " + strings.Repeat("x", 10000) + "\r\n", 2, 0, "", false},
	}
	for _, c := range cases {
		var b wireBuffers
		r := bufio.NewReaderSize(strings.NewReader(c.in+"250 next\r\n"), 4096)
		err := b.readReply(r, c.expect)
		var tp *textproto.Error
		var pe textproto.ProtocolError
		switch {
		case c.proto:
			if !errors.As(err, &pe) {
				t.Errorf("%q: %v, want a protocol error", c.in, err)
			}
			continue
		case c.code == 0 && err != nil:
			t.Errorf("%q: %v", c.in, err)
		case c.code != 0 && (!errors.As(err, &tp) || tp.Code != c.code || tp.Msg != c.msg):
			t.Errorf("%q: %#v, want code %d %q", c.in, err, c.code, c.msg)
		}
		if err := b.readReply(r, 2); err != nil {
			t.Errorf("%q: the next reply: %v", c.in, err)
		}
	}
	var b wireBuffers
	if err := b.readReply(bufio.NewReader(strings.NewReader("250-cut")), 2); !errors.Is(err, io.EOF) {
		t.Errorf("cut reply: %v, want EOF", err)
	}
}

// BenchmarkAppendQP encodes about 5 KB of a newsletter's HTML, as a send
// does per recipient.
func BenchmarkAppendQP(b *testing.B) {
	html := []byte(strings.Repeat(`<tr><td style="padding:16px;font-family:Arial,sans-serif;color:#333333">`+
		`<p>Liebe Leserinnen und Leser, hier sind die Neuigkeiten dieser Woche: größere Auswahl, `+
		`schnellere Lieferung und ein Gutschein für Sie.</p><a href="https://www.example.com/angebote?utm_source=newsletter">Zu den Angeboten</a></td></tr>
`, 18))
	b.SetBytes(int64(len(html)))
	var dst []byte
	for b.Loop() {
		dst = appendQP(dst[:0], html)
	}
}

// BenchmarkRenderForSend renders and encodes one recipient's HTML and text of
// a 5 KB newsletter with placeholders, as the send does per mail: "whole"
// renders and then encodes each body whole (before PrepareQP), "literals_once"
// encodes only the values (AppendQPTo). Both run in one binary, so the pair
// compares them on the same machine at the same time.
func BenchmarkRenderForSend(b *testing.B) {
	para := `<tr><td style="padding:16px;font-family:Arial,sans-serif;color:#333333"><p>Liebe {{vorname}}, hier sind ` +
		`die Neuigkeiten dieser Woche: größere Auswahl, schnellere Lieferung und ein Gutschein für Sie.</p>` +
		`<a href="https://www.example.com/angebote?utm_source=newsletter">Zu den Angeboten</a></td></tr>` + "\n"
	c := store.Campaign{Subject: "Neues für {{vorname}}", HTML: "<html><body><table>" + strings.Repeat(para, 18) +
		"</table><p>{{abmelde_link}}</p></body></html>"}
	cc, err := compileCampaign(c, composeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	tokens, err := NewTokens("benchmark-secret-benchmark-secret")
	if err != nil {
		b.Fatal(err)
	}
	links := LinkBuilder{BaseURL: "https://news.example.com", Tokens: tokens}
	r := recipientData{recipientID: 4711, values: Recipient{FirstName: "Änne", LastName: "Müller", Email: "aenne@example.com"}}
	var st renderState
	b.Run("whole", func(b *testing.B) {
		var dst []byte
		for b.Loop() {
			if err := cc.fill(&st, links, r); err != nil {
				b.Fatal(err)
			}
			dst = appendQP(appendQP(dst[:0], st.html.Bytes()), st.text.Bytes())
		}
	})
	b.Run("literals_once", func(b *testing.B) {
		for b.Loop() {
			if err := cc.fillQP(&st, links, r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
