// Package ops serves what operators and load balancers need from every `serve`
// process: liveness (GET /healthz), readiness (GET /readyz) and Prometheus
// metrics (GET /metrics), outside /v1 and without an account. It also counts
// the HTTP requests of the API, the portal and the public pages by route.
package ops

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Paths of the operator endpoints.
const (
	HealthPath  = "/healthz"
	ReadyPath   = "/readyz"
	MetricsPath = "/metrics"
)

// Deps are what the operator endpoints need.
type Deps struct {
	// Ready tells whether the database is reachable and fully migrated.
	Ready Readiness
	// Gatherer is the registry NewMetrics registered on.
	Gatherer prometheus.Gatherer
	// Metrics counts the requests Measure sees.
	Metrics *Metrics
	// Token guards /metrics (RUNDBRIEF_METRICS_TOKEN): requests must carry
	// "Authorization: Bearer <Token>". Empty: /metrics is open.
	Token string
	Log   *slog.Logger
}

// Ops serves the operator endpoints.
type Ops struct {
	d       Deps
	metrics http.Handler
	token   [sha256.Size]byte
	// notReady is the last readiness answer, so that only a change is logged
	// and not every probe of a balancer polling a failing process.
	notReady atomic.Bool
}

// New returns the operator endpoints.
func New(d Deps) *Ops {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	o := &Ops{d: d, metrics: promhttp.HandlerFor(d.Gatherer, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(d.Log.Handler(), slog.LevelWarn), ErrorHandling: promhttp.ContinueOnError,
	})}
	o.token = sha256.Sum256([]byte(d.Token))
	return o
}

// Routes adds the operator endpoints to r. They carry no session, CSRF check or
// API key: balancers and Prometheus call them.
func (o *Ops) Routes(r chi.Router) {
	r.Get(HealthPath, o.health)
	r.Get(ReadyPath, o.ready)
	r.Get(MetricsPath, o.serveMetrics)
}

// serveMetrics answers the Prometheus scrape, behind the token when one is set.
func (o *Ops) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if o.d.Token != "" && !o.authorized(r.Header.Get("Authorization")) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"status": "unauthorized"})
		return
	}
	o.metrics.ServeHTTP(w, r)
}

// authorized compares the bearer token in constant time; comparing hashes also
// keeps the token's length from showing in the timing.
func (o *Ops) authorized(header string) bool {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(got[:], o.token[:]) == 1
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body) // the client went away: nothing left to tell it
}

// Measure counts and times the requests next serves (Metrics.Measure).
func (o *Ops) Measure(next http.Handler) http.Handler {
	return o.d.Metrics.Measure(next)
}
