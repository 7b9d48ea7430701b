package public

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// confirmPage confirms a double opt-in by the link GET /confirm/{token} from
// the confirmation mail (store.ConfirmContact): the contact is subscribed and a
// block of its address lifted. A link used before says so (200); an expired
// one asks to sign up again (410 Gone); an unknown one is 404. The page is
// never framed.
func (p *Public) confirmPage(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'")
	conf, err := p.db.ConfirmContact(r.Context(), chi.URLParam(r, "token"))
	var (
		status = http.StatusOK
		v      views.ConfirmView
	)
	switch {
	case errors.Is(err, store.ErrNotFound):
		status, v.Outcome = http.StatusNotFound, views.ConfirmInvalid
	case errors.Is(err, store.ErrConfirmationExpired):
		status, v.Outcome = http.StatusGone, views.ConfirmExpired
	case err != nil:
		return err
	case conf.AlreadyConfirmed:
		v.Outcome = views.ConfirmAlready
	default:
		v.Outcome, v.Email = views.ConfirmOK, conf.Contact.Email
	}
	p.render(w, r, status, views.ConfirmPage(v))
	return nil
}
