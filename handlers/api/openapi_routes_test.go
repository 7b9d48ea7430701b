package api_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store/services"
)

// TestOpenAPIDescribesEveryRoute walks the API's router and openapi.json: every
// route is a documented operation, and every documented operation is a route.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
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
