// Package imports is the home of the CSV import of contacts: its Service is
// the one entry the portal calls to upload a file and start a job, and its
// Worker runs queued jobs in any serve process. Jobs, files and progress live
// in PostgreSQL (store/imports.go), and each batch is applied with the rules
// of POST /contacts/bulk inside the transaction that advances the job.
package imports

import (
	"context"

	"github.com/rundbrief/rundbrief/store"
)

// Service uploads files and starts their jobs.
type Service struct {
	db *store.DB
}

// New returns the service.
func New(db *store.DB) *Service { return &Service{db: db} }

// Upload stores an uploaded file as a job waiting for its column mapping
// (a ValidationError on "file" when it is no CSV the import can read).
func (s *Service) Upload(ctx context.Context, accountID, userID int64, filename string, data []byte) (store.ImportJob, error) {
	return s.db.CreateImport(ctx, accountID, userID, filename, data)
}

// Start queues an uploaded job with its column mapping, lists and tags.
func (s *Service) Start(ctx context.Context, accountID, id int64, settings store.ImportSettings) (store.ImportJob, error) {
	return s.db.StartImport(ctx, accountID, id, settings)
}
