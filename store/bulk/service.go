// Package bulk is the home of bulk actions on contacts (add or remove a tag,
// join or leave a list, unsubscribe, delete) on chosen rows or on every match
// of a filter or segment: its Service is the one entry the API and the portal
// call to start a job, and its Worker runs queued jobs in any serve process.
// Jobs and their progress live in PostgreSQL (store/bulk.go); each chunk is
// applied through the single-contact write paths inside the transaction that
// advances the job, so it emits the same events and activities.
package bulk

import (
	"context"

	"github.com/rundbrief/rundbrief/store"
)

// Service starts bulk jobs and reports their progress.
type Service struct {
	db *store.DB
}

// New returns the service.
func New(db *store.DB) *Service { return &Service{db: db} }

// Start queues a bulk action; the job is returned at once (status queued).
func (s *Service) Start(ctx context.Context, accountID int64, actor store.Actor, in store.BulkInput) (store.BulkJob, error) {
	return s.db.CreateBulkJob(ctx, accountID, actor, in)
}

// Job returns a job with its progress.
func (s *Service) Job(ctx context.Context, accountID, id int64) (store.BulkJob, error) {
	return s.db.BulkJob(ctx, accountID, id)
}
