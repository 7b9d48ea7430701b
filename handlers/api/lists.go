package api

import (
	"fmt"
	"net/http"

	"github.com/rundbrief/rundbrief/store"
)

// listResponse is a list record.
type listResponse struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Color       string `json:"color"`
	Description string `json:"description"`
	DoubleOptIn bool   `json:"double_opt_in"`
	MemberCount int64  `json:"member_count"`
	CreatedAt   Time   `json:"created_at"`
	UpdatedAt   Time   `json:"updated_at"`
}

func newListResponse(l store.List) listResponse {
	return listResponse{ID: l.ID, Name: l.Name, Color: l.Color, Description: l.Description, DoubleOptIn: l.DoubleOptIn,
		MemberCount: l.MemberCount, CreatedAt: Time(l.CreatedAt), UpdatedAt: Time(l.UpdatedAt)}
}

// listRequest is the body of POST /lists and PATCH /lists/{id}.
type listRequest struct {
	Name        *string `json:"name"`
	Color       *string `json:"color"`
	Description *string `json:"description"`
	DoubleOptIn *bool   `json:"double_opt_in"`
}

func (l listRequest) input() store.ListInput {
	return store.ListInput{Name: l.Name, Color: l.Color, Description: l.Description, DoubleOptIn: l.DoubleOptIn}
}

func (a *API) listLists(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	lists, total, err := a.db.Lists(r.Context(), accountID(r), page)
	if err != nil {
		return err
	}
	out := make([]listResponse, len(lists))
	for i, l := range lists {
		out[i] = newListResponse(l)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) createList(w http.ResponseWriter, r *http.Request) error {
	var req listRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	l, err := a.db.CreateList(r.Context(), accountID(r), actor(r), req.input())
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newListResponse(l))
}

func (a *API) getList(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	l, err := a.db.List(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newListResponse(l))
}

func (a *API) patchList(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req listRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	l, err := a.db.UpdateList(r.Context(), accountID(r), actor(r), id, req.input())
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newListResponse(l))
}

func (a *API) deleteList(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := a.db.DeleteList(r.Context(), accountID(r), actor(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listMembers lists a list's contacts; it takes the filters and sorts of
// GET /contacts except list_id.
func (a *API) listListMembers(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	page, err := parsePage(r)
	errs := store.Errs{}
	if ve, ok := err.(*store.ValidationError); ok {
		for k, v := range ve.Fields {
			errs.Add(k, v)
		}
	}
	q := r.URL.Query()
	f := store.ContactFilter{ListID: id, Sort: q.Get("sort"), Status: q.Get("status"), Tag: q.Get("tag"), Query: q.Get("q")}
	if err := errs.Err(); err != nil {
		return err
	}
	contacts, total, err := a.db.Contacts(r.Context(), accountID(r), f, page)
	if err != nil {
		return err
	}
	return writeContacts(w, r, contacts, page, total)
}

// membersRequest is the body of POST /lists/{id}/members.
type membersRequest struct {
	ContactIDs []int64  `json:"contact_ids"`
	Emails     []string `json:"emails"`
}

type memberEntryResponse struct {
	Index     int         `json:"index"`
	ContactID *int64      `json:"contact_id"`
	Email     string      `json:"email"`
	Result    string      `json:"result"`
	Error     *entryError `json:"error,omitempty"`
}

type membersResponse struct {
	Added          int                   `json:"added"`
	AlreadyMembers int                   `json:"already_members"`
	Created        int                   `json:"created"`
	Failed         int                   `json:"failed"`
	Results        []memberEntryResponse `json:"results"`
}

func (a *API) addListMembers(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req membersRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if len(req.ContactIDs)+len(req.Emails) > store.MaxBatch {
		e := *errTooLarge
		e.Message = fmt.Sprintf("Höchstens %d Einträge pro Anfrage; bitte aufteilen.", store.MaxBatch)
		return &e
	}
	if len(req.ContactIDs)+len(req.Emails) == 0 {
		return errValidation(map[string]string{"contact_ids": "Bitte contact_ids oder emails angeben."})
	}
	res, err := a.db.AddListMembers(r.Context(), accountID(r), actor(r), id, req.ContactIDs, req.Emails)
	if err != nil {
		return err
	}
	out := membersResponse{Added: res.Added, AlreadyMembers: res.Already, Created: res.Created, Failed: res.Failed,
		Results: make([]memberEntryResponse, len(res.Entries))}
	for i, e := range res.Entries {
		m := memberEntryResponse{Index: i, Email: e.Email, Result: e.Result}
		if e.ContactID != 0 {
			cid := e.ContactID
			m.ContactID = &cid
		}
		if e.Err != nil {
			m.Error = newEntryError(e.Err)
		}
		out.Results[i] = m
	}
	return writeData(w, r, http.StatusOK, out)
}

func (a *API) removeListMember(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	contactID, err := pathID(r, "contact_id")
	if err != nil {
		return err
	}
	if err := a.db.RemoveListMember(r.Context(), accountID(r), actor(r), id, contactID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
