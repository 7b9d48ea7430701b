package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// webhookResponse is a webhook as the API shows it; Secret is set only in the
// answers of POST /webhooks and POST /webhooks/{id}/rotate-secret.
type webhookResponse struct {
	ID                      int64    `json:"id"`
	URL                     string   `json:"url"`
	Events                  []string `json:"events"`
	Description             string   `json:"description"`
	Status                  string   `json:"status"`
	ConsecutiveFailures     int      `json:"consecutive_failures"`
	PausedAt                *Time    `json:"paused_at"`
	PauseReason             *string  `json:"pause_reason"`
	PreviousSecretExpiresAt *Time    `json:"previous_secret_expires_at"`
	Secret                  string   `json:"secret,omitempty"`
	CreatedAt               Time     `json:"created_at"`
	UpdatedAt               Time     `json:"updated_at"`
}

func newWebhookResponse(w store.Webhook, secret string, now time.Time) webhookResponse {
	var reason *string
	if w.PauseReason != "" {
		reason = &w.PauseReason
	}
	// The previous secret is shown only while it still signs.
	var prev *time.Time
	if w.PreviousSecretExpiresAt != nil && w.PreviousSecretExpiresAt.After(now) {
		prev = w.PreviousSecretExpiresAt
	}
	return webhookResponse{
		ID: w.ID, URL: w.URL, Events: nonNil([]string(w.Events)), Description: w.Description, Status: w.Status,
		ConsecutiveFailures: w.ConsecutiveFailures, PausedAt: timePtr(w.PausedAt), PauseReason: reason,
		PreviousSecretExpiresAt: timePtr(prev), Secret: secret, CreatedAt: Time(w.CreatedAt), UpdatedAt: Time(w.UpdatedAt),
	}
}

// webhookRequest is the body of POST /webhooks and PATCH /webhooks/{id}.
type webhookRequest struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Description *string   `json:"description"`
	Status      *string   `json:"status"`
}

// webhookService is the webhook service, or 503 when the process has none.
func (a *API) webhookService() (*webhook.Service, error) {
	if a.webhooks == nil {
		return nil, errUnavailable
	}
	return a.webhooks, nil
}

func (a *API) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var req webhookRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Status != nil {
		return errValidation(map[string]string{"status": "Ein neuer Webhook ist immer aktiv; pausieren lässt er sich mit PATCH."})
	}
	svc, err := a.webhookService()
	if err != nil {
		return err
	}
	in := store.WebhookSettings{}
	if req.URL != nil {
		in.URL = *req.URL
	}
	if req.Events != nil {
		in.Events = *req.Events
	}
	if req.Description != nil {
		in.Description = *req.Description
	}
	hook, secret, err := svc.Create(r.Context(), accountID(r), actor(r), in)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newWebhookResponse(hook, secret, a.cfg.Now()))
}

func (a *API) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	hooks, total, err := a.db.Webhooks(r.Context(), accountID(r), page)
	if err != nil {
		return err
	}
	now := a.cfg.Now()
	out := make([]webhookResponse, len(hooks))
	for i, h := range hooks {
		out[i] = newWebhookResponse(h, "", now)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) getWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	hook, err := a.db.Webhook(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newWebhookResponse(hook, "", a.cfg.Now()))
}

func (a *API) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req webhookRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	svc, err := a.webhookService()
	if err != nil {
		return err
	}
	hook, err := svc.Update(r.Context(), accountID(r), actor(r), id, store.WebhookPatch{
		URL: req.URL, Events: req.Events, Description: req.Description, Status: req.Status,
	})
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newWebhookResponse(hook, "", a.cfg.Now()))
}

func (a *API) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	svc, err := a.webhookService()
	if err != nil {
		return err
	}
	if err := svc.Delete(r.Context(), accountID(r), actor(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	svc, err := a.webhookService()
	if err != nil {
		return err
	}
	hook, secret, err := svc.RotateSecret(r.Context(), accountID(r), actor(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newWebhookResponse(hook, secret, a.cfg.Now()))
}

type webhookEventResponse struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

func (a *API) listWebhookEvents(w http.ResponseWriter, r *http.Request) error {
	kinds := webhook.Catalogue()
	out := make([]webhookEventResponse, len(kinds))
	for i, k := range kinds {
		out[i] = webhookEventResponse{Name: k.Name, Description: k.Description}
	}
	return writeData(w, r, http.StatusOK, out)
}

// deliveryResponse is an entry of a webhook's delivery log.
type deliveryResponse struct {
	ID              int64  `json:"id"`
	DeliveryID      string `json:"delivery_id"`
	WebhookID       int64  `json:"webhook_id"`
	EventID         string `json:"event_id"`
	Event           string `json:"event"`
	Test            bool   `json:"test"`
	Status          string `json:"status"`
	Attempts        int    `json:"attempts"`
	NextAttemptAt   *Time  `json:"next_attempt_at"`
	LastStatusCode  *int   `json:"last_status_code"`
	LastError       string `json:"last_error"`
	ResponseExcerpt string `json:"response_excerpt"`
	CreatedAt       Time   `json:"created_at"`
	UpdatedAt       Time   `json:"updated_at"`
}

func newDeliveryResponse(d store.WebhookDelivery) deliveryResponse {
	return deliveryResponse{
		ID: d.ID, DeliveryID: d.PublicID, WebhookID: d.WebhookID, EventID: d.EventPublicID, Event: d.Event, Test: d.Test,
		Status: d.Status, Attempts: d.Attempts, NextAttemptAt: timePtr(d.NextAttemptAt), LastStatusCode: d.LastStatusCode,
		LastError: d.LastError, ResponseExcerpt: d.ResponseExcerpt, CreatedAt: Time(d.CreatedAt), UpdatedAt: Time(d.UpdatedAt),
	}
}

type attemptResponse struct {
	Attempt         int    `json:"attempt"`
	StatusCode      *int   `json:"status_code"`
	Error           string `json:"error"`
	ResponseExcerpt string `json:"response_excerpt"`
	DurationMS      int    `json:"duration_ms"`
	AttemptedAt     Time   `json:"attempted_at"`
}

// deliveryDetailResponse is one delivery with the body it sends and every attempt.
type deliveryDetailResponse struct {
	deliveryResponse
	Payload    json.RawMessage   `json:"payload"`
	AttemptLog []attemptResponse `json:"attempt_log"`
}

func newDeliveryDetail(d store.WebhookDelivery, attempts []store.WebhookAttempt) deliveryDetailResponse {
	log := make([]attemptResponse, len(attempts))
	for i, at := range attempts {
		log[i] = attemptResponse{Attempt: at.Attempt, StatusCode: at.StatusCode, Error: at.Error,
			ResponseExcerpt: at.ResponseExcerpt, DurationMS: at.DurationMS, AttemptedAt: Time(at.AttemptedAt)}
	}
	return deliveryDetailResponse{deliveryResponse: newDeliveryResponse(d), Payload: json.RawMessage(d.Payload), AttemptLog: log}
}

var deliveryStatuses = []string{store.DeliveryPending, store.DeliveryRetrying, store.DeliverySucceeded, store.DeliveryFailed}

func (a *API) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	errs := store.Errs{}
	page, err := parsePage(r)
	if ve, ok := err.(*store.ValidationError); ok {
		for k, v := range ve.Fields {
			errs.Add(k, v)
		}
	}
	f := store.DeliveryFilter{Status: r.URL.Query().Get("status"), Event: r.URL.Query().Get("event")}
	if f.Status != "" && !slices.Contains(deliveryStatuses, f.Status) {
		errs.Add("status", "Erlaubt sind pending, retrying, succeeded und failed.")
	}
	if f.Event != "" && !slices.Contains(store.EventKinds(), f.Event) {
		errs.Add("event", "Unbekanntes Ereignis: GET /v1/webhooks/events listet alle 17.")
	}
	if err := errs.Err(); err != nil {
		return err
	}
	ds, total, err := a.db.WebhookDeliveries(r.Context(), accountID(r), id, f, page)
	if err != nil {
		return err
	}
	out := make([]deliveryResponse, len(ds))
	for i, d := range ds {
		out[i] = newDeliveryResponse(d)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) getWebhookDelivery(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	d, attempts, err := a.db.WebhookDelivery(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newDeliveryDetail(d, attempts))
}

// webhookTestRequest is the optional body of POST /webhooks/{id}/test.
type webhookTestRequest struct {
	Event string `json:"event"`
}

func (a *API) testWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req webhookTestRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	svc, err := a.webhookService()
	if err != nil {
		return err
	}
	d, attempts, err := svc.Test(r.Context(), accountID(r), id, req.Event)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newDeliveryDetail(d, attempts))
}

func (a *API) resendWebhookDelivery(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	svc, err := a.webhookService()
	if err != nil {
		return err
	}
	d, attempts, err := svc.Resend(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newDeliveryDetail(d, attempts))
}
