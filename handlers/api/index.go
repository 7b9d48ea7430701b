package api

import (
	_ "embed"
	"net/http"
)

// Version is the version of the API description this service implements.
const Version = "1.1.0"

//go:embed openapi.json
var openAPIDoc []byte

// OpenAPIDocument returns the embedded OpenAPI 3.1 description (tests validate against it).
func OpenAPIDocument() []byte { return openAPIDoc }

type indexResponse struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	BaseURL    string `json:"base_url"`
	DocsURL    string `json:"docs_url"`
	OpenAPIURL string `json:"openapi_url"`
	Time       Time   `json:"time"`
}

func (a *API) index(w http.ResponseWriter, r *http.Request) error {
	base := a.cfg.BaseURL + "/v1"
	return writeData(w, r, http.StatusOK, indexResponse{
		Name:       "Rundbrief API",
		Version:    Version,
		BaseURL:    base,
		DocsURL:    base + "/openapi.json",
		OpenAPIURL: base + "/openapi.json",
		Time:       Time(a.cfg.Now()),
	})
}

func (a *API) openAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(openAPIDoc)
}
