package store

import "testing"

// One unknown id reads in the singular ("Die Liste 7 gibt es nicht."), not
// as "Diese Listen gibt es nicht: 7."
func TestUnknownIDsAgreeWithTheNumber(t *testing.T) {
	for _, c := range []struct {
		ids  []int64
		want string
	}{
		{[]int64{7}, "Die Liste 7 gibt es nicht."},
		{[]int64{7, 9}, "Diese Listen gibt es nicht: 7, 9."},
	} {
		if got := unknownIDs("Die Liste %d gibt es nicht.", "Diese Listen gibt es nicht: %s.", c.ids); got != c.want {
			t.Errorf("%v: %q, want %q", c.ids, got, c.want)
		}
	}
}
