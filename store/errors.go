package store

import (
	"errors"
	"sort"
	"strings"
)

// ErrNotFound means the object does not exist or belongs to another account.
var ErrNotFound = errors.New("store: not found")

// ValidationError lists invalid input fields with a German message for each.
type ValidationError struct {
	Fields map[string]string
}

func (e *ValidationError) Error() string {
	names := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		names = append(names, k)
	}
	sort.Strings(names)
	return "store: invalid fields: " + strings.Join(names, ", ")
}

// Invalid builds a ValidationError for one field.
func Invalid(field, message string) *ValidationError {
	return &ValidationError{Fields: map[string]string{field: message}}
}

// Errs collects field errors while validating an input; Err returns nil when none were added.
type Errs map[string]string

// Add records a message for field unless one is already there (the first problem wins).
func (e Errs) Add(field, message string) {
	if _, ok := e[field]; !ok {
		e[field] = message
	}
}

// Err returns the collected errors as a *ValidationError, or nil.
func (e Errs) Err() error {
	if len(e) == 0 {
		return nil
	}
	return &ValidationError{Fields: e}
}

// ConflictError is a conflict with the current state of an object.
type ConflictError struct {
	Reason  string // machine-readable, e.g. "already_sent"
	Message string // German
}

func (e *ConflictError) Error() string { return "store: conflict: " + e.Reason }

// LimitError means a plan limit (contacts, lists, sends per day, storage, webhooks,
// API keys) would be exceeded.
type LimitError struct {
	Limit      string
	Max        int64
	UpgradeURL string
}

func (e *LimitError) Error() string { return "store: plan limit reached: " + e.Limit }

// PlanError means the account's plan lacks a feature.
type PlanError struct {
	Feature    string
	UpgradeURL string
}

func (e *PlanError) Error() string { return "store: plan lacks feature: " + e.Feature }

// UnavailableError means a service Rundbrief depends on (such as the AI provider)
// could not deliver. Nothing was changed or charged; a retry later may succeed.
type UnavailableError struct {
	Service string // e.g. "ai"
	Message string // German; empty: a generic message
	Err     error  // the cause, for the log only
}

func (e *UnavailableError) Error() string {
	if e.Err != nil {
		return "store: " + e.Service + " unavailable: " + e.Err.Error()
	}
	return "store: " + e.Service + " unavailable"
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// RateLimitError means a sign-up budget is spent: Limit is "ip" (per minute) or
// "list" (per day); RetryAfter is in seconds.
type RateLimitError struct {
	Limit      string
	RetryAfter int
}

func (e *RateLimitError) Error() string { return "store: sign-up rate limit reached: " + e.Limit }

// HintedError carries a hint for the operator beside an error: the setting that
// would change the answer (e.g. RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE for a loopback
// webhook). The error mappers put the hint into the log line; it never reaches a
// client, who cannot change the server's configuration anyway.
type HintedError struct {
	Err  error
	Hint string // English, for the log, naming the setting
}

func (e *HintedError) Error() string { return e.Err.Error() }

func (e *HintedError) Unwrap() error { return e.Err }

// WithHint annotates err with an operator hint; errors.Is and errors.As still
// see err. A nil err stays nil.
func WithHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &HintedError{Err: err, Hint: hint}
}

// OperatorHint returns the operator hint in err's chain, or "".
func OperatorHint(err error) string {
	var h *HintedError
	if errors.As(err, &h) {
		return h.Hint
	}
	return ""
}
