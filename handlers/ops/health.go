package ops

import (
	"context"
	"net/http"
	"time"
)

// Readiness is what /readyz asks the store.
type Readiness interface {
	PingContext(ctx context.Context) error
	MigrationsPending(ctx context.Context) (bool, error)
}

// readyTimeout bounds one readiness check: a balancer's probe times out after
// a few seconds, and an answer after that helps nobody.
const readyTimeout = 2 * time.Second

// Readiness reasons in /readyz's 503 answers.
const (
	ReasonDatabaseUnreachable = "database_unreachable"
	ReasonMigrationsPending   = "migrations_pending"
)

// health answers 200 while the process runs: it asks nothing else, so a
// balancer does not restart processes because the database is away.
func (o *Ops) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// ready answers 200 when the database answers and every migration this binary
// embeds is applied, 503 with the reason otherwise.
func (o *Ops) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	reason, err := o.check(ctx)
	if reason == "" {
		if o.notReady.Swap(false) {
			o.d.Log.Info("ready again")
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
		return
	}
	if !o.notReady.Swap(true) {
		o.d.Log.Warn("not ready; /readyz answers 503 until this changes", "reason", reason, "err", err)
	}
	writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": reason})
}

// check returns the reason the process is not ready, "" when it is.
func (o *Ops) check(ctx context.Context) (string, error) {
	if err := o.d.Ready.PingContext(ctx); err != nil {
		return ReasonDatabaseUnreachable, err
	}
	pending, err := o.d.Ready.MigrationsPending(ctx)
	if err != nil {
		return ReasonDatabaseUnreachable, err
	}
	if pending {
		return ReasonMigrationsPending, nil
	}
	return "", nil
}
