// Package openapi holds the sources of the API's OpenAPI 3.1 description and
// assembles them into the one document served at /v1/openapi.json.
//
// base.json carries everything that belongs to the whole API (openapi, info,
// servers, tags, security and the shared components: envelope, errors,
// pagination, parameters, headers, responses, security schemes). Every other
// *.json file is one resource group holding only its paths and its own
// components. The README next to this file says where new paths and schemas go.
//
// The sources are assembled at start rather than by go:generate into a
// committed document: a committed copy would be a second, 400 KB place that
// every change touches, and concurrent additions would conflict in it again,
// which is what splitting the document avoids.
package openapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// BaseFile is the source file with the document's top level and the shared components.
const BaseFile = "base.json"

//go:embed *.json
var sources embed.FS

// Sources returns the embedded source files: BaseFile and one file per resource group.
func Sources() fs.FS { return sources }

// Document assembles the embedded sources (see Assemble). The sources are
// compiled in, so a build whose tests pass always assembles.
func Document() ([]byte, error) { return Assemble(sources) }

// Assemble merges the *.json files at the root of fsys into one OpenAPI
// document, pretty-printed with two spaces and a final newline.
//
// The document's top level is BaseFile's, in its order, followed by paths and
// components. Paths come file by file (BaseFile first, then the group files in
// name order), each file's in its own order; components sections and their
// entries likewise. So the output depends on the sources only, never on map
// iteration.
//
// It fails, naming the files, when two files (or one file twice) define the
// same path template or the same name in a components section, when a group
// file holds anything besides paths and components, or when a file is not a
// JSON object.
func Assemble(fsys fs.FS) ([]byte, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("openapi: list sources: %w", err)
	}
	names := []string{BaseFile}
	for _, e := range entries { // ReadDir sorts by name
		if !e.IsDir() && path.Ext(e.Name()) == ".json" && e.Name() != BaseFile {
			names = append(names, e.Name())
		}
	}
	var (
		top        object                // BaseFile's top level without paths and components
		paths      object                // all files' paths, in file order
		sections   []string              // components sections in order of first appearance
		components = map[string]object{} // section → its entries, in file order
		pathFile   = map[string]string{} // path template with parameter names blanked → file
		compFile   = map[string]string{} // "section/name" → file
	)
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("openapi: read %s: %w", name, err)
		}
		file, err := parseObject(b)
		if err != nil {
			return nil, fmt.Errorf("openapi: %s: %w", name, err)
		}
		for _, m := range file {
			switch {
			case m.key == "paths":
				ps, err := parseObject(m.value)
				if err != nil {
					return nil, fmt.Errorf("openapi: %s: paths: %w", name, err)
				}
				for _, p := range ps {
					tmpl := pathParam.ReplaceAllString(p.key, "{}")
					if other, dup := pathFile[tmpl]; dup {
						return nil, fmt.Errorf("openapi: path %q in %s is already defined in %s (one file holds all methods of a path)", p.key, name, other)
					}
					pathFile[tmpl] = name
					paths = append(paths, p)
				}
			case m.key == "components":
				secs, err := parseObject(m.value)
				if err != nil {
					return nil, fmt.Errorf("openapi: %s: components: %w", name, err)
				}
				for _, sec := range secs {
					items, err := parseObject(sec.value)
					if err != nil {
						return nil, fmt.Errorf("openapi: %s: components.%s: %w", name, sec.key, err)
					}
					if _, seen := components[sec.key]; !seen {
						sections = append(sections, sec.key)
					}
					for _, it := range items {
						id := sec.key + "/" + it.key
						if other, dup := compFile[id]; dup {
							return nil, fmt.Errorf("openapi: components.%s.%s in %s is already defined in %s", sec.key, it.key, name, other)
						}
						compFile[id] = name
						components[sec.key] = append(components[sec.key], it)
					}
				}
			case name == BaseFile:
				top = append(top, m)
			default:
				return nil, fmt.Errorf("openapi: %s: top-level member %q belongs in %s; a group file holds only paths and components", name, m.key, BaseFile)
			}
		}
	}

	doc := append(top, member{key: "paths", value: paths.encode()})
	if len(sections) > 0 {
		var comps object
		for _, sec := range sections {
			comps = append(comps, member{key: sec, value: components[sec].encode()})
		}
		doc = append(doc, member{key: "components", value: comps.encode()})
	}
	var out bytes.Buffer
	if err := json.Indent(&out, doc.encode(), "", "  "); err != nil {
		return nil, fmt.Errorf("openapi: indent the document: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// pathParam matches a path template's parameter: /lists/{id} and /lists/{list_id}
// are the same path to a router, so they collide.
var pathParam = regexp.MustCompile(`\{[^}/]*\}`)

// member is one name and its value, kept as the source's bytes.
type member struct {
	key   string
	value json.RawMessage
}

// object is a JSON object whose members keep their source order, which
// map[string]any would lose.
type object []member

// parseObject reads a JSON object's members in order. A name given twice is an
// error: encoding/json would silently keep the last one.
func parseObject(b []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var obj object
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not JSON: %w", err)
		}
		key, _ := tok.(string) // inside an object the decoder returns names only
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("member %q: %w", key, err)
		}
		if seen[key] {
			return nil, fmt.Errorf("member %q is given twice", key)
		}
		seen[key] = true
		obj = append(obj, member{key: key, value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the object")
	}
	return obj, nil
}

// encode writes the object compactly, members in order.
func (o object) encode() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quote(m.key))
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// quote encodes s as a JSON string without escaping <, > and & for HTML,
// as the sources do not.
func quote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
