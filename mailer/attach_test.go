package mailer

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"testing"

	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
)

// memAttachments serves attachment bytes from memory.
type memAttachments map[int64][]byte

func (m memAttachments) WriteAttachment(_ context.Context, _, id int64, w io.Writer) error {
	_, err := w.Write(m[id])
	return err
}

// TestAttachmentsOnTheWire sends a message with two attachments, encoded once,
// over every SMTP path (BDAT with the shared block written from where it is,
// pipelined DATA, one command at a time) and as bytes (development outbox),
// and reads them back byte-identical.
func TestAttachmentsOnTheWire(t *testing.T) {
	pdf := make([]byte, 300<<10+7)
	_, _ = rand.Read(pdf)
	copy(pdf, "%PDF-1.7\n")
	src := memAttachments{1: pdf, 2: []byte("Zeile eins\n.Zeile mit Punkt\n")}
	parts, err := EncodeAttachments(context.Background(), src, 1, []store.Attachment{
		{ID: 1, Filename: "Preisliste März.pdf", ContentType: "application/pdf", Size: int64(len(pdf))},
		{ID: 2, Filename: "notiz.txt", ContentType: "text/plain; charset=utf-8", Size: int64(len(src[2]))},
	})
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, raw []byte) {
		t.Helper()
		rm, err := ReadMail(raw)
		if err != nil {
			t.Fatal(err)
		}
		if len(rm.Attachments) != 2 || !bytes.Equal(rm.Attachments[0].Data, pdf) || rm.Attachments[0].Filename != "Preisliste März.pdf" ||
			!bytes.Equal(rm.Attachments[1].Data, src[2]) || !bytes.Contains([]byte(rm.HTML), []byte("Hallo")) {
			t.Errorf("read back: %d attachments, html %q", len(rm.Attachments), rm.HTML)
		}
	}
	msg := func() *Message {
		return &Message{From: Address{Email: "news@acme.test"}, To: Address{Email: "kunde@example.com"}, Subject: "Mit Anhang",
			HTML: "<p>Hallo</p>", attachments: parts}
	}
	raw, err := msg().Bytes()
	if err != nil {
		t.Fatal(err)
	}
	check(t, raw)
	for name, opts := range map[string]smtptest.Options{
		"bdat":   {},
		"data":   {NoChunking: true},
		"serial": {NoChunking: true, NoPipelining: true},
	} {
		t.Run(name, func(t *testing.T) {
			srv := smtptest.Start(t, opts)
			s := NewSMTPSender(ServerConfig{Host: srv.Host, Port: srv.Port, Encryption: EncryptionNone})
			defer s.Close()
			for range 2 { // the second reuses the sender's buffers
				if err := s.Send(context.Background(), msg()); err != nil {
					t.Fatal(err)
				}
			}
			if v := srv.Violations(); len(v) > 0 {
				t.Fatalf("violations: %v", v)
			}
			for _, m := range srv.Messages() {
				check(t, m.Data)
			}
		})
	}
}
