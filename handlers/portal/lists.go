package portal

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// The list pages call the same store services as the API's /lists endpoints:
// Lists, List, CreateList, UpdateList, DeleteList, Contacts (by list),
// AddListMembers and RemoveListMember.

// listsPerPage is the number of lists per page of the table.
const listsPerPage = 50

func (p *Portal) listLists(w http.ResponseWriter, r *http.Request) error {
	t := views.TextFor(r.Context())
	page := queryPage(r)
	lists, total, err := p.db.Lists(r.Context(), accountID(r), store.Page{Page: page, PerPage: listsPerPage})
	if err != nil {
		return err
	}
	l := views.ListTable{Lists: lists, Pager: views.Pager{Page: page, PerPage: listsPerPage, Total: total, Target: "#lists",
		URL: func(n int) string { return pageURL("/lists", nil, n) }}}
	s := p.shell(r, t.Lists.Title, views.NavLists)
	p.page(w, r, http.StatusOK, views.ListsPage(s, l), views.ListSection(l))
	return nil
}

func (p *Portal) newListForm(w http.ResponseWriter, r *http.Request) error {
	p.renderListForm(w, r, http.StatusOK, blankListForm(r))
	return nil
}

func blankListForm(r *http.Request) views.ListForm {
	t := views.TextFor(r.Context()).Lists
	return views.ListForm{Title: t.NewTitle, Action: "/lists/new", Submit: t.Create, Color: store.DefaultListColor}
}

func (p *Portal) createList(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	t := views.TextFor(r.Context())
	f, in := readListForm(r, blankListForm(r))
	l, err := p.db.CreateList(r.Context(), accountID(r), actor(r), in)
	var le *store.LimitError
	switch {
	case fieldErrors(err, f.Errors):
		p.renderListForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	case errors.As(err, &le):
		f.Alert = sprintf(t.Lists.LimitReached, le.Max)
		p.renderListForm(w, r, http.StatusConflict, f)
		return nil
	case err != nil:
		return err
	}
	p.flash(r.Context(), "success", sprintf(t.Lists.CreatedFlash, l.Name))
	p.redirect(w, r, "/lists")
	return nil
}

// list is the route's list; another account's id is not found.
func (p *Portal) list(r *http.Request) (store.List, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return store.List{}, err
	}
	return p.db.List(r.Context(), accountID(r), id)
}

func editListForm(r *http.Request, l store.List) views.ListForm {
	t := views.TextFor(r.Context())
	return views.ListForm{
		Title: sprintf(t.Lists.EditTitle, l.Name), Action: "/lists/" + strconv.FormatInt(l.ID, 10) + "/edit", Submit: t.Common.Save,
		Name: l.Name, Color: l.Color, Description: l.Description, DoubleOptIn: l.DoubleOptIn,
	}
}

func (p *Portal) editListForm(w http.ResponseWriter, r *http.Request) error {
	l, err := p.list(r)
	if err != nil {
		return err
	}
	p.renderListForm(w, r, http.StatusOK, editListForm(r, l))
	return nil
}

func (p *Portal) updateList(w http.ResponseWriter, r *http.Request) error {
	l, err := p.list(r)
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	f, in := readListForm(r, editListForm(r, l))
	l, err = p.db.UpdateList(r.Context(), accountID(r), actor(r), l.ID, in)
	if fieldErrors(err, f.Errors) {
		p.renderListForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Lists.UpdatedFlash, l.Name))
	p.redirect(w, r, "/lists")
	return nil
}

// readListForm reads the posted form into f (as typed) and the store input; the
// store validates it.
func readListForm(r *http.Request, f views.ListForm) (views.ListForm, store.ListInput) {
	form := r.PostForm
	f.Name = form.Get("name")
	f.Color = strings.TrimSpace(form.Get("color"))
	f.Description = form.Get("description")
	f.DoubleOptIn = form.Get("double_opt_in") != ""
	f.Errors = map[string]string{}
	name, color, desc, doi := f.Name, f.Color, f.Description, f.DoubleOptIn
	return f, store.ListInput{Name: &name, Color: &color, Description: &desc, DoubleOptIn: &doi}
}

func (p *Portal) renderListForm(w http.ResponseWriter, r *http.Request, status int, f views.ListForm) {
	p.render(w, r, status, views.ListFormPage(p.shell(r, f.Title, views.NavLists), f))
}

func (p *Portal) confirmDeleteList(w http.ResponseWriter, r *http.Request) error {
	l, err := p.list(r)
	if err != nil {
		return err
	}
	p.render(w, r, http.StatusOK, views.ListConfirmPage(p.shell(r, l.Name, views.NavLists), l))
	return nil
}

func (p *Portal) deleteList(w http.ResponseWriter, r *http.Request) error {
	l, err := p.list(r)
	if err != nil {
		return err
	}
	if err := p.db.DeleteList(r.Context(), accountID(r), actor(r), l.ID); err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Lists.DeletedFlash, l.Name))
	p.redirect(w, r, "/lists")
	return nil
}

// listMembers is a list's page: its contacts, newest first, and the add form.
// htmx paging gets views.ListMembersSection alone.
func (p *Portal) listMembers(w http.ResponseWriter, r *http.Request) error {
	l, err := p.list(r)
	if err != nil {
		return err
	}
	m, err := p.members(r, l, queryPage(r))
	if err != nil {
		return err
	}
	s := p.shell(r, l.Name, views.NavLists)
	p.page(w, r, http.StatusOK, views.ListMembersPage(s, m), views.ListMembersSection(m))
	return nil
}

func (p *Portal) members(r *http.Request, l store.List, page int) (views.ListMembers, error) {
	m := views.ListMembers{List: l, Errors: map[string]string{}}
	var err error
	m.Contacts, m.Pager.Total, err = p.db.Contacts(r.Context(), accountID(r), store.ContactFilter{ListID: l.ID},
		store.Page{Page: page, PerPage: contactsPerPage})
	base := "/lists/" + strconv.FormatInt(l.ID, 10)
	m.Pager.Page, m.Pager.PerPage, m.Pager.Target = page, contactsPerPage, "#members"
	m.Pager.URL = func(n int) string { return pageURL(base, nil, n) }
	return m, err
}

// addMembers adds contacts by address with AddListMembers: unknown addresses
// become new contacts (source import), as with POST /lists/{id}/members.
func (p *Portal) addMembers(w http.ResponseWriter, r *http.Request) error {
	l, err := p.list(r)
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	t := views.TextFor(r.Context())
	typed := r.PostForm.Get("emails")
	emails := splitList(typed)
	fail := func(msg string) error {
		m, err := p.members(r, l, 1)
		if err != nil {
			return err
		}
		m.Emails, m.Errors["emails"] = typed, msg
		p.render(w, r, http.StatusUnprocessableEntity, views.ListMembersPage(p.shell(r, l.Name, views.NavLists), m))
		return nil
	}
	switch {
	case len(emails) == 0:
		return fail(t.Lists.AddMembersEmpty)
	case len(emails) > store.MaxBatch:
		return fail(sprintf(t.Lists.AddMembersTooMany, store.MaxBatch))
	}
	res, err := p.db.AddListMembers(r.Context(), accountID(r), actor(r), l.ID, nil, emails)
	if err != nil {
		return err
	}
	if res.Failed > 0 {
		// Show what failed next to the form, with the failed addresses kept in it.
		if l, err = p.db.List(r.Context(), accountID(r), l.ID); err != nil {
			return err
		}
		m, err := p.members(r, l, 1)
		if err != nil {
			return err
		}
		var again []string
		for _, e := range res.Entries {
			if e.Err != nil {
				again = append(again, e.Email)
				m.Failures = append(m.Failures, sprintf(t.Lists.AddFailed, e.Email, entryMessage(e.Err)))
			}
		}
		m.Emails = strings.Join(again, "\n")
		m.Errors["emails"] = sprintf(t.Lists.AddedFlash, res.Added, res.Created, res.Already, res.Failed)
		p.render(w, r, http.StatusUnprocessableEntity, views.ListMembersPage(p.shell(r, l.Name, views.NavLists), m))
		return nil
	}
	p.flash(r.Context(), "success", sprintf(t.Lists.AddedFlash, res.Added, res.Created, res.Already, res.Failed))
	p.redirect(w, r, "/lists/"+strconv.FormatInt(l.ID, 10))
	return nil
}

func (p *Portal) removeMember(w http.ResponseWriter, r *http.Request) error {
	l, err := p.list(r)
	if err != nil {
		return err
	}
	contactID, err := pathID(r, "contact_id")
	if err != nil {
		return err
	}
	c, err := p.db.Contact(r.Context(), accountID(r), contactID)
	if err != nil {
		return err
	}
	if err := p.db.RemoveListMember(r.Context(), accountID(r), actor(r), l.ID, c.ID); err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Lists.RemovedFlash, store.DisplayEmail(c.Email)))
	p.redirect(w, r, "/lists/"+strconv.FormatInt(l.ID, 10))
	return nil
}
