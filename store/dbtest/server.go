package dbtest

import (
	"context"
	"os"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/pgcluster"
)

// Server is a PostgreSQL server of one test's own, migrated, for tests that take
// the database away from a running process and bring it back.
type Server struct {
	tb  testing.TB
	dir string
	c   *pgcluster.Cluster
	// DB is the store over the server's postgres database.
	DB *store.DB
}

// OwnServer starts a throwaway server and opens and migrates its database; the
// test's cleanup closes and removes both.
func OwnServer(tb testing.TB) *Server {
	tb.Helper()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "rbserver")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // PostgreSQL may run as another user (root tests)
		tb.Fatal(err)
	}
	s := &Server{tb: tb, dir: dir}
	s.Start()
	tb.Cleanup(func() { _ = s.c.Stop() })
	db, err := store.Open(ctx, s.c.URL("postgres"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	if err := db.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	s.DB = db
	return s
}

// Stop stops the server; the DB's connections fail until Start.
func (s *Server) Stop() {
	s.tb.Helper()
	if err := s.c.Stop(); err != nil {
		s.tb.Fatal(err)
	}
}

// Start starts the server (again) on the same data directory and socket.
func (s *Server) Start() {
	s.tb.Helper()
	c, err := pgcluster.Start(context.Background(), s.dir, pgcluster.Options{Throwaway: true})
	if err != nil {
		s.tb.Fatal(err)
	}
	s.c = c
}
