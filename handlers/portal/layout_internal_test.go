package portal

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
)

// An error a handler returns becomes an error page only while nothing of the
// response was sent; after that it goes to the log, and the response stays
// what the handler wrote. Streaming still reaches the connection.
func TestHandleLogsAnErrorAfterTheResponseBegan(t *testing.T) {
	var logs bytes.Buffer
	p := &Portal{log: slog.New(slog.NewTextHandler(&logs, nil))}
	req := httptest.NewRequest(http.MethodPost, "/editor/images", nil)

	rec := httptest.NewRecorder()
	p.handle(func(w http.ResponseWriter, r *http.Request) error {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":1}`))
		return errors.New("write: broken pipe")
	})(rec, req)
	if rec.Code != http.StatusCreated || rec.Body.String() != `{"id":1}` {
		t.Errorf("begun response: %d %q; want the handler's 201 and body alone", rec.Code, rec.Body.String())
	}
	if !strings.Contains(logs.String(), "broken pipe") || !strings.Contains(logs.String(), "/editor/images") {
		t.Errorf("log: %q; want the error and the path", logs.String())
	}

	rec = httptest.NewRecorder()
	p.handle(func(w http.ResponseWriter, r *http.Request) error { return store.ErrNotFound })(rec, req)
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Header().Get("Content-Type"), "text/html") {
		t.Errorf("error before the response: %d %q; want the 404 page", rec.Code, rec.Header().Get("Content-Type"))
	}

	rec = httptest.NewRecorder()
	p.handle(func(w http.ResponseWriter, r *http.Request) error {
		fl, ok := w.(http.Flusher)
		if !ok {
			return errors.New("no http.Flusher")
		}
		fl.Flush()
		return nil
	})(rec, req)
	if !rec.Flushed || rec.Code != http.StatusOK {
		t.Errorf("flush: flushed %v, status %d", rec.Flushed, rec.Code)
	}
}
