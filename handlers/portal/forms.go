package portal

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// The sign-up form pages call the store's form services, as /v1/forms does
// (CreateForm, UpdateForm, DeleteForm, Forms); the embed page shows the snippet
// of GET /v1/forms/{id}/embed (views.NewSignUpEmbed) and previews the hosted
// page of handlers/public.

// formPerPage is the number of forms per list page.
const formPerPage = 25

func (p *Portal) listForms(w http.ResponseWriter, r *http.Request) error {
	t := views.TextFor(r.Context())
	page := queryPage(r)
	items, total, err := p.db.Forms(r.Context(), accountID(r), store.Page{Page: page, PerPage: formPerPage})
	if err != nil {
		return err
	}
	if last := max(1, (total+formPerPage-1)/formPerPage); page > last {
		page = last
		if items, total, err = p.db.Forms(r.Context(), accountID(r), store.Page{Page: page, PerPage: formPerPage}); err != nil {
			return err
		}
	}
	lists, _, err := p.db.Lists(r.Context(), accountID(r), store.Page{Page: 1, PerPage: maxPickerLists})
	if err != nil {
		return err
	}
	l := views.FormList{Items: items, Lists: lists, Pager: views.Pager{
		Page: page, PerPage: formPerPage, Total: total,
		URL: func(n int) string { return "/forms?page=" + strconv.Itoa(n) },
	}}
	p.render(w, r, http.StatusOK, views.FormsPage(p.shell(r, t.Forms.Title, views.NavForms), l))
	return nil
}

func (p *Portal) newForm(w http.ResponseWriter, r *http.Request) error {
	f, err := p.signUpFormForm(r, store.Form{DoubleOptIn: true, Fields: []string{store.FormFieldFirstName}, MinFillSeconds: store.DefaultMinFillSeconds})
	if err != nil {
		return err
	}
	p.renderFormEditor(w, r, http.StatusOK, f)
	return nil
}

func (p *Portal) createForm(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	f, err := p.signUpFormForm(r, store.Form{})
	if err != nil {
		return err
	}
	in := readSignUpForm(r, &f)
	if len(f.Errors) > 0 {
		p.renderFormEditor(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	created, err := p.db.CreateForm(r.Context(), accountID(r), actor(r), in)
	if fieldErrors(err, f.Errors) {
		p.renderFormEditor(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Forms.CreatedFlash, created.Name))
	p.redirect(w, r, views.FormURL(created.ID, "embed"))
	return nil
}

func (p *Portal) editForm(w http.ResponseWriter, r *http.Request) error {
	cur, err := p.form(r)
	if err != nil {
		return err
	}
	f, err := p.signUpFormForm(r, cur)
	if err != nil {
		return err
	}
	p.renderFormEditor(w, r, http.StatusOK, f)
	return nil
}

func (p *Portal) updateForm(w http.ResponseWriter, r *http.Request) error {
	cur, err := p.form(r)
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	f, err := p.signUpFormForm(r, cur)
	if err != nil {
		return err
	}
	in := readSignUpForm(r, &f)
	if len(f.Errors) > 0 {
		p.renderFormEditor(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	saved, err := p.db.UpdateForm(r.Context(), accountID(r), actor(r), cur.ID, in)
	if fieldErrors(err, f.Errors) {
		p.renderFormEditor(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Forms.SavedFlash, saved.Name))
	p.redirect(w, r, "/forms")
	return nil
}

// formEmbed shows the embed code (the snippet of GET /v1/forms/{id}/embed) with
// a copy button, and the hosted page in a preview frame.
func (p *Portal) formEmbed(w http.ResponseWriter, r *http.Request) error {
	f, err := p.form(r)
	if err != nil {
		return err
	}
	settings, err := p.db.AccountSettings(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	var b strings.Builder
	if err := views.SignUpEmbed(views.NewSignUpEmbed(p.baseURL, f, settings.PrivacyURL)).Render(r.Context(), &b); err != nil {
		return err
	}
	e := views.FormEmbed{Form: f, Snippet: b.String(), HostedURL: p.baseURL + "/subscribe/" + f.Token,
		PreviewURL: "/subscribe/" + f.Token, NoPrivacyURL: settings.PrivacyURL == "", CanEditSender: viewer(r).User.CanManageKeys()}
	s := p.shell(r, sprintf(views.TextFor(r.Context()).Forms.EmbedTitle, f.Name), views.NavForms)
	p.render(w, r, http.StatusOK, views.FormEmbedPage(s, e))
	return nil
}

func (p *Portal) confirmDeleteForm(w http.ResponseWriter, r *http.Request) error {
	f, err := p.form(r)
	if err != nil {
		return err
	}
	p.render(w, r, http.StatusOK, views.FormDeletePage(p.shell(r, f.Name, views.NavForms), f))
	return nil
}

func (p *Portal) deleteForm(w http.ResponseWriter, r *http.Request) error {
	f, err := p.form(r)
	if err != nil {
		return err
	}
	if err := p.db.DeleteForm(r.Context(), accountID(r), actor(r), f.ID); err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Forms.DeletedFlash, f.Name))
	p.redirect(w, r, "/forms")
	return nil
}

// form is the route's sign-up form of the signed-in account.
func (p *Portal) form(r *http.Request) (store.Form, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return store.Form{}, err
	}
	return p.db.Form(r.Context(), accountID(r), id)
}

// signUpFormForm is the editor for f (f.ID 0: a new form) with the account's
// lists to choose from.
func (p *Portal) signUpFormForm(r *http.Request, f store.Form) (views.SignUpFormForm, error) {
	t := views.TextFor(r.Context())
	out := views.SignUpFormForm{
		ID: f.ID, Title: t.Forms.NewTitle, Action: "/forms/new", Submit: t.Forms.Create,
		Name: f.Name, ListIDs: f.ListIDs, DoubleOptIn: f.DoubleOptIn, Fields: f.Fields, Tags: strings.Join(f.Tags, ", "),
		SuccessRedirect: f.SuccessRedirect, SuccessMessage: f.SuccessMessage, ProofOfWork: f.ProofOfWork,
		MinFillSeconds: strconv.Itoa(f.MinFillSeconds), Errors: map[string]string{},
	}
	if f.ID != 0 {
		out.Title, out.Action, out.Submit = sprintf(t.Forms.EditTitle, f.Name), views.FormURL(f.ID, "edit"), t.Common.Save
	}
	var err error
	out.Lists, _, err = p.db.Lists(r.Context(), accountID(r), store.Page{Page: 1, PerPage: maxPickerLists})
	return out, err
}

// readSignUpForm reads the posted editor into f (as typed) and into the
// service's input, every field given; f.Errors gets what cannot be read.
func readSignUpForm(r *http.Request, f *views.SignUpFormForm) store.FormInput {
	t := views.TextFor(r.Context())
	form := r.PostForm
	f.Name = strings.TrimSpace(form.Get("name"))
	f.DoubleOptIn = form.Get("double_opt_in") == "on"
	f.Fields = form["fields"]
	f.Tags = form.Get("tags")
	f.SuccessRedirect = form.Get("success_redirect")
	f.SuccessMessage = form.Get("success_message")
	f.ProofOfWork = form.Get("proof_of_work") == "on"
	f.MinFillSeconds = strings.TrimSpace(form.Get("min_fill_seconds"))
	f.ListIDs = nil
	for _, v := range form["list_ids"] {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			f.Errors["list_ids"] = t.Common.FormInvalid
			continue
		}
		f.ListIDs = append(f.ListIDs, id)
	}
	minFill := 0
	if f.MinFillSeconds != "" {
		n, err := strconv.Atoi(f.MinFillSeconds)
		if err != nil {
			f.Errors["min_fill_seconds"] = t.Forms.MinFillNumber
		}
		minFill = n
	}
	ids := slices.Clone(f.ListIDs)
	if ids == nil {
		ids = []int64{}
	}
	fields := slices.Clone(f.Fields)
	if fields == nil {
		fields = []string{}
	}
	tags := strings.FieldsFunc(f.Tags, func(r rune) bool { return r == ',' || r == '\n' })
	for i := range tags {
		tags[i] = strings.TrimSpace(tags[i])
	}
	tags = slices.DeleteFunc(tags, func(s string) bool { return s == "" })
	if tags == nil {
		tags = []string{}
	}
	return store.FormInput{Name: &f.Name, ListIDs: &ids, Tags: &tags, DoubleOptIn: &f.DoubleOptIn, Fields: &fields,
		SuccessRedirect: &f.SuccessRedirect, SuccessMessage: &f.SuccessMessage, ProofOfWork: &f.ProofOfWork, MinFillSeconds: &minFill}
}

func (p *Portal) renderFormEditor(w http.ResponseWriter, r *http.Request, status int, f views.SignUpFormForm) {
	p.render(w, r, status, views.FormEditorPage(p.shell(r, f.Title, views.NavForms), f))
}
