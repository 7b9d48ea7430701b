package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/services"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// testApp is one process's API over a shared database, with POST routes that exist
// only in tests: issue 2 has no POST endpoint of its own, yet every later one relies
// on the idempotency and body rules proven here, behind the same middleware chain.
type testApp struct {
	api     *API
	handler http.Handler
	calls   atomic.Int64 // handler executions of /test/keys
	gate    chan struct{}
}

func newTestApp(t testing.TB, db *store.DB) *testApp {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ta := &testApp{api: New(&services.Set{DB: db, APILog: store.NewAPILogWriter(db, log), Log: log}, Config{BaseURL: "http://rundbrief.test"})}
	mux := ta.api.Handler().(*chi.Mux)
	mux.Group(func(r chi.Router) {
		r.Use(ta.api.keyed()...)
		// Creates an API key: a real row whose count shows whether work ran twice.
		r.Post("/test/keys", ta.api.need("write", "", func(w http.ResponseWriter, r *http.Request) error {
			ta.calls.Add(1)
			var in struct {
				Name  string `json:"name"`
				Count int    `json:"count"`
			}
			if err := decode(r, &in); err != nil {
				return err
			}
			if ta.gate != nil {
				<-ta.gate
			}
			k, _, err := db.CreateKey(r.Context(), accountID(r), store.KeySettings{Name: in.Name})
			if err != nil {
				return err
			}
			return writeData(w, r, http.StatusCreated, map[string]any{"id": k.ID, "name": k.Name})
		}))
		r.Post("/test/flaky", ta.api.need("write", "", func(w http.ResponseWriter, r *http.Request) error {
			if ta.calls.Add(1) == 1 {
				return errors.New("pq: connection refused to 10.0.0.5 user=secret")
			}
			return writeData(w, r, http.StatusOK, map[string]any{"ok": true})
		}))
		r.Post("/test/error", ta.api.need("write", "", func(w http.ResponseWriter, r *http.Request) error {
			var in struct {
				Kind string `json:"kind"`
			}
			if err := decode(r, &in); err != nil {
				return err
			}
			switch in.Kind {
			case "limit":
				return &store.LimitError{Limit: "contacts", Max: 500}
			case "plan":
				return &store.PlanError{Feature: "ab_tests"}
			case "conflict":
				return &store.ConflictError{Reason: "already_sent", Message: "Schon versendet."}
			case "validation":
				return store.Invalid("email", "Ungültig.")
			case "panic":
				panic("boom: internal detail")
			}
			return store.ErrNotFound
		}))
	})
	ta.handler = mux
	return ta
}

type fixture struct {
	db   *store.DB
	url  string
	acct int64
	key  string
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	url := dbtest.URL(t)
	db := dbtest.Open(t, url)
	res, err := db.CreateAccount(context.Background(), store.NewAccount{Name: "Acme", Email: "owner@acme.test", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := db.CreateKey(context.Background(), res.Account.ID, store.KeySettings{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{db: db, url: url, acct: res.Account.ID, key: key}
}

func (f fixture) keyCount(t *testing.T, name string) int {
	t.Helper()
	var n int
	if err := f.db.GetContext(context.Background(), &n, `SELECT count(*) FROM api_keys WHERE account_id = $1 AND name = $2`, f.acct, name); err != nil {
		t.Fatal(err)
	}
	return n
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (f fixture) post(t *testing.T, h http.Handler, path, body string, header map[string]string) response {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.key)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	rec := httptest.NewRecorder()
	http.StripPrefix("/v1", h).ServeHTTP(rec, req)
	return response{rec.Code, rec.Header(), rec.Body.Bytes()}
}

// errorSchema validates error bodies against components.schemas.Error of openapi.json.
func errorSchema(t *testing.T) *openapi3.Schema {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	if doc.Components == nil {
		t.Fatal("openapi.json has no components")
	}
	ref := doc.Components.Schemas["Error"]
	if ref == nil || ref.Value == nil {
		t.Fatal("openapi.json has no components.schemas.Error")
	}
	return ref.Value
}

func (r response) apiError(t *testing.T, schema *openapi3.Schema) Error {
	t.Helper()
	var raw any
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatalf("error body is not JSON: %s", r.body)
	}
	if err := schema.VisitJSON(raw); err != nil {
		t.Errorf("error body does not match the Error schema: %v\n%s", err, r.body)
	}
	var env struct {
		Error Error `json:"error"`
	}
	_ = json.Unmarshal(r.body, &env)
	if env.Error.RequestID == "" || env.Error.RequestID != r.header.Get("X-Request-Id") {
		t.Errorf("error.request_id %q, X-Request-Id %q", env.Error.RequestID, r.header.Get("X-Request-Id"))
	}
	return env.Error
}

func TestIdempotentReplay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	app := newTestApp(t, f.db)
	idem := map[string]string{"Idempotency-Key": "order-1"}

	first := f.post(t, app.handler, "/test/keys", `{"name":"replay"}`, idem)
	if first.status != http.StatusCreated || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	again := f.post(t, app.handler, "/test/keys", `{"name":"replay"}`, idem)
	if again.status != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.body, first.body) {
		t.Fatalf("replay: %d %v %s", again.status, again.header, again.body)
	}
	if again.header.Get("X-Request-Id") != first.header.Get("X-Request-Id") {
		t.Error("a replay must carry the request id its stored body names")
	}
	if again.header.Get("X-RateLimit-Limit") == "" {
		t.Error("a replay still counts against the rate limit and says so")
	}
	if n := f.keyCount(t, "replay"); n != 1 || app.calls.Load() != 1 {
		t.Errorf("replay created %d keys in %d executions, want 1 and 1", n, app.calls.Load())
	}

	// One byte different: the same key is refused.
	reused := f.post(t, app.handler, "/test/keys", `{"name":"replay" }`, idem)
	if e := reused.apiError(t, errorSchema(t)); reused.status != http.StatusConflict || e.Code != "conflict" || e.Reason != "idempotency_key_reused" {
		t.Errorf("reused key: %d %+v", reused.status, e)
	}
	// The same key on another path is another request too.
	other := f.post(t, app.handler, "/test/error", `{"name":"replay"}`, idem)
	if other.status != http.StatusConflict {
		t.Errorf("same key, other endpoint: %d", other.status)
	}
	// Without the header nothing is deduplicated.
	f.post(t, app.handler, "/test/keys", `{"name":"replay"}`, nil)
	if n := f.keyCount(t, "replay"); n != 2 {
		t.Errorf("without Idempotency-Key: %d keys, want 2", n)
	}
}

func TestStoredResponsesAreSealed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	app := newTestApp(t, f.db)
	box, err := secret.NewBox("middleware tests secret, at least 32 characters")
	if err != nil {
		t.Fatal(err)
	}
	app.api.box = box
	idem := map[string]string{"Idempotency-Key": "sealed-1"}
	first := f.post(t, app.handler, "/test/keys", `{"name":"sealed-secret-name"}`, idem)
	if first.status != http.StatusCreated {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	var stored []byte
	if err := f.db.GetContext(context.Background(), &stored, `SELECT response_body FROM idempotency_keys WHERE key = 'sealed-1'`); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored, []byte("sealed-secret-name")) || !bytes.HasPrefix(stored, []byte(sealedPrefix)) {
		t.Errorf("stored response is readable: %q", stored)
	}
	again := f.post(t, app.handler, "/test/keys", `{"name":"sealed-secret-name"}`, idem)
	if again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.body, first.body) {
		t.Errorf("replay of a sealed response: %d %s", again.status, again.body)
	}
}

func TestIdempotencyInProgressAcrossProcesses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := newTestApp(t, f.db)
	b := newTestApp(t, dbtest.Open(t, f.url)) // a second process on the same database
	a.gate = make(chan struct{})
	idem := map[string]string{"Idempotency-Key": "slow"}

	done := make(chan response)
	go func() { done <- f.post(t, a.handler, "/test/keys", `{"name":"slow"}`, idem) }()
	// Wait until process a runs the request (it then holds the claim).
	for a.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	busy := f.post(t, b.handler, "/test/keys", `{"name":"slow"}`, idem)
	e := busy.apiError(t, errorSchema(t))
	if busy.status != http.StatusConflict || busy.header.Get("Retry-After") != "2" || e.Code != "conflict" {
		t.Errorf("repeat while running: %d Retry-After=%q %+v", busy.status, busy.header.Get("Retry-After"), e)
	}
	close(a.gate)
	first := <-done
	replay := f.post(t, b.handler, "/test/keys", `{"name":"slow"}`, idem)
	if replay.status != http.StatusCreated || replay.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(replay.body, first.body) {
		t.Errorf("replay in process b: %d %s", replay.status, replay.body)
	}
	if b.calls.Load() != 0 || f.keyCount(t, "slow") != 1 {
		t.Errorf("process b executed %d times; %d keys", b.calls.Load(), f.keyCount(t, "slow"))
	}
}

func TestConcurrentIdenticalRequestsCreateOneRecord(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	apps := []*testApp{newTestApp(t, f.db), newTestApp(t, dbtest.Open(t, f.url))}
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := range 20 {
		wg.Go(func() {
			r := f.post(t, apps[i%2].handler, "/test/keys", `{"name":"burst"}`, map[string]string{"Idempotency-Key": "burst-1"})
			mu.Lock()
			statuses[r.status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if n := f.keyCount(t, "burst"); n != 1 {
		t.Errorf("20 concurrent identical requests created %d keys, want 1 (statuses %v)", n, statuses)
	}
	if statuses[http.StatusCreated] < 1 || statuses[http.StatusCreated]+statuses[http.StatusConflict] != 20 {
		t.Errorf("statuses %v: want 201s (first and replays) and 409s (in progress) only", statuses)
	}
}

func TestServerErrorsAreNotStoredAndDoNotLeak(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var logs bytes.Buffer
	app := newTestApp(t, f.db)
	app.api.log = slog.New(slog.NewTextHandler(&logs, nil))
	idem := map[string]string{"Idempotency-Key": "flaky"}

	first := f.post(t, app.handler, "/test/flaky", `{}`, idem)
	e := first.apiError(t, errorSchema(t))
	if first.status != http.StatusInternalServerError || e.Code != "server_error" {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	for _, secret := range []string{"pq", "10.0.0.5", "secret"} {
		if bytes.Contains(first.body, []byte(secret)) {
			t.Errorf("500 body leaks %q: %s", secret, first.body)
		}
	}
	if !strings.Contains(logs.String(), e.RequestID) || !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("the detail belongs in the log with the request id: %s", logs.String())
	}
	if !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a 500 is logged at ERROR: %s", logs.String())
	}
	retry := f.post(t, app.handler, "/test/flaky", `{}`, idem)
	if retry.status != http.StatusOK || retry.header.Get("Idempotent-Replayed") != "" || app.calls.Load() != 2 {
		t.Errorf("a 5xx must not be replayed: %d replayed=%q calls=%d", retry.status, retry.header.Get("Idempotent-Replayed"), app.calls.Load())
	}

	panicked := f.post(t, app.handler, "/test/error", `{"kind":"panic"}`, nil)
	if pe := panicked.apiError(t, errorSchema(t)); panicked.status != 500 || pe.Code != "server_error" || bytes.Contains(panicked.body, []byte("boom")) {
		t.Errorf("panic: %d %s", panicked.status, panicked.body)
	}
}

func TestRequestBodyErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	app := newTestApp(t, f.db)
	schema := errorSchema(t)
	big := `{"name":"` + strings.Repeat("x", maxJSONBody) + `"}`
	cases := []struct {
		name   string
		body   string
		header map[string]string
		status int
		code   string
		field  string
	}{
		{"broken JSON", `{"name":`, nil, 400, "bad_request", ""},
		{"invalid UTF-8", "{\"name\":\"\xff\xfe\"}", nil, 400, "bad_request", ""},
		{"no content type", `{"name":"x"}`, map[string]string{"Content-Type": ""}, 400, "bad_request", ""},
		{"form content type", `name=x`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 400, "bad_request", ""},
		{"too large", big, nil, 413, "payload_too_large", ""},
		{"too large with idempotency key", big, map[string]string{"Idempotency-Key": "big"}, 413, "payload_too_large", ""},
		{"wrong type", `{"name":"x","count":"three"}`, nil, 422, "validation_error", "count"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.post(t, app.handler, "/test/keys", c.body, c.header)
			e := r.apiError(t, schema)
			if r.status != c.status || e.Code != c.code {
				t.Fatalf("%d %s, want %d %s", r.status, e.Code, c.status, c.code)
			}
			if (len(e.Fields) > 0) != (c.status == 422) {
				t.Errorf("error.fields only with 422: %v", e.Fields)
			}
			if c.field != "" && e.Fields[c.field] == "" {
				t.Errorf("fields %v lack %s", e.Fields, c.field)
			}
			if e.Message == "" {
				t.Error("no message")
			}
		})
	}
	if n := f.keyCount(t, "x"); n != 0 {
		t.Errorf("a refused body created %d keys", n)
	}
	// application/json with a charset parameter is fine.
	ok := f.post(t, app.handler, "/test/keys", `{"name":"charset"}`, map[string]string{"Content-Type": "application/json; charset=utf-8"})
	if ok.status != http.StatusCreated {
		t.Errorf("charset parameter: %d %s", ok.status, ok.body)
	}
}

func TestDomainErrorMapping(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	app := newTestApp(t, f.db)
	schema := errorSchema(t)
	cases := []struct {
		kind   string
		status int
		check  func(Error) bool
	}{
		{"limit", 402, func(e Error) bool { return e.Code == "limit_reached" && e.UpgradeURL != "" && e.Feature == "" }},
		{"plan", 402, func(e Error) bool { return e.Code == "plan_required" && e.Feature == "ab_tests" && e.UpgradeURL != "" }},
		{"conflict", 409, func(e Error) bool { return e.Code == "conflict" && e.Reason == "already_sent" }},
		{"validation", 422, func(e Error) bool { return e.Code == "validation_error" && e.Fields["email"] != "" }},
		{"missing", 404, func(e Error) bool { return e.Code == "not_found" }},
	}
	for _, c := range cases {
		r := f.post(t, app.handler, "/test/error", `{"kind":"`+c.kind+`"}`, nil)
		if e := r.apiError(t, schema); r.status != c.status || !c.check(e) {
			t.Errorf("%s: %d %s", c.kind, r.status, r.body)
		}
	}
}

func TestParseTime(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"2026-11-22T10:30:00+01:00": "2026-11-22T10:30:00+01:00",
		"2026-11-22T09:30:00Z":      "2026-11-22T10:30:00+01:00",
		"2026-11-22 10:30":          "2026-11-22T10:30:00+01:00",
		"2026-11-22T10:30":          "2026-11-22T10:30:00+01:00",
		"2026-07-01 10:30":          "2026-07-01T10:30:00+02:00", // summer time
	}
	for in, want := range cases {
		tm, ok := ParseTime(in)
		b, _ := Time(tm).MarshalJSON()
		if !ok || string(b) != `"`+want+`"` {
			t.Errorf("ParseTime(%q) = %s %v, want %s", in, b, ok, want)
		}
	}
	for _, bad := range []string{"", "22.11.2026", "2026-11-22", "tomorrow"} {
		if _, ok := ParseTime(bad); ok {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
}
