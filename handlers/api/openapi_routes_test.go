package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/handlers/api/openapi"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store/services"
)

// TestOpenAPIDescribesEveryRoute walks the API's router and openapi.json: every
// route is a documented operation, and every documented operation is a route.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	t.Parallel()
	doc := apitest.NewValidator(t, api.OpenAPIDocument()).Document()
	// Without an operator relay the development outbox is served too.
	mail := mailer.NewTransports(nil, nil, mailer.TransportOptions{})
	routes, ok := api.New(&services.Set{Mail: mail}, api.Config{}).Handler().(chi.Routes)
	if !ok {
		t.Fatal("the API handler is not a chi router")
	}
	served := map[string]bool{}
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if route != "/" {
			route = strings.TrimSuffix(route, "/")
		}
		served[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	var missing, extra []string
	for op := range served {
		if !documented[op] {
			missing = append(missing, op)
		}
	}
	for op := range documented {
		if !served[op] {
			extra = append(extra, op)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes without an operation in openapi.json:\n%s", strings.Join(missing, "\n"))
	}
	if len(extra) > 0 {
		t.Errorf("operations in openapi.json that no route serves:\n%s", strings.Join(extra, "\n"))
	}
	if len(served) < 90 {
		t.Errorf("only %d routes walked", len(served))
	}
}

// TestServedOpenAPIDocument fetches GET /openapi.json from the API's router: it
// is the document assembled from handlers/api/openapi, valid OpenAPI 3.1 to
// kin-openapi, and holds the paths of every resource group's source file.
func TestServedOpenAPIDocument(t *testing.T) {
	t.Parallel()
	h := api.New(&services.Set{Mail: mailer.NewTransports(nil, nil, mailer.TransportOptions{})}, api.Config{}).Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("GET /openapi.json: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	want, err := openapi.Document()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.Body.Bytes(), want) {
		t.Error("the served document is not the assembled one")
	}
	doc, err := openapi3.NewLoader().LoadFromData(rec.Body.Bytes())
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	groups, err := fs.Glob(openapi.Sources(), "*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range groups {
		if name == openapi.BaseFile {
			continue
		}
		src, err := fs.ReadFile(openapi.Sources(), name)
		if err != nil {
			t.Fatal(err)
		}
		var group struct {
			Paths map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal(src, &group); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(group.Paths) == 0 {
			t.Errorf("%s: no paths", name)
		}
		for path := range group.Paths {
			if doc.Paths.Value(path) == nil {
				t.Errorf("%s: path %s is not served", name, path)
			}
		}
	}
	if len(groups) < 16 {
		t.Errorf("only %d source files", len(groups))
	}
}
