package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestPrivacyURL: the account's privacy policy address in /account/settings
// is checked, kept by a PUT that leaves it out (clients written against the
// five pinned fields), cleared by an empty one, and linked in the forms'
// embed snippet.
func TestPrivacyURL(t *testing.T) {
	t.Parallel()
	e := newFormsEnv(t)
	type settings struct {
		Company    string `json:"company"`
		PrivacyURL string `json:"privacy_url"`
	}
	get := func() settings {
		t.Helper()
		var s settings
		e.c.Request("GET", "/v1/account/settings", nil).Data(t, &s)
		return s
	}
	if s := get(); s.PrivacyURL != "" {
		t.Fatalf("new account: %+v", s)
	}
	f := e.form(t, map[string]any{})
	embed := func() string {
		t.Helper()
		var out struct {
			Data struct {
				HTML string `json:"html"`
			} `json:"data"`
		}
		if err := json.Unmarshal(e.do(t, "GET", fmt.Sprintf("/v1/forms/%d/embed", f.ID), nil, 200), &out); err != nil {
			t.Fatal(err)
		}
		return out.Data.HTML
	}
	if strings.Contains(embed(), "Datenschutzerklärung") {
		t.Error("the snippet links a privacy policy the account has not given")
	}

	for _, bad := range []string{"kurs.example/datenschutz", "ftp://kurs.example/datenschutz", "https://user:pw@kurs.example/",
		"javascript:alert(1)", "https://kurs.example/daten schutz", "https://" + strings.Repeat("a", 2000) + ".example/"} {
		r := e.c.Request("PUT", "/v1/account/settings", map[string]any{"company": "Kursschmiede", "privacy_url": bad})
		if fields := wantError(t, r, 422, "validation_error")["fields"].(map[string]any); fields["privacy_url"] == nil {
			t.Errorf("%q: %v", bad, fields)
		}
	}
	if s := get(); s.Company != "" || s.PrivacyURL != "" {
		t.Fatalf("a refused PUT changed the settings: %+v", s)
	}

	const policy = "https://kurs.example/datenschutz"
	var s settings
	e.c.Request("PUT", "/v1/account/settings", map[string]any{"company": "Kursschmiede", "privacy_url": "  " + policy + " "}).Data(t, &s)
	if s.PrivacyURL != policy || get().PrivacyURL != policy {
		t.Fatalf("after PUT: %+v, stored %+v", s, get())
	}
	html := embed()
	if !strings.Contains(html, `href="`+policy+`"`) || !strings.Contains(html, "Datenschutzerklärung</a>.") {
		t.Errorf("snippet without the link:\n%s", html)
	}

	// The five pinned fields alone: they are replaced, the address stays.
	e.c.Request("PUT", "/v1/account/settings", map[string]any{"company": "Kursschmiede GmbH", "postal_address": "Hauptstr. 1"}).Data(t, &s)
	if s.Company != "Kursschmiede GmbH" || s.PrivacyURL != policy {
		t.Errorf("PUT without privacy_url: %+v", s)
	}
	e.c.Request("PUT", "/v1/account/settings", map[string]any{"privacy_url": ""}).Data(t, &s)
	if s.Company != "" || s.PrivacyURL != "" || get().PrivacyURL != "" {
		t.Errorf("PUT with an empty privacy_url: %+v", s)
	}
	if strings.Contains(embed(), "Datenschutzerklärung") {
		t.Error("the snippet still links the removed address")
	}
}
