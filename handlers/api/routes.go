package api

import (
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/secret"
)

// Config is what the API needs from the service configuration.
type Config struct {
	BaseURL   string           // public root URL; the API is BaseURL + "/v1"
	RateLimit int              // default requests per minute per key
	Now       func() time.Time // the clock; tests move it
}

// Deps are the services the API calls. Each feature adds its service here.
type Deps struct {
	DB     *store.DB
	APILog *store.APILogWriter
	Log    *slog.Logger
	AI     *ai.Service        // AI text generation and credit
	Box    *secret.Box        // seals SMTP passwords (RUNDBRIEF_SECRET)
	Mail   *mailer.Transports // SMTP connection tests; DevOutboxEnabled decides /dev/outbox
}

// API holds the dependencies of the /v1 handlers.
type API struct {
	db      *store.DB
	limiter *store.RateLimiter
	apiLog  *store.APILogWriter
	log     *slog.Logger
	cfg     Config
	ai      *ai.Service
	box     *secret.Box
	mail    *mailer.Transports
}

// New returns the API; mount Handler() at /v1.
func New(d Deps, cfg Config) *API {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RateLimit <= 0 {
		cfg.RateLimit = 120
	}
	return &API{db: d.DB, limiter: store.NewRateLimiter(d.DB), apiLog: d.APILog, log: d.Log, cfg: cfg, ai: d.AI, box: d.Box, mail: d.Mail}
}

// Handler is the /v1 router. Every route of the API is listed here, top to bottom.
func (a *API) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(withRequestID, a.recoverPanics, cors, limitBody, middleware.GetHead)
	r.NotFound(a.handle(func(http.ResponseWriter, *http.Request) error { return errNotFound }))
	r.MethodNotAllowed(a.methodNotAllowed(r))

	// Public: no key.
	r.Get("/", a.handle(a.index))
	r.Get("/openapi.json", a.openAPI)

	// Everything else needs a key.
	r.Group(func(r chi.Router) {
		r.Use(a.keyed()...)

		r.Get("/me", a.need("", "", a.me))
		r.Get("/plan/limits", a.need("", "", a.planLimits))

		r.Get("/logs/api", a.need("read", "", a.listAPILog))
		r.Get("/logs/api/{id}", a.need("read", "", a.getAPILogEntry))

		// AI: text generation against the account's AI credit, its ledger and balance.
		r.Post("/ai/generate", a.need("ai", "ai", a.aiLimited(a.generateAI)))
		r.Get("/ai/usage", a.need("read", "ai", a.listAIUsage))
		r.Get("/ai/credit", a.need("read", "ai", a.getAICredit))

		// SMTP servers of the account, the connection test, and the development
		// outbox (only without RUNDBRIEF_SMTP_URL; otherwise its paths are 404) (issue 4).
		r.Get("/smtp-servers", a.need("read", "", a.listSMTPServers))
		r.Post("/smtp-servers", a.need("write", "", a.createSMTPServer))
		r.Get("/smtp-servers/{id}", a.need("read", "", a.getSMTPServer))
		r.Patch("/smtp-servers/{id}", a.need("write", "", a.updateSMTPServer))
		r.Delete("/smtp-servers/{id}", a.need("write", "", a.deleteSMTPServer))
		r.Post("/smtp-servers/{id}/test", a.need("write", "", a.testSMTPServer))
		if a.devOutboxEnabled() {
			r.Get("/dev/outbox", a.need("read", "", a.listDevOutbox))
			r.Get("/dev/outbox/{id}", a.need("read", "", a.getDevOutboxMail))
		}
	})
	return r
}

// keyed is the middleware chain of every endpoint that needs a key, in order: a
// request is authenticated, then logged, checked against the key's restrictions,
// counted against its rate limit and the plan, and finally made idempotent.
func (a *API) keyed() []func(http.Handler) http.Handler {
	return []func(http.Handler) http.Handler{a.authenticate, a.logRequest, a.restrict, a.rateLimit, a.requireAPIPlan, a.idempotency}
}

// methodNotAllowed answers 405 with the Allow header listing the path's methods.
func (a *API) methodNotAllowed(routes chi.Routes) http.HandlerFunc {
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	return a.handle(func(w http.ResponseWriter, r *http.Request) error {
		path := apiPath(r)
		var allowed []string
		for _, m := range methods {
			if routes.Match(chi.NewRouteContext(), m, path) {
				allowed = append(allowed, m)
			}
		}
		if slices.Contains(allowed, http.MethodGet) {
			allowed = append(allowed, http.MethodHead)
		}
		allowed = append(allowed, http.MethodOptions)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		return &Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
			Message: "Die Methode " + r.Method + " ist für diesen Pfad nicht erlaubt."}
	})
}
