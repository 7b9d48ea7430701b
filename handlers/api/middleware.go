package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/store"
)

// recorder remembers the status a handler wrote and, when buffering, the whole response.
type recorder struct {
	http.ResponseWriter
	status int
	buf    *bytes.Buffer
}

func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
	if rec.buf == nil {
		rec.ResponseWriter.WriteHeader(status)
	}
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.WriteHeader(http.StatusOK)
	}
	if rec.buf != nil {
		return rec.buf.Write(b)
	}
	return rec.ResponseWriter.Write(b)
}

func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// withRequestID gives every request its req_<token> id, in the context and in X-Request-Id.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := newRequestID()
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxRequestID, id)))
	})
}

// recoverPanics turns a panic into a 500 in the envelope and logs it with the request id.
func (a *API) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				a.writeError(w, r, errors.New("panic: "+strings.TrimSpace(toString(v))))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func toString(v any) string {
	if err, ok := v.(error); ok {
		return err.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "unknown panic"
}

// CORS values of the description.
const (
	corsAllowMethods  = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
	corsAllowHeaders  = "Authorization, Content-Type, X-API-Key, Idempotency-Key, X-Requested-With"
	corsExposeHeaders = "X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, Idempotent-Replayed"
)

// apiPath is the request path below /v1: chi's Mount keeps the full URL path and
// records the remainder as the route path.
func apiPath(r *http.Request) string {
	if rctx := chi.RouteContext(r.Context()); rctx != nil && rctx.RoutePath != "" {
		return rctx.RoutePath
	}
	return r.URL.Path
}

// isPublic reports whether a path below /v1 needs no key (and always answers CORS with *).
func isPublic(method, path string) bool {
	switch {
	case path == "/" || path == "" || path == "/openapi.json" || path == "/docs":
		return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
	case strings.HasPrefix(path, "/subscribe/"):
		return true
	}
	return false
}

// cors answers every preflight with 204 and adds the CORS headers to every response.
// Origin restrictions of a key are checked later, with the key; a preflight carries none.
func cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		origin := r.Header.Get("Origin")
		public := isPublic(r.Method, apiPath(r))
		h.Add("Vary", "Origin")
		switch {
		case public:
			h.Set("Access-Control-Allow-Origin", "*")
		case origin != "":
			h.Set("Access-Control-Allow-Origin", origin)
		}
		if r.Method == http.MethodOptions {
			if h.Get("Access-Control-Allow-Origin") == "" {
				h.Set("Access-Control-Allow-Origin", "*")
			}
			h.Set("Access-Control-Allow-Methods", corsAllowMethods)
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		next.ServeHTTP(w, r)
	})
}

// keyFromRequest finds the key: Bearer header, X-API-Key, or the discouraged ?api_key=.
func keyFromRequest(r *http.Request) string {
	if auth := r.Header.Get("Authorization"); auth != "" {
		if scheme, key, ok := strings.Cut(auth, " "); ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(key)
		}
		return ""
	}
	if key := r.Header.Get("X-API-Key"); key != "" {
		return strings.TrimSpace(key)
	}
	return r.URL.Query().Get("api_key")
}

// authenticate resolves the key and refuses missing, wrong or revoked ones with 401.
func (a *API) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := a.db.Authenticate(r.Context(), keyFromRequest(r))
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				a.writeError(w, r, err)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="rundbrief"`)
			a.writeError(w, r, errUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxPrincipal, p)))
	})
}

// logRequest queues one API log row per authenticated request, after it finished.
func (a *API) logRequest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := a.cfg.Now()
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		p := principal(r.Context())
		keyID := p.Key.ID
		// The writer makes every string storable (valid UTF-8, no NUL, cut to
		// its limit on a character boundary), whatever the client sent.
		a.apiLog.Add(r.Context(), store.APILogEntry{
			AccountID:  p.Account.ID,
			KeyID:      &keyID,
			RequestID:  w.Header().Get("X-Request-Id"),
			Method:     r.Method,
			Path:       maskedPath(r),
			Status:     cmp(rec.status, http.StatusOK),
			IP:         clientIP(r).String(),
			Origin:     r.Header.Get("Origin"),
			UserAgent:  r.UserAgent(),
			DurationUS: a.cfg.Now().Sub(start).Microseconds(),
			CreatedAt:  start,
		})
	})
}

func cmp(v, fallback int) int {
	if v == 0 {
		return fallback
	}
	return v
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// maskedPath is the request path with query, the key in ?api_key= cut to its prefix.
func maskedPath(r *http.Request) string {
	p := "/v1" + apiPath(r)
	if r.URL.RawQuery == "" {
		return p
	}
	q := r.URL.Query()
	if k := q.Get("api_key"); k != "" {
		q.Set("api_key", truncate(k, len(store.KeyPrefix)+4)+"…")
		return p + "?" + q.Encode()
	}
	return p + "?" + r.URL.RawQuery
}

func clientIP(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, _ := netip.ParseAddr(host)
	return ip.Unmap()
}

// restrict enforces the key's IP and origin allow-lists and a blocked account. Its
// refusals are authenticated responses too and carry the X-RateLimit headers, but
// they do not spend the budget: a key used from where it is not allowed must not use
// up the requests of its owner.
func (a *API) restrict(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principal(r.Context())
		var refused *Error
		switch {
		case p.Account.BlockedAt != nil:
			refused = errForbidden("account_blocked", "Dieses Konto ist gesperrt.")
		case !store.IPAllowed(p.Key.AllowedIPs, clientIP(r)):
			refused = errForbidden("ip_not_allowed", "Dieser Schlüssel ist für Ihre IP-Adresse nicht freigegeben.")
		case !store.OriginAllowed(p.Key.AllowedOrigins, r.Header.Get("Origin")):
			refused = errForbidden("origin_not_allowed", "Dieser Schlüssel ist für diesen Origin nicht freigegeben.")
		default:
			next.ServeHTTP(w, r)
			return
		}
		bucket, limit := a.keyBudget(p)
		res, err := a.limiter.Peek(r.Context(), bucket, limit, a.cfg.Now())
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		setRateHeaders(w.Header(), res)
		a.writeError(w, r, refused)
	})
}

// rateLimit counts the request against the key's budget, shared by every process,
// and sets the X-RateLimit headers on every authenticated response that gets this
// far (restrict sets them on its refusals).
func (a *API) rateLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principal(r.Context())
		bucket, limit := a.keyBudget(p)
		now := a.cfg.Now()
		res, err := a.limiter.Allow(r.Context(), p.Account.ID, bucket, limit, now)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		setRateHeaders(w.Header(), res)
		if !res.Allowed {
			a.writeError(w, r, errRateLimited(res, now))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// keyBudget is the rate-limit bucket of the request's key and its per-minute limit:
// the key's own limit, never above the service's default.
func (a *API) keyBudget(p store.Principal) (bucket string, limit int) {
	limit = a.cfg.RateLimit
	if p.Key.RateLimit != nil && *p.Key.RateLimit < limit {
		limit = *p.Key.RateLimit
	}
	return "key:" + strconv.FormatInt(p.Key.ID, 10), limit
}

// setRateHeaders tells the client where its key's budget stands.
func setRateHeaders(h http.Header, res store.RateResult) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(res.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(res.ResetAt.Unix(), 10))
}

// errRateLimited is the 429 of a refused request; writeError adds Retry-After.
func errRateLimited(res store.RateResult, now time.Time) *Error {
	retry := res.RetryAfter(now)
	return &Error{Status: http.StatusTooManyRequests, Code: "rate_limited", RetryAfter: retry,
		Message: "Zu viele Anfragen. Bitte nach " + strconv.Itoa(retry) + " Sekunden erneut versuchen."}
}

// requireAPIPlan refuses every call of an account whose plan has no API access.
func (a *API) requireAPIPlan(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := principal(r.Context()).Plan.Require("api"); err != nil {
			a.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// need guards one operation with the scope it needs ("" for any valid key) and the
// plan feature it needs ("" for none).
func (a *API) need(scope, feature string, h handlerFunc) http.HandlerFunc {
	return a.handle(func(w http.ResponseWriter, r *http.Request) error {
		p := principal(r.Context())
		if scope != "" && !slices.Contains(p.Key.Scopes, "*") && !slices.Contains(p.Key.Scopes, scope) {
			e := errForbidden("insufficient_scope", "Diesem Schlüssel fehlt der Bereich „"+scope+"“.")
			e.RequiredScope = scope
			return e
		}
		if feature != "" {
			if err := p.Plan.Require(feature); err != nil {
				return err
			}
		}
		return h(w, r)
	})
}

// idempotency makes a POST with Idempotency-Key safe to repeat for 24 hours: the
// first response (unless 5xx) is stored and replayed; a key reused with another body
// is refused; a repeat while the first still runs is told to retry. The claim is a
// row in PostgreSQL, so this holds across processes. Operations whose effect must
// happen once (sends, AI debits) store their response in the effect's transaction
// as well (respondInTx), so that no failure after that commit frees the key.
func (a *API) idempotency(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if r.Method != http.MethodPost || key == "" {
			next.ServeHTTP(w, r)
			return
		}
		if len(key) > 255 {
			a.writeError(w, r, errValidation(map[string]string{"Idempotency-Key": "Höchstens 255 Zeichen."}))
			return
		}
		// The body is bounded by limitBody, so this holds at most the endpoint's limit;
		// decode takes these bytes over instead of reading a second copy.
		body, err := readBody(r)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		r.Body = newBufferedBody(body)
		h := sha256.New()
		h.Write([]byte(r.Method + " " + r.URL.Path + "\n"))
		h.Write(body)
		acct := accountID(r)
		outcome, stored, err := a.db.ClaimIdempotencyKey(r.Context(), acct, key, h.Sum(nil))
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		switch outcome {
		case store.IdemMismatch:
			a.writeError(w, r, errConflict("idempotency_key_reused",
				"Dieser Idempotency-Key wurde schon für eine andere Anfrage verwendet."))
			return
		case store.IdemRunning:
			w.Header().Set("Retry-After", "2")
			a.writeError(w, r, errConflict("idempotency_key_in_progress",
				"Eine Anfrage mit diesem Idempotency-Key läuft noch. Bitte in 2 Sekunden erneut versuchen."))
			return
		case store.IdemReplay:
			body, err := a.openStoredBody(acct, stored.Body)
			if err != nil {
				a.writeError(w, r, err)
				return
			}
			for k, v := range stored.Header {
				w.Header()[k] = v
			}
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(stored.Status)
			_, _ = w.Write(body)
			return
		}
		// A send or an AI debit stores its response in its own transaction
		// (respondInTx); the claim in the context is how it finds the key.
		r = r.WithContext(store.WithIdemClaim(r.Context(), &store.IdemClaim{AccountID: acct, Key: key}))
		rec := &recorder{ResponseWriter: w, buf: &bytes.Buffer{}}
		completed := false
		defer func() {
			// A panic or an aborted request must not leave the key claimed until its lease ends.
			if !completed {
				_ = a.db.ReleaseIdempotencyKey(context.WithoutCancel(r.Context()), acct, key)
			}
		}()
		next.ServeHTTP(rec, r)
		status := cmp(rec.status, http.StatusOK)
		ctx := context.WithoutCancel(r.Context())
		if status >= 500 {
			// A key whose response the handler's transaction stored stays
			// (Release frees only running keys): its effect happened.
			err = a.db.ReleaseIdempotencyKey(ctx, acct, key)
		} else {
			var body []byte
			if body, err = a.sealStoredBody(acct, rec.buf.Bytes()); err == nil {
				err = a.db.CompleteIdempotencyKey(ctx, acct, key, store.StoredResponse{Status: status, Header: replayHeaders(w.Header()), Body: body})
			}
		}
		completed = err == nil
		if err != nil {
			a.log.Error("idempotency record", "request_id", requestID(r.Context()), "err", err)
		}
		w.WriteHeader(status)
		_, _ = w.Write(rec.buf.Bytes())
	})
}

// sealedPrefix marks a stored response body sealed with the secret box.
const sealedPrefix = "sealed:"

// sealStoredBody seals a response before it is kept for replay: responses may carry
// secrets shown only once (a webhook's signing secret), and they must not lie in
// the database in plain text for 24 hours. Without a box (some tests) the body is
// kept as it is.
func (a *API) sealStoredBody(accountID int64, body []byte) ([]byte, error) {
	if a.box == nil {
		return body, nil
	}
	sealed, err := a.box.Seal(idempotencyPurpose(accountID), body)
	if err != nil {
		return nil, fmt.Errorf("api: seal idempotent response: %w", err)
	}
	return []byte(sealedPrefix + sealed), nil
}

func (a *API) openStoredBody(accountID int64, stored []byte) ([]byte, error) {
	sealed, ok := bytes.CutPrefix(stored, []byte(sealedPrefix))
	if !ok {
		return stored, nil
	}
	if a.box == nil {
		return nil, errors.New("api: sealed idempotent response but no secret box")
	}
	body, err := a.box.Open(idempotencyPurpose(accountID), string(sealed))
	if err != nil {
		return nil, fmt.Errorf("api: open idempotent response: %w", err)
	}
	return body, nil
}

func idempotencyPurpose(accountID int64) string {
	return "idempotency.response:" + strconv.FormatInt(accountID, 10)
}

// replayHeaders are the response headers worth replaying: the body's own and the
// request id it names; rate-limit and CORS headers belong to the repeat.
func replayHeaders(h http.Header) http.Header {
	out := http.Header{}
	for _, k := range []string{"Content-Type", "Location", "X-Request-Id", "Retry-After"} {
		if v := h.Values(k); len(v) > 0 {
			out[k] = slices.Clone(v)
		}
	}
	return out
}
