package api

import (
	"fmt"
	"net/http"

	"github.com/rundbrief/rundbrief/store"
)

// blockedResponse is an entry of the blocked-address list.
type blockedResponse struct {
	Email      string  `json:"email"`
	Source     string  `json:"source"`
	Reason     *string `json:"reason"`
	CampaignID *int64  `json:"campaign_id"`
	CreatedAt  Time    `json:"created_at"`
}

func newBlockedResponse(b store.BlockedAddress) blockedResponse {
	return blockedResponse{Email: b.Email, Source: b.Source, Reason: b.Reason, CampaignID: b.CampaignID, CreatedAt: Time(b.CreatedAt)}
}

func (a *API) listUnsubscribes(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	rows, total, err := a.db.BlockedList(r.Context(), accountID(r), r.URL.Query().Get("q"), page)
	if err != nil {
		return err
	}
	out := make([]blockedResponse, len(rows))
	for i, b := range rows {
		out[i] = newBlockedResponse(b)
	}
	return writeList(w, r, out, page, total)
}

// blockRequest is the body of POST /unsubscribes: one address or several.
type blockRequest struct {
	Email  string   `json:"email"`
	Emails []string `json:"emails"`
	Reason string   `json:"reason"`
	Source string   `json:"source"`
}

func (a *API) createUnsubscribes(w http.ResponseWriter, r *http.Request) error {
	var req blockRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	emails := req.Emails
	if req.Email != "" {
		emails = append([]string{req.Email}, emails...)
	}
	if len(emails) > store.MaxBatch {
		e := *errTooLarge
		e.Message = fmt.Sprintf("Höchstens %d Adressen pro Anfrage; bitte aufteilen.", store.MaxBatch)
		return &e
	}
	rows, err := a.db.BlockAddresses(r.Context(), accountID(r), actor(r), emails, store.Unsubscribe{Source: req.Source, Reason: req.Reason})
	if err != nil {
		return err
	}
	out := make([]blockedResponse, len(rows))
	for i, b := range rows {
		out[i] = newBlockedResponse(b)
	}
	return writeData(w, r, http.StatusCreated, out)
}

func (a *API) deleteUnsubscribe(w http.ResponseWriter, r *http.Request) error {
	email, err := pathText(r, "email")
	if err != nil {
		return err
	}
	if err := a.db.UnblockAddress(r.Context(), accountID(r), actor(r), email); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
