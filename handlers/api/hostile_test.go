package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
)

// hostileValues are what a careless or hostile client puts into a path or query
// value: NUL bytes, invalid UTF-8, numbers beyond int32, int64 and float64,
// year-0 dates, and wrong types.
var hostileValues = []string{
	"a\x00b", "fuzz@example.org\x00", "\xff", "a\xc3",
	"9223372036854775807", "99999999999999999999", "2147483648", "-1", "1e400",
	"0000-01-01", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59+14:00", "x", strings.Repeat("ä", 3000),
}

// hostileJSON are values put into every field of a request body: NUL in strings,
// numbers beyond every range, wrong types and deep nesting.
var hostileJSON = []string{
	`"a\u0000b"`, `"\ud800"`, `1e400`, `-1e400`, `99999999999999999999`, `9223372036854775807`,
	`2147483648`, `1.5`, `{}`, `[1e400]`, `{"\u0000":1}`, `"9999-12-31T23:59:59Z"`,
	strings.Repeat("[", 2000) + strings.Repeat("]", 2000),
}

// brokenBodies are whole request bodies that are not what any endpoint expects.
var brokenBodies = [][]byte{
	[]byte(`{`), []byte(`{"a":`), []byte(`[`), []byte(`nul`), []byte(`{"a":1}}`), []byte("{\"a\":\"\xff\"}"),
	[]byte("\xff\xfe{}"), []byte(`"x"`), []byte(`1e400`), []byte(`[]`), []byte(`null`), []byte(`{"a":1,"a":2}`),
	[]byte(strings.Repeat(`{"a":`, 20000) + `1` + strings.Repeat(`}`, 20000)),
	[]byte(strings.Repeat(`[`, 100000)),
}

// TestHostileRequestsNeverGet5xx (issue 27) walks every route of the /v1 router
// and sends generated hostile variants of each with a valid key: hostile path
// and query values, broken bodies, and valid bodies with one field at a time
// replaced by a hostile value. Not one may be answered with a 5xx, and every
// answer must match openapi.json.
func TestHostileRequestsNeverGet5xx(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	a := hostileAPI(t, e)
	app := chi.NewRouter()
	app.Mount("/v1", a.Handler())
	c := e.client(t, app, e.key)
	doc := e.v.Document()
	walkable, ok := a.Handler().(chi.Routes)
	if !ok {
		t.Fatal("the API handler is no chi.Routes")
	}

	var routes []hostileRoute
	if err := chi.Walk(walkable, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == http.MethodHead || method == http.MethodOptions || method == http.MethodConnect || method == http.MethodTrace {
			return nil
		}
		route = strings.TrimSuffix(strings.ReplaceAll(route, "/*/", "/"), "/*")
		if route == "" {
			route = "/"
		}
		routes = append(routes, hostileRoute{method: method, path: route, op: findOperation(doc, method, route)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].path+routes[i].method < routes[j].path+routes[j].method })

	// Objects for the {id}s: the valid body of every collection's POST.
	ids := map[string]string{}
	hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(hook.Close)
	bodyOf := func(rt hostileRoute) map[string]any {
		b, _ := resolve(validBodies[rt.method+" "+rt.path], ids, hook.URL).(map[string]any)
		return b
	}
	fixtures := slices.Clone(routes)
	sort.SliceStable(fixtures, func(i, j int) bool { return fixtures[j].path == "/ab-tests" && fixtures[i].path != "/ab-tests" })
	for _, rt := range fixtures {
		if rt.method != http.MethodPost || strings.Contains(rt.path, "{") {
			continue
		}
		body := bodyOf(rt)
		if body == nil {
			continue
		}
		res := c.Request(http.MethodPost, "/v1"+rt.path, json.RawMessage(mustJSON(t, body)))
		var created struct {
			Data struct {
				ID int64 `json:"id"`
			} `json:"data"`
		}
		if res.Status < 300 && json.Unmarshal(res.Body, &created) == nil && created.Data.ID > 0 {
			ids[firstSegment(rt.path)] = fmt.Sprint(created.Data.ID)
		}
	}

	sent, failed := 0, 0
	send := func(method, path string, body []byte) {
		t.Helper()
		sent++
		req := httptest.NewRequest(method, "/", bytes.NewReader(body))
		u, err := url.ParseRequestURI(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		req.URL, req.RequestURI = u, path
		req.Header = c.Header.Clone()
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		res := c.Do(req)
		if res.Status >= 500 {
			failed++
			if failed <= 40 {
				t.Errorf("%s %q %.200s → %d: %.120s", method, path, body, res.Status, res.Body)
			}
		}
	}
	for _, rt := range routes {
		params := pathParams(rt.path)
		valid := func(name string) string {
			switch name {
			case "email":
				return "fuzz@example.org"
			case "contact_id":
				return or(ids["contacts"], "1")
			case "tag", "token":
				return "fuzz"
			}
			return or(ids[firstSegment(rt.path)], "1")
		}
		fill := func(hostile string, v string) string {
			p := rt.path
			for _, name := range params {
				val := valid(name)
				if name == hostile {
					val = v
				}
				p = strings.Replace(p, "{"+name+"}", url.PathEscape(val), 1)
			}
			return "/v1" + p
		}
		base := fill("", "")

		// Path values.
		for _, name := range params {
			for _, v := range hostileValues {
				send(rt.method, fill(name, v), nil)
				if strings.Contains(v, "@") { // escaped beyond need: chi routes on the raw path
					send(rt.method, strings.ReplaceAll(fill(name, v), "@", "%40"), nil)
				}
			}
		}
		// Query values: every parameter the document names, and page everywhere.
		names := []string{"page"}
		if rt.op != nil {
			for _, p := range rt.op.Parameters {
				if p.Value != nil && p.Value.In == "query" && !slices.Contains(names, p.Value.Name) {
					names = append(names, p.Value.Name)
				}
			}
		}
		for _, name := range names {
			for _, v := range hostileValues {
				send(rt.method, base+"?"+url.QueryEscape(name)+"="+url.QueryEscape(v), nil)
			}
		}
		send(rt.method, base+"?page=9223372036854775807&per_page=100", nil)
		if rt.method == http.MethodGet || rt.method == http.MethodDelete && (rt.op == nil || rt.op.RequestBody == nil) {
			continue
		}
		// Broken bodies.
		for _, b := range brokenBodies {
			send(rt.method, base, b)
		}
		// Every field of a valid body replaced by each hostile value.
		body := bodyOf(rt)
		if body == nil {
			body = map[string]any{}
		}
		fields := leafPaths(body, nil)
		for _, f := range leafPaths(validBody(rt.op), nil) {
			if !slices.ContainsFunc(fields, func(g []string) bool { return slices.Equal(f, g) }) {
				fields = append(fields, f)
			}
		}
		for _, field := range append(fields, []string{"extra"}) {
			for _, v := range hostileJSON {
				send(rt.method, base, withField(t, body, field, json.RawMessage(v)))
			}
		}
	}
	t.Logf("%d hostile requests over %d routes, %d answered 5xx", sent, len(routes), failed)
	if sent < 1000 {
		t.Errorf("only %d hostile requests", sent)
	}
}

// validBodies are accepted bodies of the routes that take one: each hostile
// variant changes one field, so that the others pass validation and the changed
// one travels as far as it can.
var validBodies = map[string]map[string]any{
	"POST /contacts":                  {"email": "fuzz@example.org", "first_name": "Fuzz", "tags": []any{"fuzz"}, "custom_fields": map[string]any{"k": "v", "n": 1}},
	"PATCH /contacts/{id}":            {"first_name": "Fuzz", "note": "n", "custom_fields": map[string]any{"k": "v"}},
	"POST /contacts/bulk":             {"contacts": []any{map[string]any{"email": "bulk@example.org", "first_name": "Bulk"}}},
	"POST /contacts/{id}/tags":        {"tags": []any{"fuzz"}},
	"POST /lists":                     {"name": "Fuzz", "color": "#336699", "description": "d"},
	"PATCH /lists/{id}":               {"name": "Fuzz 2", "description": "d"},
	"POST /lists/{id}/members":        {"emails": []any{"member@example.org"}},
	"POST /unsubscribes":              {"emails": []any{"blocked@example.org"}},
	"POST /forms":                     {"name": "Fuzz", "tags": []any{"fuzz"}, "fields": []any{"first_name"}, "success_message": "Danke"},
	"PATCH /forms/{id}":               {"name": "Fuzz 2", "success_message": "Danke"},
	"POST /newsletters":               {"name": "Fuzz", "subject": "Hallo", "html": "<p>Hallo</p>", "text": "Hallo", "from_name": "Fuzz"},
	"PATCH /newsletters/{id}":         {"subject": "Hallo 2", "html": "<p>Hallo</p>", "text": "Hallo", "preheader": "p"},
	"POST /newsletters/{id}/test":     {"to": []any{"test@example.org"}},
	"POST /newsletters/{id}/schedule": {"scheduled_at": "2027-01-01T10:00:00+01:00"},
	"POST /emails/send":               {"to": "single@example.org", "subject": "Hallo", "html": "<p>Hallo</p>", "scheduled_at": "2027-01-01T10:00:00+01:00"},
	"POST /webhooks":                  {"url": "$hook", "events": []any{"*"}},
	"PATCH /webhooks/{id}":            {"url": "$hook", "events": []any{"*"}},
	"POST /webhooks/{id}/test":        {"event": "contact.created"},
	"POST /smtp-servers":              {"name": "Fuzz", "host": "smtp.example.org", "port": 587, "username": "u", "password": "p", "encryption": "starttls", "from_email": "fuzz@example.org", "from_name": "Fuzz"},
	"PATCH /smtp-servers/{id}":        {"name": "Fuzz 2"},
	"POST /ai/generate":               {"action": "fix", "text": "Hallo Welt"},
	"POST /ab-tests":                  {"newsletter_id": 1, "test_type": "subject", "variant_b": map[string]any{"subject": "B"}},
	"PATCH /ab-tests/{id}":            {"wait_hours": 4},
	"POST /ab-tests/{id}/winner":      {"variant": "A"},
}

type hostileRoute struct {
	method, path string
	op           *openapi3.Operation
}

var paramRE = regexp.MustCompile(`\{([^}]+)\}`)

func pathParams(route string) []string {
	var names []string
	for _, m := range paramRE.FindAllStringSubmatch(route, -1) {
		names = append(names, m[1])
	}
	return names
}

func firstSegment(route string) string {
	s, _, _ := strings.Cut(strings.TrimPrefix(route, "/"), "/")
	return s
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// findOperation is the document's operation for a chi route; the document may
// name path parameters differently.
func findOperation(doc *openapi3.T, method, route string) *openapi3.Operation {
	shape := paramRE.ReplaceAllString(route, "{}")
	for path, item := range doc.Paths.Map() {
		if paramRE.ReplaceAllString(path, "{}") == shape {
			return item.GetOperation(method)
		}
	}
	return nil
}

// validBody is a plausible JSON body for op built from its request schema (nil:
// the operation takes none).
func validBody(op *openapi3.Operation) map[string]any {
	if op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return nil
	}
	v, _ := sample(mt.Schema, 0).(map[string]any)
	return v
}

// sample is a value that satisfies the schema as far as a generator can tell.
func sample(ref *openapi3.SchemaRef, depth int) any {
	if ref == nil || ref.Value == nil || depth > 6 {
		return nil
	}
	s := ref.Value
	for _, sub := range [][]*openapi3.SchemaRef{s.AllOf, s.OneOf, s.AnyOf} {
		if len(sub) > 0 && s.Type == nil && len(s.Properties) == 0 {
			return sample(sub[0], depth+1)
		}
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	if s.Example != nil {
		return s.Example
	}
	switch {
	case s.Type.Is("object") || len(s.Properties) > 0:
		out := map[string]any{}
		for name, p := range s.Properties {
			if v := sample(p, depth+1); v != nil {
				out[name] = v
			}
		}
		if s.AdditionalProperties.Schema != nil || (s.AdditionalProperties.Has != nil && *s.AdditionalProperties.Has) {
			out["k"] = "v"
		}
		return out
	case s.Type.Is("array"):
		if v := sample(s.Items, depth+1); v != nil {
			return []any{v}
		}
		return []any{}
	case s.Type.Is("integer"):
		if s.Min != nil {
			return int64(*s.Min)
		}
		return 1
	case s.Type.Is("number"):
		return 1.5
	case s.Type.Is("boolean"):
		return true
	case s.Type.Includes("string"):
		switch s.Format {
		case "email":
			return "fuzz@example.org"
		case "date-time":
			return "2026-12-24T10:00:00+01:00"
		case "date":
			return "2026-11-01"
		case "uri":
			return "https://example.org/hook"
		}
		return "Fuzz"
	}
	return nil
}

// resolve copies v with "$hook" replaced by the webhook receiver's URL and
// "$<collection>" by the id of the fixture created there.
func resolve(v any, ids map[string]string, hook string) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return nil
		}
		out := map[string]any{}
		for k, c := range x {
			out[k] = resolve(c, ids, hook)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			out[i] = resolve(c, ids, hook)
		}
		return out
	case string:
		switch {
		case x == "$hook":
			return hook
		case strings.HasPrefix(x, "$"):
			return json.Number(or(ids[x[1:]], "1"))
		}
	}
	return v
}

// leafPaths lists the paths of v's fields, objects and array items included.
func leafPaths(v any, prefix []string) [][]string {
	var out [][]string
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			p := append(slices.Clone(prefix), k)
			out = append(out, p)
			out = append(out, leafPaths(child, p)...)
		}
	case []any:
		if len(x) > 0 {
			p := append(slices.Clone(prefix), "0")
			out = append(out, p)
			out = append(out, leafPaths(x[0], p)...)
		}
	}
	return out
}

// withField is body with the value at path replaced by v, encoded.
func withField(t *testing.T, body map[string]any, path []string, v json.RawMessage) []byte {
	t.Helper()
	var copied any
	if err := json.Unmarshal(mustJSON(t, body), &copied); err != nil {
		t.Fatal(err)
	}
	cur := copied
	for i, k := range path {
		last := i == len(path)-1
		switch x := cur.(type) {
		case map[string]any:
			if last {
				x[k] = v
			} else {
				cur = x[k]
			}
		case []any:
			if last {
				x[0] = v
			} else {
				cur = x[0]
			}
		}
	}
	return mustJSON(t, copied)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
