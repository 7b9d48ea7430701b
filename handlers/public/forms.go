package public

import (
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// subscribePage is the hosted sign-up form GET /subscribe/{token}. It posts to
// the public API endpoint POST /v1/subscribe/{token}, which answers a browser
// with a redirect back here: ?danke=1 (&bestaetigen=1 when a confirmation mail
// was sent) shows the thank-you state, ?fehler=<codes> the errors of a refused
// post (see api.subscribe). The form carries a fresh stamp, so it works without
// JavaScript; signup.js runs only for a form with proof of work. The page may be
// framed by the account's own website, so it sets no frame restriction.
func (p *Public) subscribePage(w http.ResponseWriter, r *http.Request) error {
	f, err := p.db.FormByToken(r.Context(), chi.URLParam(r, "token"))
	if err != nil {
		return err
	}
	q := r.URL.Query()
	v := views.SubscribeView{AccountName: f.AccountName, Form: p.signUpForm(f)}
	switch {
	case q.Get("danke") == "1":
		status := store.StatusSubscribed
		if q.Get("bestaetigen") == "1" {
			status = store.StatusPending
		}
		v.Thanks, v.Message = true, store.SignUpMessage(f.Form, status)
	case q.Get("fehler") != "":
		v.Alert, v.Errors = refusedPost(views.TextFor(r.Context()), f.Form, q.Get("fehler"))
	}
	p.render(w, r, http.StatusOK, views.SubscribePage(v))
	return nil
}

// signUpForm is the hosted page's form: paths on this origin, a fresh stamp.
func (p *Public) signUpForm(f store.PublicForm) views.SignUpForm {
	action := "/v1/subscribe/" + f.Token
	sf := views.SignUpForm{Token: f.Token, Action: action, ChallengeURL: action + "/challenge", Fields: f.Fields,
		ProofOfWork: f.ProofOfWork, PrivacyURL: f.PrivacyURL}
	if f.MinFillSeconds > 0 {
		sf.Stamp = p.guard.Stamp(f.Token)
	}
	if f.ProofOfWork {
		sf.ScriptURL = "/static/signup.js"
	}
	return sf
}

// refusedPost turns the error codes of a refused post into the page's messages:
// field names get a message next to their field, the bot checks and limits one
// above the form. Unknown codes are ignored (the URL is anyone's to write).
func refusedPost(t views.Text, f store.Form, codes string) (alert string, fields map[string]string) {
	fields = map[string]string{}
	for _, code := range strings.Split(codes, ",") {
		switch {
		case code == store.FieldStamp:
			alert = t.Public.ErrStamp
		case code == store.FieldProof:
			alert = t.Public.ErrProof
		case code == "limit":
			alert = t.Public.ErrLimit
		case code == "nicht_moeglich":
			alert = t.Public.ErrUnavailable
		case code == "email" || slices.Contains(f.Fields, code):
			msg, ok := t.Public.FieldErrors[code]
			if !ok {
				msg = t.Public.FieldErrorDefault
			}
			fields[code] = msg
		}
	}
	return alert, fields
}
