// Package static holds the portal's browser assets (stylesheet and htmx), embedded in
// the binary so that `rundbrief` serves them without any files on disk or a CDN.
//
// htmx.min.js: htmx.org 2.0.11 from npm (`npm pack htmx.org@2`, package/dist/htmx.min.js),
// sha256 d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717.
package static

import "embed"

// FS holds app.css, htmx.min.js, editor.js (the newsletter editor's placeholder
// picker) and signup.js (the sign-up forms' helper, also
// loaded by forms embedded on other websites) at its root. Serve it under /static/, e.g.
// mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static.FS))).
//
//go:embed app.css htmx.min.js signup.js editor.js
var FS embed.FS
