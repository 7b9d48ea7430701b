package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/jmoiron/sqlx"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/pgcluster"
)

// database is the open store plus how to release it.
type database struct {
	*store.DB
	url     string
	cluster *pgcluster.Cluster
}

// openDatabase connects to DATABASE_URL, or starts (or joins) the private cluster
// under the data dir, and applies pending migrations.
func openDatabase(ctx context.Context, cfg Config) (*database, error) {
	d := &database{url: cfg.DatabaseURL}
	if d.url == "" {
		// Room for two serve processes and the CLI, as the README advises for
		// a server of one's own.
		c, err := pgcluster.Start(ctx, filepath.Join(cfg.DataDir, "postgres"), pgcluster.Options{MaxConnections: privateClusterConns(cfg.DBMaxConns)})
		if err != nil {
			return nil, err
		}
		d.cluster = c
		if err := ensureDatabase(ctx, c.URL("postgres"), "rundbrief"); err != nil {
			_ = c.Stop()
			return nil, err
		}
		d.url = c.URL("rundbrief")
	}
	db, err := store.Open(ctx, d.url, store.MaxConns(cfg.DBMaxConns))
	if err != nil {
		d.close()
		return nil, err
	}
	d.DB = db
	if err := db.Migrate(ctx); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

func (d *database) close() {
	if d.DB != nil {
		_ = d.DB.Close()
	}
	if d.cluster != nil {
		_ = d.cluster.Stop()
	}
}

// privateClusterConns is the private cluster's max_connections for serve
// processes bounded to maxConns each: two of them and 20 for the CLI.
func privateClusterConns(maxConns int) int { return 2*maxConns + 20 }

// ensureDatabase creates database name if it is missing. Its one connection is
// closed before store.Open opens the process's bounded pools.
func ensureDatabase(ctx context.Context, adminURL, name string) error {
	db, err := sqlx.Open("postgres", adminURL)
	if err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var exists bool
	if err := db.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	if exists {
		return nil
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	return nil
}
