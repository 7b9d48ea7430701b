package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/integration"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/services"
)

// newIntegrationAPI serves /v1 with an integration service for one account on
// plan, and returns a validating client with its key.
func newIntegrationAPI(t *testing.T, plan string) (*store.DB, int64, *apitest.Client) {
	t.Helper()
	ctx := context.Background()
	db := dbtest.Open(t, dbtest.URL(t))
	res, err := db.CreateAccount(ctx, store.NewAccount{Name: "Kursschmiede", Email: "owner@kurs.test", Password: "a long password", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := db.CreateKey(ctx, res.Account.ID, store.KeySettings{Name: "integrations"})
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.NewBox("api-integration-tests-0123456789abcdefghij")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := integration.New(db, integration.Config{Box: box, BaseURL: "https://rundbrief.test"})
	a := api.New(&services.Set{DB: db, APILog: store.NewAPILogWriter(db, log), Log: log, Integrations: svc}, api.Config{BaseURL: "https://rundbrief.test"})
	r := chi.NewRouter()
	r.Mount("/v1", a.Handler())
	c := apitest.NewClient(t, r, apitest.NewValidator(t, api.OpenAPIDocument()))
	c.Header.Set("Authorization", "Bearer "+key)
	return db, res.Account.ID, c
}

type apiIntegration struct {
	ID         int64    `json:"id"`
	Provider   string   `json:"provider"`
	Name       string   `json:"name"`
	HasSecret  bool     `json:"has_secret"`
	ListIDs    []int64  `json:"list_ids"`
	Tags       []string `json:"tags"`
	Active     bool     `json:"active"`
	Token      string   `json:"token"`
	InboundURL string   `json:"inbound_url"`
}

func TestIntegrationsCRUD(t *testing.T) {
	t.Parallel()
	db, acct, c := newIntegrationAPI(t, "business")
	list, err := db.CreateList(context.Background(), acct, store.Actor{Type: store.ActorSystem}, store.ListInput{Name: ptrTo("Kunden")})
	if err != nil {
		t.Fatal(err)
	}
	res := c.Request(http.MethodPost, "/v1/integrations", map[string]any{"provider": "stripe", "name": "Shop",
		"secret": "whsec_topsecret", "list_ids": []int64{list.ID}, "tags": []string{"Kunde"}})
	if res.Status != http.StatusCreated || strings.Contains(string(res.Body), "whsec_topsecret") {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	var ig apiIntegration
	res.Data(t, &ig)
	if ig.Provider != "stripe" || !ig.HasSecret || !ig.Active || len(ig.Token) != store.IntegrationTokenLen ||
		ig.InboundURL != "https://rundbrief.test/hooks/stripe/"+ig.Token || len(ig.ListIDs) != 1 || ig.Tags[0] != "Kunde" {
		t.Fatalf("created %+v", ig)
	}
	var sealed string
	if err := db.GetContext(context.Background(), &sealed, `SELECT secret_sealed FROM integrations WHERE id = $1`, ig.ID); err != nil ||
		strings.Contains(sealed, "topsecret") {
		t.Fatalf("secret stored in the clear: %q %v", sealed, err)
	}

	// Validation: provider, name, lists; the provider never changes.
	for _, body := range []map[string]any{
		{"provider": "klarna", "name": "x"},
		{"provider": "generic"},
		{"provider": "generic", "name": "x", "list_ids": []int64{list.ID + 999}},
	} {
		if res := c.Request(http.MethodPost, "/v1/integrations", body); res.Status != http.StatusUnprocessableEntity {
			t.Fatalf("create %v: %d %s", body, res.Status, res.Body)
		}
	}
	path := fmt.Sprintf("/v1/integrations/%d", ig.ID)
	if res := c.Request(http.MethodPatch, path, map[string]any{"provider": "paypal"}); res.Status != http.StatusUnprocessableEntity {
		t.Fatalf("patch provider: %d", res.Status)
	}

	res = c.Request(http.MethodPatch, path, map[string]any{"name": "Neuer Shop", "active": false, "secret": ""})
	var up apiIntegration
	res.Data(t, &up)
	if res.Status != http.StatusOK || up.Name != "Neuer Shop" || up.Active || up.HasSecret || up.Token != ig.Token {
		t.Fatalf("patch: %d %+v", res.Status, up)
	}
	if res := c.Request(http.MethodGet, "/v1/integrations", nil); res.Status != http.StatusOK {
		t.Fatalf("list: %d", res.Status)
	}
	if res := c.Request(http.MethodGet, path, nil); res.Status != http.StatusOK {
		t.Fatalf("get: %d", res.Status)
	}
	if res := c.Request(http.MethodGet, path+"/events", nil); res.Status != http.StatusOK {
		t.Fatalf("events: %d", res.Status)
	}

	// Another account's ids are 404.
	other, err := db.CreateAccount(context.Background(), store.NewAccount{Name: "Andere", Email: "o@andere.test", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := db.CreateIntegration(context.Background(), nil, other.Account.ID, store.Actor{Type: store.ActorSystem},
		store.IntegrationSettings{Provider: "generic", Name: "fremd", Active: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{http.MethodGet, http.MethodPatch, http.MethodDelete} {
		if res := c.Request(m, fmt.Sprintf("/v1/integrations/%d", foreign.ID), map[string]any{}); res.Status != http.StatusNotFound {
			t.Fatalf("%s foreign: %d", m, res.Status)
		}
	}
	if res := c.Request(http.MethodGet, fmt.Sprintf("/v1/integrations/%d/events", foreign.ID), nil); res.Status != http.StatusNotFound {
		t.Fatalf("foreign events: %d", res.Status)
	}

	if res := c.Request(http.MethodDelete, path, nil); res.Status != http.StatusNoContent {
		t.Fatalf("delete: %d", res.Status)
	}
	if res := c.Request(http.MethodGet, path, nil); res.Status != http.StatusNotFound {
		t.Fatalf("deleted: %d", res.Status)
	}
}

func TestIntegrationsPlanRequired(t *testing.T) {
	t.Parallel()
	_, _, c := newIntegrationAPI(t, "pro")
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/v1/integrations"}, {http.MethodPost, "/v1/integrations"}, {http.MethodGet, "/v1/integrations/1"},
		{http.MethodGet, "/v1/integrations/1/events"},
	} {
		res := c.Request(r.method, r.path, map[string]any{"provider": "generic", "name": "x"})
		if res.Status != http.StatusPaymentRequired || !strings.Contains(string(res.Body), `"plan_required"`) ||
			!strings.Contains(string(res.Body), `"integrations"`) {
			t.Fatalf("%s %s: %d %s", r.method, r.path, res.Status, res.Body)
		}
	}
}
