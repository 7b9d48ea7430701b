package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/jmoiron/sqlx"
	stripewebhook "github.com/stripe/stripe-go/v85/webhook"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/services"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// hookEnv is one account with a key, served by an API process that has a webhook
// service, and a real HTTP receiver that records what it gets.
type hookEnv struct {
	db   *store.DB
	acct int64
	svc  *webhook.Service
	h    http.Handler
	v    *apitest.Validator
	c    *apitest.Client

	recv *httptest.Server
	mu   sync.Mutex
	got  []receivedHook
}

type receivedHook struct {
	path   string
	header http.Header
	body   []byte
}

func newHookEnv(t *testing.T, plan string, allowPrivate bool) *hookEnv {
	t.Helper()
	ctx := context.Background()
	db := dbtest.Open(t, dbtest.URL(t))
	res, err := db.CreateAccount(ctx, store.NewAccount{Name: "Acme GmbH", Email: "owner@acme.test", Password: "a long password", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := db.CreateKey(ctx, res.Account.ID, store.KeySettings{Name: "webhooks"})
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.NewBox("api-webhook-tests-0123456789abcdefghij")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := &hookEnv{db: db, acct: res.Account.ID, svc: webhook.New(db, webhook.Config{Box: box, AllowPrivate: allowPrivate})}
	a := api.New(&services.Set{DB: db, APILog: store.NewAPILogWriter(db, log), Log: log, Webhooks: e.svc}, api.Config{BaseURL: "https://rundbrief.test"})
	r := chi.NewRouter()
	r.Mount("/v1", a.Handler())
	e.h = r
	e.v = apitest.NewValidator(t, api.OpenAPIDocument())
	e.c = apitest.NewClient(t, r, e.v)
	e.c.Header.Set("Authorization", "Bearer "+key)
	e.recv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.got = append(e.got, receivedHook{path: r.URL.Path, header: r.Header.Clone(), body: b})
		e.mu.Unlock()
		_, _ = io.WriteString(w, "danke")
	}))
	t.Cleanup(e.recv.Close)
	return e
}

func (e *hookEnv) received() []receivedHook {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got)
}

type hookData struct {
	ID                      int64    `json:"id"`
	URL                     string   `json:"url"`
	Events                  []string `json:"events"`
	Description             string   `json:"description"`
	Status                  string   `json:"status"`
	PauseReason             *string  `json:"pause_reason"`
	PreviousSecretExpiresAt *string  `json:"previous_secret_expires_at"`
	Secret                  *string  `json:"secret"`
}

type deliveryData struct {
	ID         int64           `json:"id"`
	DeliveryID string          `json:"delivery_id"`
	EventID    string          `json:"event_id"`
	Event      string          `json:"event"`
	Test       bool            `json:"test"`
	Status     string          `json:"status"`
	Attempts   int             `json:"attempts"`
	Payload    json.RawMessage `json:"payload"`
	AttemptLog []struct {
		Attempt    int  `json:"attempt"`
		StatusCode *int `json:"status_code"`
	} `json:"attempt_log"`
	ResponseExcerpt string `json:"response_excerpt"`
}

func TestWebhookLifecycleOverTheAPI(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t, "business", true)
	ctx := context.Background()

	r := e.c.Request(http.MethodPost, "/v1/webhooks", map[string]any{
		"url": e.recv.URL + "/crm", "events": []string{"list.joined", "contact.created"}, "description": "CRM-Anbindung",
	}, hdr("Idempotency-Key", "hook-1"))
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var created hookData
	r.Data(t, &created)
	if created.Secret == nil || !strings.HasPrefix(*created.Secret, "whsec_") || created.Status != "active" ||
		!slices.Equal(created.Events, []string{"contact.created", "list.joined"}) || created.Description != "CRM-Anbindung" {
		t.Fatalf("created %+v", created)
	}
	secret := *created.Secret
	path := fmt.Sprintf("/v1/webhooks/%d", created.ID)

	// The secret is never shown again.
	r = e.c.Request(http.MethodGet, path, nil)
	if r.Status != 200 || strings.Contains(string(r.Body), "whsec_") || strings.Contains(string(r.Body), `"secret"`) {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}
	r = e.c.Request(http.MethodGet, "/v1/webhooks", nil)
	var list []hookData
	r.Data(t, &list)
	if r.Status != 200 || len(list) != 1 || list[0].Secret != nil {
		t.Fatalf("list: %d %s", r.Status, r.Body)
	}

	r = e.c.Request(http.MethodGet, "/v1/webhooks/events", nil)
	var kinds []struct{ Name, Description string }
	r.Data(t, &kinds)
	var names []string
	for _, k := range kinds {
		names = append(names, k.Name)
	}
	if !slices.Equal(names, store.EventKinds()) {
		t.Errorf("events %v", names)
	}

	// A test send of a chosen event: signed, recorded, returned with its attempt.
	r = e.c.Request(http.MethodPost, path+"/test", map[string]string{"event": "order.completed"})
	var test deliveryData
	r.Data(t, &test)
	if r.Status != 200 || !test.Test || test.Event != "order.completed" || test.Status != "succeeded" || len(test.AttemptLog) != 1 ||
		test.ResponseExcerpt != "danke" {
		t.Fatalf("test: %d %s", r.Status, r.Body)
	}
	got := e.received()
	if len(got) != 1 || got[0].path != "/crm" {
		t.Fatalf("receiver got %d", len(got))
	}
	if err := stripewebhook.ValidatePayload(got[0].body, got[0].header.Get("X-Service-Signature"), secret); err != nil {
		t.Errorf("test send signature: %v", err)
	}
	wantError(t, e.c.Request(http.MethodPost, path+"/test", map[string]string{"event": "contact.exploded"}), 422, "validation_error")

	// A real event through the outbox and the worker.
	err := e.db.WithTx(ctx, func(tx *sqlx.Tx) error {
		_, err := store.Emit(ctx, tx, e.acct, store.EventContactCreated, map[string]any{"contact": map[string]any{"id": 1}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Worker(webhook.WorkerOptions{}).Process(ctx); err != nil {
		t.Fatal(err)
	}
	r = e.c.Request(http.MethodGet, path+"/deliveries", nil)
	var deliveries []deliveryData
	r.Data(t, &deliveries)
	if r.Status != 200 || len(deliveries) != 2 || deliveries[0].Event != "contact.created" || deliveries[0].Test {
		t.Fatalf("deliveries: %s", r.Body)
	}
	for q, want := range map[string]int{"?status=succeeded": 2, "?event=order.completed": 1, "?status=failed": 0} {
		var page []deliveryData
		e.c.Request(http.MethodGet, path+"/deliveries"+q, nil).Data(t, &page)
		if len(page) != want {
			t.Errorf("%s: %d deliveries, want %d", q, len(page), want)
		}
	}
	wantError(t, e.c.Request(http.MethodGet, path+"/deliveries?status=lost", nil), 422, "validation_error")

	// The detail carries the exact payload; a resend is a new attempt of it.
	did := deliveries[0].ID
	r = e.c.Request(http.MethodGet, fmt.Sprintf("/v1/webhook-deliveries/%d", did), nil)
	var detail deliveryData
	r.Data(t, &detail)
	sent := e.received()[1]
	var a, b any
	_ = json.Unmarshal(detail.Payload, &a)
	_ = json.Unmarshal(sent.body, &b)
	if r.Status != 200 || !reflect.DeepEqual(a, b) || detail.EventID != sent.header.Get("X-Service-Event-Id") ||
		detail.DeliveryID != sent.header.Get("X-Service-Delivery") {
		t.Fatalf("detail %s vs sent %s", r.Body, sent.body)
	}
	r = e.c.Request(http.MethodPost, fmt.Sprintf("/v1/webhook-deliveries/%d/resend", did), nil)
	var resent deliveryData
	r.Data(t, &resent)
	if r.Status != 200 || resent.ID != did || resent.DeliveryID != detail.DeliveryID || resent.Attempts != 2 || len(resent.AttemptLog) != 2 {
		t.Fatalf("resend: %d %s", r.Status, r.Body)
	}
	if again := e.received()[2]; again.header.Get("X-Service-Delivery") != detail.DeliveryID || string(again.body) != string(sent.body) {
		t.Error("the resend is not the same delivery")
	}

	// Pause and re-activate.
	r = e.c.Request(http.MethodPatch, path, map[string]string{"status": "paused"})
	var patched hookData
	r.Data(t, &patched)
	if r.Status != 200 || patched.Status != "paused" || patched.PauseReason == nil || *patched.PauseReason != "manual" {
		t.Fatalf("pause: %s", r.Body)
	}
	r = e.c.Request(http.MethodPatch, path, map[string]any{"status": "active", "events": []string{"*"}})
	r.Data(t, &patched)
	if r.Status != 200 || patched.Status != "active" || patched.PauseReason != nil || !slices.Equal(patched.Events, []string{"*"}) {
		t.Fatalf("resume: %s", r.Body)
	}
	wantError(t, e.c.Request(http.MethodPatch, path, map[string]any{"events": []string{"nope"}}), 422, "validation_error")
	wantError(t, e.c.Request(http.MethodPatch, path, map[string]any{"status": "sleeping"}), 422, "validation_error")

	// Rotation: a new secret, shown once, the old one still signs for 24 hours.
	r = e.c.Request(http.MethodPost, path+"/rotate-secret", nil)
	var rotated hookData
	r.Data(t, &rotated)
	if r.Status != 200 || rotated.Secret == nil || *rotated.Secret == secret || rotated.PreviousSecretExpiresAt == nil {
		t.Fatalf("rotate: %s", r.Body)
	}
	e.c.Request(http.MethodPost, path+"/test", nil)
	last := e.received()[3]
	for _, s := range []string{secret, *rotated.Secret} {
		if err := stripewebhook.ValidatePayload(last.body, last.header.Get("X-Service-Signature"), s); err != nil {
			t.Errorf("after rotation: %v", err)
		}
	}

	// Delete frees the place in the plan.
	if r := e.c.Request(http.MethodDelete, path, nil); r.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	wantError(t, e.c.Request(http.MethodGet, path, nil), 404, "not_found")
	wantError(t, e.c.Request(http.MethodGet, fmt.Sprintf("/v1/webhook-deliveries/%d", did), nil), 404, "not_found")
	var limits struct {
		Webhooks struct{ Limit, Used int64 } `json:"webhooks"`
	}
	e.c.Request(http.MethodGet, "/v1/plan/limits", nil).Data(t, &limits)
	if limits.Webhooks.Used != 0 || limits.Webhooks.Limit != 20 {
		t.Errorf("limits %+v", limits.Webhooks)
	}
}

func TestWebhookCreateValidationAndLimit(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t, "starter", true)
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"url": e.recv.URL, "events": []string{"contact.created", "contact.exploded"}}, "events"},
		{map[string]any{"url": e.recv.URL, "events": []string{}}, "events"},
		{map[string]any{"events": []string{"*"}}, "url"},
		{map[string]any{"url": "ftp://example.com", "events": []string{"*"}}, "url"},
		{map[string]any{"url": e.recv.URL, "events": "*"}, "events"},
	} {
		r := e.c.Request(http.MethodPost, "/v1/webhooks", c.body)
		fields, _ := wantError(t, r, 422, "validation_error")["fields"].(map[string]any)
		if fields[c.field] == nil {
			t.Errorf("%v: fields %v, want %s", c.body, fields, c.field)
		}
	}
	for i := range 20 {
		r := e.c.Request(http.MethodPost, "/v1/webhooks", map[string]any{"url": fmt.Sprintf("%s/%d", e.recv.URL, i), "events": []string{"*"}})
		if r.Status != http.StatusCreated {
			t.Fatalf("webhook %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	errBody := wantError(t, e.c.Request(http.MethodPost, "/v1/webhooks", map[string]any{"url": e.recv.URL, "events": []string{"*"}}), 402, "limit_reached")
	if errBody["upgrade_url"] == nil {
		t.Error("402 without upgrade_url")
	}
	var limits struct {
		Webhooks struct{ Limit, Used int64 } `json:"webhooks"`
	}
	e.c.Request(http.MethodGet, "/v1/plan/limits", nil).Data(t, &limits)
	if limits.Webhooks.Used != 20 || limits.Webhooks.Limit != 20 {
		t.Errorf("limits %+v", limits.Webhooks)
	}
}

func TestWebhookPrivateTargetsAreRefusedOverTheAPI(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t, "business", false)
	for _, u := range []string{e.recv.URL + "/x", "http://localhost/hook", "http://10.0.0.1/", "http://[::1]/", "http://169.254.169.254/"} {
		r := e.c.Request(http.MethodPost, "/v1/webhooks", map[string]any{"url": u, "events": []string{"*"}})
		fields, _ := wantError(t, r, 422, "validation_error")["fields"].(map[string]any)
		if fields["url"] == nil {
			t.Errorf("%s: %v", u, fields)
		}
	}
	if n := len(e.received()); n != 0 {
		t.Errorf("the receiver got %d requests", n)
	}
}

func TestWebhooksOfAnotherAccountAreInvisible(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t, "business", true)
	r := e.c.Request(http.MethodPost, "/v1/webhooks", map[string]any{"url": e.recv.URL, "events": []string{"*"}})
	var created hookData
	r.Data(t, &created)
	var test deliveryData
	e.c.Request(http.MethodPost, fmt.Sprintf("/v1/webhooks/%d/test", created.ID), nil).Data(t, &test)

	other, err := e.db.CreateAccount(context.Background(), store.NewAccount{Name: "Other", Email: "other@example.com", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := e.db.CreateKey(context.Background(), other.Account.ID, store.KeySettings{})
	if err != nil {
		t.Fatal(err)
	}
	oc := apitest.NewClient(t, e.h, e.v)
	oc.Header.Set("Authorization", "Bearer "+key)
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, fmt.Sprintf("/v1/webhooks/%d", created.ID)},
		{http.MethodPatch, fmt.Sprintf("/v1/webhooks/%d", created.ID)},
		{http.MethodDelete, fmt.Sprintf("/v1/webhooks/%d", created.ID)},
		{http.MethodPost, fmt.Sprintf("/v1/webhooks/%d/test", created.ID)},
		{http.MethodPost, fmt.Sprintf("/v1/webhooks/%d/rotate-secret", created.ID)},
		{http.MethodGet, fmt.Sprintf("/v1/webhooks/%d/deliveries", created.ID)},
		{http.MethodGet, fmt.Sprintf("/v1/webhook-deliveries/%d", test.ID)},
		{http.MethodPost, fmt.Sprintf("/v1/webhook-deliveries/%d/resend", test.ID)},
	} {
		wantError(t, oc.Request(req.method, req.path, nil), 404, "not_found")
	}
	var list []hookData
	oc.Request(http.MethodGet, "/v1/webhooks", nil).Data(t, &list)
	if len(list) != 0 {
		t.Errorf("other account lists %d webhooks", len(list))
	}
	// A read-only key may look but not change.
	_, readOnly, err := e.db.CreateKey(context.Background(), e.acct, store.KeySettings{Scopes: []string{"read"}})
	if err != nil {
		t.Fatal(err)
	}
	rc := apitest.NewClient(t, e.h, e.v)
	rc.Header.Set("Authorization", "Bearer "+readOnly)
	if r := rc.Request(http.MethodGet, "/v1/webhooks", nil); r.Status != 200 {
		t.Errorf("read: %d", r.Status)
	}
	wantError(t, rc.Request(http.MethodPost, "/v1/webhooks", map[string]any{"url": e.recv.URL, "events": []string{"*"}}), 403, "forbidden")
}
