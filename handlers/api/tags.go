package api

import (
	"net/http"
)

type tagResponse struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

func (a *API) listTags(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	tags, total, err := a.db.Tags(r.Context(), accountID(r), page)
	if err != nil {
		return err
	}
	out := make([]tagResponse, len(tags))
	for i, t := range tags {
		out[i] = tagResponse{Name: t.Name, Count: t.Count}
	}
	return writeList(w, r, out, page, total)
}

// tagsRequest is the body of POST /contacts/{id}/tags.
type tagsRequest struct {
	Tags []string `json:"tags"`
}

func (a *API) addContactTags(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req tagsRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	c, err := a.db.AddTags(r.Context(), accountID(r), actor(r), id, req.Tags)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newContactResponse(c))
}

func (a *API) removeContactTag(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	tag, err := pathText(r, "tag")
	if err != nil {
		return err
	}
	if _, err := a.db.RemoveTag(r.Context(), accountID(r), actor(r), id, tag); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
