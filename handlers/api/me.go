package api

import (
	"net/http"
)

type accountResponse struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Plan      string `json:"plan"`
	CreatedAt Time   `json:"created_at"`
}

type userResponse struct {
	ID        int64  `json:"id"`
	Email     string `json:"email"`
	Name      string `json:"name"`
	Role      string `json:"role"`
	CreatedAt Time   `json:"created_at"`
}

type planResponse struct {
	Name     string   `json:"name"`
	Features []string `json:"features"`
}

type keyResponse struct {
	ID             int64    `json:"id"`
	Name           string   `json:"name"`
	Prefix         string   `json:"prefix"`
	Scopes         []string `json:"scopes"`
	AllowedIPs     []string `json:"allowed_ips"`
	AllowedOrigins []string `json:"allowed_origins"`
	RateLimit      int      `json:"rate_limit"`
	OwnRateLimit   *int     `json:"own_rate_limit"`
	CreatedAt      Time     `json:"created_at"`
	LastUsedAt     *Time    `json:"last_used_at"`
}

type meResponse struct {
	Account accountResponse `json:"account"`
	User    userResponse    `json:"user"`
	Plan    planResponse    `json:"plan"`
	Key     keyResponse     `json:"key"`
}

func (a *API) me(w http.ResponseWriter, r *http.Request) error {
	p := principal(r.Context())
	owner := p.Owner
	limit := a.cfg.RateLimit
	if p.Key.RateLimit != nil && *p.Key.RateLimit < limit {
		limit = *p.Key.RateLimit
	}
	return writeData(w, r, http.StatusOK, meResponse{
		Account: accountResponse{ID: p.Account.ID, Name: p.Account.Name, Plan: p.Account.Plan, CreatedAt: Time(p.Account.CreatedAt)},
		User:    userResponse{ID: owner.ID, Email: owner.Email, Name: owner.Name, Role: owner.Role, CreatedAt: Time(owner.CreatedAt)},
		Plan:    planResponse{Name: p.Plan.Name, Features: nonNil(p.Plan.Features)},
		Key: keyResponse{
			ID: p.Key.ID, Name: p.Key.Name, Prefix: p.Key.Prefix, Scopes: nonNil(p.Key.Scopes),
			AllowedIPs: nonNil(p.Key.AllowedIPs), AllowedOrigins: nonNil(p.Key.AllowedOrigins),
			RateLimit: limit, OwnRateLimit: p.Key.RateLimit, CreatedAt: Time(p.Key.CreatedAt), LastUsedAt: timePtr(p.Key.LastUsedAt),
		},
	})
}

type limitUsage struct {
	Limit int64 `json:"limit"`
	Used  int64 `json:"used"`
}

type planLimitsResponse struct {
	Plan         string     `json:"plan"`
	Contacts     limitUsage `json:"contacts"`
	Lists        limitUsage `json:"lists"`
	SendsToday   limitUsage `json:"sends_today"`
	StorageBytes limitUsage `json:"storage_bytes"`
	Webhooks     limitUsage `json:"webhooks"`
	APIKeys      limitUsage `json:"api_keys"`
	AICreditEUR  float64    `json:"ai_credit_eur"`
}

func (a *API) planLimits(w http.ResponseWriter, r *http.Request) error {
	p := principal(r.Context())
	u, err := a.db.Usage(r.Context(), p.Account.ID, a.cfg.Now())
	if err != nil {
		return err
	}
	pl := p.Plan
	return writeData(w, r, http.StatusOK, planLimitsResponse{
		Plan:         pl.Name,
		Contacts:     limitUsage{pl.MaxContacts, u.Contacts},
		Lists:        limitUsage{pl.MaxLists, u.Lists},
		SendsToday:   limitUsage{pl.MaxSendsPerDay, u.SendsToday},
		StorageBytes: limitUsage{pl.MaxStorageBytes, u.StorageBytes},
		Webhooks:     limitUsage{pl.MaxWebhooks, u.Webhooks},
		APIKeys:      limitUsage{pl.MaxAPIKeys, u.APIKeys},
		AICreditEUR:  u.AICreditEUR,
	})
}

// nonNil makes an absent list an empty JSON array instead of null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
