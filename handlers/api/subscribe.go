package api

import (
	"errors"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/botguard"
)

// maxSignUpForm bounds a form-encoded or multipart sign-up body: a handful of
// short fields and a proof-of-work payload.
const maxSignUpForm = 64 << 10

// subscribeRequest is the body of POST /subscribe/{token}, as JSON or as a
// browser form post (the same field names).
type subscribeRequest struct {
	Email     string `json:"email"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Phone     string `json:"phone"`
	Zip       string `json:"zip"`
	City      string `json:"city"`
	Website   string `json:"website"` // honeypot
	Stamp     string `json:"_rb_ts"`
	Altcha    string `json:"altcha"`
}

func (s subscribeRequest) input(ip string) store.SignUpInput {
	return store.SignUpInput{Email: s.Email, FirstName: s.FirstName, LastName: s.LastName, Phone: s.Phone, Zip: s.Zip,
		City: s.City, Honeypot: s.Website, Stamp: s.Stamp, Proof: s.Altcha, IP: ip}
}

// subscribeResponse is the data of a JSON sign-up.
type subscribeResponse struct {
	Status  string `json:"status"` // pending or subscribed
	Message string `json:"message"`
}

// isFormPost reports whether a browser posted a form (the embedded snippet or
// the hosted page) rather than a script sending JSON.
func isFormPost(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "application/x-www-form-urlencoded" || mt == "multipart/form-data"
}

// subscribe is the public sign-up (store.SignUp does the checks). A script
// sending JSON gets 201 with the outcome, or the error envelope (404, 422, 429
// with Retry-After, 402 when the account's contact limit is reached). A
// browser's form post is answered with 303 redirects, never with JSON: to the
// form's success_redirect (or the hosted page's thank-you state
// {BASE_URL}/subscribe/{token}?danke=1, with &bestaetigen=1 when a confirmation
// mail was sent); after a refused post back to the hosted page with
// ?fehler=<codes>, a comma-separated list of the invalid field names
// (email, first_name, …, _rb_ts for the stamp, altcha for the proof of work) or
// limit / nicht_moeglich, which the page turns into messages. The typed values are
// not carried back: they would end up in URLs, logs and browser history. An
// unknown token is 404 for both.
func (a *API) subscribe(w http.ResponseWriter, r *http.Request) error {
	token := urlParam(r, "token")
	browser := isFormPost(r)
	var req subscribeRequest
	if browser {
		if err := parseSignUpForm(w, r, &req); err != nil {
			return err
		}
	} else if err := decode(r, &req); err != nil {
		return err
	}
	if a.guard == nil {
		return errUnavailable
	}
	res, err := a.db.SignUp(r.Context(), a.guard, token, req.input(clientIP(r).String()), a.cfg.Now())
	if browser {
		return a.subscribeRedirect(w, r, token, res, err)
	}
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, subscribeResponse{Status: res.Status, Message: res.Message()})
}

// parseSignUpForm reads a form-encoded or multipart body into req.
func parseSignUpForm(w http.ResponseWriter, r *http.Request, req *subscribeRequest) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxSignUpForm)
	var err error
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		err = r.ParseMultipartForm(maxSignUpForm)
	} else {
		err = r.ParseForm()
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return errTooLarge
		}
		return errBadRequest("Das Formular konnte nicht gelesen werden.")
	}
	f := r.PostForm
	*req = subscribeRequest{Email: f.Get("email"), FirstName: f.Get("first_name"), LastName: f.Get("last_name"),
		Phone: f.Get("phone"), Zip: f.Get("zip"), City: f.Get("city"), Website: f.Get(store.FieldHoneypot),
		Stamp: f.Get(store.FieldStamp), Altcha: f.Get(store.FieldProof)}
	return nil
}

// subscribeRedirect answers a browser's form post (see subscribe).
func (a *API) subscribeRedirect(w http.ResponseWriter, r *http.Request, token string, res store.SignUpResult, err error) error {
	var (
		ve    *store.ValidationError
		rl    *store.RateLimitError
		limit *store.LimitError
	)
	var codes []string
	switch {
	case err == nil:
		to := res.Form.SuccessRedirect
		if to == "" {
			to = a.hostedFormURL(token) + "?danke=1"
			if res.Status == store.StatusPending {
				to += "&bestaetigen=1"
			}
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return nil
	case errors.As(err, &ve):
		for k := range ve.Fields {
			codes = append(codes, k)
		}
		slices.Sort(codes)
	case errors.As(err, &rl):
		codes = []string{"limit"}
	case errors.As(err, &limit):
		codes = []string{"nicht_moeglich"}
	default:
		return err // 404 for an unknown token, 500 otherwise
	}
	http.Redirect(w, r, a.hostedFormURL(token)+"?fehler="+url.QueryEscape(strings.Join(codes, ",")), http.StatusSeeOther)
	return nil
}

// challengeResponse is GET /subscribe/{token}/challenge: a fresh stamp and, for a
// form with proof of work, an ALTCHA challenge.
type challengeResponse struct {
	Stamp     string              `json:"stamp"`
	Challenge *botguard.Challenge `json:"challenge,omitempty"`
}

// subscribeChallenge gives an embedded form what it must post besides the
// fields: the stamp _rb_ts (the fill time counts from now) and, when the form
// asks for proof of work, a challenge to solve. Never cached.
func (a *API) subscribeChallenge(w http.ResponseWriter, r *http.Request) error {
	if a.guard == nil {
		return errUnavailable
	}
	f, err := a.db.FormByToken(r.Context(), urlParam(r, "token"))
	if err != nil {
		return err
	}
	out := challengeResponse{Stamp: a.guard.Stamp(f.Token)}
	if f.ProofOfWork {
		c, err := a.guard.NewChallenge(store.ChallengeMaxNumber, store.ChallengeTTL)
		if err != nil {
			return err
		}
		out.Challenge = &c
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeData(w, r, http.StatusOK, out)
}
