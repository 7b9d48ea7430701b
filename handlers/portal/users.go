package portal

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// The users pages call the store's user management (AddUser, ChangeUserRole,
// RemoveUser), which holds the rules: only owners and admins manage users, only
// owners touch the owner role, nobody changes or removes themselves, and an
// account keeps at least one owner. The page offers only what the rules allow;
// the store refuses the rest.

// newUserPasswordPurpose is the putOnce purpose of a generated initial password.
const newUserPasswordPurpose = "portal.new_user_password"

func (p *Portal) listUsers(w http.ResponseWriter, r *http.Request) error {
	users, err := p.db.AccountUsers(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	me := viewer(r).User
	s := p.shell(r, views.TextFor(r.Context()).Users.Title, views.NavUsers)
	p.render(w, r, http.StatusOK, views.UsersPage(s, views.UserList{Users: users, MeID: me.ID, MyRole: me.Role}, p.popNewUserPassword(r.Context())))
	return nil
}

func (p *Portal) newUserForm(w http.ResponseWriter, r *http.Request) error {
	p.renderUserForm(w, r, http.StatusOK, views.UserForm{Role: store.RoleMember, MyRole: viewer(r).User.Role})
	return nil
}

// addUser adds a user with the typed initial password, or a generated one that
// the list shows once.
func (p *Portal) addUser(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	t := views.TextFor(r.Context()).Users
	me := viewer(r).User
	f := views.UserForm{
		Email: strings.TrimSpace(r.PostForm.Get("email")), Name: strings.TrimSpace(r.PostForm.Get("name")),
		Role: r.PostForm.Get("role"), MyRole: me.Role, Errors: map[string]string{},
	}
	password := r.PostForm.Get("password")
	generated := password == ""
	if generated {
		password = store.NewPassword()
	}
	u, err := p.db.AddUser(r.Context(), accountID(r), me, store.NewUser{Email: f.Email, Name: f.Name, Role: f.Role, Password: password})
	var ce *store.ConflictError
	switch {
	case fieldErrors(err, f.Errors):
		p.renderUserForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	case errors.As(err, &ce):
		f.Errors["role"] = ce.Message
		p.renderUserForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	case err != nil:
		return err
	}
	if generated {
		if err := p.putNewUserPassword(r.Context(), u.Email, password); err != nil {
			return err
		}
	}
	p.flash(r.Context(), "success", sprintf(t.CreatedFlash, store.DisplayEmail(u.Email)))
	p.redirect(w, r, "/users")
	return nil
}

// changeUserRole sets a user's role; htmx gets the row and the message out of band.
func (p *Portal) changeUserRole(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	t := views.TextFor(r.Context()).Users
	me := viewer(r).User
	u, err := p.db.ChangeUserRole(r.Context(), accountID(r), me, id, r.PostForm.Get("role"))
	if msg, refused := refusal(err); refused {
		return p.userMessage(w, r, "error", msg, nil)
	}
	if err != nil {
		return err
	}
	return p.userMessage(w, r, "success", sprintf(t.RoleFlash, u.Email, t.Roles[u.Role]), &u)
}

// confirmRemoveUser asks before removing: a row for htmx, a page without JavaScript.
func (p *Portal) confirmRemoveUser(w http.ResponseWriter, r *http.Request) error {
	u, err := p.accountUser(r)
	if err != nil {
		return err
	}
	t := views.TextFor(r.Context()).Users
	c := views.Confirm{ID: views.UserRowID(u.ID), Question: sprintf(t.RemoveQuestion, u.Email), Detail: t.RemoveDetail,
		Action: "/users/" + strconv.FormatInt(u.ID, 10) + "/remove", Label: t.Remove, Danger: true, Cancel: "/users", TestID: "confirm-remove"}
	s := p.shell(r, t.Title, views.NavUsers)
	p.page(w, r, http.StatusOK, views.AdminConfirmPage(s, t.Title, c), views.ConfirmRow(views.UserRowID(u.ID), 4, c))
	return nil
}

func (p *Portal) removeUser(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	u, err := p.db.RemoveUser(r.Context(), accountID(r), viewer(r).User, id)
	if msg, refused := refusal(err); refused {
		p.flash(r.Context(), "error", msg)
		p.redirect(w, r, "/users")
		return nil
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Users.RemovedFlash, store.DisplayEmail(u.Email)))
	p.redirect(w, r, "/users")
	return nil
}

// refusal is the German message of a rule the store refused on (a conflict or a
// field error), if err is one.
func refusal(err error) (string, bool) {
	var ce *store.ConflictError
	if errors.As(err, &ce) {
		return ce.Message, true
	}
	if errs := map[string]string{}; fieldErrors(err, errs) {
		for _, msg := range errs {
			return msg, true
		}
	}
	return "", false
}

// userMessage answers a role change: with htmx the user's row (u, or the row as
// it is when nothing changed) and the message out of band; otherwise the list
// with the message as flash.
func (p *Portal) userMessage(w http.ResponseWriter, r *http.Request, kind, msg string, u *store.User) error {
	if !isHTMX(r) {
		p.flash(r.Context(), kind, msg)
		p.redirect(w, r, "/users")
		return nil
	}
	if u == nil {
		cur, err := p.accountUser(r)
		if err != nil {
			return err
		}
		u = &cur
	}
	me := viewer(r).User
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := views.UserRow(*u, me.ID, me.Role).Render(r.Context(), w); err != nil {
		return err
	}
	return views.FlashRegion(&views.Flash{Kind: kind, Message: msg}, true).Render(r.Context(), w)
}

// accountUser is the route's user of the signed-in account (another account's id
// is not found).
func (p *Portal) accountUser(r *http.Request) (store.User, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return store.User{}, err
	}
	users, err := p.db.AccountUsers(r.Context(), accountID(r))
	if err != nil {
		return store.User{}, err
	}
	for _, u := range users {
		if u.ID == id {
			return u, nil
		}
	}
	return store.User{}, store.ErrNotFound
}

func (p *Portal) renderUserForm(w http.ResponseWriter, r *http.Request, status int, f views.UserForm) {
	p.render(w, r, status, views.UserFormPage(p.shell(r, views.TextFor(r.Context()).Users.NewTitle, views.NavUsers), f))
}

// putNewUserPassword keeps a generated password until the list has shown it once.
func (p *Portal) putNewUserPassword(ctx context.Context, email, password string) error {
	return p.putOnce(ctx, newUserPasswordPurpose, password, email)
}

func (p *Portal) popNewUserPassword(ctx context.Context) *views.NewUserPassword {
	pw, email, ok := p.popOnce(ctx, newUserPasswordPurpose)
	if !ok {
		return nil
	}
	return &views.NewUserPassword{Email: email, Password: pw}
}
