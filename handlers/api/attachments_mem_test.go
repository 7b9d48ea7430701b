package api_test

import (
	"bufio"
	"crypto/rand"
	"io"
	"mime/multipart"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
)

// TestAttachmentUploadMemory uploads a 10 MB file, generated as it is sent,
// and checks that the process's peak resident size (VmHWM) grows by less than
// 32 MB: the upload streams into PostgreSQL chunk by chunk.
func TestAttachmentUploadMemory(t *testing.T) {
	// Not parallel: it reads the process's peak RSS, which other tests would raise.
	if _, err := os.Stat("/proc/self/clear_refs"); err != nil {
		t.Fatalf("needs Linux /proc to measure: %v", err)
	}
	e := newSendAPIEnv(t)
	const size = store.MaxAttachmentBytes - 1024
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("file", "gross.pdf")
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		buf := make([]byte, 32<<10)
		for sent := 0; sent < size; sent += len(buf) {
			n := min(len(buf), size-sent)
			_, _ = rand.Read(buf[:n])
			if sent == 0 {
				copy(buf, "%PDF-1.7\n")
			}
			if _, err := part.Write(buf[:n]); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	req := httptest.NewRequest("POST", "/v1/attachments", pr)
	req.ContentLength = -1
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", e.c.Header.Get("Authorization"))

	runtime.GC()
	debug.FreeOSMemory()
	before := vmHWM(t)
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatal(err)
	}
	base := vmRSS(t)
	r := e.c.Do(req)
	peak := vmHWM(t)
	if r.Status != 201 {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	grew := peak - base
	t.Logf("RSS before %d MB, at start %d MB, peak %d MB: +%d MB for a %d MB upload", before>>20, base>>20, peak>>20, grew>>20, size>>20)
	if grew >= 32<<20 {
		t.Errorf("a 10 MB upload raised the peak RSS by %d MB, want < 32 MB", grew>>20)
	}
}

func vmHWM(t *testing.T) int64 { return procStatus(t, "VmHWM:") }
func vmRSS(t *testing.T) int64 { return procStatus(t, "VmRSS:") }

func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("%s not in /proc/self/status", field)
	return 0
}
