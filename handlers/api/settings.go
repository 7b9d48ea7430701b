package api

import (
	"net/http"

	"github.com/rundbrief/rundbrief/store"
)

// accountSettingsResponse is the sender's identity of GET/PUT /account/settings.
type accountSettingsResponse struct {
	Company       string   `json:"company"`
	PostalAddress string   `json:"postal_address"`
	Imprint       string   `json:"imprint"`
	FromName      string   `json:"from_name"`
	ReplyTo       string   `json:"reply_to"`
	PrivacyURL    string   `json:"privacy_url"`
	Warnings      []string `json:"warnings"`
	UpdatedAt     *Time    `json:"updated_at"`
}

func newAccountSettingsResponse(s store.AccountSettings) accountSettingsResponse {
	return accountSettingsResponse{Company: s.Company, PostalAddress: s.PostalAddress, Imprint: s.Imprint,
		FromName: s.FromName, ReplyTo: s.ReplyTo, PrivacyURL: s.PrivacyURL, Warnings: nonNil(s.Warnings()), UpdatedAt: timePtr(s.UpdatedAt)}
}

// accountSettingsRequest is the body of PUT /account/settings: every field
// is replaced (an absent one becomes empty), but an absent privacy_url keeps
// the stored address (store.AccountSettingsInput).
type accountSettingsRequest struct {
	Company       string  `json:"company"`
	PostalAddress string  `json:"postal_address"`
	Imprint       string  `json:"imprint"`
	FromName      string  `json:"from_name"`
	ReplyTo       string  `json:"reply_to"`
	PrivacyURL    *string `json:"privacy_url"`
}

func (a *API) getAccountSettings(w http.ResponseWriter, r *http.Request) error {
	s, err := a.db.AccountSettings(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newAccountSettingsResponse(s))
}

func (a *API) putAccountSettings(w http.ResponseWriter, r *http.Request) error {
	var req accountSettingsRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	s, err := a.db.PutAccountSettings(r.Context(), accountID(r), actor(r), store.AccountSettingsInput{Company: req.Company,
		PostalAddress: req.PostalAddress, Imprint: req.Imprint, FromName: req.FromName, ReplyTo: req.ReplyTo, PrivacyURL: req.PrivacyURL})
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newAccountSettingsResponse(s))
}
