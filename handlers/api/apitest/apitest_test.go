package apitest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/handlers/api/openapi"
)

// fakeTB records Errorf and Fatalf calls instead of failing the test; Fatalf
// panics with errFatal so that the caller stops, as FailNow would.
type fakeTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
	fatals []string
}

type fatalPanic struct{}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
	f.mu.Unlock()
	panic(fatalPanic{})
}

// run calls fn and swallows the panic of a recorded Fatalf.
func (f *fakeTB) run(fn func()) {
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(fatalPanic); !ok {
				panic(v)
			}
		}
	}()
	fn()
}

func newFakeTB(t *testing.T) *fakeTB { return &fakeTB{TB: t} }

// docBytes assembles the real document, as the API serves it.
func docBytes(t *testing.T) []byte {
	t.Helper()
	b, err := openapi.Document()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func validator(t *testing.T) *apitest.Validator {
	t.Helper()
	return apitest.NewValidator(t, docBytes(t))
}

const reqID = "req_ABCDEFGHIJKLMNOPQRSTUVWXYZ"

// meData is a GET /me payload that matches the document.
func meData() map[string]any {
	return map[string]any{
		"account": map[string]any{"id": 1, "name": "Acme", "plan": "pro", "created_at": "2026-11-22T05:02:04+01:00"},
		"user":    map[string]any{"id": 2, "email": "owner@example.com", "name": "Olga", "role": "owner", "created_at": "2026-11-22T05:02:04+01:00"},
		"plan":    map[string]any{"name": "pro", "features": []string{"api", "ai"}},
		"key": map[string]any{
			"id": 3, "name": "CI", "prefix": "rb_live_abcd", "scopes": []string{"*"},
			"allowed_ips": []string{}, "allowed_origins": []string{}, "rate_limit": 120,
			"own_rate_limit": nil, "created_at": "2026-11-22T05:02:04+01:00", "last_used_at": nil,
		},
	}
}

func logEntry() map[string]any {
	return map[string]any{
		"id": 7, "key_id": 3, "request_id": reqID, "method": "GET", "path": "/v1/me", "status": 200,
		"ip": "192.0.2.1", "origin": "", "user_agent": "Go-http-client/1.1", "duration_ms": 1.25,
		"created_at": "2026-11-22T05:02:04+01:00",
	}
}

// okHeader is what an authenticated success response carries.
func okHeader() http.Header {
	return http.Header{
		"Content-Type":          {"application/json; charset=utf-8"},
		"X-Request-Id":          {reqID},
		"X-Ratelimit-Limit":     {"120"},
		"X-Ratelimit-Remaining": {"119"},
		"X-Ratelimit-Reset":     {"1795320180"},
	}
}

func errHeader() http.Header {
	return http.Header{"Content-Type": {"application/json; charset=utf-8"}, "X-Request-Id": {reqID}}
}

func envelope(data any, m map[string]any) []byte {
	if m == nil {
		m = map[string]any{}
	}
	m["request_id"] = reqID
	b, _ := json.Marshal(map[string]any{"data": data, "meta": m})
	return b
}

func errorBody(code string, extra map[string]any) []byte {
	e := map[string]any{"code": code, "message": "Fehler.", "request_id": reqID}
	for k, v := range extra {
		e[k] = v
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return b
}

func with(h http.Header, kv ...string) http.Header {
	h = h.Clone()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			h.Del(kv[i])
			continue
		}
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestEmbeddedDocumentLoadsAndValidates(t *testing.T) {
	b := docBytes(t)
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "1.1.0" {
		t.Errorf("openapi %q, info.version %q; want 3.1.0 and 1.1.0", doc.OpenAPI, doc.Info.Version)
	}
	apitest.NewValidator(t, b)
}

// TestDocumentFormatting keeps the hand-written sources (and the document
// assembled from them) pretty-printed with two spaces, so that diffs of later
// additions stay readable.
func TestDocumentFormatting(t *testing.T) {
	docs := map[string][]byte{"the assembled openapi.json": docBytes(t)}
	names, err := fs.Glob(openapi.Sources(), "*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		b, err := fs.ReadFile(openapi.Sources(), name)
		if err != nil {
			t.Fatal(err)
		}
		docs["handlers/api/openapi/"+name] = b
	}
	if len(docs) < 3 {
		t.Fatalf("only %d documents to check", len(docs))
	}
	for name, b := range docs {
		var compact, indented bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := json.Indent(&indented, compact.Bytes(), "", "  "); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		indented.WriteByte('\n')
		if !bytes.Equal(indented.Bytes(), b) {
			t.Errorf("%s is not pretty-printed with 2-space indentation and a final newline (python3 -m json.tool --indent 2 --no-ensure-ascii)", name)
		}
	}
}

// TestDocumentConventions checks the rules every operation of the document follows.
func TestDocumentConventions(t *testing.T) {
	doc := validator(t).Document()
	seen := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			if op.OperationID == "" {
				t.Errorf("%s: no operationId", name)
			} else if other, dup := seen[op.OperationID]; dup {
				t.Errorf("%s: operationId %q also used by %s", name, op.OperationID, other)
			}
			seen[op.OperationID] = name
			if len(op.Tags) == 0 {
				t.Errorf("%s: no tag", name)
			}
			public := op.Security != nil && len(*op.Security) == 0
			if !public {
				for _, status := range []int{401, 402, 403, 429, 500} {
					if op.Responses.Status(status) == nil {
						t.Errorf("%s: authenticated operation does not list %d", name, status)
					}
				}
			}
			if strings.Contains(path, "{") && op.Responses.Status(404) == nil {
				t.Errorf("%s: has path parameters but does not list 404", name)
			}
			for _, p := range op.Parameters {
				if p.Value != nil && p.Value.In == "query" && p.Value.Name == "page" && op.Responses.Status(422) == nil {
					t.Errorf("%s: list operation does not list 422", name)
				}
			}
			for code, ref := range op.Responses.Map() {
				if !strings.HasPrefix(code, "2") {
					continue
				}
				want := []string{"X-Request-Id"}
				if !public {
					want = append(want, "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
				}
				for _, h := range want {
					if ref.Value.Headers[h] == nil {
						t.Errorf("%s %s: success response lacks header %s", name, code, h)
					}
				}
				if code == "204" || path == "/openapi.json" || path == "/docs" || strings.HasSuffix(path, "/download") { // documents and files, not envelopes
					continue
				}
				mt := ref.Value.Content.Get("application/json")
				if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
					t.Errorf("%s %s: no application/json schema", name, code)
					continue
				}
				s := mt.Schema.Value
				if !slices.Contains(s.Required, "data") || !slices.Contains(s.Required, "meta") {
					t.Errorf("%s %s: success schema is not the {data, meta} envelope", name, code)
				}
			}
		}
	}
}

func TestNewValidatorRejectsBrokenDocuments(t *testing.T) {
	for name, doc := range map[string]string{
		"not json":    `{"openapi": `,
		"invalid":     `{"openapi": "3.1.0", "info": {"title": "x"}, "paths": {}}`,
		"no 404 resp": `{"openapi": "3.1.0", "info": {"title": "x", "version": "1"}, "paths": {}}`,
	} {
		t.Run(name, func(t *testing.T) {
			tb := newFakeTB(t)
			tb.run(func() { apitest.NewValidator(tb, []byte(doc)) })
			if len(tb.fatals) != 1 {
				t.Errorf("fatals = %q, want one", tb.fatals)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	v := validator(t)
	me := func(mutate func(d map[string]any)) []byte {
		d := meData()
		if mutate != nil {
			mutate(d)
		}
		return envelope(d, nil)
	}
	key := func(d map[string]any) map[string]any { return d["key"].(map[string]any) }
	page := map[string]any{"pagination": map[string]any{"page": 1, "per_page": 25, "total": 1, "pages": 1}}

	tests := []struct {
		name    string
		method  string
		path    string
		status  int
		header  http.Header
		body    []byte
		wantErr string // "" when the response matches
	}{
		{name: "matching", method: "GET", path: "/v1/me", status: 200, header: okHeader(), body: me(nil)},
		{name: "unknown fields are allowed", method: "GET", path: "/v1/me", status: 200, header: okHeader(),
			body: me(func(d map[string]any) { d["extra"] = true; key(d)["new_field"] = "x" })},
		{name: "nullable fields set", method: "GET", path: "/v1/me", status: 200, header: okHeader(),
			body: me(func(d map[string]any) {
				key(d)["own_rate_limit"] = 60
				key(d)["last_used_at"] = "2026-11-22T05:02:04+01:00"
			})},
		{name: "wrong field type", method: "GET", path: "/v1/me", status: 200, header: okHeader(),
			body:    me(func(d map[string]any) { d["account"].(map[string]any)["id"] = "1" }),
			wantErr: "does not match"},
		{name: "integer field is null", method: "GET", path: "/v1/me", status: 200, header: okHeader(),
			body:    me(func(d map[string]any) { key(d)["rate_limit"] = nil }),
			wantErr: "does not match"},
		{name: "missing required field", method: "GET", path: "/v1/me", status: 200, header: okHeader(),
			body:    me(func(d map[string]any) { delete(key(d), "last_used_at") }),
			wantErr: "last_used_at"},
		{name: "bad date-time", method: "GET", path: "/v1/me", status: 200, header: okHeader(),
			body:    me(func(d map[string]any) { key(d)["last_used_at"] = "gestern" }),
			wantErr: "does not match"},
		{name: "not in the envelope", method: "GET", path: "/v1/me", status: 200, header: okHeader(),
			body: func() []byte { b, _ := json.Marshal(meData()); return b }(), wantErr: "does not match"},
		{name: "undocumented status", method: "GET", path: "/v1/me", status: 201, header: okHeader(), body: me(nil),
			wantErr: "status is not supported"},
		{name: "undocumented error status", method: "GET", path: "/v1/me", status: 404, header: errHeader(),
			body: errorBody("not_found", nil), wantErr: "status is not supported"},
		{name: "path not in the document", method: "GET", path: "/v1/nowhere", status: 200, header: okHeader(), body: me(nil),
			wantErr: "not in openapi.json"},
		{name: "method not in the document", method: "POST", path: "/v1/me", status: 200, header: okHeader(), body: me(nil),
			wantErr: "not in openapi.json"},
		{name: "generic 404 for an unknown path", method: "GET", path: "/v1/nowhere", status: 404, header: errHeader(),
			body: errorBody("not_found", nil)},
		{name: "generic 404 with a wrong code", method: "GET", path: "/v1/nowhere", status: 404, header: errHeader(),
			body: errorBody("server_error", nil), wantErr: "does not match"},
		{name: "generic 405", method: "DELETE", path: "/v1/me", status: 405, header: with(errHeader(), "Allow", "GET, HEAD, OPTIONS"),
			body: errorBody("method_not_allowed", nil)},
		{name: "405 without Allow", method: "DELETE", path: "/v1/me", status: 405, header: errHeader(),
			body: errorBody("method_not_allowed", nil), wantErr: "Allow"},
		{name: "missing X-Request-Id", method: "GET", path: "/v1/me", status: 200, header: with(okHeader(), "X-Request-Id", ""), body: me(nil),
			wantErr: "X-Request-Id"},
		{name: "request ids differ", method: "GET", path: "/v1/me", status: 200, header: with(okHeader(), "X-Request-Id", "req_OTHER"), body: me(nil),
			wantErr: "differs"},
		{name: "missing rate-limit header", method: "GET", path: "/v1/me", status: 200, header: with(okHeader(), "X-RateLimit-Remaining", ""), body: me(nil),
			wantErr: "X-RateLimit-Remaining"},
		{name: "wrong content type", method: "GET", path: "/v1/me", status: 200, header: with(okHeader(), "Content-Type", "text/html"), body: me(nil),
			wantErr: "Content-Type"},
		{name: "401", method: "GET", path: "/v1/me", status: 401, header: with(errHeader(), "WWW-Authenticate", `Bearer realm="rundbrief"`),
			body: errorBody("unauthorized", nil)},
		{name: "401 with another code", method: "GET", path: "/v1/me", status: 401, header: with(errHeader(), "WWW-Authenticate", `Bearer realm="rundbrief"`),
			body: errorBody("forbidden", nil), wantErr: "does not match"},
		{name: "402 limit_reached", method: "GET", path: "/v1/plan/limits", status: 402, header: errHeader(),
			body: errorBody("limit_reached", map[string]any{"upgrade_url": "http://x/settings/plan"})},
		{name: "402 without upgrade_url", method: "GET", path: "/v1/plan/limits", status: 402, header: errHeader(),
			body: errorBody("plan_required", map[string]any{"feature": "api"}), wantErr: "upgrade_url"},
		{name: "403 insufficient scope", method: "GET", path: "/v1/logs/api", status: 403, header: okHeader(),
			body: errorBody("forbidden", map[string]any{"reason": "insufficient_scope", "required_scope": "read"})},
		{name: "403 without rate-limit headers", method: "GET", path: "/v1/logs/api", status: 403, header: errHeader(),
			body: errorBody("forbidden", map[string]any{"reason": "ip_not_allowed"}), wantErr: "X-RateLimit-Limit"},
		{name: "429", method: "GET", path: "/v1/me", status: 429,
			header: with(okHeader(), "Retry-After", "12"), body: errorBody("rate_limited", map[string]any{"retry_after": 12})},
		{name: "429 without Retry-After", method: "GET", path: "/v1/me", status: 429,
			header: okHeader(), body: errorBody("rate_limited", map[string]any{"retry_after": 12}), wantErr: "Retry-After"},
		{name: "list", method: "GET", path: "/v1/logs/api?page=1&per_page=25&status=200", status: 200, header: okHeader(),
			body: envelope([]any{logEntry()}, page)},
		{name: "list with null key_id", method: "GET", path: "/v1/logs/api", status: 200, header: okHeader(),
			body: envelope([]any{func() map[string]any { e := logEntry(); e["key_id"] = nil; return e }()}, page)},
		{name: "list without pagination", method: "GET", path: "/v1/logs/api", status: 200, header: okHeader(),
			body: envelope([]any{logEntry()}, nil), wantErr: "pagination"},
		{name: "422 with fields", method: "GET", path: "/v1/logs/api?per_page=500", status: 422, header: errHeader(),
			body: errorBody("validation_error", map[string]any{"fields": map[string]string{"per_page": "1 bis 100."}})},
		{name: "422 without fields", method: "GET", path: "/v1/logs/api?per_page=500", status: 422, header: errHeader(),
			body: errorBody("validation_error", nil), wantErr: "fields"},
		{name: "item", method: "GET", path: "/v1/logs/api/7", status: 200, header: okHeader(), body: envelope(logEntry(), nil)},
		{name: "item 404", method: "GET", path: "/v1/logs/api/8", status: 404, header: errHeader(), body: errorBody("not_found", nil)},
		{name: "index", method: "GET", path: "/v1/", status: 200, header: errHeader(), body: envelope(map[string]any{
			"name": "Rundbrief API", "version": "1.1.0", "base_url": "http://x/v1", "docs_url": "http://x/v1/openapi.json",
			"openapi_url": "http://x/v1/openapi.json", "time": "2026-11-22T05:02:04+01:00",
		}, nil)},
		{name: "index without slash", method: "GET", path: "/v1", status: 200, header: errHeader(), body: envelope(map[string]any{
			"name": "Rundbrief API", "version": "1.1.0", "base_url": "http://x/v1", "docs_url": "http://x/v1/openapi.json",
			"openapi_url": "http://x/v1/openapi.json",
		}, nil), wantErr: "time"},
		{name: "openapi.json", method: "GET", path: "/v1/openapi.json", status: 200, header: errHeader(), body: []byte(`{"openapi":"3.1.0"}`)},
		{name: "docs page", method: "GET", path: "/v1/docs", status: 200, header: with(errHeader(), "Content-Type", "text/html; charset=utf-8"),
			body: []byte(`<!DOCTYPE html><redoc spec-url="openapi.json"></redoc>`)},
		{name: "HEAD checks status and headers", method: "HEAD", path: "/v1/me", status: 200, header: okHeader()},
		{name: "HEAD with a missing header", method: "HEAD", path: "/v1/me", status: 200, header: with(okHeader(), "X-RateLimit-Reset", ""),
			wantErr: "X-RateLimit-Reset"},
		{name: "outside /v1", method: "GET", path: "/me", status: 200, header: okHeader(), body: me(nil), wantErr: "not in openapi.json"},
		{name: "404 outside /v1", method: "GET", path: "/nowhere", status: 404, header: errHeader(), body: errorBody("not_found", nil),
			wantErr: "not in openapi.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb := newFakeTB(t)
			req := httptest.NewRequest(tc.method, "http://rundbrief.test"+tc.path, nil)
			v.Check(tb, req, tc.status, tc.header, tc.body)
			switch {
			case tc.wantErr == "" && len(tb.errors) > 0:
				t.Errorf("unexpected errors:\n%s", strings.Join(tb.errors, "\n"))
			case tc.wantErr != "" && len(tb.errors) == 0:
				t.Errorf("no error, want one mentioning %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(strings.Join(tb.errors, "\n"), tc.wantErr):
				t.Errorf("errors do not mention %q:\n%s", tc.wantErr, strings.Join(tb.errors, "\n"))
			}
			for _, e := range tb.errors {
				if !strings.Contains(e, tc.method+" ") {
					t.Errorf("error does not name the request: %s", e)
				}
			}
		})
	}
}

// fakeAPI imitates the real API closely enough for the harness: /v1/me needs
// "Authorization: Bearer good", POST /v1/echo-less paths are 404, OPTIONS is 204.
func fakeAPI(t *testing.T, gotBody *[]byte, gotHeader *http.Header) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gotHeader != nil {
			*gotHeader = r.Header.Clone()
		}
		if gotBody != nil {
			b, _ := io.ReadAll(r.Body)
			*gotBody = b
		}
		h := w.Header()
		h.Set("X-Request-Id", reqID)
		h.Set("Content-Type", "application/json; charset=utf-8")
		switch {
		case r.Method == http.MethodOptions:
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/v1/me" && r.Method == http.MethodGet && r.Header.Get("Authorization") != "Bearer good":
			h.Set("WWW-Authenticate", `Bearer realm="rundbrief"`)
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write(errorBody("unauthorized", nil))
		case r.URL.Path == "/v1/me" && r.Method == http.MethodGet:
			for k, v := range okHeader() {
				h[k] = v
			}
			_, _ = w.Write(envelope(meData(), nil))
		case r.URL.Path == "/v1/broken":
			_, _ = w.Write(envelope(meData(), nil)) // 200 on a path the document lacks
		case r.URL.Path == "/outside":
			h.Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<p>not the API</p>"))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write(errorBody("not_found", nil))
		}
	})
}

func TestClient(t *testing.T) {
	v := validator(t)
	var body []byte
	var header http.Header
	tb := newFakeTB(t)
	c := apitest.NewClient(tb, fakeAPI(t, &body, &header), v)
	c.Header.Set("Authorization", "Bearer good")

	res := c.Request(http.MethodGet, "/v1/me", nil)
	if res.Status != http.StatusOK || res.Header.Get("X-Request-Id") != reqID {
		t.Fatalf("GET /v1/me = %d %v", res.Status, res.Header)
	}
	var me struct {
		Account struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"account"`
	}
	res.Data(t, &me)
	if me.Account.ID != 1 || me.Account.Name != "Acme" {
		t.Errorf("data = %+v", me)
	}
	var raw map[string]any
	res.JSON(t, &raw)
	if raw["meta"] == nil {
		t.Errorf("JSON: no meta in %v", raw)
	}

	// A per-call header with no values removes the default.
	res = c.Request(http.MethodGet, "/v1/me", nil, http.Header{"Authorization": nil})
	if res.Status != http.StatusUnauthorized || res.ErrorCode(t) != "unauthorized" {
		t.Errorf("without key: %d %q", res.Status, res.ErrorCode(t))
	}
	if header.Get("Authorization") != "" {
		t.Errorf("Authorization was sent: %q", header.Get("Authorization"))
	}
	// A per-call header replaces the default.
	res = c.Request(http.MethodGet, "/v1/me", nil, http.Header{"authorization": {"Bearer bad"}})
	if res.Status != http.StatusUnauthorized || header.Get("Authorization") != "Bearer bad" {
		t.Errorf("override: %d, sent %q", res.Status, header.Get("Authorization"))
	}

	// Bodies: values are JSON-encoded with a Content-Type, strings and bytes go raw.
	c.Request(http.MethodPost, "/v1/nothing", map[string]any{"email": "a@example.com"})
	if string(body) != `{"email":"a@example.com"}` || header.Get("Content-Type") != "application/json" {
		t.Errorf("JSON body %q, Content-Type %q", body, header.Get("Content-Type"))
	}
	c.Request(http.MethodPost, "/v1/nothing", `{"broken`)
	if string(body) != `{"broken` || header.Get("Content-Type") != "" {
		t.Errorf("raw body %q, Content-Type %q", body, header.Get("Content-Type"))
	}
	c.Request(http.MethodPost, "/v1/nothing", []byte("x"), http.Header{"Content-Type": {"text/plain"}})
	if string(body) != "x" || header.Get("Content-Type") != "text/plain" {
		t.Errorf("raw bytes %q, Content-Type %q", body, header.Get("Content-Type"))
	}
	res = c.Request(http.MethodPost, "/v1/nothing", json.RawMessage(`{"a":1}`))
	if string(body) != `{"a":1}` || header.Get("Content-Type") != "application/json" || res.ErrorCode(t) != "not_found" {
		t.Errorf("raw JSON %q, Content-Type %q, code %q", body, header.Get("Content-Type"), res.ErrorCode(t))
	}

	// Preflights and paths outside /v1 are not checked.
	if res := c.Request(http.MethodOptions, "/v1/me", nil); res.Status != http.StatusNoContent {
		t.Errorf("OPTIONS = %d", res.Status)
	}
	if res := c.Request(http.MethodGet, "/outside", nil); res.Status != http.StatusOK || res.ErrorCode(t) != "" {
		t.Errorf("GET /outside = %d", res.Status)
	}
	if len(tb.errors)+len(tb.fatals) > 0 {
		t.Fatalf("unexpected errors:\n%s", strings.Join(append(tb.errors, tb.fatals...), "\n"))
	}

	// A response the document does not allow is reported through the client's tb.
	if res := c.Request(http.MethodGet, "/v1/broken", nil); res.Status != http.StatusOK {
		t.Errorf("GET /v1/broken = %d", res.Status)
	}
	if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], "GET /v1/broken") {
		t.Errorf("errors = %q, want one naming GET /v1/broken", tb.errors)
	}
}

func TestURLClient(t *testing.T) {
	var header http.Header
	srv := httptest.NewServer(fakeAPI(t, nil, &header))
	defer srv.Close()
	tb := newFakeTB(t)
	c := apitest.NewURLClient(tb, srv.URL, validator(t))
	c.Header.Set("Authorization", "Bearer good")

	res := c.Request(http.MethodGet, "/v1/me?x=1", nil)
	if res.Status != http.StatusOK || header.Get("Authorization") != "Bearer good" {
		t.Errorf("GET /v1/me = %d, sent %q", res.Status, header.Get("Authorization"))
	}
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/broken", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Do(req)
	if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], "not in openapi.json") {
		t.Errorf("errors = %q, want one for /v1/broken", tb.errors)
	}
}

func TestResponseHelpersFailOnBadBodies(t *testing.T) {
	tb := newFakeTB(t)
	res := &apitest.Response{Status: 200, Body: []byte(`{"meta":{}}`)}
	tb.run(func() {
		var v any
		res.Data(tb, &v)
	})
	res = &apitest.Response{Status: 200, Body: []byte(`<html>`)}
	tb.run(func() {
		var v any
		res.JSON(tb, &v)
	})
	if len(tb.fatals) != 2 {
		t.Errorf("fatals = %q, want two", tb.fatals)
	}
	if code := res.ErrorCode(t); code != "" {
		t.Errorf("ErrorCode of a non-JSON body = %q", code)
	}
}

// TestBodySchemas checks response bodies against a small document: a schema
// reached through a reference and one written inline under a path template,
// the generic 404 of an undescribed path, and a writeOnly property, which a
// response must not carry.
func TestBodySchemas(t *testing.T) {
	doc := `{"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
  "paths": {
    "/things": {"get": {"responses": {"200": {"description": "ok",
      "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}}}},
    "/things/{id}": {"get": {"parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
      "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {
        "type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}, "token": {"type": "string", "writeOnly": true}}}}}},
        "404": {"$ref": "#/components/responses/NotFound"}}}}
  },
  "components": {
    "schemas": {
      "Thing": {"type": "object", "required": ["name"], "properties": {"name": {"type": ["string", "null"]}, "secret": {"type": "string", "writeOnly": true}}},
      "Error": {"type": "object", "required": ["code"], "properties": {"code": {"type": "string", "const": "not_found"}}}
    },
    "responses": {
      "NotFound": {"description": "nf", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "MethodNotAllowed": {"description": "mna", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    }
  }}`
	v := apitest.NewValidator(t, []byte(doc))
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	for _, tc := range []struct {
		name, path string
		status     int
		body       string
		wantErr    string
	}{
		{"referenced schema", "/v1/things", 200, `{"name": null}`, ""},
		{"referenced schema, wrong type", "/v1/things", 200, `{"name": 1}`, "does not match"},
		{"referenced schema, writeOnly property", "/v1/things", 200, `{"name": "a", "secret": "s"}`, "secret"},
		{"inline schema under a template", "/v1/things/7", 200, `{"id": 7}`, ""},
		{"inline schema, missing property", "/v1/things/7", 200, `{}`, "id"},
		{"inline schema, writeOnly property", "/v1/things/7", 200, `{"id": 7, "token": "t"}`, "token"},
		{"referenced response", "/v1/things/7", 404, `{"code": "not_found"}`, ""},
		{"referenced response, wrong constant", "/v1/things/7", 404, `{"code": "gone"}`, "does not match"},
		{"undescribed path", "/v1/nothing", 404, `{"code": "not_found"}`, ""},
		{"undescribed path, wrong body", "/v1/nothing", 404, `{}`, "does not match"},
		{"not JSON", "/v1/things", 200, `{"name": `, "JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := newFakeTB(t)
			tb.run(func() {
				v.Check(tb, httptest.NewRequest(http.MethodGet, tc.path, nil), tc.status, jsonHeader, []byte(tc.body))
			})
			switch got := strings.Join(tb.errors, "\n"); {
			case tc.wantErr == "" && got != "":
				t.Errorf("errors for a matching response:\n%s", got)
			case tc.wantErr != "" && !strings.Contains(got, tc.wantErr):
				t.Errorf("errors %q do not mention %q", got, tc.wantErr)
			}
		})
	}
}
