package api

import (
	"net/http"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/integration"
)

// integrationResponse is an integration as the API shows it: the secret is
// write-only (has_secret says whether one is set).
type integrationResponse struct {
	ID         int64    `json:"id"`
	Provider   string   `json:"provider"`
	Name       string   `json:"name"`
	HasSecret  bool     `json:"has_secret"`
	ListIDs    []int64  `json:"list_ids"`
	Tags       []string `json:"tags"`
	Active     bool     `json:"active"`
	Token      string   `json:"token"`
	InboundURL string   `json:"inbound_url"`
	CreatedAt  Time     `json:"created_at"`
	UpdatedAt  Time     `json:"updated_at"`
}

func (a *API) newIntegrationResponse(svc *integration.Service, i store.Integration) integrationResponse {
	ids := []int64(i.ListIDs)
	if ids == nil {
		ids = []int64{}
	}
	return integrationResponse{ID: i.ID, Provider: i.Provider, Name: i.Name, HasSecret: i.HasSecret(), ListIDs: ids,
		Tags: nonNil([]string(i.Tags)), Active: i.Active, Token: i.Token, InboundURL: svc.InboundURL(i),
		CreatedAt: Time(i.CreatedAt), UpdatedAt: Time(i.UpdatedAt)}
}

// integrationRequest is the body of POST /integrations and PATCH /integrations/{id}.
type integrationRequest struct {
	Provider *string   `json:"provider"`
	Name     *string   `json:"name"`
	Secret   *string   `json:"secret"`
	ListIDs  *[]int64  `json:"list_ids"`
	Tags     *[]string `json:"tags"`
	Active   *bool     `json:"active"`
}

// integrationEventResponse is one inbound call of an integration's event log.
type integrationEventResponse struct {
	ID              int64   `json:"id"`
	IntegrationID   int64   `json:"integration_id"`
	Status          string  `json:"status"`
	EventType       string  `json:"event_type"`
	ProviderEventID *string `json:"provider_event_id"`
	OrderID         *string `json:"order_id"`
	Email           *string `json:"email"`
	Error           *string `json:"error"`
	ReceivedAt      Time    `json:"received_at"`
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// integrationService is the integration service, or 503 when the process has none.
func (a *API) integrationService() (*integration.Service, error) {
	if a.integrations == nil {
		return nil, errUnavailable
	}
	return a.integrations, nil
}

func (a *API) createIntegration(w http.ResponseWriter, r *http.Request) error {
	var req integrationRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	svc, err := a.integrationService()
	if err != nil {
		return err
	}
	in := store.IntegrationSettings{Secret: req.Secret, Active: true}
	applyReq(&in.Provider, req.Provider)
	applyReq(&in.Name, req.Name)
	applyReq(&in.ListIDs, req.ListIDs)
	applyReq(&in.Tags, req.Tags)
	applyReq(&in.Active, req.Active)
	ig, err := svc.Create(r.Context(), accountID(r), actor(r), in)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, a.newIntegrationResponse(svc, ig))
}

// applyReq copies a given request field.
func applyReq[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func (a *API) listIntegrations(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	svc, err := a.integrationService()
	if err != nil {
		return err
	}
	list, total, err := a.db.Integrations(r.Context(), accountID(r), page)
	if err != nil {
		return err
	}
	out := make([]integrationResponse, len(list))
	for i, ig := range list {
		out[i] = a.newIntegrationResponse(svc, ig)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) getIntegration(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	svc, err := a.integrationService()
	if err != nil {
		return err
	}
	ig, err := a.db.Integration(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, a.newIntegrationResponse(svc, ig))
}

func (a *API) updateIntegration(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req integrationRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Provider != nil {
		return errValidation(map[string]string{"provider": "Der Anbieter lässt sich nicht ändern: bitte eine neue Integration anlegen."})
	}
	svc, err := a.integrationService()
	if err != nil {
		return err
	}
	ig, err := svc.Update(r.Context(), accountID(r), actor(r), id, store.IntegrationPatch{
		Name: req.Name, Secret: req.Secret, ListIDs: req.ListIDs, Tags: req.Tags, Active: req.Active})
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, a.newIntegrationResponse(svc, ig))
}

func (a *API) deleteIntegration(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	svc, err := a.integrationService()
	if err != nil {
		return err
	}
	if err := svc.Delete(r.Context(), accountID(r), actor(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) listIntegrationEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	events, total, err := a.db.IntegrationEvents(r.Context(), accountID(r), id, page)
	if err != nil {
		return err
	}
	out := make([]integrationEventResponse, len(events))
	for i, e := range events {
		out[i] = integrationEventResponse{ID: e.ID, IntegrationID: e.IntegrationID, Status: e.Status, EventType: e.EventType,
			ProviderEventID: orNull(e.ProviderEventID), OrderID: orNull(e.OrderID), Email: orNull(e.Email), Error: orNull(e.Error),
			ReceivedAt: Time(e.ReceivedAt)}
	}
	return writeList(w, r, out, page, total)
}
