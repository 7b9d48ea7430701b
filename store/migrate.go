package store

import (
	"context"
	"fmt"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/rundbrief/rundbrief/migrations"
)

// Migrate applies every pending migration. Several processes starting at once are
// safe: goose serialises them with a PostgreSQL advisory lock.
func (db *DB) Migrate(ctx context.Context) error {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	p, err := db.migrationProvider(goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	return nil
}

// MigrationsPending reports whether any migration embedded in this binary is
// not applied to the database, a missing earlier one included (migrations may
// land out of order, see Migrate). It takes no lock, so a readiness probe never
// waits behind a running migration.
func (db *DB) MigrationsPending(ctx context.Context) (bool, error) {
	p, err := db.migrationProvider()
	if err != nil {
		return false, fmt.Errorf("store: migrations pending: %w", err)
	}
	pending, err := p.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("store: migrations pending: %w", err)
	}
	return pending, nil
}

// migrationProvider is goose over the SQL migrations of migrations/ and the
// few written in Go (emailFormMigration).
func (db *DB) migrationProvider(opts ...goose.ProviderOption) (*goose.Provider, error) {
	// Features are developed side by side, so a database may have a later migration
	// before an earlier-numbered one lands; apply the missing one rather than refuse.
	opts = append(opts, goose.WithAllowOutofOrder(true), goose.WithGoMigrations(emailFormMigration()))
	return goose.NewProvider(goose.DialectPostgres, db.DB.DB, migrations.FS, opts...)
}
