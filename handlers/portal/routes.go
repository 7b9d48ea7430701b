// Package portal serves the server-rendered pages of Rundbrief: the admin portal
// for marketers and admins, rendered with templ and enhanced with htmx.
package portal

import (
	"log/slog"
	"net/http"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/views"
)

// Portal holds the dependencies of the portal pages.
type Portal struct {
	log     *slog.Logger
	baseURL string
}

// New returns the portal; Routes registers its pages.
func New(log *slog.Logger, baseURL string) *Portal {
	return &Portal{log: log, baseURL: baseURL}
}

// Routes registers every portal page, top to bottom.
func (p *Portal) Routes(r chi.Router) {
	r.Get("/", p.home)
}

func (p *Portal) home(w http.ResponseWriter, r *http.Request) {
	p.render(w, r, http.StatusOK, views.Home(p.baseURL+"/v1"))
}

// render writes a component; a failed render is logged, since the status is already sent.
func (p *Portal) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := c.Render(r.Context(), w); err != nil {
		p.log.Error("render page", "path", r.URL.Path, "err", err)
	}
}
