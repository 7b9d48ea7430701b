package mailer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
)

// wireModes are the servers the transaction code must handle: what a server
// offers decides between one round trip (PIPELINING and CHUNKING), two
// (PIPELINING, DATA) and one per command (neither).
var wireModes = []struct {
	name                     string
	noPipelining, noChunking bool
	// group is the first command group the server reads for a message.
	group []string
}{
	{"pipelining and chunking", false, false, []string{"MAIL FROM:", "RCPT TO:", "BDAT "}},
	{"pipelining only", false, true, []string{"MAIL FROM:", "RCPT TO:", "DATA"}},
	{"chunking only", true, false, []string{"MAIL FROM:"}},
	{"neither", true, true, []string{"MAIL FROM:"}},
}

// TestSendOverEveryServerKind sends over one connection to each kind of
// server: messages arrive intact, recipients refused at RCPT (550, 451) or
// after their content (554) fail with the right stage, code and bounce flag
// without costing the connection, and the client pipelines exactly as far as
// the server allows.
func TestSendOverEveryServerKind(t *testing.T) {
	for _, mode := range wireModes {
		t.Run(mode.name, func(t *testing.T) {
			srv := smtptest.Start(t, smtptest.Options{
				NoPipelining: mode.noPipelining, NoChunking: mode.noChunking, Trace: true,
				Reject:     map[string]int{"gone@example.org": 550, "busy@example.org": 451},
				RejectData: map[string]int{"spam@example.org": 554},
			})
			s := mailer.NewSMTPSender(configFor(srv, mailer.EncryptionNone, "", ""))
			defer s.Close()
			ctx := context.Background()
			cases := []struct {
				to        string
				stage     mailer.Stage // "" = delivered
				code      int
				permanent bool
			}{
				{"first@example.org", "", 0, false},
				{"gone@example.org", mailer.StageRcpt, 550, true},
				{"second@example.org", "", 0, false},
				{"busy@example.org", mailer.StageRcpt, 451, false},
				{"spam@example.org", mailer.StageData, 554, true},
				{"third@example.org", "", 0, false},
			}
			var sent []*mailer.Message
			for i, c := range cases {
				m := dottedMessage(i, c.to)
				err := s.Send(ctx, m)
				if c.stage == "" {
					if err != nil {
						t.Fatalf("%s: %v", c.to, err)
					}
					sent = append(sent, m)
					continue
				}
				var se *mailer.SendError
				if !errors.As(err, &se) || se.Stage != c.stage || se.Code != c.code || se.Permanent != c.permanent ||
					se.Bounce() != c.permanent || !strings.Contains(se.Reason, fmt.Sprint(c.code)) {
					t.Fatalf("%s: error %#v, want stage %s code %d permanent %t", c.to, err, c.stage, c.code, c.permanent)
				}
			}
			msgs := srv.Messages()
			if len(msgs) != len(sent) {
				t.Fatalf("server got %d messages, want %d", len(msgs), len(sent))
			}
			for i, m := range sent {
				got := msgs[i]
				if got.From != "news@rundbrief.test" || len(got.To) != 1 || got.To[0] != m.To.Email {
					t.Fatalf("message %d: envelope %s → %v, want → %s", i, got.From, got.To, m.To.Email)
				}
				p := parse(t, got.Data)
				if p.header.Get("Message-Id") != "<"+m.MessageID+">" || decodeHeader(t, p.header.Get("Subject")) != m.Subject {
					t.Errorf("message %d: headers %v", i, p.header)
				}
				if len(p.parts) != 2 || p.parts[0].body != crlf(m.Text) || p.parts[1].body != crlf(m.HTML) {
					t.Errorf("message %d: parts %+v, want text %q and html %q", i, p.parts, crlf(m.Text), crlf(m.HTML))
				}
			}
			if srv.Connections() != 1 {
				t.Errorf("%d connections; refusals must not cost the connection", srv.Connections())
			}
			if v := srv.Violations(); len(v) > 0 {
				t.Errorf("the client used what the server did not offer: %v", v)
			}
			// The first message's commands, as the server read them.
			first := srv.Commands()[0]
			if len(first) != len(mode.group) {
				t.Fatalf("first command group %q, want %d commands like %q", first, len(mode.group), mode.group)
			}
			for i, prefix := range mode.group {
				if !strings.HasPrefix(first[i], prefix) {
					t.Fatalf("first command group %q, want %q", first, mode.group)
				}
			}
		})
	}
}

// TestSendReconnectsInEveryServerKind: a server that closed the idle
// connection costs a new connection and nothing else; one that ends the
// session with 421 in the middle of a transaction is tried once more on a new
// connection (nothing was sent), then the message fails as transient and the
// next one gets a new connection again.
func TestSendReconnectsInEveryServerKind(t *testing.T) {
	for _, mode := range wireModes {
		t.Run(mode.name, func(t *testing.T) {
			srv := smtptest.Start(t, smtptest.Options{NoPipelining: mode.noPipelining, NoChunking: mode.noChunking,
				Reject: map[string]int{"closing@example.org": 421}})
			s := mailer.NewSMTPSender(configFor(srv, mailer.EncryptionNone, "", ""))
			defer s.Close()
			ctx := context.Background()
			if err := s.Send(ctx, dottedMessage(1, "a@example.org")); err != nil {
				t.Fatal(err)
			}
			srv.DropConnections()
			if err := s.Send(ctx, dottedMessage(2, "b@example.org")); err != nil {
				t.Fatalf("after the server dropped the idle connection: %v", err)
			}
			err := s.Send(ctx, dottedMessage(3, "closing@example.org"))
			var se *mailer.SendError
			if !errors.As(err, &se) || se.Code != 421 || se.Permanent {
				t.Fatalf("421: error %v, want a transient SendError with code 421", err)
			}
			if err := s.Send(ctx, dottedMessage(4, "c@example.org")); err != nil {
				t.Fatalf("after a 421: %v", err)
			}
			if srv.Count() != 3 || srv.Connections() != 4 || s.Dials() != 4 {
				t.Fatalf("messages %d, connections %d, dials %d; want 3, 4, 4", srv.Count(), srv.Connections(), s.Dials())
			}
			if v := srv.Violations(); len(v) > 0 {
				t.Errorf("the client used what the server did not offer: %v", v)
			}
		})
	}
}

// TestSendPipelinedOverTLS: pipelining goes over STARTTLS and implicit TLS
// sessions (after AUTH) as over plain ones.
func TestSendPipelinedOverTLS(t *testing.T) {
	for _, mode := range []struct {
		name string
		tls  smtptest.TLSMode
		enc  mailer.Encryption
	}{{"starttls", smtptest.STARTTLS, mailer.EncryptionSTARTTLS}, {"implicit", smtptest.Implicit, mailer.EncryptionTLS}} {
		t.Run(mode.name, func(t *testing.T) {
			srv := smtptest.Start(t, smtptest.Options{TLS: mode.tls, Username: "u", Password: "p",
				Reject: map[string]int{"gone@example.org": 550}})
			s := mailer.NewSMTPSender(configFor(srv, mode.enc, "u", "p"))
			defer s.Close()
			ctx := context.Background()
			for i, to := range []string{"a@example.org", "gone@example.org", "b@example.org"} {
				err := s.Send(ctx, dottedMessage(i, to))
				if (err != nil) != (to == "gone@example.org") {
					t.Fatalf("%s: %v", to, err)
				}
			}
			msgs := srv.Messages()
			if len(msgs) != 2 || !msgs[0].TLS || msgs[0].User != "u" || msgs[1].To[0] != "b@example.org" || srv.Connections() != 1 {
				t.Fatalf("messages %+v over %d connections", msgs, srv.Connections())
			}
		})
	}
}

// dottedMessage has lines that start with dots, which DATA must stuff.
func dottedMessage(i int, to string) *mailer.Message {
	return &mailer.Message{
		From:    mailer.Address{Name: "Rundbrief Test", Email: "news@rundbrief.test"},
		To:      mailer.Address{Name: "Empfänger", Email: to},
		Subject: fmt.Sprintf("Nachricht %d für Sie", i),
		Text:    fmt.Sprintf("Hallo %d,\n.\n..zwei Punkte\n.ein Punkt\nEnde.\n", i),
		HTML:    fmt.Sprintf("<p>Hallo %d</p>\n.\n<p>.Punkt</p>", i),
	}
}

func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
