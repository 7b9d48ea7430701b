package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rundbrief/rundbrief/store"
)

// zeros is an endless stream of zero bytes, like /dev/zero.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// countingBody is a request body of size zero bytes that counts what the server read.
type countingBody struct {
	r    io.Reader
	read int64
}

func newCountingBody(size int64) *countingBody {
	return &countingBody{r: io.LimitReader(zeros{}, size)}
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

func (b *countingBody) Close() error { return nil }

// TestOversizedBodiesAreRefusedBeforeTheLimitIsRead sends 100 MB bodies, multipart
// and JSON, declared and chunked, with and without Idempotency-Key, as the attack of
// issue 27 did: each is 413 payload_too_large, and the server reads nothing of a
// body declared too large and at most one byte past the limit of one that is not.
func TestOversizedBodiesAreRefusedBeforeTheLimitIsRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	app := newTestApp(t, f.db)
	_, readOnly, err := f.db.CreateKey(context.Background(), f.acct, store.KeySettings{Name: "read only", Scopes: []string{"read"}})
	if err != nil {
		t.Fatal(err)
	}
	const size = 100 << 20
	const multipart = "multipart/form-data; boundary=b"
	cases := []struct {
		name        string
		path        string
		key         string
		contentType string
		idempotency string
		declared    bool  // Content-Length: 100 MB, or chunked
		maxRead     int64 // bytes the server may read
	}{
		{"multipart declared, idempotent, read-only key", "/contacts", readOnly, multipart, "x1", true, 0},
		{"multipart chunked, idempotent, read-only key", "/contacts", readOnly, multipart, "x2", false, maxJSONBody + 1},
		{"multipart chunked, no idempotency", "/contacts", f.key, multipart, "", false, maxJSONBody + 1},
		{"JSON chunked, idempotent", "/test/keys", f.key, "application/json", "x3", false, maxJSONBody + 1},
		{"JSON chunked, decode only", "/test/keys", f.key, "application/json", "", false, maxJSONBody + 1},
		{"multipart declared, public sign-up", "/subscribe/" + strings.Repeat("t", 24), "", multipart, "", true, 0},
		{"JSON chunked, public sign-up", "/subscribe/" + strings.Repeat("t", 24), "", "application/json", "", false, maxSignUpForm + 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := newCountingBody(size)
			req := httptest.NewRequest(http.MethodPost, "/v1"+c.path, nil)
			req.Body = body
			req.ContentLength = -1
			if c.declared {
				req.ContentLength = size
			}
			req.Header.Set("Content-Type", c.contentType)
			if c.key != "" {
				req.Header.Set("Authorization", "Bearer "+c.key)
			}
			if c.idempotency != "" {
				req.Header.Set("Idempotency-Key", c.idempotency)
			}
			rec := httptest.NewRecorder()
			http.StripPrefix("/v1", app.handler).ServeHTTP(rec, req)
			res := response{rec.Code, rec.Header(), rec.Body.Bytes()}
			if e := res.apiError(t, errorSchema(t)); res.status != http.StatusRequestEntityTooLarge || e.Code != "payload_too_large" {
				t.Errorf("status %d, code %q, want 413 payload_too_large: %s", res.status, e.Code, res.body)
			}
			if body.read > c.maxRead {
				t.Errorf("the server read %d bytes of the body, at most %d allowed", body.read, c.maxRead)
			}
		})
	}
}

// TestBodiesWithinTheLimitStillWork: a JSON body of exactly the limit is read, and
// an idempotent request's body reaches its handler whole, declared or chunked.
func TestBodiesWithinTheLimitStillWork(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	app := newTestApp(t, f.db)
	for i, declared := range []bool{true, false} {
		name := fmt.Sprintf("within-limit-%d", i)
		prefix := `{"name":"` + name + `","pad":"`
		body := prefix + strings.Repeat("x", maxJSONBody-len(prefix)-2) + `"}`
		req := httptest.NewRequest(http.MethodPost, "/v1/test/keys", strings.NewReader(body))
		if !declared {
			req.ContentLength = -1
			req.Body = io.NopCloser(strings.NewReader(body))
		}
		req.Header.Set("Authorization", "Bearer "+f.key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", name)
		rec := httptest.NewRecorder()
		http.StripPrefix("/v1", app.handler).ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated || f.keyCount(t, name) != 1 {
			t.Errorf("declared=%v: %d %s", declared, rec.Code, rec.Body.Bytes())
		}
	}
}

// BenchmarkParallelOversizedUploads is the attack of issue 27 over real
// connections: four parallel 100 MB multipart uploads by a read-only key with
// Idempotency-Key, streamed by the client (declared or chunked). It reports the
// peak resident memory of the process (VmHWM, reset before each round) and the
// most it grew in one round over the resident memory before it.
func BenchmarkParallelOversizedUploads(b *testing.B) {
	for _, declared := range []bool{true, false} {
		b.Run("declared="+strconv.FormatBool(declared), func(b *testing.B) { benchUploads(b, declared) })
	}
}

func benchUploads(b *testing.B, declared bool) {
	f := newFixture(b)
	app := newTestApp(b, f.db)
	srv := httptest.NewServer(http.StripPrefix("/v1", app.handler))
	defer srv.Close()
	_, readOnly, err := f.db.CreateKey(context.Background(), f.acct, store.KeySettings{Name: "read only", Scopes: []string{"read"}})
	if err != nil {
		b.Fatal(err)
	}
	const size = 100 << 20
	var peak, growth int64
	round := 0
	for b.Loop() {
		resetPeakRSS(b)
		before := procStatusKB(b, "VmRSS")
		var wg sync.WaitGroup
		statuses := make([]int, 4)
		for i := range 4 {
			wg.Go(func() {
				req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/contacts", io.LimitReader(zeros{}, size))
				if err != nil {
					b.Error(err)
					return
				}
				if declared {
					req.ContentLength = size
				}
				req.Header.Set("Authorization", "Bearer "+readOnly)
				req.Header.Set("Idempotency-Key", fmt.Sprintf("upload-%d-%d", round, i))
				req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
				res, err := srv.Client().Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				var env struct {
					Error Error `json:"error"`
				}
				_ = json.NewDecoder(res.Body).Decode(&env)
				_ = res.Body.Close()
				statuses[i] = res.StatusCode
			})
		}
		wg.Wait()
		for _, s := range statuses {
			if s != http.StatusRequestEntityTooLarge {
				b.Fatalf("statuses %v, want 413 for each", statuses)
			}
		}
		hwm := procStatusKB(b, "VmHWM")
		peak, growth = max(peak, hwm), max(growth, hwm-before)
		round++
	}
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MB")
	b.ReportMetric(float64(growth)/1024, "RSS-growth-MB")
}

// resetPeakRSS resets the process's VmHWM to its current RSS (Linux clear_refs).
func resetPeakRSS(b *testing.B) {
	b.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Fatalf("reset VmHWM: %v", err)
	}
}

// procStatusKB reads one kB field of /proc/self/status.
func procStatusKB(b *testing.B, field string) int64 {
	b.Helper()
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
