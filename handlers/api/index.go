package api

import (
	"fmt"
	"net/http"

	"github.com/rundbrief/rundbrief/handlers/api/openapi"
)

// Version is the version of the API description this service implements.
const Version = "1.1.0"

// OpenAPIDocument returns the OpenAPI 3.1 description served at
// /v1/openapi.json, assembled from the sources in handlers/api/openapi (tests
// validate against it). The sources are compiled in, so it panics only in a
// build whose tests fail: handlers/api/openapi's tests assemble them.
func OpenAPIDocument() []byte {
	b, err := openapi.Document()
	if err != nil {
		panic(fmt.Sprintf("api: %v", err))
	}
	return b
}

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
		DocsURL:    base + "/docs",
		OpenAPIURL: base + "/openapi.json",
		Time:       Time(a.cfg.Now()),
	})
}

// serveOpenAPI answers with doc, the assembled description, so that Handler
// assembles it once rather than on every request for it.
func serveOpenAPI(doc []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(doc)
	}
}
