package handlers_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestStartPage(t *testing.T) {
	t.Parallel()
	s := startServer(t, 120)
	resp, body := get(t, s.URL+"/")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("GET /: %d %v", resp.StatusCode, resp.Header)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	if lang, _ := doc.Find("html").Attr("lang"); lang != "de" {
		t.Errorf("lang = %q", lang)
	}
	if href, _ := doc.Find(`[data-testid="home-openapi-link"]`).Attr("href"); href != "http://rundbrief.test/v1/openapi.json" {
		t.Errorf("OpenAPI link = %q", href)
	}
	if doc.Find(`[data-testid="home-title"]`).Text() != "Rundbrief" {
		t.Errorf("title = %q", doc.Find(`[data-testid="home-title"]`).Text())
	}
	// Every asset the page references is served by the binary itself.
	var assets []string
	doc.Find(`link[rel="stylesheet"], script[src]`).Each(func(_ int, sel *goquery.Selection) {
		if v, ok := sel.Attr("href"); ok {
			assets = append(assets, v)
		}
		if v, ok := sel.Attr("src"); ok {
			assets = append(assets, v)
		}
	})
	if len(assets) < 2 {
		t.Fatalf("page references %v", assets)
	}
	for _, a := range assets {
		if !strings.HasPrefix(a, "/static/") {
			t.Errorf("asset %q is not served from /static/", a)
			continue
		}
		if resp, _ := get(t, s.URL+a); resp.StatusCode != 200 {
			t.Errorf("GET %s: %d", a, resp.StatusCode)
		}
	}
}

// The vendored htmx must be exactly the npm release recorded in static/embed.go.
func TestVendoredHTMXMatchesRecordedChecksum(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../static/embed.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`sha256 ([0-9a-f]{64})`).FindSubmatch(src)
	if m == nil {
		t.Fatal("static/embed.go records no sha256 for htmx.min.js")
	}
	s := startServer(t, 120)
	resp, body := get(t, s.URL+"/static/htmx.min.js")
	sum := sha256.Sum256(body)
	if resp.StatusCode != 200 || hex.EncodeToString(sum[:]) != string(m[1]) {
		t.Errorf("served htmx.min.js: %d, sha256 %x, recorded %s", resp.StatusCode, sum, m[1])
	}
	if !strings.Contains(resp.Header.Get("Content-Type"), "javascript") {
		t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
}
