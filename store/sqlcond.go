package store

import "fmt"

// addCond appends a condition to a WHERE clause being built: cond is a
// format whose verbs (%d, or %[n]d for one used twice) number its arguments
// v, which are appended to args after the ones before.
func addCond(where []string, args []any, cond string, v ...any) ([]string, []any) {
	n := make([]any, len(v))
	for i, x := range v {
		args = append(args, x)
		n[i] = len(args)
	}
	return append(where, fmt.Sprintf(cond, n...)), args
}
