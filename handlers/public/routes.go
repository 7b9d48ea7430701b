// Package public serves the pages a visitor reaches without signing in, outside
// /v1: the hosted sign-up form and the double opt-in confirmation (later also
// unsubscribing and tracking). They are server-rendered with templ, in German,
// and work without JavaScript.
//
// A public page knows nothing but the token in its URL; it looks the token up
// (across accounts, by the unique token) and filters everything after that on
// the account the token belongs to.
package public

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/appointment"
	"github.com/rundbrief/rundbrief/store/botguard"
	"github.com/rundbrief/rundbrief/store/integration"
	"github.com/rundbrief/rundbrief/store/services"
	"github.com/rundbrief/rundbrief/views"
)

// Config is what the public pages need from the service configuration.
type Config struct {
	BaseURL string           // public root URL (RUNDBRIEF_BASE_URL)
	Now     func() time.Time // the clock; nil: time.Now
}

// Public holds the dependencies of the public pages.
type Public struct {
	db     *store.DB
	guard  *botguard.Guard // stamps of the hosted sign-up form (RUNDBRIEF_SECRET)
	tokens *mailer.Tokens  // verifies the unsubscribe links in mails
	// integrations receives the payment providers' calls (nil: 503).
	integrations *integration.Service
	log          *slog.Logger
	baseURL      string
	now          func() time.Time

	appointments *appointment.Service // the booking pages; nil: they are 404
}

// New returns the public pages over the shared services (s.Guard and
// s.Tokens are required); Routes registers them.
func New(s *services.Set, cfg Config) (*Public, error) {
	if s.Guard == nil || s.Tokens == nil {
		return nil, errors.New("public: services.Set.Guard and services.Set.Tokens are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Public{db: s.DB, guard: s.Guard, tokens: s.Tokens, log: log, baseURL: strings.TrimRight(cfg.BaseURL, "/"), now: cfg.Now,
		appointments: s.Appointments, integrations: s.Integrations}, nil
}

// Routes registers every public page, top to bottom. A page that may be shown
// inside another site's frame says so itself (the hosted form); all others
// refuse framing.
func (p *Public) Routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(pageHeaders)

		// Sign-up forms and double opt-in (issue 3).
		r.Get("/subscribe/{token}", p.handle(p.subscribePage))
		// The confirmation link asks; only its button's POST confirms (link scanners).
		r.Get("/confirm/{token}", p.handle(p.confirmPage))
		r.Post("/confirm/{token}", p.handle(p.confirm))

		// Unsubscribe links of mails: the page asks, POST unsubscribes (also
		// RFC 8058 one-click from mail providers) (issue 4).
		r.Get("/unsubscribe/{token}", p.handle(p.unsubscribePage))
		r.Post("/unsubscribe/{token}", p.handle(p.unsubscribe))

		// Open pixel and click redirect of tracked mails (issue 4).
		r.Get("/o/{token}", p.openPixel)
		r.Get("/c/{token}", p.handle(p.click))

		// Booking pages of the appointment book and the bookers'
		// cancellation links (issue 22).
		r.Get("/book/{token}", p.handle(p.bookingPage))
		r.Post("/book/{token}", p.handle(p.book))
		r.Get("/book/cancel/{token}", p.handle(p.cancelBookingPage))
		r.Post("/book/cancel/{token}", p.handle(p.cancelBookingPost))
	})

	// Images of the rich-text editor in mails (issue 24): signed, cacheable.
	r.Get(mailer.ImagePath+"{account}/{id}/{mac}/{name}", p.image)

	// Payment providers' calls (issue 23): no key, verified with each
	// provider's own signature scheme; bodies at most 256 KB.
	r.Post("/hooks/{provider}/{token}", p.inbound)
}

// pageHeaders sets what every public page carries: no caching of pages that
// hold a one-time stamp or the outcome of a token, and no referrer leaking the
// token to links on the page.
func pageHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// handle turns a page handler into an http.HandlerFunc: a returned error
// becomes the error page (not found, or a generic error logged with its detail).
func (p *Public) handle(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			p.fail(w, r, err)
		}
	}
}

// fail renders the error page for err.
func (p *Public) fail(w http.ResponseWriter, r *http.Request, err error) {
	t := views.TextFor(r.Context())
	status, title, msg := http.StatusInternalServerError, t.Errors.InternalTitle, t.Errors.Internal
	if errors.Is(err, store.ErrNotFound) {
		status, title, msg = http.StatusNotFound, t.Errors.NotFoundTitle, t.Errors.NotFound
	} else {
		p.log.Error("public page failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	w.Header().Set("X-Frame-Options", "DENY")
	p.render(w, r, status, views.ErrorPage(nil, title, msg))
}

// render writes a page; a failed render is logged, since the status is already sent.
func (p *Public) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := c.Render(r.Context(), w); err != nil {
		p.log.Error("render public page", "path", r.URL.Path, "err", err)
	}
}
