// Package apitest checks API traffic against the OpenAPI description of /v1.
//
// Every API test sends its requests through a Client, which validates each
// response (status code, documented headers and body schema) against the
// document the API serves as openapi.json (assembled from handlers/api/openapi),
// so the document and the handlers cannot drift apart:
//
//	v := apitest.NewValidator(t, api.OpenAPIDocument())
//	c := apitest.NewClient(t, app, v)
//	c.Header.Set("Authorization", "Bearer "+key)
//	res := c.Request(http.MethodGet, "/v1/me", nil)
//
// A Validator is safe for concurrent use and may be shared by parallel tests.
package apitest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Prefix is the path under which the API is mounted; the document's paths are
// relative to it.
const Prefix = "/v1"

// maxBodyInMessage bounds how much of a response body an error message quotes.
const maxBodyInMessage = 2000

// Validator checks requests/responses against the API's openapi.json.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
	// fallback answers requests whose path or method the document does not
	// describe: the generic 404 not_found and 405 method_not_allowed responses.
	fallback *openapi3.Operation
	bodies   *bodySchemas
}

// NewValidator loads and validates doc (an OpenAPI 3.1 document in JSON) and
// builds a router that maps request paths under /v1 on any host to the
// document's paths. It calls tb.Fatal when the document does not load or validate.
// Validators are shared: a test binary loads each document once (loading and
// validating it took about 0.15 CPU seconds, and nearly every API test makes one).
func NewValidator(tb testing.TB, doc []byte) *Validator {
	tb.Helper()
	key := sha256.Sum256(doc)
	loaded.mu.Lock()
	defer loaded.mu.Unlock()
	if v, ok := loaded.m[key]; ok {
		return v
	}
	v, err := newValidator(doc)
	if err != nil {
		tb.Fatalf("apitest: %v", err)
	}
	if loaded.m == nil {
		loaded.m = map[[sha256.Size]byte]*Validator{}
	}
	loaded.m[key] = v
	return v
}

// loaded holds the validators made so far, by their document's digest; a
// Validator is immutable and safe for concurrent use, so tests share them.
var loaded struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*Validator
}

func newValidator(b []byte) (*Validator, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(b)
	if err != nil {
		return nil, fmt.Errorf("load openapi.json: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("validate openapi.json: %w", err)
	}
	// Match /v1/... on any host, whatever the document's servers say.
	doc.Servers = openapi3.Servers{{URL: Prefix}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("build router: %w", err)
	}
	fallback := &openapi3.Operation{Responses: openapi3.NewResponses()}
	for status, name := range map[int]string{http.StatusNotFound: "NotFound", http.StatusMethodNotAllowed: "MethodNotAllowed"} {
		var ref *openapi3.ResponseRef
		if doc.Components != nil {
			ref = doc.Components.Responses[name]
		}
		if ref == nil {
			return nil, fmt.Errorf("openapi.json lacks components.responses.%s", name)
		}
		fallback.Responses.Set(fmt.Sprint(status), &openapi3.ResponseRef{Ref: "#/components/responses/" + name, Value: ref.Value})
	}
	bodies, err := newBodySchemas(b)
	if err != nil {
		return nil, err
	}
	return &Validator{doc: doc, router: router, fallback: fallback, bodies: bodies}, nil
}

// Document returns the loaded document (read only).
func (v *Validator) Document() *openapi3.T { return v.doc }

// Check reports through tb.Errorf, with a message naming the request, when the
// operation req addresses is not in the document, or when status, header or body
// do not match what the document says for it: an undocumented status code, a
// missing required header, a body that does not match the schema. It also
// checks that meta.request_id or error.request_id equals X-Request-Id.
//
// Requests to paths or methods the document does not describe are accepted only
// when answered with the generic 404 not_found or 405 method_not_allowed error.
// HEAD is checked as GET without a body. OPTIONS preflights are not described by
// the document (Client does not check them).
func (v *Validator) Check(tb testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	tb.Helper()
	if err := v.check(req, status, header, body); err != nil {
		tb.Errorf("apitest: %s %s → %d: %v%s", req.Method, req.URL.RequestURI(), status, err, quoteBody(body))
	}
}

func (v *Validator) check(req *http.Request, status int, header http.Header, payload []byte) error {
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}
	opts.WithCustomSchemaErrorFunc(shortSchemaError)
	r := req
	if r.Method == http.MethodHead || r.URL.Path == Prefix {
		r = req.Clone(req.Context())
		if r.Method == http.MethodHead {
			r.Method = http.MethodGet // ValidateResponse skips HEAD entirely
			opts.ExcludeResponseBody = true
		}
		if r.URL.Path == Prefix {
			r.URL.Path, r.URL.RawPath = Prefix+"/", ""
		}
	}
	route, params, err := v.router.FindRoute(r)
	switch {
	case err == nil:
	case errors.Is(err, routers.ErrPathNotFound) || errors.Is(err, routers.ErrMethodNotAllowed):
		if !underPrefix(r.URL.Path) || (status != http.StatusNotFound && status != http.StatusMethodNotAllowed) {
			return fmt.Errorf("operation %s %s is not in openapi.json (%v)", req.Method, req.URL.Path, err)
		}
		route = &routers.Route{Spec: v.doc, Path: strings.TrimPrefix(r.URL.Path, Prefix), Method: r.Method, Operation: v.fallback}
	default:
		return fmt.Errorf("find operation: %w", err)
	}
	if err := checkHTML(route.Operation, status, header); err != nil {
		return err
	} else if isHTML(header) {
		opts.ExcludeResponseBody = true // documented as text/html; kin-openapi decodes no HTML
	}
	// kin-openapi checks the status, the headers and bodies other than JSON;
	// JSON bodies are checked against the compiled schemas of v.bodies.
	var body bodyCheck
	if !opts.ExcludeResponseBody {
		if body, err = v.bodies.bodyCheckFor(route, status, header); err != nil {
			return fmt.Errorf("response does not match openapi.json (operation %s %s): %w", r.Method, route.Path, err)
		}
		opts.ExcludeResponseBody = !body.delegate
	}
	if err := openapi3filter.ValidateResponse(req.Context(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    r,
			PathParams: params,
			Route:      route,
			Options:    opts,
		},
		Status:  status,
		Header:  header,
		Body:    io.NopCloser(bytes.NewReader(payload)),
		Options: opts,
	}); err != nil {
		return fmt.Errorf("response does not match openapi.json (operation %s %s): %w", r.Method, route.Path, err)
	}
	if body.schema != nil {
		if err := validate(body.schema, payload); err != nil {
			return fmt.Errorf("response body does not match openapi.json (operation %s %s): %w", r.Method, route.Path, err)
		}
	}
	return checkRequestID(header, payload)
}

// isHTML reports whether a response is an HTML page (GET /docs).
func isHTML(header http.Header) bool {
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	return mt == "text/html"
}

// checkHTML checks an HTML response, whose body kin-openapi cannot decode, as far
// as the document describes it: the operation declares text/html for the status.
func checkHTML(op *openapi3.Operation, status int, header http.Header) error {
	if !isHTML(header) {
		return nil
	}
	ref := op.Responses.Status(status)
	if ref == nil || ref.Value == nil || ref.Value.Content.Get("text/html") == nil {
		return fmt.Errorf("Content-Type %q: openapi.json declares no text/html for status %d", header.Get("Content-Type"), status)
	}
	return nil
}

// shortSchemaError names the JSON pointer and the reason of a schema mismatch,
// without kin-openapi's dump of the whole schema and value; the body is quoted
// once in Check's message instead.
func shortSchemaError(e *openapi3.SchemaError) string {
	if e.Origin != nil {
		return "" // kin-openapi's own message
	}
	reason := e.Reason
	if reason == "" {
		reason = "does not match the schema's " + e.SchemaField
	}
	if p := e.JSONPointer(); len(p) > 0 {
		return fmt.Sprintf("at %q: %s", "/"+strings.Join(p, "/"), reason)
	}
	return reason
}

// checkRequestID compares X-Request-Id with the request id in a JSON envelope.
func checkRequestID(header http.Header, body []byte) error {
	var env struct {
		Meta *struct {
			RequestID *string `json:"request_id"`
		} `json:"meta"`
		Error *struct {
			RequestID *string `json:"request_id"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil {
		return nil // not an envelope: nothing to compare
	}
	var inBody *string
	switch {
	case env.Meta != nil:
		inBody = env.Meta.RequestID
	case env.Error != nil:
		inBody = env.Error.RequestID
	}
	if inBody != nil && *inBody != header.Get("X-Request-Id") {
		return fmt.Errorf("request id in the body %q differs from X-Request-Id %q", *inBody, header.Get("X-Request-Id"))
	}
	return nil
}

func quoteBody(body []byte) string {
	if len(body) == 0 {
		return ""
	}
	s := string(body)
	if len(s) > maxBodyInMessage {
		s = s[:maxBodyInMessage] + "…"
	}
	return "\nbody: " + s
}

// Client sends requests to an http.Handler or to a server at a base URL and
// validates every response under /v1 against the document.
type Client struct {
	// Header is sent with every request, e.g. Header.Set("Authorization", "Bearer …").
	// Headers given to Request replace these per name.
	Header http.Header

	tb        testing.TB
	handler   http.Handler
	baseURL   string
	http      *http.Client
	validator *Validator
}

// NewClient returns a Client that serves requests with h (the whole application,
// so /v1/me is the real path) through an httptest.ResponseRecorder. A nil v
// turns validation off.
func NewClient(tb testing.TB, h http.Handler, v *Validator) *Client {
	return &Client{Header: http.Header{}, tb: tb, handler: h, validator: v}
}

// NewURLClient returns a Client that sends requests over the network to the
// server at baseURL (its root, e.g. an httptest.Server's URL, without /v1).
// A nil v turns validation off.
func NewURLClient(tb testing.TB, baseURL string, v *Validator) *Client {
	return &Client{Header: http.Header{}, tb: tb, baseURL: strings.TrimSuffix(baseURL, "/"), http: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, validator: v}
}

// Response is a finished response with its body read.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do runs req and returns the response. Responses to requests under /v1 are
// checked against the document, except OPTIONS preflights. Failing to send the
// request is fatal. req's headers are sent as given: Client.Header is applied by
// Request, not by Do.
func (c *Client) Do(req *http.Request) *Response {
	c.tb.Helper()
	var res *Response
	if c.handler != nil {
		if req.RemoteAddr == "" {
			req.RemoteAddr = "192.0.2.1:1234"
		}
		if req.RequestURI == "" {
			req.RequestURI = req.URL.RequestURI()
		}
		rec := httptest.NewRecorder()
		c.handler.ServeHTTP(rec, req)
		result := rec.Result()
		res = &Response{Status: result.StatusCode, Header: result.Header, Body: rec.Body.Bytes()}
	} else {
		if req.URL.Host == "" {
			u, err := req.URL.Parse(c.baseURL + req.URL.RequestURI())
			if err != nil {
				c.tb.Fatalf("apitest: %s %s: %v", req.Method, req.URL, err)
			}
			req.URL, req.Host = u, u.Host
		}
		req.RequestURI = ""
		hres, err := c.http.Do(req)
		if err != nil {
			c.tb.Fatalf("apitest: %s %s: %v", req.Method, req.URL, err)
		}
		body, err := io.ReadAll(hres.Body)
		_ = hres.Body.Close()
		if err != nil {
			c.tb.Fatalf("apitest: %s %s: read body: %v", req.Method, req.URL, err)
		}
		res = &Response{Status: hres.StatusCode, Header: hres.Header, Body: body}
	}
	if c.validator != nil && req.Method != http.MethodOptions && underPrefix(req.URL.Path) {
		c.validator.Check(c.tb, req, res.Status, res.Header, res.Body)
	}
	return res
}

func underPrefix(path string) bool {
	return path == Prefix || strings.HasPrefix(path, Prefix+"/")
}

// Request sends method to path (e.g. "/v1/me" or "/v1/logs/api?page=2") with
// Client.Header and then each of header applied; a header name given with no
// values removes the default of that name (e.g. http.Header{"Authorization": nil}).
// body is nil for none, []byte, string or io.Reader to send raw (no Content-Type is
// added), or any other value, which is sent JSON-encoded with
// Content-Type: application/json (json.RawMessage is sent as is, also as JSON).
func (c *Client) Request(method, path string, body any, header ...http.Header) *Response {
	c.tb.Helper()
	var (
		r           io.Reader
		contentType string
	)
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	case string:
		r = strings.NewReader(b)
	case io.Reader:
		r = b
	case json.RawMessage:
		r, contentType = bytes.NewReader(b), "application/json"
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			c.tb.Fatalf("apitest: encode body of %s %s: %v", method, path, err)
		}
		r, contentType = bytes.NewReader(enc), "application/json"
	}
	req := httptest.NewRequest(method, path, r)
	if c.handler == nil {
		req.RequestURI = ""
	}
	for k, vs := range c.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for _, h := range header {
		for k, vs := range h {
			k = http.CanonicalHeaderKey(k)
			if len(vs) == 0 {
				req.Header.Del(k)
				continue
			}
			req.Header[k] = append([]string(nil), vs...)
		}
	}
	return c.Do(req)
}

// JSON unmarshals the body into v; failure is fatal.
func (r *Response) JSON(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		tb.Fatalf("apitest: decode response body (status %d): %v%s", r.Status, err, quoteBody(r.Body))
	}
}

// Data unmarshals the body's "data" member into v; a body without data is fatal.
func (r *Response) Data(tb testing.TB, v any) {
	tb.Helper()
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	r.JSON(tb, &env)
	if env.Data == nil {
		tb.Fatalf("apitest: response (status %d) has no data%s", r.Status, quoteBody(r.Body))
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		tb.Fatalf("apitest: decode data (status %d): %v%s", r.Status, err, quoteBody(r.Body))
	}
}

// ErrorCode returns the body's error.code, or "" when the body is not an error
// envelope.
func (r *Response) ErrorCode(tb testing.TB) string {
	tb.Helper()
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &env); err != nil {
		return ""
	}
	return env.Error.Code
}
