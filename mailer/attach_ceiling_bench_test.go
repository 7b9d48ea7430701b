package mailer_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer/smtptest"
)

// BenchmarkSMTPSinkCeilingSize is the transport's own ceiling for messages of
// a given size: four connections write pre-built messages (base64 lines, as
// an attachment is on the wire) into the discarding test sink the way the
// sender does on this server (MAIL, RCPT and "BDAT <size> LAST" pipelined in
// one write, then the three replies), with no database, rendering or MIME
// work at all. No send can beat it; it shows what a 1 MB attachment costs on
// the wire alone, before Rundbrief does anything (issue 19 compares the send
// rate with and without one).
func BenchmarkSMTPSinkCeilingSize(b *testing.B) {
	for _, size := range []int{5 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			msg := wireMessage(b, size)
			srv := smtptest.Start(b, smtptest.Options{Discard: true})
			addr := net.JoinHostPort(srv.Host, strconv.Itoa(srv.Port))
			const lanes = 4
			conns := make([]*rawConn, lanes)
			for i := range conns {
				conns[i] = dialRaw(b, addr)
			}
			// Each connection sends on its own, as the send lanes do, until
			// b.N messages are out.
			var sent, next atomic.Int64
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for _, c := range conns {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if err := c.send(msg); err != nil {
							b.Error(err)
							return
						}
						sent.Add(1)
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			if int(sent.Load()) != srv.Count() {
				b.Fatalf("sent %d, sink counted %d", sent.Load(), srv.Count())
			}
			b.ReportMetric(float64(sent.Load())/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(sent.Load())*float64(len(msg))/elapsed.Seconds()/(1<<20), "wire_MB/s")
		})
	}
}

// wireMessage is a message of about size bytes of payload, base64-encoded in
// 76-character lines as a MIME attachment part is.
func wireMessage(tb testing.TB, size int) []byte {
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		tb.Fatal(err)
	}
	enc := base64.StdEncoding.EncodeToString(data)
	var buf bytes.Buffer
	buf.WriteString("From: news@acme.test\r\nTo: user@example.com\r\nSubject: Katalog\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n")
	for len(enc) > 76 {
		buf.WriteString(enc[:76])
		buf.WriteString("\r\n")
		enc = enc[76:]
	}
	buf.WriteString(enc)
	buf.WriteString("\r\n")
	return buf.Bytes()
}

// rawConn is one SMTP session kept open for many messages.
type rawConn struct {
	conn net.Conn
	r    *textproto.Reader
}

func dialRaw(tb testing.TB, addr string) *rawConn {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	c := &rawConn{conn: conn, r: textproto.NewReader(bufio.NewReader(conn))}
	if _, _, err := c.r.ReadResponse(220); err != nil {
		tb.Fatal(err)
	}
	if _, err := conn.Write([]byte("EHLO bench.test\r\n")); err != nil {
		tb.Fatal(err)
	}
	_, ext, err := c.r.ReadResponse(250)
	if err != nil {
		tb.Fatal(err)
	}
	if !strings.Contains(ext, "CHUNKING") || !strings.Contains(ext, "PIPELINING") {
		tb.Fatalf("the sink offers no CHUNKING and PIPELINING: %q", ext)
	}
	return c
}

// send writes one transaction in one write and reads its three replies.
func (c *rawConn) send(msg []byte) error {
	head := fmt.Sprintf("MAIL FROM:<news@acme.test>\r\nRCPT TO:<user@example.com>\r\nBDAT %d LAST\r\n", len(msg))
	if _, err := (&net.Buffers{[]byte(head), msg}).WriteTo(c.conn); err != nil {
		return err
	}
	for range 3 {
		if _, _, err := c.r.ReadResponse(250); err != nil {
			return err
		}
	}
	return nil
}
