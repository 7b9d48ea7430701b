package openapi_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/rundbrief/rundbrief/handlers/api/openapi"
)

// base is a minimal base.json: the top level and one shared schema.
const base = `{
  "openapi": "3.1.0",
  "info": {"title": "t", "version": "1"},
  "tags": [{"name": "A"}, {"name": "B"}],
  "components": {
    "schemas": {"Error": {"type": "object"}}
  }
}`

func sources(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, text := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(text)}
	}
	return fsys
}

func op(tag string) string {
	return `{"get": {"tags": ["` + tag + `"], "responses": {"204": {"description": "ok"}}}}`
}

// TestAssembleOrder pins the order of the output: base.json's top level, then
// paths file by file (base first, then the group files by name, each in its
// own order), then components sections in order of first appearance.
func TestAssembleOrder(t *testing.T) {
	files := map[string]string{
		"base.json": base,
		"b.json":    `{"paths": {"/b": ` + op("B") + `, "/a-from-b": ` + op("B") + `}, "components": {"schemas": {"SchemaB": {"type": "string"}}}}`,
		"a.json":    `{"components": {"parameters": {"ParamP": {"name": "p", "in": "query"}}, "schemas": {"SchemaA": {"type": "integer"}}}, "paths": {"/z": ` + op("A") + `}}`,
		"notes.txt": `not a source`,
	}
	got, err := openapi.Assemble(sources(files))
	if err != nil {
		t.Fatal(err)
	}
	// The indentation says at which level a name stands, and that the output
	// is pretty-printed with two spaces.
	want := []string{
		"{\n  \"openapi\": \"3.1.0\",\n", "\n  \"info\": {", "\n  \"tags\": [",
		"\n  \"paths\": {", "\n    \"/z\": {", "\n    \"/b\": {", "\n    \"/a-from-b\": {",
		"\n  \"components\": {", "\n    \"schemas\": {", "\n      \"Error\": {", "\n      \"SchemaA\": {", "\n      \"SchemaB\": {",
		"\n    \"parameters\": {", "\n      \"ParamP\": {",
	}
	last := -1
	for _, w := range want {
		i := strings.Index(string(got), w)
		if i <= last {
			t.Fatalf("%q is missing or out of order in:\n%s", w, got)
		}
		last = i
	}
	if !strings.HasSuffix(string(got), "\n}\n") {
		t.Errorf("no final newline:\n%s", got)
	}
	for range 5 {
		again, err := openapi.Assemble(sources(files))
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(got) {
			t.Fatal("assembling the same sources again gave another document")
		}
	}
}

// TestAssembleRejectsDuplicatePath: one path, one file; a second definition
// would silently replace the first in a merged map.
func TestAssembleRejectsDuplicatePath(t *testing.T) {
	for name, tc := range map[string]struct {
		files map[string]string
		want  []string // parts of the error message
	}{
		"same path in two group files": {
			files: map[string]string{
				"contacts.json": `{"paths": {"/contacts": ` + op("A") + `}}`,
				"lists.json":    `{"paths": {"/lists": ` + op("B") + `, "/contacts": ` + op("B") + `}}`,
			},
			want: []string{`path "/contacts" in lists.json is already defined in contacts.json`},
		},
		"same template, other parameter name": {
			files: map[string]string{
				"a.json": `{"paths": {"/lists/{id}/members": ` + op("A") + `}}`,
				"b.json": `{"paths": {"/lists/{list_id}/members": ` + op("B") + `}}`,
			},
			want: []string{`path "/lists/{list_id}/members" in b.json is already defined in a.json`},
		},
		"path in base.json and a group file": {
			files: map[string]string{
				"base.json": `{"openapi": "3.1.0", "paths": {"/": ` + op("A") + `}}`,
				"meta.json": `{"paths": {"/": ` + op("A") + `}}`,
			},
			want: []string{`path "/" in meta.json is already defined in base.json`},
		},
		"same path twice in one file": {
			files: map[string]string{
				"a.json": `{"paths": {"/a": ` + op("A") + `, "/a": ` + op("A") + `}}`,
			},
			want: []string{"a.json", `member "/a" is given twice`},
		},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.files["base.json"] == "" {
				tc.files["base.json"] = base
			}
			_, err := openapi.Assemble(sources(tc.files))
			if err == nil {
				t.Fatal("assembled; want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestAssembleRejectsDuplicateSchema: a schema (or any component) has one home.
func TestAssembleRejectsDuplicateSchema(t *testing.T) {
	for name, tc := range map[string]struct {
		files map[string]string
		want  string
	}{
		"same schema in two group files": {
			files: map[string]string{
				"contacts.json": `{"paths": {}, "components": {"schemas": {"Contact": {"type": "object"}}}}`,
				"lists.json":    `{"components": {"schemas": {"List": {"type": "object"}, "Contact": {"type": "string"}}}}`,
			},
			want: `components.schemas.Contact in lists.json is already defined in contacts.json`,
		},
		"a group file redefines a shared schema": {
			files: map[string]string{
				"errors.json": `{"components": {"schemas": {"Error": {"type": "string"}}}}`,
			},
			want: `components.schemas.Error in errors.json is already defined in base.json`,
		},
		"same response in two group files": {
			files: map[string]string{
				"a.json": `{"components": {"responses": {"Gone": {"description": "a"}}}}`,
				"b.json": `{"components": {"responses": {"Gone": {"description": "b"}}}}`,
			},
			want: `components.responses.Gone in b.json is already defined in a.json`,
		},
		"same schema twice in one file": {
			files: map[string]string{
				"a.json": `{"components": {"schemas": {"A": {}, "A": {}}}}`,
			},
			want: `a.json: components.schemas: member "A" is given twice`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			tc.files["base.json"] = base
			_, err := openapi.Assemble(sources(tc.files))
			if err == nil {
				t.Fatal("assembled; want an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestAssembleRejectsMalformedSources: what a group file may hold is checked,
// so that nothing in it is silently left out of the document.
func TestAssembleRejectsMalformedSources(t *testing.T) {
	for name, tc := range map[string]struct {
		files  map[string]string
		noBase bool
		want   string
	}{
		"tags in a group file": {
			files: map[string]string{"a.json": `{"tags": [{"name": "A"}], "paths": {}}`},
			want:  `a.json: top-level member "tags" belongs in base.json`,
		},
		"not an object":         {files: map[string]string{"a.json": `[]`}, want: "a.json: not a JSON object"},
		"not JSON":              {files: map[string]string{"a.json": `{"paths": {`}, want: "a.json"},
		"data after the object": {files: map[string]string{"a.json": `{"paths": {}} {}`}, want: "a.json: data after the object"},
		"paths not an object":   {files: map[string]string{"a.json": `{"paths": []}`}, want: "a.json: paths: not a JSON object"},
		"no base.json":          {files: map[string]string{"a.json": `{}`}, noBase: true, want: "read base.json"},
	} {
		t.Run(name, func(t *testing.T) {
			if !tc.noBase {
				tc.files["base.json"] = base
			}
			_, err := openapi.Assemble(sources(tc.files))
			if err == nil {
				t.Fatal("assembled; want an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestDocumentIsValidAndHoldsEveryGroup assembles the real sources: the result
// is valid OpenAPI 3.1 to kin-openapi, and every group file's paths and
// components are in it, each operation under a tag that base.json declares.
func TestDocumentIsValidAndHoldsEveryGroup(t *testing.T) {
	b, err := openapi.Document()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	var raw struct {
		Components map[string]map[string]json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}

	names, err := fs.Glob(openapi.Sources(), "*.json")
	if err != nil {
		t.Fatal(err)
	}
	groups := 0
	for _, name := range names {
		src, err := fs.ReadFile(openapi.Sources(), name)
		if err != nil {
			t.Fatal(err)
		}
		var file struct {
			Paths      map[string]json.RawMessage            `json:"paths"`
			Components map[string]map[string]json.RawMessage `json:"components"`
		}
		if err := json.Unmarshal(src, &file); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name != openapi.BaseFile {
			groups++
			if len(file.Paths) == 0 {
				t.Errorf("%s: a group file without paths", name)
			}
		}
		for path := range file.Paths {
			if doc.Paths.Value(path) == nil {
				t.Errorf("%s: path %s is not in the document", name, path)
			}
		}
		for section, items := range file.Components {
			for item, value := range items {
				if got := raw.Components[section][item]; !jsonEqual(t, got, value) {
					t.Errorf("%s: components.%s.%s is not in the document as written", name, section, item)
				}
			}
		}
	}
	// The groups of issue 18's split; a new group adds a file, never shrinks this.
	if groups < 15 {
		t.Errorf("%d group files, want at least 15", groups)
	}

	declared := map[string]bool{}
	for _, tag := range doc.Tags {
		declared[tag.Name] = true
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, tag := range op.Tags {
				if !declared[tag] {
					t.Errorf("%s %s: tag %q is not declared in base.json's tags", method, path, tag)
				}
			}
		}
	}
}

func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	if a == nil || b == nil {
		return false
	}
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xb, _ := json.Marshal(x) // encoding/json sorts map keys
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
