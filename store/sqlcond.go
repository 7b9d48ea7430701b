package store

import (
	"fmt"
	"strings"
)

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

// likeSearch is the condition that col contains q, with its arguments
// appended to args; a domain written in Unicode is also searched in its
// stored ASCII form (asciiSearch).
func likeSearch(col, q string, args []any) (string, []any) {
	args = append(args, likePattern(q))
	cond := fmt.Sprintf("%s LIKE $%d", col, len(args))
	if a := asciiSearch(q); a != "" {
		args = append(args, likePattern(a))
		cond = fmt.Sprintf("(%s OR %s LIKE $%d)", cond, col, len(args))
	}
	return cond, args
}

// likePattern makes a case-insensitive substring pattern of q.
func likePattern(q string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(strings.TrimSpace(q))) + "%"
}
