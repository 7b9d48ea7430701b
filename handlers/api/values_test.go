package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/ai/aitest"
	"github.com/rundbrief/rundbrief/store/services"
)

// TestValuesPostgreSQLCannotTakeAre422: the values of issue 27 that reached
// PostgreSQL and came back as 500 are 422 on their field.
func TestValuesPostgreSQLCannotTakeAre422(t *testing.T) {
	t.Parallel()
	e := newFullEnv(t)
	var nl struct{ ID int64 }
	e.c.Request(http.MethodPost, "/v1/newsletters", map[string]any{"name": "N", "subject": "S", "html": "<p>x</p>"}).Data(t, &nl)
	nlPath := fmt.Sprintf("/v1/newsletters/%d", nl.ID)
	for _, tc := range []struct {
		method, path string
		body         any
		field        string
	}{
		{http.MethodGet, "/v1/contacts?page=9223372036854775807&per_page=100", nil, "page"},
		{http.MethodGet, "/v1/logs/api?page=1000001", nil, "page"},
		{http.MethodGet, "/v1/logs/api?method=%00", nil, "method"},
		{http.MethodGet, "/v1/logs/api?path=%00", nil, "path"},
		{http.MethodGet, "/v1/logs/api?path=%FF", nil, "path"},
		{http.MethodGet, "/v1/logs/api?status=999999999999", nil, "status"},
		{http.MethodGet, "/v1/logs/activity?action=%00", nil, "action"},
		{http.MethodGet, "/v1/unsubscribes?q=%00", nil, "q"},
		{http.MethodDelete, "/v1/unsubscribes/a%40example.org%00", nil, "email"},
		{http.MethodDelete, "/v1/contacts/1/tags/a%00", nil, "tag"},
		{http.MethodDelete, "/v1/contacts/1/tags/%C3%A4%00", nil, "tag"},
		{http.MethodGet, "/v1/analytics/overview?from=0000-01-01&to=0000-01-02", nil, "from"},
		{http.MethodGet, "/v1/analytics/timeseries?from=0000-01-01&to=0000-01-02", nil, "from"},
		{http.MethodPost, "/v1/emails/send", map[string]any{"to": "a@example.org", "subject": "S", "html": "<p>x</p>", "scheduled_at": "9999-12-31T23:59:59Z"}, "scheduled_at"},
		{http.MethodPatch, nlPath, map[string]any{"html": "<p>a\u0000</p>"}, "html"},
		{http.MethodPatch, nlPath, map[string]any{"text": "a\u0000"}, "text"},
		{http.MethodPost, "/v1/newsletters", map[string]any{"name": "N", "subject": "S", "markdown": "a\u0000"}, "markdown"},
		{http.MethodPost, "/v1/contacts", map[string]any{"email": "a@example.org", "custom_fields": map[string]any{"a\u0000": "x"}}, "custom_fields"},
		{http.MethodPost, "/v1/contacts/bulk", map[string]any{"contacts": []any{map[string]any{"email": "a@example.org", "city": "\u0000"}}}, "contacts.0.city"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			var body any
			if tc.body != nil {
				body = tc.body
			}
			got := wantError(t, e.c.Request(tc.method, tc.path, body), 422, "validation_error")
			if fields, _ := got["fields"].(map[string]any); fields[tc.field] == nil {
				t.Errorf("fields %v lack %q", got["fields"], tc.field)
			}
		})
	}
}

// TestNumbersBeyondFloat64And64BitIntegersAre422 (issue 27, item 5): a number no
// float64 can hold is refused on its field wherever it stands, and an integer
// field refuses a number outside int64, instead of storing what no client can read.
func TestNumbersBeyondFloat64And64BitIntegersAre422(t *testing.T) {
	t.Parallel()
	e := newFullEnv(t)
	for _, tc := range []struct {
		path, body, field string
	}{
		{"/v1/contacts", `{"email":"a@example.org","custom_fields":{"big":1e400}}`, "custom_fields.big"},
		{"/v1/contacts", `{"email":"a@example.org","custom_fields":{"small":-1e400}}`, "custom_fields.small"},
		{"/v1/contacts", `{"email":"a@example.org","custom_fields":{"list":[1,2e308]}}`, "custom_fields.list.1"},
		{"/v1/contacts/bulk", `{"contacts":[{"email":"a@example.org","custom_fields":{"big":1e400}}]}`, "contacts.0.custom_fields.big"},
		{"/v1/newsletters", `{"name":"N","subject":"S","html":"<p>x</p>","smtp_server_id":99999999999999999999}`, "smtp_server_id"},
		{"/v1/lists", `{"name":"L","double_opt_in":true,"x":1e999}`, "x"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			got := wantError(t, e.c.Request(http.MethodPost, tc.path, json.RawMessage(tc.body)), 422, "validation_error")
			if fields, _ := got["fields"].(map[string]any); fields[tc.field] == nil {
				t.Errorf("fields %v lack %q", got["fields"], tc.field)
			} else if tc.field == "smtp_server_id" && fields[tc.field] != "Muss eine ganze Zahl von -9223372036854775808 bis 9223372036854775807 sein." {
				t.Errorf("message %q", fields[tc.field])
			}
		})
	}
	// Within range, numbers stay exact.
	r := e.c.Request(http.MethodPost, "/v1/contacts", json.RawMessage(`{"email":"b@example.org","custom_fields":{"big":1e300,"n":12345678901234567890}}`))
	if r.Status != http.StatusCreated {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
}

// TestUnroutedRequestsKeep404And405: the value checks belong to the routes; a
// path or method the API does not serve stays 404 or 405 whatever its query.
func TestUnroutedRequestsKeep404And405(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	wantError(t, e.c.Request(http.MethodGet, "/v1/nope?q=%00", nil), 404, "not_found")
	wantError(t, e.c.Request(http.MethodPut, "/v1/me?q=%00", nil), 405, "method_not_allowed")
}

// newFullEnv is an account on the business plan served by hostileAPI.
func newFullEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, "business")
	r := chi.NewRouter()
	r.Mount("/v1", hostileAPI(t, e).Handler())
	e.h = r
	e.c = e.client(t, r, e.key)
	return e
}

// hostileAPI is the /v1 API of one process with every service, as serve builds
// it, a fake AI provider and a rate limit that the test does not reach.
// unknownHosts is a resolver that knows no host, as DNS answers for the
// example names of the fixtures' SMTP servers: at once, where the system
// resolver may first wait out its timeout (5 s a look-up, several times a run
// on some machines).
type unknownHosts struct{}

func (unknownHosts) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func hostileAPI(t *testing.T, e *env) *api.API {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	provider := aitest.NewAnthropic(t, "sk-ant-test", aitest.Rewrite)
	set, err := services.New(e.db, services.Config{
		DatabaseURL: e.dbURL, BaseURL: "https://rundbrief.test", Secret: "hostile test secret, long enough to key",
		Transport: mailer.TransportOptions{HELO: "rundbrief.test"}, Log: log, WebhookAllowPrivate: true,
		AI: ai.Config{Primary: ai.NewAnthropic(provider.URL, "sk-ant-test")}, Resolver: unknownHosts{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.AITopUp(context.Background(), e.acct, 10_000*store.EUR); err != nil {
		t.Fatal(err)
	}
	return api.New(set, api.Config{BaseURL: "https://rundbrief.test", RateLimit: 1 << 30, Now: func() time.Time { return now }})
}
