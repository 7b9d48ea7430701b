package mailer_test

import (
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/mailer"
)

// A message as the mailer writes it comes apart into its headers (decoded) and
// both bodies (transfer encoding undone).
func TestReadMailRoundTrip(t *testing.T) {
	long := strings.Repeat("Sauerteig und Dinkel, frisch aus dem Ofen. ", 20)
	m := &mailer.Message{
		From: mailer.Address{Name: "Bäckerei Müller", Email: "news@baeckerei.test"}, To: mailer.Address{Name: "Erika Ä", Email: "erika@example.com"},
		Subject: "Grüße – frische Brötchen", HTML: "<p>Hallo <b>Erika</b> ✓</p><p>" + long + "</p>", Text: "Hallo Erika ✓\n" + long,
	}
	raw, err := m.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	got, err := mailer.ReadMail(raw)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{}
	for _, f := range got.Headers {
		h[f.Name] = f.Value
	}
	if h["Subject"] != "Grüße – frische Brötchen" || h["From"] != "Bäckerei Müller <news@baeckerei.test>" || !strings.Contains(h["To"], "erika@example.com") {
		t.Errorf("headers %v", h)
	}
	if strings.TrimSpace(got.Text) != strings.TrimSpace("Hallo Erika ✓\n"+long) {
		t.Errorf("text %q", got.Text)
	}
	if !strings.Contains(got.HTML, "<b>Erika</b> ✓") || !strings.Contains(got.HTML, long) {
		t.Errorf("html %q", got.HTML)
	}
}

func TestReadMailEncodings(t *testing.T) {
	raw := "Subject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=\r\nX-Long: eins\r\n zwei\r\nContent-Type: multipart/mixed; boundary=a\r\n\r\n" +
		"--a\r\nContent-Type: multipart/alternative; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\nSGFsbG8g\r\nV2VsdA==\r\n" +
		"--b\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n<p>Gr=C3=BC=\r\n=C3=9Fe</p>\r\n--b--\r\n" +
		"--a\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=x.txt\r\n\r\nAnhang\r\n--a--\r\n"
	got, err := mailer.ReadMail([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got.Headers[0].Value != "Grüße" || got.Headers[1].Value != "eins zwei" {
		t.Errorf("headers %+v", got.Headers)
	}
	if got.Text != "Hallo Welt" || got.HTML != "<p>Grüße</p>" {
		t.Errorf("text %q html %q", got.Text, got.HTML)
	}
}
