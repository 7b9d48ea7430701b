package api

import (
	"net/http"

	"github.com/rundbrief/rundbrief/store"
)

type apiLogResponse struct {
	ID         int64   `json:"id"`
	KeyID      *int64  `json:"key_id"`
	RequestID  string  `json:"request_id"`
	Method     string  `json:"method"`
	Path       string  `json:"path"`
	Status     int     `json:"status"`
	IP         string  `json:"ip"`
	Origin     string  `json:"origin"`
	UserAgent  string  `json:"user_agent"`
	DurationMS float64 `json:"duration_ms"`
	CreatedAt  Time    `json:"created_at"`
}

func newAPILogResponse(e store.APILogEntry) apiLogResponse {
	return apiLogResponse{
		ID: e.ID, KeyID: e.KeyID, RequestID: e.RequestID, Method: e.Method, Path: e.Path, Status: e.Status,
		IP: e.IP, Origin: e.Origin, UserAgent: e.UserAgent, DurationMS: float64(e.DurationUS) / 1000, CreatedAt: Time(e.CreatedAt),
	}
}

func (a *API) listAPILog(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	errs := store.Errs{}
	if ve, ok := err.(*store.ValidationError); ok {
		for k, v := range ve.Fields {
			errs.Add(k, v)
		}
	}
	f := store.APILogFilter{
		KeyID:      queryInt(r, "key_id", errs),
		Status:     int(queryIntIn(r, "status", 100, 599, errs)),
		Method:     r.URL.Query().Get("method"),
		PathPrefix: r.URL.Query().Get("path"),
	}
	if err := errs.Err(); err != nil {
		return err
	}
	// The total counts up to store.APILogMaxCount entries, so that a busy
	// key's log does not make every page count millions of rows; deeper pages
	// still answer.
	entries, total, _, err := a.db.APILog(r.Context(), accountID(r), f, page, store.APILogMaxCount)
	if err != nil {
		return err
	}
	out := make([]apiLogResponse, len(entries))
	for i, e := range entries {
		out[i] = newAPILogResponse(e)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) getAPILogEntry(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	e, err := a.db.APILogEntry(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newAPILogResponse(e))
}
