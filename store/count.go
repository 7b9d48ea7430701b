package store

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// countUpTo counts the rows of `FROM from WHERE cond`, but stops after limit
// of them: an exact count walks every match, which for a long log or a broad
// filter costs more than the page it heads. more reports that the count
// stopped (there are more than limit rows); n is then limit. from and cond
// are SQL of the caller (never user input); args are cond's arguments.
func countUpTo(ctx context.Context, q sqlx.QueryerContext, from, cond string, args []any, limit int) (n int, more bool, err error) {
	query := fmt.Sprintf(`SELECT count(*) FROM (SELECT 1 FROM %s WHERE %s LIMIT %d) x`, from, cond, limit+1)
	if err := sqlx.GetContext(ctx, q, &n, query, args...); err != nil {
		return 0, false, err
	}
	if n > limit {
		return limit, true, nil
	}
	return n, false, nil
}
