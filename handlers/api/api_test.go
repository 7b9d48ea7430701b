package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/services"
)

// now is the fixed clock of these tests: 30 s into a rate-limit window, in winter
// time (Europe/Berlin is UTC+1).
var now = time.Date(2026, 11, 22, 9, 0, 30, 0, time.UTC)

// env is one account with a key, served by one API process over a test database.
type env struct {
	db     *store.DB
	dbURL  string
	acct   int64
	keyID  int64
	key    string
	apiLog *store.APILogWriter
	h      http.Handler
	c      *apitest.Client
	v      *apitest.Validator
}

func newEnv(t *testing.T, plan string) *env {
	t.Helper()
	url := dbtest.URL(t)
	e := &env{db: dbtest.Open(t, url), dbURL: url}
	res, err := e.db.CreateAccount(context.Background(), store.NewAccount{Name: "Acme GmbH", Email: "owner@acme.test", Password: "a long password", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	e.acct = res.Account.ID
	k, full, err := e.db.CreateKey(context.Background(), e.acct, store.KeySettings{Name: "default"})
	if err != nil {
		t.Fatal(err)
	}
	e.keyID, e.key = k.ID, full
	e.h, e.apiLog = e.app(t, e.db)
	e.v = apitest.NewValidator(t, api.OpenAPIDocument())
	e.c = e.client(t, e.h, e.key)
	return e
}

// app builds the /v1 API of one process on db, as serve mounts it.
func (e *env) app(t *testing.T, db *store.DB) (http.Handler, *store.APILogWriter) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	apiLog := store.NewAPILogWriter(db, log)
	a := api.New(&services.Set{DB: db, APILog: apiLog, Log: log}, api.Config{BaseURL: "https://rundbrief.test", Now: func() time.Time { return now }})
	r := chi.NewRouter()
	r.Mount("/v1", a.Handler())
	return r, apiLog
}

func (e *env) client(t *testing.T, h http.Handler, key string) *apitest.Client {
	t.Helper()
	c := apitest.NewClient(t, h, e.v)
	if key != "" {
		c.Header.Set("Authorization", "Bearer "+key)
	}
	return c
}

func (e *env) newKey(t *testing.T, s store.KeySettings) (store.APIKey, string) {
	t.Helper()
	k, full, err := e.db.CreateKey(context.Background(), e.acct, s)
	if err != nil {
		t.Fatal(err)
	}
	return k, full
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func wantError(t *testing.T, r *apitest.Response, status int, code string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	var body struct {
		Error map[string]any `json:"error"`
	}
	r.JSON(t, &body)
	if body.Error["code"] != code {
		t.Fatalf("error.code %v, want %s: %s", body.Error["code"], code, r.Body)
	}
	if _, ok := body.Error["fields"]; ok != (status == 422) {
		t.Errorf("error.fields present=%v with status %d", ok, status)
	}
	return body.Error
}

func TestPublicEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	anon := e.client(t, e.h, "")
	for _, path := range []string{"/v1/", "/v1"} {
		r := anon.Request(http.MethodGet, path, nil, hdr("Origin", "https://shop.example.com"))
		var idx struct {
			Name, Version, BaseURL, OpenAPIURL, Time string
		}
		r.Data(t, &idx)
		if r.Status != 200 || idx.Version != "1.1.0" || r.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("GET %s: %d %+v ACAO=%q", path, r.Status, idx, r.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	var idx map[string]any
	anon.Request(http.MethodGet, "/v1/", nil).Data(t, &idx)
	if idx["base_url"] != "https://rundbrief.test/v1" || idx["openapi_url"] != "https://rundbrief.test/v1/openapi.json" || idx["time"] != "2026-11-22T10:00:30+01:00" {
		t.Errorf("index = %v", idx)
	}
	doc := anon.Request(http.MethodGet, "/v1/openapi.json", nil)
	var d struct {
		OpenAPI string `json:"openapi"`
	}
	doc.JSON(t, &d)
	if doc.Status != 200 || d.OpenAPI != "3.1.0" {
		t.Errorf("openapi.json: %d %q", doc.Status, d.OpenAPI)
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	anon := e.client(t, e.h, "")
	r := anon.Request(http.MethodGet, "/v1/me", nil)
	wantError(t, r, 401, "unauthorized")
	if r.Header.Get("X-RateLimit-Limit") != "" {
		t.Error("an unauthenticated response has no rate-limit budget")
	}
	wantError(t, anon.Request(http.MethodGet, "/v1/me", nil, hdr("Authorization", "Bearer rb_live_"+strings.Repeat("A", 40))), 401, "unauthorized")
	wantError(t, anon.Request(http.MethodGet, "/v1/me", nil, hdr("Authorization", "Basic "+e.key)), 401, "unauthorized")

	for name, h := range map[string]http.Header{
		"bearer":        hdr("Authorization", "Bearer "+e.key),
		"bearer casing": hdr("Authorization", "bearer "+e.key),
		"X-API-Key":     hdr("X-API-Key", e.key),
	} {
		if r := anon.Request(http.MethodGet, "/v1/me", nil, h); r.Status != 200 {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	if r := anon.Request(http.MethodGet, "/v1/me?api_key="+e.key, nil); r.Status != 200 {
		t.Errorf("?api_key=: %d", r.Status)
	}

	// A renewed-away key is dead at once; the new one works with the same settings.
	_, renewed, err := e.db.RenewKey(context.Background(), e.acct, e.keyID)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, e.c.Request(http.MethodGet, "/v1/me", nil), 401, "unauthorized")
	fresh := e.client(t, e.h, renewed)
	var me struct {
		Key struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"key"`
	}
	fresh.Request(http.MethodGet, "/v1/me", nil).Data(t, &me)
	if me.Key.Name != "default" || me.Key.ID == e.keyID {
		t.Errorf("renewed key: %+v", me.Key)
	}
	if err := e.db.RevokeKey(context.Background(), e.acct, me.Key.ID); err != nil {
		t.Fatal(err)
	}
	wantError(t, fresh.Request(http.MethodGet, "/v1/me", nil), 401, "unauthorized")
}

func TestRevokedInAnotherProcessIsRefusedWithinOneSecond(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = e.db.ListenNotifications(ctx, e.dbURL, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	if r := e.c.Request(http.MethodGet, "/v1/me", nil); r.Status != 200 { // cached now
		t.Fatal(r.Status)
	}
	other := dbtest.Open(t, e.dbURL) // the process where an admin revokes the key
	time.Sleep(50 * time.Millisecond)
	if err := other.RevokeKey(ctx, e.acct, e.keyID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for e.c.Request(http.MethodGet, "/v1/me", nil).Status != 401 {
		if time.Now().After(deadline) {
			t.Fatal("key revoked in another process still accepted after 1 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPreflight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	anon := e.client(t, e.h, "")
	for path, origin := range map[string]string{
		"/v1/contacts/42":    "https://app.example.com",
		"/v1/does/not/exist": "https://app.example.com",
		"/v1/me":             "http://localhost:3000",
	} {
		r := anon.Request(http.MethodOptions, path, nil, hdr("Origin", origin, "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "authorization, content-type"))
		want := map[string]string{
			"Access-Control-Allow-Origin":  origin,
			"Access-Control-Allow-Methods": "GET, POST, PUT, PATCH, DELETE, OPTIONS",
			"Access-Control-Allow-Headers": "Authorization, Content-Type, X-API-Key, Idempotency-Key, X-Requested-With",
			"Access-Control-Max-Age":       "600",
			"Vary":                         "Origin",
		}
		if r.Status != http.StatusNoContent || len(r.Body) != 0 {
			t.Errorf("OPTIONS %s: %d %s", path, r.Status, r.Body)
		}
		for k, v := range want {
			if got := r.Header.Get(k); got != v {
				t.Errorf("OPTIONS %s: %s = %q, want %q", path, k, got, v)
			}
		}
	}
	r := anon.Request(http.MethodOptions, "/v1/subscribe/abc", nil, hdr("Origin", "https://blog.example.org"))
	if r.Status != 204 || r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("public preflight: %d %q", r.Status, r.Header.Get("Access-Control-Allow-Origin"))
	}
}

func TestCORSOnAuthenticatedResponses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	r := e.c.Request(http.MethodGet, "/v1/me", nil, hdr("Origin", "https://app.example.com"))
	if r.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" || r.Header.Get("Vary") != "Origin" {
		t.Errorf("ACAO %q Vary %q", r.Header.Get("Access-Control-Allow-Origin"), r.Header.Get("Vary"))
	}
	expose := r.Header.Get("Access-Control-Expose-Headers")
	for _, h := range []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After", "Idempotent-Replayed"} {
		if !strings.Contains(expose, h) {
			t.Errorf("Expose-Headers %q lacks %s", expose, h)
		}
	}
	var meta struct {
		Meta struct {
			RequestID string `json:"request_id"`
		} `json:"meta"`
	}
	r.JSON(t, &meta)
	if !strings.HasPrefix(meta.Meta.RequestID, "req_") || meta.Meta.RequestID != r.Header.Get("X-Request-Id") {
		t.Errorf("request id %q vs header %q", meta.Meta.RequestID, r.Header.Get("X-Request-Id"))
	}
}

func TestKeyRestrictions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	_, ipKey := e.newKey(t, store.KeySettings{AllowedIPs: []string{"10.0.0.0/8", "203.0.113.7"}})
	_, originKey := e.newKey(t, store.KeySettings{AllowedOrigins: []string{"https://*.example.com", "https://app.test"}})
	from := func(ip, key, origin string) *apitest.Response {
		req := httptest.NewRequest(http.MethodGet, "/v1/me", nil)
		req.RemoteAddr = ip + ":40000"
		req.Header.Set("Authorization", "Bearer "+key)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		return e.c.Do(req)
	}
	for _, ip := range []string{"10.20.30.40", "203.0.113.7"} {
		if r := from(ip, ipKey, ""); r.Status != 200 {
			t.Errorf("allowed IP %s: %d", ip, r.Status)
		}
	}
	for _, ip := range []string{"192.0.2.1", "203.0.113.8"} {
		if got := wantError(t, from(ip, ipKey, ""), 403, "forbidden"); got["reason"] != "ip_not_allowed" {
			t.Errorf("IP %s: %v", ip, got)
		}
	}
	for _, o := range []string{"https://shop.example.com", "https://app.test", ""} {
		if r := from("192.0.2.1", originKey, o); r.Status != 200 {
			t.Errorf("allowed origin %q: %d", o, r.Status)
		}
	}
	for _, o := range []string{"https://example.com", "https://evil.test", "http://shop.example.com"} {
		if got := wantError(t, from("192.0.2.1", originKey, o), 403, "forbidden"); got["reason"] != "origin_not_allowed" {
			t.Errorf("origin %s: %v", o, got)
		}
	}
}

// TestRefusalsCarryRateLimitHeaders: the 403s for a disallowed IP or origin and for a
// blocked account are authenticated responses and carry the X-RateLimit headers (the
// validator requires them on every 403), without spending the key's budget: a key
// used from where it is not allowed cannot use up its owner's requests.
func TestRefusalsCarryRateLimitHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	five := 5
	_, key := e.newKey(t, store.KeySettings{RateLimit: &five, AllowedIPs: []string{"10.0.0.0/8"}, AllowedOrigins: []string{"https://app.test"}})
	reset := strconv.FormatInt(time.Date(2026, 11, 22, 9, 1, 0, 0, time.UTC).Unix(), 10)
	from := func(c *apitest.Client, ip, origin string) *apitest.Response {
		req := httptest.NewRequest(http.MethodGet, "/v1/me", nil)
		req.RemoteAddr = ip + ":40000"
		req.Header.Set("Authorization", "Bearer "+key)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		return c.Do(req)
	}
	wantBudget := func(what string, r *apitest.Response, limit, remaining int) {
		t.Helper()
		if r.Header.Get("X-RateLimit-Limit") != strconv.Itoa(limit) || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(remaining) || r.Header.Get("X-RateLimit-Reset") != reset {
			t.Errorf("%s: %d limit=%q remaining=%q reset=%q, want %d, %d, %s", what, r.Status, r.Header.Get("X-RateLimit-Limit"),
				r.Header.Get("X-RateLimit-Remaining"), r.Header.Get("X-RateLimit-Reset"), limit, remaining, reset)
		}
	}
	c := e.client(t, e.h, key)
	wantBudget("first allowed request", from(c, "10.1.2.3", "https://app.test"), 5, 4)
	for range 10 {
		r := from(c, "192.0.2.1", "https://app.test")
		if got := wantError(t, r, 403, "forbidden"); got["reason"] != "ip_not_allowed" {
			t.Fatalf("IP: %v", got)
		}
		wantBudget("disallowed IP", r, 5, 4)
		r = from(c, "10.1.2.3", "https://evil.test")
		if got := wantError(t, r, 403, "forbidden"); got["reason"] != "origin_not_allowed" {
			t.Fatalf("origin: %v", got)
		}
		wantBudget("disallowed origin", r, 5, 4)
	}
	// Another process that has not served the key yet reads the shared counter.
	h2, _ := e.app(t, dbtest.Open(t, e.dbURL))
	wantBudget("disallowed IP, other process", from(e.client(t, h2, key), "192.0.2.1", ""), 5, 4)
	wantBudget("allowed after the refusals", from(c, "10.1.2.3", ""), 5, 3)

	blocked := newEnv(t, "business")
	if _, err := blocked.db.ExecContext(context.Background(), `UPDATE accounts SET blocked_at = now() WHERE id = $1`, blocked.acct); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := blocked.c.Request(http.MethodGet, "/v1/me", nil)
		if got := wantError(t, r, 403, "forbidden"); got["reason"] != "account_blocked" {
			t.Fatalf("blocked: %v", got)
		}
		wantBudget("blocked account", r, 120, 120)
	}
}

func TestScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	_, sendOnly := e.newKey(t, store.KeySettings{Scopes: []string{"send"}})
	c := e.client(t, e.h, sendOnly)
	got := wantError(t, c.Request(http.MethodGet, "/v1/logs/api", nil), 403, "forbidden")
	if got["reason"] != "insufficient_scope" || got["required_scope"] != "read" {
		t.Errorf("scope error: %v", got)
	}
	if r := c.Request(http.MethodGet, "/v1/me", nil); r.Status != 200 {
		t.Errorf("any key may read /me: %d", r.Status)
	}
	_, readKey := e.newKey(t, store.KeySettings{Scopes: []string{"read"}})
	if r := e.client(t, e.h, readKey).Request(http.MethodGet, "/v1/logs/api", nil); r.Status != 200 {
		t.Errorf("read scope: %d", r.Status)
	}
}

func TestFreePlanHasNoAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "free")
	for _, path := range []string{"/v1/me", "/v1/plan/limits", "/v1/logs/api"} {
		got := wantError(t, e.c.Request(http.MethodGet, path, nil), 402, "plan_required")
		if got["feature"] != "api" || got["upgrade_url"] == "" {
			t.Errorf("%s: %v", path, got)
		}
	}
	if err := e.db.SetPlan(context.Background(), e.acct, "starter"); err != nil {
		t.Fatal(err)
	}
	if r := e.c.Request(http.MethodGet, "/v1/me", nil); r.Status != 200 {
		t.Errorf("after upgrade: %d", r.Status)
	}
}

func TestNotFoundAndMethodNotAllowed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	wantError(t, e.c.Request(http.MethodGet, "/v1/nothing/here", nil), 404, "not_found")
	r := e.c.Request(http.MethodDelete, "/v1/me", nil)
	wantError(t, r, 405, "method_not_allowed")
	if r.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
		t.Errorf("Allow = %q", r.Header.Get("Allow"))
	}
	// HEAD is answered as GET; the real server (not a recorder) drops the body.
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodHead, srv.URL+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+e.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body) != 0 || resp.Header.Get("X-RateLimit-Limit") == "" {
		t.Errorf("HEAD: %d %q", resp.StatusCode, body)
	}

	wantError(t, e.c.Request(http.MethodGet, "/v1/logs/api/abc", nil), 404, "not_found")
	wantError(t, e.c.Request(http.MethodGet, "/v1/logs/api/999999", nil), 404, "not_found")
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	three := 3
	k, key := e.newKey(t, store.KeySettings{RateLimit: &three})
	// A second process on the same database draws from the same budget.
	h2, _ := e.app(t, dbtest.Open(t, e.dbURL))
	procs := []*apitest.Client{e.client(t, e.h, key), e.client(t, h2, key)}
	reset := strconv.FormatInt(time.Date(2026, 11, 22, 9, 1, 0, 0, time.UTC).Unix(), 10)
	for i := range 3 {
		r := procs[i%2].Request(http.MethodGet, "/v1/me", nil)
		if r.Status != 200 || r.Header.Get("X-RateLimit-Limit") != "3" || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) || r.Header.Get("X-RateLimit-Reset") != reset {
			t.Fatalf("request %d: %d limit=%s remaining=%s reset=%s", i+1, r.Status, r.Header.Get("X-RateLimit-Limit"), r.Header.Get("X-RateLimit-Remaining"), r.Header.Get("X-RateLimit-Reset"))
		}
	}
	r := procs[1].Request(http.MethodGet, "/v1/me", nil)
	got := wantError(t, r, 429, "rate_limited")
	if r.Header.Get("Retry-After") != "30" || got["retry_after"] != float64(30) || r.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("429: Retry-After=%q error=%v", r.Header.Get("Retry-After"), got)
	}
	// Other keys have their own budget; the default applies to keys without one, and
	// a key cannot raise its limit above the default.
	if r := e.c.Request(http.MethodGet, "/v1/me", nil); r.Status != 200 || r.Header.Get("X-RateLimit-Limit") != "120" {
		t.Errorf("default key: %d %s", r.Status, r.Header.Get("X-RateLimit-Limit"))
	}
	high := 1000
	if _, err := e.db.UpdateKey(context.Background(), e.acct, k.ID, store.KeySettings{RateLimit: &high}); err != nil {
		t.Fatal(err)
	}
	if r := procs[0].Request(http.MethodGet, "/v1/me", nil); r.Header.Get("X-RateLimit-Limit") != "120" || r.Status != 200 {
		t.Errorf("own limit above the default: %d limit=%s", r.Status, r.Header.Get("X-RateLimit-Limit"))
	}
}

func TestPaginationRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	for q, field := range map[string]string{"per_page=0": "per_page", "per_page=101": "per_page", "page=0": "page", "page=x": "page", "status=abc": "status"} {
		got := wantError(t, e.c.Request(http.MethodGet, "/v1/logs/api?"+q, nil), 422, "validation_error")
		if fields, _ := got["fields"].(map[string]any); fields[field] == nil {
			t.Errorf("%s: fields %v lack %s", q, got["fields"], field)
		}
	}
	for range 11 {
		e.c.Request(http.MethodGet, "/v1/me", nil)
	}
	if err := e.apiLog.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := e.c.Request(http.MethodGet, "/v1/logs/api?per_page=5&page=3", nil)
	var body struct {
		Data []map[string]any `json:"data"`
		Meta struct {
			Pagination struct{ Page, PerPage, Total, Pages int } `json:"pagination"`
		} `json:"meta"`
	}
	r.JSON(t, &body)
	p := body.Meta.Pagination
	// 11 logged requests plus the 5 rejected with 422 above.
	if p.Page != 3 || p.Total != 16 || p.Pages != 4 || len(body.Data) != 5 {
		t.Errorf("pagination %+v with %d rows", p, len(body.Data))
	}
}

func TestAPILog(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	anon := e.client(t, e.h, "")
	req := httptest.NewRequest(http.MethodGet, "/v1/me?api_key="+e.key+"&x=1", nil)
	req.RemoteAddr = "198.51.100.4:5555"
	req.Header.Set("Origin", "https://app.example.com")
	req.Header.Set("User-Agent", "rundbrief-test/1.0")
	first := anon.Do(req)
	e.c.Request(http.MethodGet, "/v1/nothing", nil) // unknown path: not authenticated, not logged
	e.c.Request(http.MethodGet, "/v1/logs/api?per_page=500", nil)
	if err := e.apiLog.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := e.c.Request(http.MethodGet, "/v1/logs/api?method=GET&path=/v1/me", nil)
	var rows []map[string]any
	r.Data(t, &rows)
	if len(rows) != 1 {
		t.Fatalf("log rows for /v1/me: %d: %s", len(rows), r.Body)
	}
	row := rows[0]
	path := row["path"].(string)
	if strings.Contains(path, e.key) || !strings.Contains(path, "api_key=") || !strings.HasPrefix(path, "/v1/me?") {
		t.Errorf("logged path %q must mask the key", path)
	}
	if row["request_id"] != first.Header.Get("X-Request-Id") || row["ip"] != "198.51.100.4" || row["origin"] != "https://app.example.com" ||
		row["status"] != float64(200) || row["key_id"] != float64(e.keyID) || row["user_agent"] != "rundbrief-test/1.0" {
		t.Errorf("log row %v", row)
	}
	var status422 []map[string]any
	e.c.Request(http.MethodGet, "/v1/logs/api?status=422", nil).Data(t, &status422)
	if len(status422) != 1 {
		t.Errorf("status filter: %d rows", len(status422))
	}
	one := e.c.Request(http.MethodGet, "/v1/logs/api/"+strconv.FormatFloat(row["id"].(float64), 'f', 0, 64), nil)
	var got map[string]any
	one.Data(t, &got)
	if got["request_id"] != row["request_id"] {
		t.Errorf("GET /logs/api/{id}: %v", got)
	}
	// Another account never sees these rows.
	other, err := e.db.CreateAccount(context.Background(), store.NewAccount{Name: "Other", Email: "o@other.test", Password: "another long one"})
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, _ := e.db.CreateKey(context.Background(), other.Account.ID, store.KeySettings{})
	oc := e.client(t, e.h, otherKey)
	wantError(t, oc.Request(http.MethodGet, "/v1/logs/api/"+strconv.FormatFloat(row["id"].(float64), 'f', 0, 64), nil), 404, "not_found")
	var none []map[string]any
	oc.Request(http.MethodGet, "/v1/logs/api?path=/v1/me", nil).Data(t, &none)
	if len(none) != 0 {
		t.Errorf("other account sees %d rows", len(none))
	}
	// The batch also recorded when the key was last used.
	var me struct {
		Key struct {
			LastUsedAt *string `json:"last_used_at"`
		} `json:"key"`
	}
	time.Sleep(1100 * time.Millisecond) // let the 1 s key cache expire
	e.c.Request(http.MethodGet, "/v1/me", nil).Data(t, &me)
	if me.Key.LastUsedAt == nil || *me.Key.LastUsedAt != "2026-11-22T10:00:30+01:00" {
		t.Errorf("last_used_at = %v", me.Key.LastUsedAt)
	}
}

func TestMeAndPlanLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "pro")
	e.newKey(t, store.KeySettings{Name: "second", Scopes: []string{"read"}})
	var me struct {
		Account struct {
			ID        int64  `json:"id"`
			Name      string `json:"name"`
			Plan      string `json:"plan"`
			CreatedAt string `json:"created_at"`
		} `json:"account"`
		User struct {
			Email string `json:"email"`
			Role  string `json:"role"`
		} `json:"user"`
		Plan struct {
			Name     string   `json:"name"`
			Features []string `json:"features"`
		} `json:"plan"`
		Key struct {
			ID     int64    `json:"id"`
			Prefix string   `json:"prefix"`
			Scopes []string `json:"scopes"`
		} `json:"key"`
	}
	e.c.Request(http.MethodGet, "/v1/me", nil).Data(t, &me)
	if me.Account.ID != e.acct || me.Account.Name != "Acme GmbH" || me.Account.Plan != "pro" || me.User.Email != "owner@acme.test" || me.User.Role != "owner" ||
		strings.Join(me.Plan.Features, ",") != "api,ab_tests,ai,inbox,sequences" || me.Key.ID != e.keyID || me.Key.Prefix != e.key[:12] || me.Key.Scopes[0] != "*" {
		t.Errorf("me = %+v", me)
	}
	if !strings.HasSuffix(me.Account.CreatedAt, "+01:00") && !strings.HasSuffix(me.Account.CreatedAt, "+02:00") {
		t.Errorf("created_at %q is not Europe/Berlin with offset", me.Account.CreatedAt)
	}
	var limits map[string]any
	e.c.Request(http.MethodGet, "/v1/plan/limits", nil).Data(t, &limits)
	keys := limits["api_keys"].(map[string]any)
	contacts := limits["contacts"].(map[string]any)
	if keys["used"] != float64(2) || keys["limit"] != float64(25) || contacts["limit"] != float64(50000) || limits["ai_credit_eur"] != float64(0) {
		t.Errorf("limits = %v", limits)
	}
}
