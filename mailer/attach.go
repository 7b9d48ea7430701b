package mailer

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"mime"

	"github.com/rundbrief/rundbrief/store"
)

// This file encodes a mail's attachments as MIME parts, once per send: the
// parts (headers and base64 body) are one byte block that every message of
// the send appends after its own body, inside a multipart/mixed whose
// boundary the block fixes. A 1 MB file costs one base64 encoding per send
// and a copy per message, never an encoding per message.

// AttachmentParts are a send's attachments, encoded.
type AttachmentParts struct {
	boundary string // of the multipart/mixed around body and attachments
	block    []byte // "\r\n--boundary\r\n<part>" per file and the closing delimiter
}

// Len is the size of the encoded block (0 without attachments).
func (p *AttachmentParts) Len() int {
	if p == nil {
		return 0
	}
	return len(p.block)
}

// attachmentReader writes the bytes of a stored attachment.
type attachmentReader interface {
	WriteAttachment(ctx context.Context, accountID, id int64, w io.Writer) error
}

// EncodeAttachments reads the attachments from src and encodes them; nil
// without any.
func EncodeAttachments(ctx context.Context, src attachmentReader, accountID int64, atts []store.Attachment) (*AttachmentParts, error) {
	if len(atts) == 0 {
		return nil, nil
	}
	p := &AttachmentParts{boundary: "=_rbmix" + rand.Text()[:16]}
	total := 0
	for _, a := range atts {
		total += int(a.Size)*4/3 + int(a.Size)/38 + 512
	}
	p.block = make([]byte, 0, total+64)
	for _, a := range atts {
		p.block = append(p.block, "\r\n--"...)
		p.block = append(p.block, p.boundary...)
		p.block = append(p.block, "\r\nContent-Type: "...)
		p.block = append(p.block, mediaType(a.ContentType, a.Filename)...)
		p.block = append(p.block, "\r\nContent-Transfer-Encoding: base64\r\nContent-Disposition: "...)
		p.block = append(p.block, mime.FormatMediaType("attachment", map[string]string{"filename": a.Filename})...)
		p.block = append(p.block, "\r\n\r\n"...)
		enc := &base64Lines{dst: p.block}
		w := base64.NewEncoder(base64.StdEncoding, enc)
		if err := src.WriteAttachment(ctx, accountID, a.ID, w); err != nil {
			return nil, fmt.Errorf("mailer: read attachment %d: %w", a.ID, err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("mailer: encode attachment %d: %w", a.ID, err)
		}
		p.block = enc.dst
	}
	p.block = append(p.block, "\r\n--"...)
	p.block = append(p.block, p.boundary...)
	p.block = append(p.block, "--\r\n"...)
	return p, nil
}

// mediaType is the Content-Type of an attachment part, with its name.
func mediaType(ctype, filename string) string {
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		mt, params = "application/octet-stream", map[string]string{}
	}
	params["name"] = filename
	if s := mime.FormatMediaType(mt, params); s != "" {
		return s
	}
	return "application/octet-stream"
}

// base64Lines appends base64 text to dst in lines of 76 characters (RFC 2045).
type base64Lines struct {
	dst []byte
	col int
}

func (b *base64Lines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if b.col == 76 {
			b.dst = append(b.dst, '\r', '\n')
			b.col = 0
		}
		k := min(len(p), 76-b.col)
		b.dst = append(b.dst, p[:k]...)
		b.col += k
		p = p[k:]
	}
	return n, nil
}
