// Package docs_test checks the guides in docs/ against the code: the errors
// guide names every error code and reason the API emits, every /v1 endpoint
// a guide mentions exists in the OpenAPI description, and every relative link
// leads to a file. The webhook guide's code examples are tested in
// store/webhook (example_test.go, guide_test.go).
package docs_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/handlers/api/openapi"
)

// guides returns every Markdown file of docs/ by name.
func guides(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob("*.md")
	if err != nil || len(names) == 0 {
		t.Fatalf("no guides: %v", err)
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = string(b)
	}
	return out
}

// sourceFiles returns the contents of the non-test Go files under dir.
func sourceFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		out[path] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Where the API's codes and reasons are written: Error literals and the
// helpers of handlers/api/errors.go, and the store's ConflictError reasons.
var (
	codeRe     = regexp.MustCompile(`Code:\s*"([a-z_]+)"`)
	forbidRe   = regexp.MustCompile(`errForbidden\("([a-z_]+)"`)
	conflictRe = regexp.MustCompile(`errConflict\("([a-z_]+)"`)
	reasonRe   = regexp.MustCompile(`ConflictError\{Reason:\s*"([a-z_]+)"`)
	// moveStatus passes its conflict reason as an argument.
	moveStatusRe = regexp.MustCompile(`moveStatus\([^)]*?"(not_[a-z_]+)"`)
)

// TestErrorsGuideNamesEveryCodeAndReason fails when the code emits an
// error.code or reason that docs/errors.md does not explain.
func TestErrorsGuideNamesEveryCodeAndReason(t *testing.T) {
	doc := guides(t)["errors.md"]
	if doc == "" {
		t.Fatal("docs/errors.md is missing")
	}
	found := map[string]string{}
	for dir, res := range map[string][]*regexp.Regexp{
		"../handlers/api": {codeRe, forbidRe, conflictRe},
		"../store":        {reasonRe, moveStatusRe},
	} {
		for path, src := range sourceFiles(t, dir) {
			for _, re := range res {
				for _, m := range re.FindAllStringSubmatch(src, -1) {
					found[m[1]] = path
				}
			}
		}
	}
	// Reasons of the portal's user management and CSV import: the /v1 API
	// never reaches them, the guide names them as portal-only.
	for _, name := range []string{"not_admin", "owner_only", "self", "last_owner", "import_started"} {
		found[name] = "portal"
	}
	for _, must := range []string{"bad_request", "unauthorized", "forbidden", "conflict", "insufficient_scope",
		"idempotency_key_reused", "already_sent", "ab_test_not_running"} {
		if _, ok := found[must]; !ok {
			t.Errorf("the scan no longer finds %q: update the patterns of this test", must)
		}
	}
	for name, where := range found {
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/errors.md does not name %q (emitted in %s)", name, where)
		}
	}
	// The constants of the user reasons live in store/users.go.
	users, err := os.ReadFile("../store/users.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`Reason[A-Z]\w*\s*=\s*"([a-z_]+)"`).FindAllStringSubmatch(string(users), -1) {
		if !strings.Contains(doc, "`"+m[1]+"`") {
			t.Errorf("docs/errors.md does not name the portal reason %q", m[1])
		}
	}
}

// endpointRe finds "METHOD /path" in the guides; a leading /v1 is optional.
var endpointRe = regexp.MustCompile("(GET|POST|PATCH|PUT|DELETE)(?:/(?:GET|POST|PATCH|PUT|DELETE))* (?:\\$API|/v1)?(/[a-z0-9{}_./-]*[a-z0-9}/])")

// TestGuidesMentionOnlyExistingEndpoints fails when a guide names an API
// endpoint that the OpenAPI description does not have: the guides may not
// invent endpoints.
func TestGuidesMentionOnlyExistingEndpoints(t *testing.T) {
	raw, err := openapi.Document()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	// Outside /v1: the operator endpoints, and the receiver's path in the
	// sample delivery of the webhook guide.
	outside := []string{"/healthz", "/readyz", "/metrics", "/hooks/rundbrief"}
	// A guide may write a concrete id (/webhooks/1/deliveries): match the
	// description's templates segment by segment.
	templates := make(map[string]*regexp.Regexp, len(doc.Paths))
	for p := range doc.Paths {
		templates[p] = regexp.MustCompile("^" + paramRe.ReplaceAllString(regexp.QuoteMeta(p), `[^/]+`) + "$")
	}
	lookup := func(path string) (map[string]json.RawMessage, bool) {
		if ops, ok := doc.Paths[path]; ok {
			return ops, true
		}
		for p, re := range templates {
			if re.MatchString(path) {
				return doc.Paths[p], true
			}
		}
		return nil, false
	}
	// Planned but not built; the guide says they answer 404 today.
	planned := func(p string) bool {
		return strings.HasPrefix(p, "/story-emails") || strings.HasPrefix(p, "/sequences")
	}
	seen := 0
	for name, text := range guides(t) {
		for _, m := range endpointRe.FindAllStringSubmatch(text, -1) {
			path := strings.TrimSuffix(strings.SplitN(m[2], "?", 2)[0], "/")
			if path == "" || slices.Contains(outside, path) || planned(path) && name == "story-emails-and-sequences.md" {
				continue
			}
			seen++
			ops, ok := lookup(path)
			if !ok {
				t.Errorf("%s: %s %s is not in the OpenAPI description", name, m[1], path)
				continue
			}
			for _, method := range strings.Split(strings.SplitN(m[0], " ", 2)[0], "/") {
				if _, ok := ops[strings.ToLower(method)]; !ok {
					t.Errorf("%s: %s %s is not in the OpenAPI description", name, method, path)
				}
			}
		}
	}
	if seen < 40 {
		t.Errorf("only %d endpoint mentions found: the pattern no longer matches the guides", seen)
	}
}

// paramRe finds a quoted path parameter such as \{id\} in a QuoteMeta'd path.
var paramRe = regexp.MustCompile(`\\\{[a-z_]+\\\}`)

// linkRe finds Markdown links.
var linkRe = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestGuideLinksResolve fails on a relative link to a file that does not
// exist, and on a link to a README section that is not there.
func TestGuideLinksResolve(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "(docs/README.md)") {
		t.Error("the README does not link docs/README.md")
	}
	index := guides(t)["README.md"]
	for name, text := range guides(t) {
		if name != "README.md" && !strings.Contains(index, "("+name+")") {
			t.Errorf("docs/README.md does not list %s", name)
		}
		for _, m := range linkRe.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			b, err := os.ReadFile(file)
			if err != nil {
				t.Errorf("%s: link %q: %v", name, target, err)
				continue
			}
			if anchor != "" && !hasAnchor(string(b), anchor) {
				t.Errorf("%s: link %q: no such section", name, target)
			}
		}
	}
}

// hasAnchor reports whether a Markdown text has a heading whose GitHub
// anchor is anchor, or an explicit <a id>.
func hasAnchor(text, anchor string) bool {
	if strings.Contains(text, `<a id="`+anchor+`">`) {
		return true
	}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		if b.String() == anchor {
			return true
		}
	}
	return false
}
