package api_test

import (
	"testing"
)

type fieldJSON struct {
	Key   string `json:"key"`
	Label string `json:"label"`
	Type  string `json:"type"`
}

// TestFieldsAPI: /v1/fields defines, lists, changes and deletes custom field
// definitions, every answer valid against openapi.json, bad input a 422 with
// German messages per field.
func TestFieldsAPI(t *testing.T) {
	e := newSendAPIEnv(t)
	var f fieldJSON
	e.do(t, "POST", "/v1/fields", map[string]any{"key": "umsatz", "label": "Umsatz", "type": "number"}, 201).Data(t, &f)
	if f != (fieldJSON{"umsatz", "Umsatz", "number"}) {
		t.Fatalf("created %+v", f)
	}
	e.do(t, "POST", "/v1/fields", map[string]any{"key": "kundennummer"}, 201).Data(t, &f)
	if f != (fieldJSON{"kundennummer", "kundennummer", "text"}) {
		t.Errorf("defaults %+v", f)
	}
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/fields", map[string]any{"key": "umsatz"}, 422)), "key")
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/fields", map[string]any{"key": "Groß", "type": "farbe", "label": ""}, 422)), "key", "type", "label")
	if msg := e.fields(t, e.do(t, "POST", "/v1/fields", map[string]any{"key": "email"}, 422))["key"]; msg == "" || msg[0] != '"' {
		t.Errorf("built-in placeholder: %q", msg)
	}
	var list []fieldJSON
	e.do(t, "GET", "/v1/fields", nil, 200).Data(t, &list)
	if len(list) != 2 || list[0].Key != "kundennummer" || list[1].Key != "umsatz" {
		t.Errorf("list %+v", list)
	}
	e.do(t, "PATCH", "/v1/fields/kundennummer", map[string]any{"label": "Kundennummer"}, 200).Data(t, &f)
	if f.Label != "Kundennummer" || f.Type != "text" {
		t.Errorf("patched %+v", f)
	}
	wantFields(t, e.fields(t, e.do(t, "PATCH", "/v1/fields/kundennummer", map[string]any{"key": "neu"}, 422)), "key")
	e.do(t, "GET", "/v1/fields/kundennummer", nil, 200).Data(t, &f)
	e.do(t, "GET", "/v1/fields/fehlt", nil, 404)
	e.do(t, "PATCH", "/v1/fields/fehlt", map[string]any{"label": "X"}, 404)
	e.do(t, "DELETE", "/v1/fields/umsatz", nil, 204)
	e.do(t, "DELETE", "/v1/fields/umsatz", nil, 404)
}
