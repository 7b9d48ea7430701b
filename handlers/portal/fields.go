package portal

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// The custom field definitions call the same store methods as the API's
// /v1/fields: CreateContactField, UpdateContactField, DeleteContactField.

func (p *Portal) fieldsPage(w http.ResponseWriter, r *http.Request) error {
	return p.renderFields(w, r, http.StatusOK, views.FieldsView{})
}

func (p *Portal) renderFields(w http.ResponseWriter, r *http.Request, status int, v views.FieldsView) error {
	var err error
	if v.Fields, err = p.db.ContactFields(r.Context(), accountID(r)); err != nil {
		return err
	}
	s := p.shell(r, views.TextFor(r.Context()).Fields.Title, views.NavFields)
	p.render(w, r, status, views.FieldsPage(s, v))
	return nil
}

// readFieldForm reads a posted definition as typed and as the store's input.
func readFieldForm(r *http.Request, withKey bool) (views.FieldForm, store.FieldInput) {
	f := views.FieldForm{Label: strings.TrimSpace(r.PostFormValue("label")), Type: r.PostFormValue("type"), Errors: map[string]string{}}
	in := store.FieldInput{Type: &f.Type}
	if withKey {
		f.Key = strings.TrimSpace(r.PostFormValue("key"))
		in.Key = &f.Key
		if f.Label != "" {
			in.Label = &f.Label // empty: the key
		}
	} else {
		in.Label = &f.Label
	}
	return f, in
}

func (p *Portal) createField(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	f, in := readFieldForm(r, true)
	field, err := p.db.CreateContactField(r.Context(), accountID(r), actor(r), in)
	if fieldErrors(err, f.Errors) {
		return p.renderFields(w, r, http.StatusUnprocessableEntity, views.FieldsView{New: f})
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Fields.CreatedFlash, field.Label))
	p.redirect(w, r, "/settings/fields")
	return nil
}

func (p *Portal) updateField(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	key := chi.URLParam(r, "key")
	f, in := readFieldForm(r, false)
	f.Key = key
	field, err := p.db.UpdateContactField(r.Context(), accountID(r), actor(r), key, in)
	if fieldErrors(err, f.Errors) {
		return p.renderFields(w, r, http.StatusUnprocessableEntity, views.FieldsView{Edit: f})
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Fields.SavedFlash, field.Label))
	p.redirect(w, r, "/settings/fields")
	return nil
}

func (p *Portal) deleteField(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	key := chi.URLParam(r, "key")
	field, err := p.db.ContactField(r.Context(), accountID(r), key)
	if err != nil {
		return err
	}
	if err := p.db.DeleteContactField(r.Context(), accountID(r), actor(r), key); err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Fields.DeletedFlash, field.Label))
	p.redirect(w, r, "/settings/fields")
	return nil
}
