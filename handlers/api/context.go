package api

import (
	"context"
	"crypto/rand"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/store"
)

type ctxKey int

const (
	ctxRequestID ctxKey = iota
	ctxPrincipal
)

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxRequestID).(string)
	return id
}

// principal is the key, account and plan of an authenticated request.
func principal(ctx context.Context) store.Principal {
	p, _ := ctx.Value(ctxPrincipal).(store.Principal)
	return p
}

// accountID is the account every query of an authenticated request filters on.
func accountID(r *http.Request) int64 { return principal(r.Context()).Account.ID }

// actor is who an API request acts as in the activity log: its key.
func actor(r *http.Request) store.Actor {
	return store.Actor{Type: store.ActorKey, ID: principal(r.Context()).Key.ID}
}

func urlParam(r *http.Request, name string) string { return chi.URLParam(r, name) }

func newRequestID() string { return "req_" + rand.Text() }
