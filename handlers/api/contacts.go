package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/rundbrief/rundbrief/store"
)

// pathText reads a text path parameter (a tag, an address), percent-decoded.
func pathText(r *http.Request, name string) (string, error) {
	v := urlParam(r, name)
	if r.URL.RawPath != "" {
		u, err := url.PathUnescape(v)
		if err != nil {
			return "", errNotFound
		}
		v = u
	}
	if v == "" {
		return "", errNotFound
	}
	return v, nil
}

// contactResponse is the Contact resource of api-v1.md, which is also what
// events carry (store.ContactData): one shape for both.
type contactResponse = store.ContactData

func newContactResponse(c store.Contact) contactResponse { return c.Data() }

// contactRequest is the body of POST /contacts, PATCH /contacts/{id} and one
// entry of POST /contacts/bulk: every writable field of a contact.
type contactRequest struct {
	Email        *string                    `json:"email"`
	FirstName    *string                    `json:"first_name"`
	LastName     *string                    `json:"last_name"`
	Address      *string                    `json:"address"`
	Zip          *string                    `json:"zip"`
	City         *string                    `json:"city"`
	Phone        *string                    `json:"phone"`
	Note         *string                    `json:"note"`
	Tags         *[]string                  `json:"tags"`
	CustomFields map[string]json.RawMessage `json:"custom_fields"`
	ListIDs      *[]int64                   `json:"list_ids"`
	Source       *string                    `json:"source"`
	Status       *string                    `json:"status"`
}

// customFields decodes custom field values keeping numbers exact; null stays nil
// (removes the field).
func (c contactRequest) customFields() map[string]any {
	if c.CustomFields == nil {
		return nil
	}
	out := make(map[string]any, len(c.CustomFields))
	for k, raw := range c.CustomFields {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			v = struct{}{} // rejected by validation
		}
		out[k] = v
	}
	return out
}

// input is the request as an upsert; a missing email is a validation error.
func (c contactRequest) input() (store.ContactInput, error) {
	if c.Email == nil {
		return store.ContactInput{}, errValidation(map[string]string{"email": "Bitte eine E-Mail-Adresse angeben."})
	}
	in := store.ContactInput{
		Email: *c.Email, FirstName: c.FirstName, LastName: c.LastName, Address: c.Address, Zip: c.Zip, City: c.City,
		Phone: c.Phone, Note: c.Note, CustomFields: c.customFields(), Source: c.Source, Status: c.Status,
	}
	if c.Tags != nil {
		in.Tags = *c.Tags
	}
	if c.ListIDs != nil {
		in.ListIDs = *c.ListIDs
	}
	return in, nil
}

func (c contactRequest) patch() store.ContactPatch {
	return store.ContactPatch{
		Email: c.Email, FirstName: c.FirstName, LastName: c.LastName, Address: c.Address, Zip: c.Zip, City: c.City,
		Phone: c.Phone, Note: c.Note, Tags: c.Tags, CustomFields: c.customFields(), ListIDs: c.ListIDs,
		Source: c.Source, Status: c.Status,
	}
}

func (a *API) upsertContact(w http.ResponseWriter, r *http.Request) error {
	var req contactRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	res, err := a.db.UpsertContact(r.Context(), accountID(r), actor(r), in)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return writeData(w, r, status, newContactResponse(res.Contact))
}

func (a *API) listContacts(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	errs := store.Errs{}
	if ve, ok := err.(*store.ValidationError); ok {
		for k, v := range ve.Fields {
			errs.Add(k, v)
		}
	}
	q := r.URL.Query()
	f := store.ContactFilter{
		ListID:  queryInt(r, "list_id", errs),
		AfterID: queryInt(r, "after_id", errs),
		Sort:    q.Get("sort"),
		Status:  q.Get("status"),
		Tag:     q.Get("tag"),
		Query:   q.Get("q"),
	}
	if s := q.Get("updated_after"); s != "" {
		t, ok := ParseTime(s)
		if !ok && len(s) > 19 && s[19] == ' ' {
			// An unencoded "+01:00" in a query string arrives as " 01:00".
			t, ok = ParseTime(s[:19] + "+" + s[20:])
		}
		if !ok {
			errs.Add("updated_after", "Bitte einen Zeitpunkt wie 2026-11-22T05:02:04+01:00 oder 2026-11-22 05:02 angeben.")
		}
		f.UpdatedAfter = &t
	}
	if err := errs.Err(); err != nil {
		return err
	}
	contacts, total, err := a.db.Contacts(r.Context(), accountID(r), f, page)
	if errors.Is(err, store.ErrNotFound) {
		return errValidation(map[string]string{"list_id": "Diese Liste gibt es nicht."})
	}
	if err != nil {
		return err
	}
	return writeContacts(w, r, contacts, page, total)
}

func writeContacts(w http.ResponseWriter, r *http.Request, contacts []store.Contact, page store.Page, total int) error {
	// Each contact appends itself as its contactResponse (Contact.AppendJSON).
	return writeList(w, r, contacts, page, total)
}

func (a *API) getContact(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := a.db.Contact(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newContactResponse(c))
}

func (a *API) patchContact(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req contactRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	res, err := a.db.UpdateContact(r.Context(), accountID(r), actor(r), id, req.patch())
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newContactResponse(res.Contact))
}

func (a *API) deleteContact(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := a.db.DeleteContact(r.Context(), accountID(r), actor(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// unsubscribeRequest is the body of POST /contacts/{id}/unsubscribe.
type unsubscribeRequest struct {
	Reason     string `json:"reason"`
	Source     string `json:"source"`
	CampaignID int64  `json:"campaign_id"`
}

func (a *API) unsubscribeContact(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req unsubscribeRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	c, err := a.db.UnsubscribeContact(r.Context(), accountID(r), actor(r), id,
		store.Unsubscribe{Source: req.Source, Reason: req.Reason, CampaignID: req.CampaignID})
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newContactResponse(c))
}

func (a *API) listContactActivities(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	acts, total, err := a.db.ContactActivities(r.Context(), accountID(r), id, page)
	if err != nil {
		return err
	}
	return writeActivities(w, r, acts, page, total)
}

// bulkRequest is the body of POST /contacts/bulk. Entries stay raw so that one
// malformed entry fails alone.
type bulkRequest struct {
	Contacts []json.RawMessage `json:"contacts"`
	ListIDs  []int64           `json:"list_ids"`
	Tags     []string          `json:"tags"`
}

// entryError is the error of one entry of a bulk or list-member request.
type entryError struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
}

func newEntryError(err error) *entryError {
	e := toAPIError(err)
	return &entryError{Code: e.Code, Message: e.Message, Fields: e.Fields}
}

type bulkEntryResponse struct {
	Index  int         `json:"index"`
	Email  string      `json:"email"`
	Result string      `json:"result"`
	ID     *int64      `json:"id"`
	Error  *entryError `json:"error,omitempty"`
}

type bulkResponse struct {
	Created int                 `json:"created"`
	Updated int                 `json:"updated"`
	Failed  int                 `json:"failed"`
	Results []bulkEntryResponse `json:"results"`
}

// decodeEntry reads one bulk entry; a malformed one is a validation error of
// that entry.
func decodeEntry(raw json.RawMessage) (contactRequest, error) {
	var req contactRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		if te, ok := err.(*json.UnmarshalTypeError); ok && te.Field != "" {
			return req, errValidation(map[string]string{te.Field: "Falscher Typ: erwartet " + germanType(te.Type.Kind().String()) + "."})
		}
		return req, errValidation(map[string]string{"contact": "Jeder Eintrag muss ein Kontakt-Objekt sein."})
	}
	return req, nil
}

func (a *API) bulkContacts(w http.ResponseWriter, r *http.Request) error {
	var req bulkRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if len(req.Contacts) > store.MaxBatch {
		e := *errTooLarge
		e.Message = fmt.Sprintf("Höchstens %d Kontakte pro Anfrage; bitte aufteilen.", store.MaxBatch)
		return &e
	}
	if req.Contacts == nil {
		return errValidation(map[string]string{"contacts": "Bitte eine Liste von Kontakten angeben."})
	}
	results := make([]bulkEntryResponse, len(req.Contacts))
	var ins []store.ContactInput
	var at []int // index in results of each entry of ins
	for i, raw := range req.Contacts {
		results[i] = bulkEntryResponse{Index: i, Result: store.BulkError}
		cr, err := decodeEntry(raw)
		if cr.Email != nil {
			results[i].Email = strings.TrimSpace(*cr.Email)
		}
		var in store.ContactInput
		if err == nil {
			in, err = cr.input()
		}
		if err != nil {
			results[i].Error = newEntryError(err)
			continue
		}
		ins, at = append(ins, in), append(at, i)
	}
	res, err := a.db.BulkUpsertContacts(r.Context(), accountID(r), actor(r), store.BulkContacts{Contacts: ins, ListIDs: req.ListIDs, Tags: req.Tags})
	if err != nil {
		return err
	}
	out := bulkResponse{Results: results}
	for j, e := range res.Entries {
		res := &out.Results[at[j]]
		res.Email, res.Result = e.Email, e.Result
		if e.Err != nil {
			res.Error = newEntryError(e.Err)
			continue
		}
		id := e.Contact.ID
		res.ID = &id
	}
	for _, e := range out.Results {
		switch e.Result {
		case store.BulkCreated:
			out.Created++
		case store.BulkUpdated:
			out.Updated++
		default:
			out.Failed++
		}
	}
	return writeData(w, r, http.StatusOK, out)
}
