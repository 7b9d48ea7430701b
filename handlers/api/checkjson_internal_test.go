package api

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckJSONBoundsTheDepth: a body nested deeper than maxJSONDepth is refused
// as soon as the walk gets there, however long it is; before the bound, 3 MB of
// "[" built a path per level and took gigabytes.
func TestCheckJSONBoundsTheDepth(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		strings.Repeat("[", 3<<20),
		strings.Repeat(`{"a":`, maxJSONDepth+1) + "1" + strings.Repeat("}", maxJSONDepth+1),
	} {
		if _, err := checkJSON([]byte(body)); !errors.Is(err, errJSONTooDeep) {
			t.Errorf("body of %d bytes: %v, want errJSONTooDeep", len(body), err)
		}
	}
	deep := strings.Repeat(`{"a":`, maxJSONDepth) + `"x\u0000"` + strings.Repeat("}", maxJSONDepth)
	fields, err := checkJSON([]byte(deep))
	if err != nil || len(fields) != 1 {
		t.Fatalf("a body at the bound: %v %v, want its NUL reported", fields, err)
	}
}
