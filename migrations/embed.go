// Package migrations holds the numbered SQL migrations of Rundbrief, embedded into
// the binary so that `rundbrief serve` and `rundbrief migrate` need no files on disk.
package migrations

import "embed"

// FS holds every migration file (goose format: `-- +goose Up` / `-- +goose Down`).
//
//go:embed *.sql
var FS embed.FS
