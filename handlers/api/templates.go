package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/store"
)

// templateResponse is a template as the API shows it; is_layout says whether
// it has the content slot.
type templateResponse struct {
	ID        int64  `json:"id"`
	Key       string `json:"key"`
	Name      string `json:"name"`
	Subject   string `json:"subject"`
	Preheader string `json:"preheader"`
	HTML      string `json:"html"`
	IsLayout  bool   `json:"is_layout"`
	CreatedAt Time   `json:"created_at"`
	UpdatedAt Time   `json:"updated_at"`
}

func newTemplateResponse(t store.Template) templateResponse {
	return templateResponse{ID: t.ID, Key: t.Key, Name: t.Name, Subject: t.Subject, Preheader: t.Preheader, HTML: t.HTML,
		IsLayout: t.IsLayout(), CreatedAt: Time(t.CreatedAt), UpdatedAt: Time(t.UpdatedAt)}
}

// templateRequest is the body of POST /templates and PATCH /templates/{id}.
type templateRequest struct {
	Key       *string `json:"key"`
	Name      *string `json:"name"`
	Subject   *string `json:"subject"`
	Preheader *string `json:"preheader"`
	HTML      *string `json:"html"`
}

func (q templateRequest) input() (store.TemplateInput, error) {
	if q.HTML != nil && len(*q.HTML) > store.MaxHTMLBytes {
		return store.TemplateInput{}, errTooLarge
	}
	return store.TemplateInput{Key: q.Key, Name: q.Name, Subject: q.Subject, Preheader: q.Preheader, HTML: q.HTML}, nil
}

func (a *API) listTemplates(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	list, total, err := a.db.Templates(r.Context(), accountID(r), page)
	if err != nil {
		return err
	}
	out := make([]templateResponse, len(list))
	for i, t := range list {
		out[i] = newTemplateResponse(t)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) createTemplate(w http.ResponseWriter, r *http.Request) error {
	var req templateRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	t, err := a.db.CreateTemplate(r.Context(), accountID(r), actor(r), in)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newTemplateResponse(t))
}

func (a *API) getTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	t, err := a.db.Template(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newTemplateResponse(t))
}

func (a *API) patchTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req templateRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	t, err := a.db.UpdateTemplate(r.Context(), accountID(r), actor(r), id, in)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newTemplateResponse(t))
}

func (a *API) deleteTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := a.db.DeleteTemplate(r.Context(), accountID(r), actor(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// libraryTemplateResponse is a design of the template library.
type libraryTemplateResponse struct {
	Key         string `json:"key"`
	Name        string `json:"name"`
	Category    string `json:"category"`
	Description string `json:"description"`
	Subject     string `json:"subject"`
	Preheader   string `json:"preheader"`
	HTML        string `json:"html"`
	IsLayout    bool   `json:"is_layout"`
}

// listTemplateLibrary answers every design at once (there are few); it
// paginates like every list.
func (a *API) listTemplateLibrary(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	all := store.LibraryDesigns()
	out := make([]libraryTemplateResponse, 0, len(all))
	for i, d := range all {
		if i < page.Offset() || len(out) >= page.PerPage {
			continue
		}
		out = append(out, libraryTemplateResponse{Key: d.Key, Name: d.Name, Category: d.Category, Description: d.Description,
			Subject: d.Subject, Preheader: d.Preheader, HTML: d.HTML, IsLayout: store.IsLayout(d.HTML)})
	}
	return writeList(w, r, out, page, len(all))
}

func (a *API) copyLibraryTemplate(w http.ResponseWriter, r *http.Request) error {
	t, err := a.db.CopyLibraryTemplate(r.Context(), accountID(r), actor(r), chi.URLParam(r, "key"))
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newTemplateResponse(t))
}
