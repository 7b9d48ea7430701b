package public

import (
	"errors"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/integration"
)

// inbound receives a payment provider's call to POST /hooks/{provider}/{token}.
// The body is read up to integration.MaxInboundBody (413 beyond, nothing
// stored); everything else, verification included, is the service's
// (integration.Service.Receive). An unknown token or a provider that does not
// match it is 404.
func (p *Public) inbound(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if p.integrations == nil {
		plain(w, http.StatusServiceUnavailable, "service unavailable")
		return
	}
	if r.ContentLength > integration.MaxInboundBody {
		plain(w, http.StatusRequestEntityTooLarge, "payload too large")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, integration.MaxInboundBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		plain(w, http.StatusRequestEntityTooLarge, "payload too large")
		return
	case err != nil:
		plain(w, http.StatusBadRequest, "unreadable body")
		return
	}
	reply, err := p.integrations.Receive(r.Context(), chi.URLParam(r, "provider"), chi.URLParam(r, "token"),
		integration.Inbound{Header: r.Header, Body: body})
	switch {
	case errors.Is(err, store.ErrNotFound):
		plain(w, http.StatusNotFound, "not found")
		return
	case err != nil:
		// The provider retries later; the detail stays in the log.
		p.log.Error("integration inbound failed", "provider", chi.URLParam(r, "provider"), "err", err)
		plain(w, http.StatusInternalServerError, "internal error")
		return
	}
	h.Set("Content-Type", reply.ContentType)
	w.WriteHeader(reply.Status)
	_, _ = io.WriteString(w, reply.Body)
}

// plain answers a short text.
func plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg)
}
