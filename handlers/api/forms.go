package api

import (
	"net/http"
	"strings"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// formResponse is a sign-up form.
type formResponse struct {
	ID              int64    `json:"id"`
	Name            string   `json:"name"`
	Token           string   `json:"token"`
	ListIDs         []int64  `json:"list_ids"`
	Tags            []string `json:"tags"`
	DoubleOptIn     bool     `json:"double_opt_in"`
	Fields          []string `json:"fields"`
	SuccessRedirect string   `json:"success_redirect"`
	SuccessMessage  string   `json:"success_message"`
	ProofOfWork     bool     `json:"proof_of_work"`
	MinFillSeconds  int      `json:"min_fill_seconds"`
	Submissions     int64    `json:"submissions"`
	SubscribeURL    string   `json:"subscribe_url"`
	HostedURL       string   `json:"hosted_url"`
	CreatedAt       Time     `json:"created_at"`
	UpdatedAt       Time     `json:"updated_at"`
}

func (a *API) newFormResponse(f store.Form) formResponse {
	ids := []int64(f.ListIDs)
	if ids == nil {
		ids = []int64{}
	}
	tags, fields := []string(f.Tags), []string(f.Fields)
	if tags == nil {
		tags = []string{}
	}
	if fields == nil {
		fields = []string{}
	}
	return formResponse{ID: f.ID, Name: f.Name, Token: f.Token, ListIDs: ids, Tags: tags, DoubleOptIn: f.DoubleOptIn,
		Fields: fields, SuccessRedirect: f.SuccessRedirect, SuccessMessage: f.SuccessMessage, ProofOfWork: f.ProofOfWork,
		MinFillSeconds: f.MinFillSeconds, Submissions: f.Submissions, SubscribeURL: a.subscribeURL(f.Token),
		HostedURL: a.hostedFormURL(f.Token), CreatedAt: Time(f.CreatedAt), UpdatedAt: Time(f.UpdatedAt)}
}

// subscribeURL is the public sign-up endpoint of a form token.
func (a *API) subscribeURL(token string) string {
	return strings.TrimRight(a.cfg.BaseURL, "/") + "/v1/subscribe/" + token
}

// hostedFormURL is the hosted sign-up page of a form token (handlers/public).
func (a *API) hostedFormURL(token string) string {
	return strings.TrimRight(a.cfg.BaseURL, "/") + "/subscribe/" + token
}

// formRequest is the body of POST /forms and PATCH /forms/{id}.
type formRequest struct {
	Name            *string   `json:"name"`
	ListIDs         *[]int64  `json:"list_ids"`
	Tags            *[]string `json:"tags"`
	DoubleOptIn     *bool     `json:"double_opt_in"`
	Fields          *[]string `json:"fields"`
	SuccessRedirect *string   `json:"success_redirect"`
	SuccessMessage  *string   `json:"success_message"`
	ProofOfWork     *bool     `json:"proof_of_work"`
	MinFillSeconds  *int      `json:"min_fill_seconds"`
}

func (f formRequest) input() store.FormInput {
	return store.FormInput{Name: f.Name, ListIDs: f.ListIDs, Tags: f.Tags, DoubleOptIn: f.DoubleOptIn, Fields: f.Fields,
		SuccessRedirect: f.SuccessRedirect, SuccessMessage: f.SuccessMessage, ProofOfWork: f.ProofOfWork,
		MinFillSeconds: f.MinFillSeconds}
}

func (a *API) listForms(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	forms, total, err := a.db.Forms(r.Context(), accountID(r), page)
	if err != nil {
		return err
	}
	out := make([]formResponse, len(forms))
	for i, f := range forms {
		out[i] = a.newFormResponse(f)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) createForm(w http.ResponseWriter, r *http.Request) error {
	var req formRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	f, err := a.db.CreateForm(r.Context(), accountID(r), actor(r), req.input())
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, a.newFormResponse(f))
}

func (a *API) getForm(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	f, err := a.db.Form(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, a.newFormResponse(f))
}

func (a *API) patchForm(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req formRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	f, err := a.db.UpdateForm(r.Context(), accountID(r), actor(r), id, req.input())
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, a.newFormResponse(f))
}

func (a *API) deleteForm(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := a.db.DeleteForm(r.Context(), accountID(r), actor(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// formEmbedResponse is GET /forms/{id}/embed: the snippet and the URLs in it.
type formEmbedResponse struct {
	HTML         string `json:"html"`
	SubscribeURL string `json:"subscribe_url"`
	ChallengeURL string `json:"challenge_url"`
	ScriptURL    string `json:"script_url"`
	HostedURL    string `json:"hosted_url"`
}

// getFormEmbed returns a copy-paste HTML snippet of the form for another
// website (views.SignUpEmbed). The script is left out when the form needs
// neither a stamp nor a proof of work: such a form works as plain HTML.
func (a *API) getFormEmbed(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	f, err := a.db.Form(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	settings, err := a.db.AccountSettings(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	sf := views.NewSignUpEmbed(a.cfg.BaseURL, f, settings.PrivacyURL)
	var b strings.Builder
	if err := views.SignUpEmbed(sf).Render(r.Context(), &b); err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, formEmbedResponse{HTML: b.String(), SubscribeURL: sf.Action,
		ChallengeURL: sf.ChallengeURL, ScriptURL: a.scriptURL(), HostedURL: a.hostedFormURL(f.Token)})
}

// scriptURL is where signup.js is served.
func (a *API) scriptURL() string { return strings.TrimRight(a.cfg.BaseURL, "/") + "/static/signup.js" }
