package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// ObjectAttachment is the activity log's object type of attachments.
const ObjectAttachment = "attachment"

// MaxAttachmentBytes is the largest file (10 MB); a larger upload is a 413.
const MaxAttachmentBytes = 10 << 20

// MaxMailAttachments bounds the attachment_ids of one mail.
const MaxMailAttachments = 10

// attachmentChunk is how much of a file one row of attachment_chunks holds:
// what an upload reads, hashes and writes at a time.
const attachmentChunk = 256 << 10

// ErrAttachmentTooLarge means an upload passed MaxAttachmentBytes; nothing of
// it is stored.
var ErrAttachmentTooLarge = errors.New("store: attachment larger than 10 MB")

// Attachment is a stored file's metadata; its bytes are read with
// WriteAttachment.
type Attachment struct {
	ID          int64     `db:"id"`
	AccountID   int64     `db:"account_id"`
	Filename    string    `db:"filename"`
	ContentType string    `db:"content_type"`
	Size        int64     `db:"size"`
	SHA256      string    `db:"sha256"`
	CreatedAt   time.Time `db:"created_at"`
	UpdatedAt   time.Time `db:"updated_at"`
	// UsedBy is how many mails (of any status) name the attachment; listings
	// only.
	UsedBy int64 `db:"used_by"`
}

const attachmentColumns = `a.id, a.account_id, a.filename, a.content_type, a.size, a.sha256, a.created_at, a.updated_at`

// blockedExtensions are file names that run code when opened.
var blockedExtensions = map[string]bool{
	".exe": true, ".dll": true, ".com": true, ".bat": true, ".cmd": true, ".sh": true, ".bash": true, ".ps1": true,
	".vbs": true, ".vbe": true, ".js": true, ".jse": true, ".mjs": true, ".wsf": true, ".wsh": true, ".msi": true, ".scr": true,
	".jar": true, ".app": true, ".pif": true, ".cpl": true, ".hta": true, ".py": true, ".pl": true, ".rb": true,
	".php": true, ".lnk": true, ".reg": true, ".apk": true, ".dmg": true, ".deb": true, ".rpm": true, ".elf": true, ".bin": true,
}

// executableMagic are the first bytes of executable formats: PE/DOS, ELF,
// Mach-O (both byte orders, 32 and 64 bit, fat binaries), Java classes and
// the shebang of a script.
var executableMagic = [][]byte{
	[]byte("MZ"), []byte("\x7fELF"), {0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf}, {0xce, 0xfa, 0xed, 0xfe},
	{0xcf, 0xfa, 0xed, 0xfe}, {0xca, 0xfe, 0xba, 0xbe}, []byte("#!"), []byte("dex\n"),
}

// scriptMarkers in the first bytes of a text file make it a script.
var scriptMarkers = []string{"<script", "@echo off", "powershell", "<?php", "wscript.", "createobject(", "<hta:"}

// sniffRefusal returns why a file may not be stored, judged by its first
// bytes (content sniffing) and its name, or "" when it may.
func sniffRefusal(filename string, head []byte) string {
	for _, m := range executableMagic {
		if bytes.HasPrefix(head, m) {
			return "Ausführbare Dateien und Skripte sind als Anhang nicht erlaubt."
		}
	}
	sniffed := http.DetectContentType(head)
	if strings.HasPrefix(sniffed, "text/") {
		lower := strings.ToLower(string(head))
		for _, m := range scriptMarkers {
			if strings.Contains(lower, m) {
				return "Ausführbare Dateien und Skripte sind als Anhang nicht erlaubt."
			}
		}
	}
	if blockedExtensions[strings.ToLower(path.Ext(filename))] {
		return "Dateien dieses Typs (ausführbare Programme und Skripte) sind als Anhang nicht erlaubt."
	}
	return ""
}

// attachmentType decides the stored Content-Type: the sniffed type, or the
// declared one when sniffing only saw generic bytes (a .docx is a zip).
func attachmentType(declared string, head []byte) string {
	sniffed := http.DetectContentType(head)
	generic := sniffed == "application/octet-stream" || sniffed == "application/zip" || strings.HasPrefix(sniffed, "text/plain")
	if generic && declared != "" {
		if mt, params, err := mime.ParseMediaType(declared); err == nil && mt != "application/octet-stream" &&
			!strings.Contains(mt, "javascript") && !strings.Contains(mt, "executable") && !strings.Contains(mt, "msdownload") {
			return mime.FormatMediaType(mt, params)
		}
	}
	return sniffed
}

// cleanFilename keeps the last path element of a name, without control
// characters, at most 200 characters; "datei" when nothing is left.
func cleanFilename(name string) string {
	name = strings.ReplaceAll(name, "\\", "/")
	name = path.Base(name)
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' {
			return -1
		}
		return r
	}, strings.ToValidUTF8(name, ""))
	name = strings.TrimSpace(name)
	if name == "" || name == "." || name == "/" {
		return "datei"
	}
	if utf8.RuneCountInString(name) > 200 {
		name = string([]rune(name)[:200])
	}
	return name
}

const insertAttachment = `INSERT INTO attachments AS a (account_id, filename, content_type, size, sha256) VALUES ($1, $2, $3, $4, $5)
RETURNING ` + attachmentColumns + `, 0 AS used_by`

const insertChunk = `INSERT INTO attachment_chunks (attachment_id, account_id, seq, data) VALUES ($1, $2, $3, $4)`

const selectAttachmentBySHA = `SELECT ` + attachmentColumns + `, 0 AS used_by FROM attachments a WHERE a.account_id = $1 AND a.sha256 = $2`

// addStorage counts n bytes against the plan's storage, refusing (no row)
// beyond it.
const addStorage = `UPDATE account_usage u SET storage_bytes = u.storage_bytes + $2
FROM accounts a JOIN plans p ON p.name = a.plan
WHERE u.account_id = $1 AND a.id = u.account_id AND u.storage_bytes + $2 <= p.max_storage_bytes
RETURNING u.storage_bytes`

const storageFull = `SELECT u.storage_bytes >= p.max_storage_bytes FROM account_usage u JOIN accounts a ON a.id = u.account_id
JOIN plans p ON p.name = a.plan WHERE u.account_id = $1`

// UploadAttachment stores the file read from r: read to its end into a
// temporary file while its sha256 is computed (no more than a chunk in
// memory), then written in chunks in one short transaction. The first bytes
// decide: executables and scripts are refused (422 on file). Past
// MaxAttachmentBytes it stops reading and returns ErrAttachmentTooLarge;
// beyond the plan's storage a *LimitError (storage), checked before reading
// when the storage is full already. A file whose bytes the account already
// stored is not stored twice: the existing attachment comes back with created
// false, and nothing is written.
func (db *DB) UploadAttachment(ctx context.Context, accountID int64, actor Actor, filename, declaredType string, r io.Reader) (Attachment, bool, error) {
	return db.uploadAttachment(ctx, accountID, actor, filename, declaredType, r, false)
}

// imageTypes are the image types the rich-text editor may upload and the
// public image URL serves: those every mail client shows. No SVG, which can
// carry scripts.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// IsImageType reports whether an attachment's Content-Type is one of the
// images that mails may show from their public URL.
func IsImageType(contentType string) bool { return imageTypes[contentType] }

// UploadImage stores an image of the rich-text editor as an attachment, as
// UploadAttachment does (streamed, deduplicated, counted against the
// storage), refusing anything whose first bytes are not a PNG, JPEG, GIF or
// WebP image (422 on file).
func (db *DB) UploadImage(ctx context.Context, accountID int64, actor Actor, filename string, r io.Reader) (Attachment, bool, error) {
	return db.uploadAttachment(ctx, accountID, actor, filename, "", r, true)
}

func (db *DB) uploadAttachment(ctx context.Context, accountID int64, actor Actor, filename, declaredType string, r io.Reader, image bool) (Attachment, bool, error) {
	filename = cleanFilename(filename)
	// A full storage is refused before the file is read.
	var full bool
	if err := db.GetContext(ctx, &full, storageFull, accountID); err != nil {
		return Attachment{}, false, fmt.Errorf("store: storage: %w", err)
	}
	if full {
		return Attachment{}, false, storageLimit(ctx, db, accountID)
	}
	up, err := spoolUpload(filename, declaredType, r, image)
	if err != nil {
		return Attachment{}, false, err
	}
	defer up.remove()
	// Only now, with the whole file on disk, a transaction: a client that
	// sends slowly holds a temporary file, not a connection of the pool.
	for attempt := 0; ; attempt++ {
		out, created, err := db.storeSpooled(ctx, accountID, actor, filename, up)
		if isUniqueViolation(err) && attempt == 0 {
			continue // the same bytes were stored in parallel: the next try returns them
		}
		return out, created, err
	}
}

// storeSpooled stores a spooled upload in one transaction: the stored
// attachment with the same bytes when there is one (created false), or a new
// attachment with its chunks, counted against the plan's storage.
func (db *DB) storeSpooled(ctx context.Context, accountID int64, actor Actor, filename string, up *spooledUpload) (Attachment, bool, error) {
	var (
		out     Attachment
		created bool
	)
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		err := tx.GetContext(ctx, &out, selectAttachmentBySHA, accountID, up.sum)
		if err == nil {
			return nil
		}
		if err := notFound("attachment by hash", err); !errors.Is(err, ErrNotFound) {
			return err
		}
		var total int64
		if err := tx.GetContext(ctx, &total, addStorage, accountID, up.size); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return storageLimit(ctx, tx, accountID)
			}
			return fmt.Errorf("store: count storage: %w", err)
		}
		if err := tx.GetContext(ctx, &out, insertAttachment, accountID, filename, up.ctype, up.size, up.sum); err != nil {
			return fmt.Errorf("store: insert attachment: %w", err)
		}
		if _, err := up.file.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("store: rewind upload: %w", err)
		}
		buf := make([]byte, attachmentChunk)
		for seq := 0; ; seq++ {
			n, err := io.ReadFull(up.file, buf)
			if n > 0 {
				if _, err := tx.ExecContext(ctx, insertChunk, out.ID, accountID, seq, buf[:n]); err != nil {
					return fmt.Errorf("store: attachment chunk: %w", err)
				}
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("store: read spooled upload: %w", err)
			}
		}
		created = true
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "attachment.uploaded", ObjectType: ObjectAttachment,
			ObjectID: out.ID, Details: map[string]any{"filename": out.Filename, "size": out.Size}})
	})
	if err != nil {
		return Attachment{}, false, err
	}
	return out, created, nil
}

// spooledUpload is an upload read to its end into a temporary file, with
// what the store needs to know of it.
type spooledUpload struct {
	file  *os.File
	size  int64
	sum   string // hex SHA-256
	ctype string
}

// spoolUpload reads an upload into a temporary file chunk by chunk while its
// SHA-256 is computed, so that no more than a chunk is in memory. The first
// chunk decides before the rest is read: executables and scripts are refused
// (422 on file), and for image only PNG, JPEG, GIF and WebP pass. Past
// MaxAttachmentBytes it stops reading and returns ErrAttachmentTooLarge.
func spoolUpload(filename, declaredType string, r io.Reader, image bool) (_ *spooledUpload, err error) {
	buf := make([]byte, attachmentChunk)
	n, err := io.ReadFull(r, buf)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("store: read upload: %w", err)
	}
	head := buf[:min(n, 512)]
	if why := sniffRefusal(filename, head); why != "" {
		return nil, Invalid("file", why)
	}
	up := &spooledUpload{ctype: attachmentType(declaredType, head)}
	if image && !IsImageType(up.ctype) {
		return nil, Invalid("file", "Nur Bilder im Format PNG, JPEG, GIF oder WebP können eingefügt werden.")
	}
	if up.file, err = os.CreateTemp("", "rundbrief-upload-*"); err != nil {
		return nil, fmt.Errorf("store: spool upload: %w", err)
	}
	defer func() {
		if err != nil {
			up.remove()
		}
	}()
	h := sha256.New()
	for n > 0 {
		if up.size += int64(n); up.size > MaxAttachmentBytes {
			return nil, ErrAttachmentTooLarge
		}
		h.Write(buf[:n])
		if _, err := up.file.Write(buf[:n]); err != nil {
			return nil, fmt.Errorf("store: spool upload: %w", err)
		}
		n, err = io.ReadFull(r, buf)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("store: read upload: %w", err)
		}
	}
	up.sum = hex.EncodeToString(h.Sum(nil))
	return up, nil
}

// remove closes and deletes the temporary file.
func (up *spooledUpload) remove() {
	_ = up.file.Close()
	_ = os.Remove(up.file.Name())
}

func storageLimit(ctx context.Context, tx querier, accountID int64) error {
	plan, err := accountPlan(ctx, tx, accountID)
	if err != nil {
		return err
	}
	return &LimitError{Limit: "storage_bytes", Max: plan.MaxStorageBytes, UpgradeURL: plan.UpgradeURL}
}

// usedByColumn counts the mails naming an attachment.
const usedByColumn = `(SELECT count(*) FROM campaigns c WHERE c.account_id = a.account_id AND a.id = ANY(c.attachment_ids)) AS used_by`

const selectAttachment = `SELECT ` + attachmentColumns + `, ` + usedByColumn + ` FROM attachments a WHERE a.account_id = $1 AND a.id = $2`

// Attachment returns one attachment's metadata.
func (db *DB) Attachment(ctx context.Context, accountID, id int64) (Attachment, error) {
	var a Attachment
	if err := db.GetContext(ctx, &a, selectAttachment, accountID, id); err != nil {
		return Attachment{}, notFound("attachment", err)
	}
	return a, nil
}

const selectAttachmentPage = `SELECT ` + attachmentColumns + `, ` + usedByColumn + ` FROM attachments a WHERE a.account_id = $1
ORDER BY a.id DESC LIMIT $2 OFFSET $3`

// Attachments lists an account's attachments, newest first.
func (db *DB) Attachments(ctx context.Context, accountID int64, p Page) ([]Attachment, int, error) {
	out := make([]Attachment, 0, p.capacity())
	var total int
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.SelectContext(ctx, &out, selectAttachmentPage, accountID, p.PerPage, p.Offset()); err != nil {
			return fmt.Errorf("store: attachments: %w", err)
		}
		if err := tx.GetContext(ctx, &total, `SELECT count(*) FROM attachments WHERE account_id = $1`, accountID); err != nil {
			return fmt.Errorf("store: attachments: %w", err)
		}
		return nil
	})
	return out, total, err
}

// ImagePath is the public path prefix of the editor's images, whose URLs
// mailer/image.go signs and builds: {base URL}/i/{account}/{attachment}/….
const ImagePath = "/i/"

// imageRef is the part of an attachment's image URL that holds whatever the
// base URL was when the image was inserted.
func imageRef(accountID, attachmentID int64) string {
	return ImagePath + strconv.FormatInt(accountID, 10) + "/" + strconv.FormatInt(attachmentID, 10) + "/"
}

// attachmentInUse is whether a scheduled or sending mail names the attachment
// or shows it as an image ($3, imageRef): in its HTML or Markdown, its A/B
// test's variant B, or the template it is laid out in. Only those few mails
// are searched, so the content is read as it is.
const attachmentInUse = `SELECT EXISTS (SELECT 1 FROM campaigns c WHERE c.account_id = $1
  AND c.status IN ('scheduled', 'sending', 'paused')
  AND (c.attachment_ids @> ARRAY[$2::bigint] OR strpos(c.html, $3) > 0 OR strpos(c.markdown, $3) > 0
    OR EXISTS (SELECT 1 FROM ab_tests t WHERE t.campaign_id = c.id AND strpos(t.b_html, $3) > 0)
    OR EXISTS (SELECT 1 FROM templates tp WHERE tp.account_id = c.account_id AND tp.key = c.template_key
      AND strpos(tp.html, $3) > 0)))`

const lockAttachment = `SELECT ` + attachmentColumns + `, 0 AS used_by FROM attachments a WHERE a.account_id = $1 AND a.id = $2 FOR UPDATE`

// DeleteAttachment deletes an attachment and frees its storage, unless a
// scheduled or sending mail names it or shows it as an image (409 in_use):
// their recipients would get a broken image. Drafts that name it are refused
// at their send (422 attachment_ids); sent mails that show it lose the image.
func (db *DB) DeleteAttachment(ctx context.Context, accountID int64, actor Actor, id int64) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var a Attachment
		if err := tx.GetContext(ctx, &a, lockAttachment, accountID, id); err != nil {
			return notFound("attachment", err)
		}
		var used bool
		if err := tx.GetContext(ctx, &used, attachmentInUse, accountID, id, imageRef(accountID, id)); err != nil {
			return fmt.Errorf("store: attachment in use: %w", err)
		}
		if used {
			return &ConflictError{Reason: "in_use", Message: "Der Anhang gehört zu einer geplanten oder laufenden Sendung oder wird darin als Bild gezeigt."}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM attachments WHERE id = $1`, id); err != nil {
			return fmt.Errorf("store: delete attachment: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE account_usage SET storage_bytes = greatest(storage_bytes - $2, 0) WHERE account_id = $1`,
			accountID, a.Size); err != nil {
			return fmt.Errorf("store: free storage: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "attachment.deleted", ObjectType: ObjectAttachment,
			ObjectID: id, Details: map[string]any{"filename": a.Filename}})
	})
}

const selectChunks = `SELECT data FROM attachment_chunks WHERE attachment_id = $1 AND account_id = $2 ORDER BY seq`

// WriteAttachment writes the bytes of an attachment to w, chunk by chunk.
func (db *DB) WriteAttachment(ctx context.Context, accountID, id int64, w io.Writer) error {
	rows, err := db.QueryContext(ctx, selectChunks, id, accountID)
	if err != nil {
		return fmt.Errorf("store: attachment data: %w", err)
	}
	defer rows.Close()
	var data []byte
	for rows.Next() {
		if err := rows.Scan(&data); err != nil {
			return fmt.Errorf("store: attachment data: %w", err)
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: attachment data: %w", err)
	}
	return nil
}

// attachmentsByID returns the account's attachments among ids, in the order
// of ids; the ids that are none are missing.
func attachmentsByID(ctx context.Context, q sqlx.QueryerContext, accountID int64, ids []int64, lock bool) ([]Attachment, []int64, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	query := `SELECT ` + attachmentColumns + `, 0 AS used_by FROM attachments a WHERE a.account_id = $1 AND a.id = ANY($2)`
	if lock {
		// A delete waits until the mail naming them is stored (and is then in_use).
		query += ` FOR SHARE`
	}
	var found []Attachment
	if err := sqlx.SelectContext(ctx, q, &found, query, accountID, pq.Int64Array(ids)); err != nil {
		return nil, nil, fmt.Errorf("store: attachments: %w", err)
	}
	byID := make(map[int64]Attachment, len(found))
	for _, a := range found {
		byID[a.ID] = a
	}
	out := make([]Attachment, 0, len(ids))
	var missing []int64
	for _, id := range ids {
		if a, ok := byID[id]; ok {
			out = append(out, a)
		} else {
			missing = append(missing, id)
		}
	}
	return out, missing, nil
}
