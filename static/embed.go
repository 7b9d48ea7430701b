// Package static holds the portal's browser assets (stylesheet and htmx) and the API
// reference's viewer, embedded in the binary so that `rundbrief` serves them without
// any files on disk or a CDN.
//
// htmx.min.js: htmx.org 2.0.11 from npm (`npm pack htmx.org@2`, package/dist/htmx.min.js),
// sha256 d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717.
//
// redoc.standalone.js: redoc 2.5.4 from npm (`npm pack redoc@2.5.4`,
// package/bundles/redoc.standalone.js, MIT licence, Redocly), the viewer of GET /v1/docs,
// sha256 dcaf76612bc4a3fbcc923a8966dee2f6146a5f32e5ce1b6f02dd60cbbf89500b.
// Not 3.x: its bundle sends telemetry to Redocly's cloud and needs eval.
//
// trix.umd.min.js and trix.css: Trix 2.1.19 from npm (`npm pack trix@2.1.19`,
// package/dist/trix.umd.min.js and package/dist/trix.css, MIT licence,
// 37signals), the rich-text mode of the mail editor (static/editor.js),
// sha256 5dcaa7c434ae9f3cf1a53651ea74bfad10cd6423c72cb86a8694969aaff67e51 and
// 7a35d25d0204a594f9f89a6fef18f74321ee2dae3970da3ac11e22c4305536ac.
package static

import "embed"

// FS holds app.css, htmx.min.js, editor.js (the mail editor: placeholder
// picker, rich-text mode with Trix, image upload, AI suggestions), trix.umd.min.js
// and trix.css, upload.js (the attachments manager's progress bar), sequences.js
// (dragging the days of the sequence builder), redoc.standalone.js (the API reference at /v1/docs) and signup.js (the sign-up forms' helper, also
// loaded by forms embedded on other websites) at its root. Serve it under /static/, e.g.
// mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static.FS))).
//
//go:embed app.css htmx.min.js signup.js editor.js upload.js sequences.js redoc.standalone.js trix.umd.min.js trix.css
var FS embed.FS
