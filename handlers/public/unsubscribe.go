package public

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// unsubscribeToken reads the signed token of /unsubscribe/{token}; anything that
// does not verify is a 404.
func (p *Public) unsubscribeToken(w http.ResponseWriter, r *http.Request) (mailer.Token, error) {
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'")
	tok, err := p.tokens.Verify(mailer.TokenUnsubscribe, chi.URLParam(r, "token"))
	if err != nil {
		return mailer.Token{}, store.ErrNotFound
	}
	return tok, nil
}

// unsubscribePage asks before unsubscribing: a GET may come from a mail
// scanner, so it changes nothing.
func (p *Public) unsubscribePage(w http.ResponseWriter, r *http.Request) error {
	tok, err := p.unsubscribeToken(w, r)
	if err != nil {
		return err
	}
	v := views.UnsubscribeView{Outcome: views.UnsubscribeTest}
	if tok.RecipientID != 0 {
		st, err := p.db.UnsubscribeLinkState(r.Context(), tok.RecipientID)
		if err != nil {
			return err
		}
		v = views.UnsubscribeView{Outcome: views.UnsubscribeAsk, Email: st.Email, Action: r.URL.Path}
		if st.Already {
			v.Outcome = views.UnsubscribeAlready
		}
	}
	p.render(w, r, http.StatusOK, views.UnsubscribePage(v))
	return nil
}

// unsubscribe is POST /unsubscribe/{token}: the page's button, or a mail
// provider's one-click request (RFC 8058: body List-Unsubscribe=One-Click, no
// cookies). The signed token is the authority, so no session or CSRF token is
// involved.
func (p *Public) unsubscribe(w http.ResponseWriter, r *http.Request) error {
	tok, err := p.unsubscribeToken(w, r)
	if err != nil {
		return err
	}
	if tok.RecipientID == 0 {
		p.render(w, r, http.StatusOK, views.UnsubscribePage(views.UnsubscribeView{Outcome: views.UnsubscribeTest}))
		return nil
	}
	source := store.UnsubLink
	if r.PostFormValue("List-Unsubscribe") == "One-Click" {
		source = store.UnsubOneClick
	}
	st, err := p.db.UnsubscribeByLink(r.Context(), tok.RecipientID, source)
	if err != nil {
		return err
	}
	v := views.UnsubscribeView{Outcome: views.UnsubscribeDone, Email: st.Email}
	if st.Already {
		v.Outcome = views.UnsubscribeAlready
	}
	p.render(w, r, http.StatusOK, views.UnsubscribePage(v))
	return nil
}
