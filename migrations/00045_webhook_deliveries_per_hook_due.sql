-- +goose NO TRANSACTION
-- +goose Up

-- The due deliveries of each webhook in order, for the claim's way past
-- webhooks at their share (store/deliveries.go, claimDeliveriesPerHook): the
-- due index alone orders every webhook's deliveries by time, so a claim that
-- skips a busy webhook's backlog walked all of it (21,000 deliveries of three
-- busy webhooks: 5.9 ms for a claim that found nothing). Built CONCURRENTLY,
-- so that the deliveries stay writable meanwhile; every step may run again
-- after an interrupted attempt (an index an interrupted build left invalid is
-- dropped first).
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_hook_due_idx;
CREATE INDEX CONCURRENTLY webhook_deliveries_hook_due_idx ON webhook_deliveries (webhook_id, next_attempt_at, id)
  WHERE next_attempt_at IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_hook_due_idx;
