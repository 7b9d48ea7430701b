package mailer

import (
	"bufio"
	"bytes"
	"net/textproto"
	"strconv"
)

// This file writes the mail transactions of an SMTPSender onto the session's
// connection. go-mail's client sends MAIL, RCPT and DATA one at a time and
// waits for each reply, then the content and the final reply: four round trips
// per message, each a write and a read on both ends. Here:
//
//   - PIPELINING and CHUNKING offered (Postfix, Exim, go-smtp …): MAIL, RCPT and
//     "BDAT <size> LAST" with the content go out in one write, and the three
//     replies are read after it: one round trip. BDAT needs no dot-stuffing
//     and tells the server the size, so it need not scan for the end.
//   - PIPELINING only: MAIL, RCPT and DATA in one write, their replies, then the
//     content and the final reply: two round trips.
//   - Neither: one command at a time, as before.
//
// A rejected MAIL or RCPT makes the server refuse the DATA or BDAT after it
// (RFC 2920 and 3030: a BDAT chunk is read and thrown away), so a refusal costs
// nothing but its reply; the transaction is then RSET. Which step failed and the
// server's reply are reported as before (SendError).

// wireBuffers are an SMTPSender's buffers, reused for every message.
type wireBuffers struct {
	mime *mimeWriter
	msg  []byte // the rendered message
	// tail is the rest of the message after msg: the send's encoded
	// attachments, shared by its messages and written from where they are.
	tail []byte
	out  []byte // what goes on the wire
	text []byte // the text of the reply being read
	line []byte // a reply line longer than the read buffer
}

// render renders m into msg.
func (b *wireBuffers) render(m *Message) error {
	if b.mime == nil {
		b.mime = newMIMEWriter()
		b.mime.splitTail = true
	}
	var err error
	b.msg, err = b.mime.appendMessage(b.msg[:0], m)
	b.tail = b.mime.tail
	return err
}

// maxKeptBuffer bounds the buffers a sender keeps between messages.
const maxKeptBuffer = 1 << 20

// trim lets go of buffers a large message left behind.
func (b *wireBuffers) trim() {
	if cap(b.msg) > maxKeptBuffer {
		b.msg = nil
	}
	if cap(b.out) > maxKeptBuffer {
		b.out = nil
	}
}

// after says what the connection needs after a transaction.
type after int

const (
	afterNothing after = iota
	afterReset         // a transaction may still be open: RSET
	afterDrop          // the connection is unusable
)

// transact sends the rendered message from → to over c. contentSent: see
// SMTPSender.transact.
func (b *wireBuffers) transact(c *conn, from, to string) (se *SendError, contentSent bool, next after) {
	if !c.pipelining {
		return b.serial(c, from, to)
	}
	w, r := c.client.Text.W, c.client.Text.R
	out := b.mailRcpt(b.out[:0], c, from, to)
	if c.chunking {
		out = b.bdat(out)
	} else {
		out = append(out, "DATA\r\n"...)
	}
	b.out = out
	if err := writeWithTail(w, out, b.tail, c.chunking); err != nil {
		// Not all of it went out: the server has no complete message.
		return newSendError(StageMail, err), false, afterDrop
	}
	// Read every reply of the group, even after a refusal, to stay in step.
	dataCode := 3
	if c.chunking {
		dataCode = 2
	}
	var errs [3]error
	stages := [3]Stage{StageMail, StageRcpt, StageData}
	for i, code := range [3]int{2, 2, dataCode} {
		errs[i] = b.readReply(r, code)
		if !isReply(errs[i]) {
			break // the connection failed: no further replies
		}
	}
	// The first failure is the one to report: a refused MAIL makes RCPT and
	// DATA fail too.
	first := -1
	for i, err := range errs {
		if err != nil {
			first = i
			break
		}
	}
	broken := false
	for _, err := range errs {
		if err != nil && (!isReply(err) || replyCode(err) == 421) {
			broken = true
		}
	}
	if c.chunking {
		if first < 0 {
			return nil, true, afterNothing
		}
		se = newSendError(stages[first], errs[first])
		// Unless MAIL or RCPT was refused, the server may have the message:
		// it refused the content, or its replies never came.
		contentSent = first == 2 || !isReply(errs[first])
		if broken {
			return se, contentSent, afterDrop
		}
		return se, contentSent, afterReset
	}
	switch {
	case broken:
		return newSendError(stages[first], errs[first]), false, afterDrop
	case errs[2] == nil && first >= 0:
		// DATA accepted although MAIL or RCPT was refused (RFC 2920 says a
		// server must not): end the empty message and forget it.
		if err := write(w, append(b.out[:0], ".\r\n"...)); err != nil {
			return newSendError(stages[first], errs[first]), false, afterDrop
		}
		if err := b.readReply(r, 2); !isReply(err) {
			return newSendError(stages[first], errs[first]), false, afterDrop
		}
		return newSendError(stages[first], errs[first]), false, afterReset
	case first >= 0:
		return newSendError(stages[first], errs[first]), false, afterReset
	}
	return b.content(c)
}

// serial runs the transaction one command at a time, for servers without
// PIPELINING.
func (b *wireBuffers) serial(c *conn, from, to string) (se *SendError, contentSent bool, next after) {
	w, r := c.client.Text.W, c.client.Text.R
	failed := func(stage Stage, err error, contentSent bool, ifRefused after) (*SendError, bool, after) {
		if !isReply(err) || replyCode(err) == 421 {
			return newSendError(stage, err), contentSent, afterDrop
		}
		return newSendError(stage, err), contentSent, ifRefused
	}
	b.out = b.mailRcpt(b.out[:0], c, from, to)
	rcpt := bytes.Index(b.out, []byte("\r\n")) + 2
	if err := write(w, b.out[:rcpt]); err != nil {
		return newSendError(StageMail, err), false, afterDrop
	}
	if err := b.readReply(r, 2); err != nil {
		return failed(StageMail, err, false, afterReset)
	}
	if err := write(w, b.out[rcpt:]); err != nil {
		return newSendError(StageRcpt, err), false, afterDrop
	}
	if err := b.readReply(r, 2); err != nil {
		return failed(StageRcpt, err, false, afterReset)
	}
	if c.chunking {
		b.out = b.bdat(b.out[:0])
		if err := write(w, b.out); err != nil {
			return newSendError(StageData, err), false, afterDrop
		}
		if err := b.readReply(r, 2); err != nil {
			return failed(StageData, err, true, afterReset)
		}
		return nil, true, afterNothing
	}
	if err := write(w, append(b.out[:0], "DATA\r\n"...)); err != nil {
		return newSendError(StageData, err), false, afterDrop
	}
	if err := b.readReply(r, 3); err != nil {
		return failed(StageData, err, false, afterReset)
	}
	return b.content(c)
}

// content sends the message after the server accepted DATA, and reads the
// final reply.
func (b *wireBuffers) content(c *conn) (se *SendError, contentSent bool, next after) {
	if len(b.tail) > 0 {
		// DATA needs the whole message dot-stuffed: join it (servers without
		// CHUNKING only).
		b.msg, b.tail = append(b.msg, b.tail...), nil
	}
	b.out = dotStuff(b.out[:0], b.msg)
	if err := write(c.client.Text.W, b.out); err != nil {
		return newSendError(StageData, err), true, afterDrop
	}
	if err := b.readReply(c.client.Text.R, 2); err != nil {
		if !isReply(err) || replyCode(err) == 421 {
			return newSendError(StageData, err), true, afterDrop
		}
		return newSendError(StageData, err), true, afterNothing // the transaction is over
	}
	return nil, true, afterNothing
}

// mailRcpt appends the MAIL and RCPT commands. The content is 7-bit (mime.go),
// so BODY=8BITMIME is not needed; SMTPUTF8 is declared for a non-ASCII address
// when the server offers it.
func (b *wireBuffers) mailRcpt(dst []byte, c *conn, from, to string) []byte {
	dst = append(dst, "MAIL FROM:<"...)
	dst = append(dst, from...)
	dst = append(dst, '>')
	if c.smtputf8 && (!isASCII(from) || !isASCII(to)) {
		dst = append(dst, " SMTPUTF8"...)
	}
	dst = append(dst, "\r\nRCPT TO:<"...)
	dst = append(dst, to...)
	return append(dst, ">\r\n"...)
}

// bdat appends the message as one last BDAT chunk.
func (b *wireBuffers) bdat(dst []byte) []byte {
	dst = append(dst, "BDAT "...)
	dst = strconv.AppendInt(dst, int64(len(b.msg)+len(b.tail)), 10)
	dst = append(dst, " LAST\r\n"...)
	return append(dst, b.msg...)
}

// dotStuff appends msg for DATA: a dot starting a line is doubled, and the
// message ends with CRLF and the terminating ".".
func dotStuff(dst, msg []byte) []byte {
	if len(msg) > 0 && msg[0] == '.' {
		dst = append(dst, '.')
	}
	for {
		i := bytes.Index(msg, []byte("\n."))
		if i < 0 {
			break
		}
		dst = append(dst, msg[:i+2]...)
		dst = append(dst, '.')
		msg = msg[i+2:]
	}
	dst = append(dst, msg...)
	if !bytes.HasSuffix(dst, []byte("\r\n")) {
		dst = append(dst, "\r\n"...)
	}
	return append(dst, ".\r\n"...)
}

// writeWithTail writes p, then tail when the content goes as BDAT (a BDAT
// chunk ends with the message, so the shared tail follows it directly), and
// flushes. A large tail passes the buffer by.
func writeWithTail(w *bufio.Writer, p, tail []byte, chunking bool) error {
	if !chunking || len(tail) == 0 {
		return write(w, p)
	}
	if _, err := w.Write(p); err != nil {
		return err
	}
	if _, err := w.Write(tail); err != nil {
		return err
	}
	return w.Flush()
}

// write writes p and flushes: one write to the connection.
func write(w *bufio.Writer, p []byte) error {
	if _, err := w.Write(p); err != nil {
		return err
	}
	return w.Flush()
}

// readReply reads one reply, possibly of several lines, and checks that its
// code is in the class expect (2: 2xx, 3: 3xx). Another code is a
// *textproto.Error with the code and the text, as textproto.ReadResponse
// returns it; a reply that is no SMTP reply is a textproto.ProtocolError; a
// failed read is the network error.
func (b *wireBuffers) readReply(r *bufio.Reader, expect int) error {
	b.text = b.text[:0]
	code := 0
	for {
		line, err := b.readLine(r)
		if err != nil {
			return err
		}
		if len(line) < 3 || !isDigit(line[0]) || !isDigit(line[1]) || !isDigit(line[2]) ||
			len(line) > 3 && line[3] != ' ' && line[3] != '-' {
			return textproto.ProtocolError("invalid reply: " + strconv.Quote(string(line)))
		}
		c := int(line[0]-'0')*100 + int(line[1]-'0')*10 + int(line[2]-'0')
		if code != 0 && c != code {
			return textproto.ProtocolError("reply code changed within a reply: " + strconv.Quote(string(line)))
		}
		code = c
		if len(b.text) > 0 {
			b.text = append(b.text, '\n')
		}
		if len(line) > 4 {
			b.text = append(b.text, line[4:]...)
		}
		if len(line) == 3 || line[3] == ' ' {
			break
		}
	}
	if code/100 != expect {
		return &textproto.Error{Code: code, Msg: string(b.text)}
	}
	return nil
}

// maxReplyLine bounds a reply line (RFC 5321: 512 bytes; some servers send more).
const maxReplyLine = 64 << 10

// readLine reads a line without its CRLF; the slice is valid until the next read.
func (b *wireBuffers) readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		b.line = append(b.line[:0], line...)
		for err == bufio.ErrBufferFull && len(b.line) < maxReplyLine {
			line, err = r.ReadSlice('\n')
			b.line = append(b.line, line...)
		}
		line = b.line
	}
	if err != nil {
		if err == bufio.ErrBufferFull {
			return nil, textproto.ProtocolError("reply line too long")
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, nil
}

// isReply reports whether err is a server's reply (or nil), not a failed
// connection.
func isReply(err error) bool {
	_, ok := err.(*textproto.Error)
	return err == nil || ok
}

func replyCode(err error) int {
	if tp, ok := err.(*textproto.Error); ok {
		return tp.Code
	}
	return 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
