package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/rundbrief/rundbrief/views"
)

// docsCSP is the Content-Security-Policy of the API reference: scripts only from
// the own origin (the vendored viewer, no inline script) and requests only to it
// (openapi.json). Inline styles are allowed because the viewer styles its
// components with injected <style> elements; the page shows no user content.
const docsCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// docsPage renders the API reference page (views.APIDocsPage). It has no
// per-request content, so Handler renders it once; the views are compiled in,
// so it panics only in a build whose tests fail.
func docsPage() []byte {
	var b bytes.Buffer
	if err := views.APIDocsPage().Render(context.Background(), &b); err != nil {
		panic(fmt.Sprintf("api: render docs page: %v", err))
	}
	return b.Bytes()
}

// serveDocs answers GET /docs with page, the API reference in the browser.
func serveDocs(page []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "public, max-age=300")
		h.Set("Content-Security-Policy", docsCSP)
		h.Set("X-Frame-Options", "DENY")
		_, _ = w.Write(page)
	}
}
