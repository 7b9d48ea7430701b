package store

import (
	"context"
	"database/sql"

	"github.com/lib/pq"
)

// WarmedStatements are statements that Warm runs on every connection:
// both statements of an optimistic purchase and of an optimistic contact
// write, and the look-ups of an integration and of a contact.
var WarmedStatements = []string{purchaseReadSQL, purchaseSQL, readUnlockedSQL, writePlainSQL,
	selectIntegrationByToken, selectContactsByID}

// PlannedOnEachConn holds every connection the contact write path's pool
// may open, all at once (the pool opens those it lacks), and reports for each
// how many of queries its session has prepared and run at least once.
func (db *DB) PlannedOnEachConn(ctx context.Context, queries []string) ([]int, error) {
	conns := make([]*sql.Conn, 0, db.generic.Stats().MaxOpenConnections)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	out := make([]int, cap(conns))
	for k := range out {
		c, err := db.generic.Conn(ctx)
		if err != nil {
			return nil, err
		}
		conns = append(conns, c)
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM pg_prepared_statements
WHERE statement = ANY ($1) AND generic_plans + custom_plans > 0`, pq.StringArray(queries)).Scan(&out[k]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
