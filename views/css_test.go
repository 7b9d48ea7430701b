package views_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The style classes the views use exist in the style sheet: "alert" and
// "btn-small" did not, and the notices and the button they named went
// unstyled. Classes without a rule of their own (hooks for scripts, tests
// and scoping) are not checked; the families below are the ones that only
// ever style.
func TestStyleClassesExist(t *testing.T) {
	css, err := os.ReadFile(filepath.Join("..", "static", "app.css"))
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`\.([A-Za-z][\w-]*)`).FindAllStringSubmatch(string(css), -1) {
		defined[m[1]] = true
	}
	styling := regexp.MustCompile(`^(btn|flash|badge|alert|h[1-6]|card|grid|table|form|field|muted|small|chip|empty|notice)([\w-]*)$`)
	lists := []*regexp.Regexp{
		regexp.MustCompile(`class="([^"]*)"`),
		regexp.MustCompile(`class=\{\s*"([^"]*)"`),
		regexp.MustCompile(`templ\.KV\("([^"]+)"`),
	}
	files, err := filepath.Glob("*.templ")
	if err != nil || len(files) == 0 {
		t.Fatalf("templ files: %v", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, re := range lists {
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				for _, c := range strings.Fields(m[1]) {
					if styling.MatchString(c) && !strings.HasSuffix(c, "-") && !defined[c] {
						t.Errorf("%s: class %q has no rule in static/app.css", f, c)
					}
				}
			}
		}
	}
}
