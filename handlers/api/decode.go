package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

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
	if r.Method == http.MethodPost && apiPath(r) == "/attachments" {
		return store.MaxAttachmentBytes + maxMultipartOverhead // a file of 10 MB and its multipart frame
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
	if fields, err := checkJSON(body); errors.Is(err, errJSONTooDeep) {
		return errBadRequest(fmt.Sprintf("Der Anfragekörper ist tiefer als %d Ebenen verschachtelt.", maxJSONDepth))
	} else if err != nil {
		return errBadRequest("Der Anfragekörper ist kein gültiges JSON.")
	} else if len(fields) > 0 {
		return errValidation(fields)
	}
	if err := json.Unmarshal(body, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return errValidation(map[string]string{typeErr.Field: typeMessage(typeErr)})
		}
		return errBadRequest("Der Anfragekörper ist kein gültiges JSON.")
	}
	return nil
}

// Messages of the checks every request value passes before a handler sees it.
const (
	msgNUL         = "Darf kein Nullzeichen (\\u0000) enthalten."
	msgUTF8        = "Ist kein gültiges UTF-8."
	msgNumberRange = "Die Zahl liegt außerhalb des darstellbaren Bereichs (64-Bit-Gleitkommazahl)."
)

// typeMessage names what a field of the wrong type should have been; a number
// where an integer belongs (a fraction, or beyond the integer's range, e.g.
// int64) names the range.
func typeMessage(e *json.UnmarshalTypeError) string {
	t := e.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if strings.HasPrefix(e.Value, "number") {
			hi := uint64(1)<<(t.Bits()-1) - 1
			return fmt.Sprintf("Muss eine ganze Zahl von -%d bis %d sein.", hi+1, hi)
		}
	}
	return "Falscher Typ: erwartet " + germanType(t.Kind().String()) + "."
}

// checkJSON walks a JSON body once before it is decoded and names every field
// whose value no store and no client could take: a string or an object key with a
// NUL character (PostgreSQL refuses it in text and jsonb) and a number outside
// float64's range (it would be stored and answered as a number no float64
// client, the OpenAPI validator included, can read). Fields are named by their
// path, e.g. custom_fields.big or contacts.0.email. err is a syntax error.
func checkJSON(body []byte) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	fields := map[string]string{}
	if err := walkJSON(dec, "", 0, fields); err != nil {
		return nil, err
	}
	return fields, nil
}

// maxJSONDepth bounds how deeply a request body may nest. No endpoint takes
// more than a few levels; without the bound a body of 3 MB of "[" made the walk
// build a path per level, each as long as the depth so far: gigabytes for one
// request.
const maxJSONDepth = 64

// errJSONTooDeep is checkJSON's answer to a body nested deeper than maxJSONDepth.
var errJSONTooDeep = errors.New("api: JSON nested too deeply")

func walkJSON(dec *json.Decoder, path string, depth int, fields map[string]string) error {
	if depth > maxJSONDepth {
		return errJSONTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	name := path
	if name == "" {
		name = "body"
	}
	switch t := tok.(type) {
	case string:
		if strings.ContainsRune(t, 0) {
			fields[name] = msgNUL
		}
	case json.Number:
		if _, err := strconv.ParseFloat(string(t), 64); err != nil {
			fields[name] = msgNumberRange
		}
	case json.Delim:
		for i := 0; dec.More(); i++ {
			child := strconv.Itoa(i)
			if t == '{' {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				child, _ = key.(string)
			}
			if path != "" {
				child = path + "." + child
			}
			if strings.ContainsRune(child, 0) {
				fields[name] = msgNUL
			}
			if err := walkJSON(dec, child, depth+1, fields); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return err
		}
	}
	return nil
}

// checkValues refuses a request whose query or path values PostgreSQL could not
// take (store.ValidText): 422 naming the parameter, for every route in one
// place (handle), before any handler reads them.
func checkValues(r *http.Request) error {
	fields := map[string]string{}
	check := func(name, v string) {
		switch {
		case !utf8.ValidString(v):
			fields[name] = msgUTF8
		case strings.ContainsRune(v, 0):
			fields[name] = msgNUL
		}
	}
	for name, vs := range r.URL.Query() {
		if !store.ValidText(name) {
			fields["query"] = "Ein Parametername ist kein gültiger Text."
			continue
		}
		for _, v := range vs {
			check(name, v)
		}
	}
	if rc := chi.RouteContext(r.Context()); rc != nil {
		for i, name := range rc.URLParams.Keys {
			if i >= len(rc.URLParams.Values) || name == "*" {
				continue
			}
			v := rc.URLParams.Values[i]
			if r.URL.RawPath != "" { // routed on the escaped path: check what pathText reads
				if u, err := url.PathUnescape(v); err == nil {
					v = u
				}
			}
			check(name, v)
		}
	}
	if len(fields) > 0 {
		return errValidation(fields)
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

// parsePage reads page (1 to store.MaxPage, default 1) and per_page (1–100, default 25).
func parsePage(r *http.Request) (store.Page, error) {
	p := store.Page{Page: 1, PerPage: 25}
	errs := store.Errs{}
	q := r.URL.Query()
	if s := q.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > store.MaxPage {
			errs.Add("page", fmt.Sprintf("Muss eine ganze Zahl von 1 bis %d sein.", store.MaxPage))
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

// queryIntIn reads an optional integer query parameter between lo and hi into
// errs, for a value that reaches a column narrower than int64.
func queryIntIn(r *http.Request, name string, lo, hi int64, errs store.Errs) int64 {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		errs.Add(name, fmt.Sprintf("Muss eine ganze Zahl von %d bis %d sein.", lo, hi))
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
