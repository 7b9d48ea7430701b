package static_test

import (
	"io/fs"
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/rundbrief/rundbrief/static"
)

// TestInputBordersContrast: the borders of inputs (--border-strong) reach the
// 3:1 contrast WCAG 2.2 (1.4.11) asks of the parts of a control, against the
// page and the cards, in the light and the dark scheme.
func TestInputBordersContrast(t *testing.T) {
	css, err := fs.ReadFile(static.FS, "app.css")
	if err != nil {
		t.Fatal(err)
	}
	vars := regexp.MustCompile(`--(bg|surface|border-strong):\s*(#[0-9a-fA-F]{6});`).FindAllStringSubmatch(string(css), -1)
	// The first of each is the light scheme's, the second the dark one's.
	schemes := []map[string]string{{}, {}}
	for _, v := range vars {
		for _, s := range schemes {
			if _, ok := s[v[1]]; !ok {
				s[v[1]] = v[2]
				break
			}
		}
	}
	for i, s := range schemes {
		if len(s) != 3 {
			t.Fatalf("scheme %d: found %v", i, s)
		}
		for _, back := range []string{"bg", "surface"} {
			if c := contrast(s["border-strong"], s[back]); c < 3 {
				t.Errorf("scheme %d: --border-strong %s on --%s %s has contrast %.2f, want at least 3", i, s["border-strong"], back, s[back], c)
			}
		}
	}
}

func contrast(a, b string) float64 {
	la, lb := luminance(a), luminance(b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

// luminance is the relative luminance of a #rrggbb colour (WCAG 2.2).
func luminance(hex string) float64 {
	ch := func(i int) float64 {
		n, _ := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		c := float64(n) / 255
		if c <= 0.04045 {
			return c / 12.92
		}
		return math.Pow((c+0.055)/1.055, 2.4)
	}
	return 0.2126*ch(0) + 0.7152*ch(1) + 0.0722*ch(2)
}
