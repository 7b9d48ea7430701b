package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/rundbrief/rundbrief/store"
)

// maxJSONBody bounds a JSON request body: 2 MB of html content plus room for the rest.
const maxJSONBody = 3 << 20

// decode reads a JSON request body into v. An empty body decodes as {}. Errors are
// API errors: 400 for a missing Content-Type, invalid UTF-8 or broken JSON, 413 for
// an oversized body, 422 naming the field for a value of the wrong type.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return errTooLarge
		}
		return errBadRequest("Der Anfragekörper konnte nicht gelesen werden.")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return errBadRequest("Anfragen mit Körper brauchen den Header Content-Type: application/json.")
	}
	if !utf8.Valid(body) {
		return errBadRequest("Der Anfragekörper ist kein gültiges UTF-8.")
	}
	if err := json.Unmarshal(body, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return errValidation(map[string]string{typeErr.Field: "Falscher Typ: erwartet " + germanType(typeErr.Type.Kind().String()) + "."})
		}
		return errBadRequest("Der Anfragekörper ist kein gültiges JSON.")
	}
	return nil
}

func germanType(kind string) string {
	switch kind {
	case "string":
		return "Text"
	case "bool":
		return "true oder false"
	case "slice", "array":
		return "eine Liste"
	case "map", "struct":
		return "ein Objekt"
	case "float32", "float64":
		return "eine Zahl"
	}
	return "eine ganze Zahl"
}

// limitBody caps JSON request bodies; multipart uploads set their own limits.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "multipart/form-data" {
			r.Body = http.MaxBytesReader(w, r.Body, maxJSONBody)
		}
		next.ServeHTTP(w, r)
	})
}

// parsePage reads page (≥ 1, default 1) and per_page (1–100, default 25).
func parsePage(r *http.Request) (store.Page, error) {
	p := store.Page{Page: 1, PerPage: 25}
	errs := store.Errs{}
	q := r.URL.Query()
	if s := q.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs.Add("page", "Muss eine ganze Zahl ab 1 sein.")
		}
		p.Page = n
	}
	if s := q.Get("per_page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			errs.Add("per_page", "Muss eine ganze Zahl von 1 bis 100 sein.")
		}
		p.PerPage = n
	}
	return p, errs.Err()
}

// queryInt reads an optional integer query parameter into errs.
func queryInt(r *http.Request, name string, errs store.Errs) int64 {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		errs.Add(name, "Muss eine ganze Zahl sein.")
	}
	return n
}

// pathID reads the integer path parameter name; anything else is a 404.
func pathID(r *http.Request, name string) (int64, error) {
	n, err := strconv.ParseInt(urlParam(r, name), 10, 64)
	if err != nil || n < 1 {
		return 0, errNotFound
	}
	return n, nil
}
