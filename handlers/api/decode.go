package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rundbrief/rundbrief/store"
)

// maxJSONBody bounds a JSON request body: 2 MB of html content plus room for the rest.
const maxJSONBody = 3 << 20

// bodyLimit is the most a request may send to its endpoint, whatever its
// Content-Type: a public sign-up (form or JSON) is a few short fields, every other
// endpoint takes JSON. An endpoint with a larger body (a file upload) names its own
// limit here, so that it holds before the idempotency middleware reads anything.
func bodyLimit(r *http.Request) int64 {
	if strings.HasPrefix(apiPath(r), "/subscribe/") {
		return maxSignUpForm
	}
	return maxJSONBody
}

// readBody reads the whole request body, which limitBody has bounded; past the
// limit it is 413 payload_too_large. A body the idempotency middleware already read
// is handed over as it is, not copied, so a request never holds its body twice.
func readBody(r *http.Request) ([]byte, error) {
	if b, ok := r.Body.(*bufferedBody); ok {
		return b.take(), nil
	}
	limit := bodyLimit(r)
	// With a declared length (at most the limit, see limitBody) the buffer is
	// allocated once; otherwise it doubles (append's smaller steps for large
	// slices would allocate about five times the body on the way up).
	buf := make([]byte, 0, min(max(r.ContentLength, 511), limit)+1)
	for {
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, errTooLarge // limitBody's reader reports this itself; this is for safety
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return nil, errTooLarge
			}
			return nil, errBadRequest("Der Anfragekörper konnte nicht gelesen werden.")
		}
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*int64(cap(buf)), limit+1))
			copy(grown, buf)
			buf = grown
		}
	}
}

// bufferedBody is a request body read whole by the idempotency middleware; readBody
// takes its bytes back without a copy.
type bufferedBody struct {
	*bytes.Reader
	b []byte
}

func newBufferedBody(b []byte) *bufferedBody {
	return &bufferedBody{Reader: bytes.NewReader(b), b: b}
}

// take returns the unread rest of the body and marks it read.
func (b *bufferedBody) take() []byte {
	rest := b.b[len(b.b)-b.Len():]
	_, _ = b.Seek(0, io.SeekEnd)
	return rest
}

func (*bufferedBody) Close() error { return nil }

// decode reads a JSON request body into v. An empty body decodes as {}. Errors are
// API errors: 400 for a missing Content-Type, invalid UTF-8 or broken JSON, 413 for
// an oversized body, 422 naming the field for a value of the wrong type.
func decode(r *http.Request, v any) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return errBadRequest("Anfragen mit Körper brauchen den Header Content-Type: application/json.")
	}
	if !utf8.Valid(body) {
		return errBadRequest("Der Anfragekörper ist kein gültiges UTF-8.")
	}
	if err := json.Unmarshal(body, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return errValidation(map[string]string{typeErr.Field: "Falscher Typ: erwartet " + germanType(typeErr.Type.Kind().String()) + "."})
		}
		return errBadRequest("Der Anfragekörper ist kein gültiges JSON.")
	}
	return nil
}

func germanType(kind string) string {
	switch kind {
	case "string":
		return "Text"
	case "bool":
		return "true oder false"
	case "slice", "array":
		return "eine Liste"
	case "map", "struct":
		return "ein Objekt"
	case "float32", "float64":
		return "eine Zahl"
	}
	return "eine ganze Zahl"
}

// limitBody bounds every request body, multipart included, before the idempotency
// middleware or a handler reads it. A body that declares a length over its
// endpoint's limit fails at its first read without a byte of it being read; one of
// unknown length (chunked) fails as soon as it passes the limit. Either way the
// reader gets *http.MaxBytesError, which readBody answers with 413
// payload_too_large, and the server closes the connection instead of draining the
// rest.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if limit := bodyLimit(r); r.ContentLength > limit {
			r.Body = refusedBody{limit: limit}
		} else {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		next.ServeHTTP(w, r)
	})
}

// refusedBody stands in for a body declared larger than its limit. The server
// still owns (and closes) the real body.
type refusedBody struct{ limit int64 }

func (b refusedBody) Read([]byte) (int, error) { return 0, &http.MaxBytesError{Limit: b.limit} }

func (refusedBody) Close() error { return nil }

// parsePage reads page (≥ 1, default 1) and per_page (1–100, default 25).
func parsePage(r *http.Request) (store.Page, error) {
	p := store.Page{Page: 1, PerPage: 25}
	errs := store.Errs{}
	q := r.URL.Query()
	if s := q.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs.Add("page", "Muss eine ganze Zahl ab 1 sein.")
		}
		p.Page = n
	}
	if s := q.Get("per_page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			errs.Add("per_page", "Muss eine ganze Zahl von 1 bis 100 sein.")
		}
		p.PerPage = n
	}
	return p, errs.Err()
}

// queryInt reads an optional integer query parameter into errs.
func queryInt(r *http.Request, name string, errs store.Errs) int64 {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		errs.Add(name, "Muss eine ganze Zahl sein.")
	}
	return n
}

// pathID reads the integer path parameter name; anything else is a 404.
func pathID(r *http.Request, name string) (int64, error) {
	n, err := strconv.ParseInt(urlParam(r, name), 10, 64)
	if err != nil || n < 1 {
		return 0, errNotFound
	}
	return n, nil
}
