package api

import (
	"net/http"

	"github.com/rundbrief/rundbrief/store"
)

// fieldResponse is a custom field definition.
type fieldResponse struct {
	Key       string `json:"key"`
	Label     string `json:"label"`
	Type      string `json:"type"`
	CreatedAt Time   `json:"created_at"`
	UpdatedAt Time   `json:"updated_at"`
}

func newFieldResponse(f store.ContactField) fieldResponse {
	return fieldResponse{Key: f.Key, Label: f.Label, Type: f.Type, CreatedAt: Time(f.CreatedAt), UpdatedAt: Time(f.UpdatedAt)}
}

// fieldRequest is the body of POST /fields and PATCH /fields/{key}.
type fieldRequest struct {
	Key   *string `json:"key"`
	Label *string `json:"label"`
	Type  *string `json:"type"`
}

func (f fieldRequest) input() store.FieldInput {
	return store.FieldInput{Key: f.Key, Label: f.Label, Type: f.Type}
}

func (a *API) listFields(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	fields, total, err := a.db.ContactFieldsPage(r.Context(), accountID(r), page)
	if err != nil {
		return err
	}
	out := make([]fieldResponse, len(fields))
	for i, f := range fields {
		out[i] = newFieldResponse(f)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) createField(w http.ResponseWriter, r *http.Request) error {
	var req fieldRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	f, err := a.db.CreateContactField(r.Context(), accountID(r), actor(r), req.input())
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newFieldResponse(f))
}

func (a *API) getField(w http.ResponseWriter, r *http.Request) error {
	key, err := pathText(r, "key")
	if err != nil {
		return err
	}
	f, err := a.db.ContactField(r.Context(), accountID(r), key)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newFieldResponse(f))
}

func (a *API) patchField(w http.ResponseWriter, r *http.Request) error {
	key, err := pathText(r, "key")
	if err != nil {
		return err
	}
	var req fieldRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	f, err := a.db.UpdateContactField(r.Context(), accountID(r), actor(r), key, req.input())
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newFieldResponse(f))
}

func (a *API) deleteField(w http.ResponseWriter, r *http.Request) error {
	key, err := pathText(r, "key")
	if err != nil {
		return err
	}
	if err := a.db.DeleteContactField(r.Context(), accountID(r), actor(r), key); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
