package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// GET /v1/docs is public like openapi.json: an HTML page (validated against its
// text/html operation) under a policy that lets scripts and requests reach the
// own origin only, and the index names it as docs_url.
func TestDocsPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	anon := e.client(t, e.h, "")
	r := anon.Request(http.MethodGet, "/v1/docs", nil)
	if r.Status != 200 || r.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /v1/docs: %d %q", r.Status, r.Header.Get("Content-Type"))
	}
	if body := string(r.Body); !strings.Contains(body, `<redoc spec-url="openapi.json"`) || !strings.Contains(body, `src="../static/redoc.standalone.js"`) {
		t.Errorf("page: %s", body)
	}
	csp := r.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self';", "connect-src 'self';", "img-src 'self' data:;", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "script-src 'self' 'unsafe-inline'") {
		t.Errorf("Content-Security-Policy %q allows eval or inline scripts", csp)
	}
	var idx map[string]any
	anon.Request(http.MethodGet, "/v1/", nil).Data(t, &idx)
	if idx["docs_url"] != "https://rundbrief.test/v1/docs" {
		t.Errorf("docs_url %v", idx["docs_url"])
	}
	// The rest of the API keeps its headers: no page policy on JSON answers.
	if got := anon.Request(http.MethodGet, "/v1/openapi.json", nil).Header.Get("Content-Security-Policy"); got != "" {
		t.Errorf("openapi.json carries Content-Security-Policy %q", got)
	}
}
