// Package handlers assembles Rundbrief's one HTTP application: the JSON API under
// /v1, the portal, the public pages and the embedded static files.
package handlers

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/ops"
	"github.com/rundbrief/rundbrief/handlers/portal"
	"github.com/rundbrief/rundbrief/handlers/public"
	"github.com/rundbrief/rundbrief/static"
)

// Option adds to the router what not every use of it needs.
type Option func(r chi.Router)

// WithOps measures every request and serves the operator endpoints (/healthz,
// /readyz, /metrics) beside the application.
func WithOps(o *ops.Ops) Option {
	return func(r chi.Router) {
		r.Use(o.Measure)
		o.Routes(r)
	}
}

// New returns the application's router: the API under /v1, the static files, the
// portal and the public pages (sign-up form, confirmation, …).
func New(a *api.API, p *portal.Portal, pub *public.Public, opts ...Option) http.Handler {
	r := chi.NewRouter()
	r.Use(securityHeaders)
	for _, o := range opts {
		o(r)
	}
	r.Mount("/v1", a.Handler())
	r.Handle("/static/*", http.StripPrefix("/static/", cacheStatic(http.FileServerFS(static.FS))))
	p.Routes(r)
	pub.Routes(r)
	return r
}

// securityHeaders sets headers every response should carry.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "strict-origin-when-cross-origin")
		next.ServeHTTP(w, r)
	})
}

func cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		next.ServeHTTP(w, r)
	})
}
