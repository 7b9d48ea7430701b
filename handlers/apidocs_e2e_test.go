package handlers_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// recordCSPViolations collects every Content-Security-Policy violation of the
// documents the tab opens in window.__cspViolations. It runs as a DevTools
// script, which the page's policy does not govern.
const recordCSPViolations = `window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
	window.__cspViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline"));
});
window.addEventListener("error", (e) => { window.__cspViolations.push("error: " + e.message); });
window.addEventListener("unhandledrejection", (e) => { window.__cspViolations.push("rejection: " + e.reason); });`

// TestAPIDocsEndToEnd opens the API reference /v1/docs in headless Chromium, as a
// developer without a key would: the vendored viewer loads the served
// openapi.json and renders its operations (summaries from the document appear
// in the page), under the page's own Content-Security-Policy without a
// violation, and the page links the document and names the guides.
func TestAPIDocsEndToEnd(t *testing.T) {
	t.Parallel()
	s := startServer(t, 120)
	b := newTab(t, 1360, 900, 90*time.Second)
	ctx, dir, do, read := b.ctx, b.dir, b.do, b.read

	// Summaries of the first and of a late operation of the served document.
	resp, body := get(t, s.URL+"/v1/openapi.json")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /v1/openapi.json: %d", resp.StatusCode)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Summary string `json:"summary"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	var summaries []string
	for _, op := range []struct{ path, method string }{{"/", "get"}, {"/contacts", "post"}, {"/webhooks", "get"}} {
		sum := doc.Paths[op.path][op.method].Summary
		if sum == "" {
			t.Fatalf("openapi.json has no summary for %s %s", op.method, op.path)
		}
		summaries = append(summaries, sum)
	}

	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recordCSPViolations}); err != nil {
		t.Fatal(err)
	}
	do("open the reference", chromedp.Navigate(s.URL+"/v1/docs"), chromedp.WaitVisible(tid("apidocs-header")))
	for _, sum := range summaries {
		do("rendered "+sum, until(`document.querySelector("redoc") !== null && document.querySelector("redoc").innerText.includes(`+quoteJS(sum)+`)`))
	}
	// The whole reference is too tall for one full-page screenshot: save the viewport.
	if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err != nil {
		t.Errorf("screenshot: %v", err)
	} else if err := os.WriteFile(filepath.Join(dir, "api-docs.png"), png, 0o644); err != nil {
		t.Error(err)
	}

	// The one request the policy refuses is the viewer's "API docs by Redocly"
	// logo from Redocly's CDN: the page stays within its origin.
	violations := read("csp violations", chromedp.Evaluate[string](`window.__cspViolations.join("\n")`))
	for _, v := range strings.Split(violations, "\n") {
		if v != "" && v != "img-src https://cdn.redoc.ly/redoc/logo-mini.svg" {
			t.Errorf("page error or Content-Security-Policy violation on /v1/docs: %s", v)
		}
	}
	if got := read("openapi link", chromedp.Evaluate[string](`document.querySelector('[data-testid="apidocs-openapi-link"]').href`)); got != s.URL+"/v1/openapi.json" {
		t.Errorf("openapi link: %q", got)
	}
	if got := read("guides", chromedp.Text(tid("apidocs-guides"))); !strings.Contains(got, "docs/README.md") {
		t.Errorf("guides: %q", got)
	}
}

// The vendored Redoc must be exactly the npm release recorded in static/embed.go.
func TestVendoredRedocMatchesRecordedChecksum(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../static/embed.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)redoc\.standalone\.js: redoc \S+ from npm.*?sha256 ([0-9a-f]{64})`).FindSubmatch(src)
	if m == nil {
		t.Fatal("static/embed.go records no sha256 for redoc.standalone.js")
	}
	s := startServer(t, 120)
	resp, body := get(t, s.URL+"/static/redoc.standalone.js")
	sum := sha256.Sum256(body)
	if resp.StatusCode != 200 || hex.EncodeToString(sum[:]) != string(m[1]) {
		t.Errorf("served redoc.standalone.js: %d, sha256 %x, recorded %s", resp.StatusCode, sum, m[1])
	}
}
