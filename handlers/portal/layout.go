package portal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

var (
	// errForbidden means the signed-in user's role does not allow the page.
	errForbidden = errors.New("portal: forbidden")
	// errBadForm means a form body could not be read (too large or malformed).
	errBadForm = errors.New("portal: unreadable form")
)

// maxFormBytes bounds a form body; the portal's forms are small.
const maxFormBytes = 64 << 10

// Session keys besides store.SessionUserKey and store.SessionAccountKey.
const (
	flashKindKey    = "flash.kind"
	flashMessageKey = "flash.message"
)

// putOnce keeps a secret just made (a new API key, webhook secret or initial
// password) and a label for it in the session until the one page that shows it
// pops it (POST, redirect, GET: a reload does not show it again). Sessions live
// in PostgreSQL, so the secret is sealed with RUNDBRIEF_SECRET for its purpose:
// a copy of the sessions table reveals none, and one kind cannot be opened as
// another. The purpose also names the session keys.
func (p *Portal) putOnce(ctx context.Context, purpose, secret, label string) error {
	sealed, err := p.box.Seal(purpose, []byte(secret))
	if err != nil {
		return fmt.Errorf("portal: seal %s: %w", purpose, err)
	}
	p.sessions.Put(ctx, purpose+".sealed", sealed)
	p.sessions.Put(ctx, purpose+".label", label)
	return nil
}

// popOnce takes what putOnce kept for purpose out of the session; ok is false
// when there is none (or it cannot be opened any more, e.g. after the secret
// changed).
func (p *Portal) popOnce(ctx context.Context, purpose string) (secret, label string, ok bool) {
	sealed := p.sessions.PopString(ctx, purpose+".sealed")
	label = p.sessions.PopString(ctx, purpose+".label")
	if sealed == "" {
		return "", "", false
	}
	b, err := p.box.Open(purpose, sealed)
	if err != nil {
		p.log.Error("open a shown-once secret from the session", "purpose", purpose, "err", err)
		return "", "", false
	}
	return string(b), label, true
}

// handle turns a portal handler into an http.HandlerFunc. A handler writes its page
// (or redirect) itself; the error it returns becomes an error page: not found, no
// permission, or a generic error whose detail goes to the log only. An error
// returned after the handler began its response (a write to a client that went
// away) is only logged: a status was sent, and an error page after it would be
// a second one, glued to what was written.
func (p *Portal) handle(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rw := &responseStart{ResponseWriter: w}
		switch err := h(rw, r); {
		case err == nil:
		case rw.started:
			p.log.Error("portal request failed after its response began", "method", r.Method, "path", r.URL.Path, "err", err)
		default:
			p.fail(w, r, err)
		}
	}
}

// responseStart notes whether a handler began its response.
type responseStart struct {
	http.ResponseWriter
	started bool
}

func (w *responseStart) WriteHeader(status int) {
	if status >= http.StatusOK { // an informational status does not begin the response
		w.started = true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *responseStart) Write(b []byte) (int, error) {
	w.started = true
	return w.ResponseWriter.Write(b)
}

// Flush keeps streamed downloads (the contact export) flowing.
func (w *responseStart) Flush() {
	w.started = true
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection (upload deadlines).
func (w *responseStart) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// fail renders the error page for err.
func (p *Portal) fail(w http.ResponseWriter, r *http.Request, err error) {
	t := views.TextFor(r.Context())
	status, title, msg := http.StatusInternalServerError, t.Errors.InternalTitle, t.Errors.Internal
	switch {
	case errors.Is(err, store.ErrNotFound):
		status, title, msg = http.StatusNotFound, t.Errors.NotFoundTitle, t.Errors.NotFound
	case errors.Is(err, errForbidden):
		status, title, msg = http.StatusForbidden, t.Errors.ForbiddenTitle, t.Errors.Forbidden
	case errors.Is(err, errBadForm):
		status, title, msg = http.StatusBadRequest, t.Errors.BadRequestTitle, t.Errors.BadRequest
	case errors.Is(err, errSendingOff):
		status, title, msg = http.StatusServiceUnavailable, t.Errors.InternalTitle, t.Newsletters.SendingOff
	default:
		p.log.Error("portal request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	p.errorPage(w, r, status, title, msg)
}

// errorPage renders an error inside the app shell for a signed-in user, alone
// otherwise; for htmx it sends only the message, swapped into the main area.
func (p *Portal) errorPage(w http.ResponseWriter, r *http.Request, status int, title, msg string) {
	v, signedIn := viewerFrom(r.Context())
	if isHTMX(r) {
		w.Header().Set("HX-Retarget", "#main")
		w.Header().Set("HX-Reswap", "innerHTML")
		p.render(w, r, status, views.ErrorContent(title, msg, signedIn))
		return
	}
	var shell *views.Shell
	if signedIn {
		s := p.shellFor(r, v, title, "")
		shell = &s
	}
	p.render(w, r, status, views.ErrorPage(shell, title, msg))
}

// crossOriginDenied answers a state-changing request from another site.
func (p *Portal) crossOriginDenied(w http.ResponseWriter, r *http.Request) {
	t := views.TextFor(r.Context())
	p.log.Warn("cross-origin request refused", "method", r.Method, "path", r.URL.Path,
		"origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
	p.errorPage(w, r, http.StatusForbidden, t.Errors.CrossSiteTitle, t.Errors.CrossSite)
}

// render writes a component; a failed render is logged, since the status is already sent.
func (p *Portal) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := c.Render(r.Context(), w); err != nil {
		p.log.Error("render page", "path", r.URL.Path, "err", err)
	}
}

// page renders a full page, or fragment alone for an htmx request: one handler
// serves both.
func (p *Portal) page(w http.ResponseWriter, r *http.Request, status int, full, fragment templ.Component) {
	if isHTMX(r) && fragment != nil {
		p.render(w, r, status, fragment)
		return
	}
	p.render(w, r, status, full)
}

// redirect ends a POST (or a GET that only moves on) with 303 See Other; htmx is
// told to navigate instead, since it would otherwise swap the target page into a
// fragment's place.
func (p *Portal) redirect(w http.ResponseWriter, r *http.Request, to string) {
	if isHTMX(r) {
		w.Header().Set("HX-Redirect", to)
		w.WriteHeader(http.StatusOK)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// isHTMX reports whether htmx sent the request and wants a fragment: not a boosted
// navigation and not a history restore (both need the full page).
func isHTMX(r *http.Request) bool {
	return r.Header.Get("HX-Request") == "true" &&
		r.Header.Get("HX-Boosted") != "true" &&
		r.Header.Get("HX-History-Restore-Request") != "true"
}

// pageHeaders sets what every portal response carries: pages differ by HX-Request,
// and no other site may frame them (clickjacking).
func pageHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Vary", "HX-Request")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "frame-ancestors 'none'")
		next.ServeHTTP(w, r)
	})
}

// shell is the app shell of a signed-in page: who is signed in, the current sidebar
// entry, and the flash message (taken from the session, so it shows once).
func (p *Portal) shell(r *http.Request, title, active string) views.Shell {
	v, _ := viewerFrom(r.Context())
	return p.shellFor(r, v, title, active)
}

func (p *Portal) shellFor(r *http.Request, v store.Viewer, title, active string) views.Shell {
	s := views.Shell{
		Title: title, Active: active,
		Account: v.Account.Name, User: v.User.Email, Role: v.User.Role,
		DevOutbox: p.devOutboxEnabled(),
	}
	if !isHTMX(r) { // a fragment has no room for the flash: keep it for the next page
		s.Flash = p.popFlash(r.Context())
	}
	return s
}

// flash leaves a message for the next page the user sees.
func (p *Portal) flash(ctx context.Context, kind, msg string) {
	p.sessions.Put(ctx, flashKindKey, kind)
	p.sessions.Put(ctx, flashMessageKey, msg)
}

func (p *Portal) popFlash(ctx context.Context) *views.Flash {
	msg := p.sessions.PopString(ctx, flashMessageKey)
	kind := p.sessions.PopString(ctx, flashKindKey)
	if msg == "" {
		return nil
	}
	return &views.Flash{Kind: kind, Message: msg}
}

// viewerKey is the context key of the signed-in user (set by requireUser).
type viewerKey struct{}

func withViewer(ctx context.Context, v store.Viewer) context.Context {
	return context.WithValue(ctx, viewerKey{}, v)
}

// viewerFrom returns the signed-in user, their account and plan; ok is false on
// pages outside requireUser.
func viewerFrom(ctx context.Context) (store.Viewer, bool) {
	v, ok := ctx.Value(viewerKey{}).(store.Viewer)
	return v, ok
}

// viewer is the signed-in user of a page behind requireUser.
func viewer(r *http.Request) store.Viewer {
	v, _ := viewerFrom(r.Context())
	return v
}

// actor is the signed-in user as the activity log records them.
func actor(r *http.Request) store.Actor {
	return store.Actor{Type: store.ActorUser, ID: viewer(r).User.ID}
}

// accountID is the account every query of a signed-in page filters on.
func accountID(r *http.Request) int64 { return viewer(r).Account.ID }

// pathID reads an id from the route; anything but a positive integer is not found.
func pathID(r *http.Request, name string) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, name), 10, 64)
	if err != nil || id < 1 {
		return 0, store.ErrNotFound
	}
	return id, nil
}

// parseForm reads a form body of at most maxFormBytes.
func parseForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return fmt.Errorf("%w: %w", errBadForm, err)
	}
	return nil
}

// clientIP is the address the request came from (the same the API logs).
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// logHint logs, at INFO, the operator hint of a refusal that a setting would
// change (store.WithHint), so the operator learns the setting's name; the
// user's page shows only the German message.
func (p *Portal) logHint(r *http.Request, err error) {
	if hint := store.OperatorHint(err); hint != "" {
		p.log.Info("request refused", "method", r.Method, "path", r.URL.Path, "hint", hint)
	}
}

// fieldErrors copies a store validation error's fields into errs; ok is false for
// any other error.
func fieldErrors(err error, errs map[string]string) bool {
	var ve *store.ValidationError
	if !errors.As(err, &ve) {
		return false
	}
	for k, v := range ve.Fields {
		if _, taken := errs[k]; !taken {
			errs[k] = v
		}
	}
	return true
}

// localPath accepts a path to return to after signing in only if it stays on this
// site ("/…", not "//host" or "/\host").
func localPath(s string) string {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.HasPrefix(s, "/\\") {
		return ""
	}
	return s
}

// sprintf fills a format string of views.Text.
func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
