package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// pdfBytes returns n random bytes that sniff as a PDF.
func pdfBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	copy(b, "%PDF-1.7\n")
	return b
}

// openTransactions counts the transactions open in the database other than
// the asking one.
func openTransactions(t *testing.T, db *store.DB) int {
	t.Helper()
	var n int
	if err := db.GetContext(context.Background(), &n, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestUploadHoldsNoTransactionWhileTheClientSends sends a file in two parts
// and looks at the database between them: a client that sends slowly must
// not keep a transaction (and a pooled connection) open. Afterwards the file
// is stored whole, and no temporary file is left behind.
func TestUploadHoldsNoTransactionWhileTheClientSends(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	actor := store.Actor{Type: store.ActorUser, ID: 1}
	file := pdfBytes(t, 700<<10) // three chunks, the last one short

	pr, pw := io.Pipe()
	type result struct {
		att     store.Attachment
		created bool
		err     error
	}
	done := make(chan result, 1)
	go func() {
		att, created, err := db.UploadAttachment(ctx, acct, actor, "preise.pdf", "application/pdf", pr)
		done <- result{att, created, err}
	}()
	// Write returns once the upload has read these bytes: the first chunk
	// and more, so that the upload waits for the rest of the file now.
	if _, err := pw.Write(file[:300<<10]); err != nil {
		t.Fatal(err)
	}
	if n := openTransactions(t, db); n != 0 {
		t.Errorf("%d transactions open while the client is still sending, want 0", n)
	}
	if _, err := pw.Write(file[300<<10:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	res := <-done
	if res.err != nil || !res.created {
		t.Fatalf("upload: created %v, %v", res.created, res.err)
	}
	sum := sha256.Sum256(file)
	if res.att.Size != int64(len(file)) || res.att.SHA256 != hex.EncodeToString(sum[:]) || res.att.ContentType != "application/pdf" {
		t.Errorf("stored %+v", res.att)
	}
	var stored bytes.Buffer
	if err := db.WriteAttachment(ctx, acct, res.att.ID, &stored); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stored.Bytes(), file) {
		t.Errorf("stored %d bytes that differ from the %d uploaded", stored.Len(), len(file))
	}
	var chunks, storage int64
	if err := db.GetContext(ctx, &chunks, `SELECT count(*) FROM attachment_chunks WHERE attachment_id = $1`, res.att.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.GetContext(ctx, &storage, `SELECT storage_bytes FROM account_usage WHERE account_id = $1`, acct); err != nil {
		t.Fatal(err)
	}
	if chunks != 3 || storage != int64(len(file)) {
		t.Errorf("%d chunks and %d bytes of storage, want 3 and %d", chunks, storage, len(file))
	}

	// Too large: refused, nothing stored, nothing left on disk.
	big := io.MultiReader(bytes.NewReader(pdfBytes(t, 1<<20)), io.LimitReader(zeros{}, store.MaxAttachmentBytes))
	if _, _, err := db.UploadAttachment(ctx, acct, actor, "gross.pdf", "", big); !errors.Is(err, store.ErrAttachmentTooLarge) {
		t.Errorf("an upload past %d bytes: %v, want ErrAttachmentTooLarge", store.MaxAttachmentBytes, err)
	}
	// Refused by its first bytes.
	if _, _, err := db.UploadAttachment(ctx, acct, actor, "setup.pdf", "", bytes.NewReader([]byte("MZ\x90\x00 a program"))); err == nil {
		t.Error("an executable was stored")
	}
	var count int
	if err := db.GetContext(ctx, &count, `SELECT count(*) FROM attachments WHERE account_id = $1`, acct); err != nil {
		t.Fatal(err)
	}
	if count != 1 {
		t.Errorf("%d attachments, want only the first", count)
	}
	left, err := os.ReadDir(os.Getenv("TMPDIR"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// gatedReader waits for gate before it reads.
type gatedReader struct {
	gate   *sync.WaitGroup
	passed bool
	r      io.Reader
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if !g.passed {
		g.gate.Wait()
		g.passed = true
	}
	return g.r.Read(p)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestParallelUploadsOfOneFileStoreItOnce uploads the same bytes eight times
// at once: every upload answers with the one stored attachment, exactly one
// of them created it, and its size is counted once.
func TestParallelUploadsOfOneFileStoreItOnce(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	file := pdfBytes(t, 600<<10)

	const uploads = 8
	// The uploads read their bytes only once all have started, so that they
	// overlap.
	var started sync.WaitGroup
	started.Add(uploads)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     = map[int64]int{}
		created int
		errs    []error
	)
	for i := range uploads {
		wg.Go(func() {
			body := gatedReader{gate: &started, r: bytes.NewReader(file)}
			started.Done()
			att, c, err := db.UploadAttachment(ctx, acct, store.Actor{Type: store.ActorUser, ID: int64(i + 1)}, "katalog.pdf", "", &body)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			ids[att.ID]++
			if c {
				created++
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 || len(ids) != 1 || created != 1 {
		t.Fatalf("errors %v, attachments %v, created %d; want no error, one attachment, created once", errs, ids, created)
	}
	var storage, chunks int64
	if err := db.GetContext(ctx, &storage, `SELECT storage_bytes FROM account_usage WHERE account_id = $1`, acct); err != nil {
		t.Fatal(err)
	}
	if err := db.GetContext(ctx, &chunks, `SELECT count(*) FROM attachment_chunks WHERE account_id = $1`, acct); err != nil {
		t.Fatal(err)
	}
	if storage != int64(len(file)) || chunks != 3 {
		t.Errorf("storage %d bytes and %d chunks, want %d and 3", storage, chunks, len(file))
	}
}
