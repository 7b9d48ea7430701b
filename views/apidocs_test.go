package views_test

import (
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// The API keys page leads to the API reference, whether or not keys exist.
func TestKeysPageLinksAPIReference(t *testing.T) {
	for name, keys := range map[string][]store.APIKey{"empty": nil, "with keys": {key(7, "Shop", false)}} {
		link := tid(render(t, views.KeysPage(shell("owner"), keys, nil)), "api-docs-link")
		if link.Length() != 1 || link.AttrOr("href", "") != "/v1/docs" || text(link) != "API-Referenz" {
			t.Errorf("%s: API reference link %v %q", name, link.Nodes, text(link))
		}
	}
}

// The reference page loads the vendored viewer from /static with relative URLs
// (so it works below a proxy's path) and has no inline script, which its
// Content-Security-Policy would refuse.
func TestAPIDocsPage(t *testing.T) {
	doc := render(t, views.APIDocsPage())
	if got := doc.Find("redoc").AttrOr("spec-url", ""); got != "openapi.json" {
		t.Errorf("spec-url %q", got)
	}
	scripts := doc.Find("script")
	if scripts.Length() != 1 || scripts.AttrOr("src", "") != "../static/redoc.standalone.js" || strings.TrimSpace(scripts.Text()) != "" {
		t.Errorf("scripts: %v", scripts.Nodes)
	}
	if doc.Find("html").AttrOr("lang", "") != "de" || !strings.Contains(text(tid(doc, "apidocs-guides")), "docs/README.md") {
		t.Errorf("header: %q", text(tid(doc, "apidocs-header")))
	}
}
