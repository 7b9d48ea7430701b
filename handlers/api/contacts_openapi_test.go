package api_test

import (
	"testing"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/api/apitest"
)

// TestOpenAPIHasContactOperations checks that every contact, list, tag,
// blocked-address and activity-log route is described in openapi.json.
func TestOpenAPIHasContactOperations(t *testing.T) {
	doc := apitest.NewValidator(t, api.OpenAPIDocument()).Document()
	for path, methods := range map[string][]string{
		"/contacts":                        {"GET", "POST"},
		"/contacts/bulk":                   {"POST"},
		"/contacts/{id}":                   {"GET", "PATCH", "DELETE"},
		"/contacts/{id}/unsubscribe":       {"POST"},
		"/contacts/{id}/activities":        {"GET"},
		"/contacts/{id}/tags":              {"POST"},
		"/contacts/{id}/tags/{tag}":        {"DELETE"},
		"/tags":                            {"GET"},
		"/lists":                           {"GET", "POST"},
		"/lists/{id}":                      {"GET", "PATCH", "DELETE"},
		"/lists/{id}/members":              {"GET", "POST"},
		"/lists/{id}/members/{contact_id}": {"DELETE"},
		"/unsubscribes":                    {"GET", "POST"},
		"/unsubscribes/{email}":            {"DELETE"},
		"/logs/activity":                   {"GET"},
	} {
		item := doc.Paths.Find(path)
		if item == nil {
			t.Errorf("openapi.json lacks %s", path)
			continue
		}
		for _, m := range methods {
			if item.GetOperation(m) == nil {
				t.Errorf("openapi.json lacks %s %s", m, path)
			}
		}
	}
}
