package apitest

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// bodySchemas checks JSON response bodies against the document's schemas as
// JSON Schema 2020-12, the dialect of OpenAPI 3.1, and compiles each schema
// once. kin-openapi compiled the schema anew for every response it checked
// (and then, for a schema with references and no 2020-only keyword, checked
// with its older validator anyway): 27 % of the API tests' CPU time.
// Compiled schemas are safe for concurrent use; the compiler is not, so
// compiling takes turns.
type bodySchemas struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

// documentURL names the document as the compiler's one resource; schemas are
// compiled by JSON pointers into it, so "#/components/schemas/…" references
// resolve as in the document.
const documentURL = "file:///openapi.json"

func newBodySchemas(doc []byte) (*bodySchemas, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("decode openapi.json: %w", err)
	}
	forbidWriteOnly(v)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(documentURL, v); err != nil {
		return nil, fmt.Errorf("openapi.json as a JSON Schema resource: %w", err)
	}
	return &bodySchemas{compiler: c, compiled: map[string]*jsonschema.Schema{}}, nil
}

// forbidWriteOnly makes every writeOnly schema of the document refuse any
// value: the compiled schemas check responses only, and a response must not
// carry a writeOnly property (a password, a provider's secret). JSON Schema
// itself treats writeOnly as an annotation.
func forbidWriteOnly(v any) {
	switch v := v.(type) {
	case map[string]any:
		for _, sub := range v {
			forbidWriteOnly(sub)
		}
		if w, _ := v["writeOnly"].(bool); w {
			if not, ok := v["not"]; ok {
				v["allOf"] = append(asSlice(v["allOf"]), map[string]any{"not": not})
			}
			v["not"] = map[string]any{}
		}
	case []any:
		for _, sub := range v {
			forbidWriteOnly(sub)
		}
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// schema compiles the schema at pointer (a JSON pointer into the document), once.
func (b *bodySchemas) schema(pointer string) (*jsonschema.Schema, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.compiled[pointer]; ok {
		return s, nil
	}
	s, err := b.compiler.Compile(documentURL + "#" + fragmentEscape(pointer))
	if err != nil {
		return nil, err
	}
	b.compiled[pointer] = s
	return s, nil
}

// fragmentEscape percent-encodes what a URL fragment cannot hold as is (the
// braces of path templates, spaces).
func fragmentEscape(pointer string) string {
	var sb strings.Builder
	for i := 0; i < len(pointer); i++ {
		c := pointer[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"#%<>[\]^`+"`"+`{|}`, c) >= 0 {
			fmt.Fprintf(&sb, "%%%02X", c)
			continue
		}
		sb.WriteByte(c)
	}
	return sb.String()
}

// pointerToken escapes one reference token of a JSON pointer (RFC 6901).
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// bodySchemaPointer is the JSON pointer of the schema that the document gives
// for a response's body: the media type mtKey of the response resp, which
// the route's operation lists under statusKey. ok is false when the location
// cannot be named (a reference outside the document, a response the
// operation does not list).
func bodySchemaPointer(route *routers.Route, statusKey string, resp *openapi3.ResponseRef, mtKey string, media *openapi3.MediaType) (string, bool) {
	if ref := media.Schema.Ref; ref != "" {
		return localPointer(ref)
	}
	if statusKey == "" && resp.Ref == "" {
		return "", false
	}
	base := "/paths/" + pointerToken(route.Path) + "/" + strings.ToLower(route.Method) + "/responses/" + pointerToken(statusKey)
	if resp.Ref != "" {
		var ok bool
		if base, ok = localPointer(resp.Ref); !ok {
			return "", false
		}
	}
	return base + "/content/" + pointerToken(mtKey) + "/schema", true
}

// localPointer is the JSON pointer of a reference into the document itself.
func localPointer(ref string) (string, bool) {
	if !strings.HasPrefix(ref, "#/") {
		return "", false
	}
	return ref[1:], true
}

// isJSON reports whether a media type is JSON (application/json or +json).
func isJSON(mediaType string) bool {
	mt, _, err := mime.ParseMediaType(mediaType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// bodyCheck is how the body of one response is to be checked: schema is nil
// when the document describes no body for it. delegate is set when the body
// is no JSON or its schema has no name in the document: kin-openapi checks it
// then, as it does everything but the body.
type bodyCheck struct {
	schema   *jsonschema.Schema
	delegate bool
}

// bodyCheckFor finds the schema of a response's body as kin-openapi's
// ValidateResponse does: the status's response (or the default one), the
// media type matching Content-Type. A Content-Type the document does not
// list for the status is an error.
func (b *bodySchemas) bodyCheckFor(route *routers.Route, status int, header http.Header) (bodyCheck, error) {
	switch status {
	case http.StatusNotModified, http.StatusPermanentRedirect, http.StatusTemporaryRedirect, http.StatusMovedPermanently:
		return bodyCheck{}, nil // kin-openapi never checks these
	}
	responses := route.Operation.Responses
	if responses.Len() == 0 {
		return bodyCheck{}, nil
	}
	resp := responses.Status(status)
	if resp == nil {
		resp = responses.Default()
	}
	if resp == nil || resp.Value == nil || len(resp.Value.Content) == 0 {
		return bodyCheck{}, nil // an undocumented status is reported by kin-openapi
	}
	ct := header.Get("Content-Type")
	media := resp.Value.Content.Get(ct)
	if media == nil {
		return bodyCheck{}, fmt.Errorf("Content-Type %q: openapi.json declares none such for status %d", ct, status)
	}
	if media.Schema == nil {
		return bodyCheck{}, nil
	}
	if !isJSON(ct) {
		return bodyCheck{delegate: true}, nil
	}
	statusKey, mtKey := "", ""
	for k, r := range responses.Map() {
		if r == resp {
			statusKey = k
		}
	}
	for k, m := range resp.Value.Content {
		if m == media {
			mtKey = k
		}
	}
	pointer, ok := bodySchemaPointer(route, statusKey, resp, mtKey, media)
	if !ok {
		return bodyCheck{delegate: true}, nil
	}
	s, err := b.schema(pointer)
	if err != nil {
		return bodyCheck{}, fmt.Errorf("compile the schema at %s: %w", pointer, err)
	}
	return bodyCheck{schema: s}, nil
}

// validate checks a JSON body against s.
func validate(s *jsonschema.Schema, body []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("body is no JSON: %w", err)
	}
	return s.Validate(v)
}
