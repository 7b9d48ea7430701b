package portal

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/integration"
	"github.com/rundbrief/rundbrief/views"
)

// The integration pages use the same service as /v1/integrations
// (integration.Service, the signed-in user as actor). The secret is
// write-only: the form never shows it, an empty field keeps it.

// errNoIntegrations means the process was started without the integration service.
var errNoIntegrations = errors.New("portal: no integration service")

// integrationEventsPerPage is the number of inbound calls per page of the log.
const integrationEventsPerPage = 25

func (p *Portal) integrationService() (*integration.Service, error) {
	if p.integrations == nil {
		return nil, errNoIntegrations
	}
	return p.integrations, nil
}

// needIntegrations serves h only to accounts whose plan has integrations;
// others get a page saying so (402, as the API answers).
func (p *Portal) needIntegrations(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return p.needPlan(store.FeatureIntegrations, func(t views.Text) (string, string) { return t.Integrations.PlanTitle, t.Integrations.PlanBody }, h)
}

func (p *Portal) listIntegrations(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.integrationService()
	if err != nil {
		return err
	}
	list, _, err := p.db.Integrations(r.Context(), accountID(r), store.Page{Page: 1, PerPage: 100})
	if err != nil {
		return err
	}
	rows := make([]views.IntegrationRow, len(list))
	for i, ig := range list {
		rows[i] = views.IntegrationRow{Integration: ig, InboundURL: svc.InboundURL(ig)}
	}
	s := p.shell(r, views.TextFor(r.Context()).Integrations.Title, views.NavIntegrations)
	p.render(w, r, http.StatusOK, views.IntegrationsPage(s, rows))
	return nil
}

// integration is the route's integration of the signed-in account.
func (p *Portal) integration(r *http.Request) (store.Integration, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return store.Integration{}, err
	}
	return p.db.Integration(r.Context(), accountID(r), id)
}

func (p *Portal) integrationForm(r *http.Request, f views.IntegrationForm) (views.IntegrationForm, error) {
	lists, _, err := p.db.Lists(r.Context(), accountID(r), store.Page{Page: 1, PerPage: 100})
	if err != nil {
		return f, err
	}
	f.Lists = lists
	if f.Errors == nil {
		f.Errors = map[string]string{}
	}
	return f, nil
}

func (p *Portal) renderIntegrationForm(w http.ResponseWriter, r *http.Request, status int, f views.IntegrationForm) error {
	f, err := p.integrationForm(r, f)
	if err != nil {
		return err
	}
	p.render(w, r, status, views.IntegrationFormPage(p.shell(r, f.Title, views.NavIntegrations), f))
	return nil
}

func blankIntegrationForm(r *http.Request) views.IntegrationForm {
	t := views.TextFor(r.Context()).Integrations
	provider := r.URL.Query().Get("provider")
	if !slices.Contains(store.IntegrationProviders(), provider) {
		provider = store.ProviderStripe
	}
	return views.IntegrationForm{Title: t.NewTitle, Action: "/integrations/new", Submit: t.Create, Provider: provider, Active: true}
}

func (p *Portal) newIntegrationForm(w http.ResponseWriter, r *http.Request) error {
	return p.renderIntegrationForm(w, r, http.StatusOK, blankIntegrationForm(r))
}

// readIntegrationForm reads the posted fields into f and returns the secret
// typed (nil when the field was left empty).
func readIntegrationForm(r *http.Request, f views.IntegrationForm) (views.IntegrationForm, *string, error) {
	f.Name = strings.TrimSpace(r.PostForm.Get("name"))
	f.Tags = r.PostForm.Get("tags")
	f.Active = r.PostForm.Get("active") != ""
	f.ListIDs = nil
	f.Errors = map[string]string{}
	for _, v := range r.PostForm["list_ids"] {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return f, nil, store.ErrNotFound
		}
		f.ListIDs = append(f.ListIDs, id)
	}
	var secret *string
	if v := r.PostForm.Get("secret"); strings.TrimSpace(v) != "" {
		secret = &v
	}
	return f, secret, nil
}

func (p *Portal) createIntegration(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.integrationService()
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	f := blankIntegrationForm(r)
	f.Provider = r.PostForm.Get("provider")
	f, secret, err := readIntegrationForm(r, f)
	if err != nil {
		return err
	}
	ig, err := svc.Create(r.Context(), accountID(r), actor(r), store.IntegrationSettings{Provider: f.Provider, Name: f.Name,
		Secret: secret, ListIDs: f.ListIDs, Tags: views.SplitTags(f.Tags), Active: f.Active})
	if fieldErrors(err, f.Errors) {
		if !slices.Contains(store.IntegrationProviders(), f.Provider) {
			f.Provider = store.ProviderStripe
		}
		return p.renderIntegrationForm(w, r, http.StatusUnprocessableEntity, f)
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Integrations.CreatedFlash, ig.Name))
	p.redirect(w, r, "/integrations/"+strconv.FormatInt(ig.ID, 10)+"/edit")
	return nil
}

func (p *Portal) editIntegrationFormFor(r *http.Request, ig store.Integration) views.IntegrationForm {
	t := views.TextFor(r.Context())
	f := views.IntegrationForm{Title: sprintf(t.Integrations.EditTitle, ig.Name), Action: "/integrations/" + strconv.FormatInt(ig.ID, 10) + "/edit",
		Submit: t.Common.Save, ID: ig.ID, Provider: ig.Provider, Name: ig.Name, Tags: strings.Join(ig.Tags, ", "),
		ListIDs: ig.ListIDs, Active: ig.Active, HasSecret: ig.HasSecret()}
	if p.integrations != nil {
		f.InboundURL = p.integrations.InboundURL(ig)
	}
	return f
}

func (p *Portal) editIntegrationForm(w http.ResponseWriter, r *http.Request) error {
	ig, err := p.integration(r)
	if err != nil {
		return err
	}
	return p.renderIntegrationForm(w, r, http.StatusOK, p.editIntegrationFormFor(r, ig))
}

func (p *Portal) updateIntegration(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.integrationService()
	if err != nil {
		return err
	}
	ig, err := p.integration(r)
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	f, secret, err := readIntegrationForm(r, p.editIntegrationFormFor(r, ig))
	if err != nil {
		return err
	}
	tags := views.SplitTags(f.Tags)
	ids := f.ListIDs
	ig, err = svc.Update(r.Context(), accountID(r), actor(r), ig.ID, store.IntegrationPatch{Name: &f.Name, Secret: secret,
		ListIDs: &ids, Tags: &tags, Active: &f.Active})
	if fieldErrors(err, f.Errors) {
		return p.renderIntegrationForm(w, r, http.StatusUnprocessableEntity, f)
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Integrations.UpdatedFlash, ig.Name))
	p.redirect(w, r, "/integrations")
	return nil
}

func (p *Portal) confirmDeleteIntegration(w http.ResponseWriter, r *http.Request) error {
	ig, err := p.integration(r)
	if err != nil {
		return err
	}
	t := views.TextFor(r.Context()).Integrations
	c := views.Confirm{ID: "integration-" + strconv.FormatInt(ig.ID, 10), Question: sprintf(t.DeleteQuestion, ig.Name), Detail: t.DeleteDetail,
		Label: t.Delete, Danger: true, Action: "/integrations/" + strconv.FormatInt(ig.ID, 10) + "/delete", Cancel: "/integrations",
		TestID: "confirm-delete"}
	p.render(w, r, http.StatusOK, views.AdminConfirmPage(p.shell(r, t.Title, views.NavIntegrations), t.Title, c))
	return nil
}

func (p *Portal) deleteIntegration(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.integrationService()
	if err != nil {
		return err
	}
	ig, err := p.integration(r)
	if err != nil {
		return err
	}
	if err := svc.Delete(r.Context(), accountID(r), actor(r), ig.ID); err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Integrations.DeletedFlash, ig.Name))
	p.redirect(w, r, "/integrations")
	return nil
}

// testIntegration has the service post a signed sample purchase over HTTP to
// the integration's own inbound URL (integration.Service.SendTest: the same
// verification and effect as a provider's call) and shows the outcome in the
// event log.
func (p *Portal) testIntegration(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.integrationService()
	if err != nil {
		return err
	}
	ig, err := p.integration(r)
	if err != nil {
		return err
	}
	reply, err := svc.SendTest(r.Context(), accountID(r), ig.ID)
	var ve *store.ValidationError
	switch {
	case errors.As(err, &ve):
		for _, msg := range ve.Fields {
			p.flash(r.Context(), "error", msg)
		}
	case err != nil:
		return err
	default:
		t := views.TextFor(r.Context()).Integrations
		kind := "success"
		if reply.Status != http.StatusOK {
			kind = "error"
		}
		p.flash(r.Context(), kind, sprintf(t.TestDone, reply.Status, t.StatusLabels[reply.Logged]))
	}
	p.redirect(w, r, "/integrations/"+strconv.FormatInt(ig.ID, 10)+"/events")
	return nil
}

// integrationEvents is the integration's event log, newest first, each entry
// with its raw payload.
func (p *Portal) integrationEvents(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.integrationService()
	if err != nil {
		return err
	}
	ig, err := p.integration(r)
	if err != nil {
		return err
	}
	page := queryPage(r)
	events, total, err := p.db.IntegrationEvents(r.Context(), accountID(r), ig.ID, store.Page{Page: page, PerPage: integrationEventsPerPage})
	if err != nil {
		return err
	}
	out := make([]views.IntegrationEventView, len(events))
	for i, e := range events {
		out[i] = views.IntegrationEventView{IntegrationEvent: e, Pretty: prettyPayload(e.Payload, e.ContentType)}
	}
	base := "/integrations/" + strconv.FormatInt(ig.ID, 10) + "/events"
	pager := views.Pager{Page: page, PerPage: integrationEventsPerPage, Total: total, URL: func(n int) string { return pageURL(base, url.Values{}, n) }}
	s := p.shell(r, views.TextFor(r.Context()).Integrations.Events, views.NavIntegrations)
	p.render(w, r, http.StatusOK, views.IntegrationEventsPage(s, views.IntegrationRow{Integration: ig, InboundURL: svc.InboundURL(ig)}, out, pager))
	return nil
}

// prettyPayload indents JSON and puts a form's parameters on lines of their own.
func prettyPayload(body, contentType string) string {
	if strings.HasPrefix(contentType, "application/x-www-form-urlencoded") {
		if v, err := url.ParseQuery(body); err == nil {
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			var b strings.Builder
			for _, k := range keys {
				b.WriteString(k + " = " + v.Get(k) + "\n")
			}
			return b.String()
		}
	}
	return prettyJSON(body)
}
