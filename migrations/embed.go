// Package migrations holds the numbered SQL migrations of Rundbrief, embedded into
// the binary so that `rundbrief serve` and `rundbrief migrate` need no files on disk.
//
// Version 20 is taken by a migration written in Go (store/email_migrate.go: the
// IDNA form of stored addresses has no SQL counterpart); the next SQL migration
// is 00021.
package migrations

import "embed"

// FS holds every migration file (goose format: `-- +goose Up` / `-- +goose Down`).
//
//go:embed *.sql
var FS embed.FS
