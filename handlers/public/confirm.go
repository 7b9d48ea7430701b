package public

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// confirmPage is GET /confirm/{token}, the link of the confirmation mail: it
// only asks, with a button that posts to the same path, because mail
// providers' link scanners fetch every link of a mail and must not subscribe
// anybody. A link used before says so (200); an expired one asks to sign up
// again (410 Gone); an unknown one is 404. The page is never framed.
func (p *Public) confirmPage(w http.ResponseWriter, r *http.Request) error {
	st, err := p.db.PeekConfirmation(r.Context(), confirmToken(w, r))
	v, status, err := confirmOutcome(err)
	if err != nil {
		return err
	}
	switch {
	case v.Outcome != "":
	case st.AlreadyConfirmed:
		v.Outcome = views.ConfirmAlready
	default:
		v = views.ConfirmView{Outcome: views.ConfirmAsk, Email: st.Email, Action: r.URL.Path}
	}
	p.render(w, r, status, views.ConfirmPage(v))
	return nil
}

// confirm is POST /confirm/{token}, the page's button (store.ConfirmContact):
// the contact is subscribed and a block of its address lifted. The token is
// the authority, so no session or CSRF token is involved.
func (p *Public) confirm(w http.ResponseWriter, r *http.Request) error {
	conf, err := p.db.ConfirmContact(r.Context(), confirmToken(w, r))
	v, status, err := confirmOutcome(err)
	if err != nil {
		return err
	}
	switch {
	case v.Outcome != "":
	case conf.AlreadyConfirmed:
		v.Outcome = views.ConfirmAlready
	default:
		v.Outcome, v.Email = views.ConfirmOK, conf.Contact.Email
	}
	p.render(w, r, status, views.ConfirmPage(v))
	return nil
}

// confirmToken sets the headers of both confirmation pages and returns the
// link's token.
func confirmToken(w http.ResponseWriter, r *http.Request) string {
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'")
	return chi.URLParam(r, "token")
}

// confirmOutcome turns the store's answer about a token into the page of an
// unknown (404) or expired (410) link; an empty Outcome means the token is
// good, another error is returned for the error page.
func confirmOutcome(err error) (views.ConfirmView, int, error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return views.ConfirmView{Outcome: views.ConfirmInvalid}, http.StatusNotFound, nil
	case errors.Is(err, store.ErrConfirmationExpired):
		return views.ConfirmView{Outcome: views.ConfirmExpired}, http.StatusGone, nil
	case err != nil:
		return views.ConfirmView{}, 0, err
	}
	return views.ConfirmView{}, http.StatusOK, nil
}
