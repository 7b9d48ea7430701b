package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/rundbrief/rundbrief/store"
)

// Error is an API error: the HTTP status, the fixed code and the German message,
// plus the extra fields some codes carry.
type Error struct {
	Status        int               `json:"-"`
	Code          string            `json:"code"`
	Message       string            `json:"message"`
	Fields        map[string]string `json:"fields,omitempty"`
	RequestID     string            `json:"request_id"`
	Reason        string            `json:"reason,omitempty"`
	RequiredScope string            `json:"required_scope,omitempty"`
	RetryAfter    int               `json:"retry_after,omitempty"`
	UpgradeURL    string            `json:"upgrade_url,omitempty"`
	Feature       string            `json:"feature,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("api: %d %s: %s", e.Status, e.Code, e.Message) }

func errBadRequest(msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "bad_request", Message: msg}
}

var (
	errUnauthorized = &Error{Status: http.StatusUnauthorized, Code: "unauthorized",
		Message: "Kein gültiger API-Schlüssel. Bitte den Schlüssel im Header Authorization: Bearer <Schlüssel> senden."}
	errNotFound = &Error{Status: http.StatusNotFound, Code: "not_found",
		Message: "Nicht gefunden."}
	errTooLarge = &Error{Status: http.StatusRequestEntityTooLarge, Code: "payload_too_large",
		Message: "Die Anfrage ist zu groß."}
	errServer = &Error{Status: http.StatusInternalServerError, Code: "server_error",
		Message: "Ein unerwarteter Fehler ist aufgetreten. Bitte später erneut versuchen und die Request-ID angeben."}
	errUnavailable = &Error{Status: http.StatusServiceUnavailable, Code: "service_unavailable",
		Message: "Ein benötigter Dienst ist gerade nicht erreichbar. Bitte später erneut versuchen."}
)

func errForbidden(reason, msg string) *Error {
	return &Error{Status: http.StatusForbidden, Code: "forbidden", Reason: reason, Message: msg}
}

func errValidation(fields map[string]string) *Error {
	return &Error{Status: http.StatusUnprocessableEntity, Code: "validation_error",
		Message: "Die Eingaben sind ungültig.", Fields: fields}
}

func errConflict(reason, msg string) *Error {
	return &Error{Status: http.StatusConflict, Code: "conflict", Reason: reason, Message: msg}
}

// toAPIError is the one place where domain errors become API errors.
func toAPIError(err error) *Error {
	var (
		apiErr   *Error
		valErr   *store.ValidationError
		conflict *store.ConflictError
		limit    *store.LimitError
		plan     *store.PlanError
		unavail  *store.UnavailableError
		rate     *store.RateLimitError
	)
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case errors.Is(err, store.ErrNotFound):
		return errNotFound
	case errors.As(err, &valErr):
		return errValidation(valErr.Fields)
	case errors.As(err, &conflict):
		return errConflict(conflict.Reason, conflict.Message)
	case errors.As(err, &limit) && limit.Limit == "ai_credit_eur":
		return &Error{Status: http.StatusPaymentRequired, Code: "limit_reached", UpgradeURL: limit.UpgradeURL,
			Message: "Ihr KI-Guthaben ist aufgebraucht. Bitte Guthaben aufladen lassen."}
	case errors.As(err, &limit):
		return &Error{Status: http.StatusPaymentRequired, Code: "limit_reached", UpgradeURL: limit.UpgradeURL,
			Message: fmt.Sprintf("Das Limit Ihres Tarifs ist erreicht (%s: %d).", limitLabel(limit.Limit), limit.Max)}
	case errors.As(err, &plan):
		msg := fmt.Sprintf("Ihr Tarif enthält die Funktion %q nicht.", plan.Feature)
		if plan.Feature == "api" {
			msg = "Ihr Tarif enthält keinen API-Zugang."
		}
		return &Error{Status: http.StatusPaymentRequired, Code: "plan_required", Feature: plan.Feature,
			UpgradeURL: plan.UpgradeURL, Message: msg}
	case errors.As(err, &rate):
		msg := "Zu viele Anmeldungen von dieser Adresse. Bitte nach " + strconv.Itoa(rate.RetryAfter) + " Sekunden erneut versuchen."
		if rate.Limit == "list" {
			msg = "Für heute sind keine weiteren Anmeldungen zu dieser Liste möglich. Bitte morgen erneut versuchen."
		}
		return &Error{Status: http.StatusTooManyRequests, Code: "rate_limited", RetryAfter: rate.RetryAfter, Message: msg}
	case errors.As(err, &unavail):
		e := *errUnavailable
		if unavail.Message != "" {
			e.Message = unavail.Message
		}
		return &e
	}
	return errServer
}

func limitLabel(limit string) string {
	switch limit {
	case "contacts":
		return "Kontakte"
	case "lists":
		return "Listen"
	case "sends_per_day":
		return "Sendungen pro Tag"
	case "storage_bytes":
		return "Speicher in Bytes"
	case "webhooks":
		return "Webhooks"
	case "api_keys":
		return "aktive API-Schlüssel"
	}
	return limit
}

// writeError answers with the error envelope. Unexpected errors are logged with the
// request id and answered with a generic message: no internals reach the client.
func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := *toAPIError(err)
	a.logError(r, e, err)
	if e.Upgrade() && e.UpgradeURL == "" {
		e.UpgradeURL = a.cfg.BaseURL + "/settings/plan"
	}
	e.RequestID = requestID(r.Context())
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	_ = writeEnvelope(w, e.Status, struct {
		Error Error `json:"error"`
	}{e})
}

// logError logs an answered error at the level it deserves: a server error
// (500) at ERROR with its detail; a dependency that could not deliver (503) at
// WARN, since it is expected and retried; a refusal that an operator setting
// would change (an error with store.WithHint) at INFO with the hint, which names
// the setting. Other client errors are the client's business: the API log has them.
func (a *API) logError(r *http.Request, e Error, err error) {
	hint := store.OperatorHint(err)
	attrs := []any{"request_id", requestID(r.Context()), "method", r.Method, "path", r.URL.Path, "status", e.Status, "code", e.Code}
	if hint != "" {
		attrs = append(attrs, "hint", hint)
	}
	switch {
	case e.Status == http.StatusServiceUnavailable:
		a.log.Warn("service unavailable", append(attrs, "err", err)...)
	case e.Status >= 500:
		a.log.Error("request failed", append(attrs, "err", err)...)
	case hint != "":
		a.log.Info("request refused", attrs...)
	}
}

// Upgrade reports whether the error carries an upgrade_url (the 402 codes).
func (e *Error) Upgrade() bool { return e.Status == http.StatusPaymentRequired }

// handlerFunc is an API handler: it writes a success response or returns an error.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle serves h and maps its error to a response; query and path values that
// PostgreSQL could not take are refused here, once for every route (checkValues).
func (a *API) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := checkValues(r); err != nil {
			a.writeError(w, r, err)
			return
		}
		if err := h(w, r); err != nil {
			a.writeError(w, r, err)
		}
	}
}
