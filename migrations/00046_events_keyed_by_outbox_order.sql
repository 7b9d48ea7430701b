-- +goose NO TRANSACTION
-- +goose Up

-- The events outbox had two unique ways to a row: the primary key (id) and
-- the consumers' order (account_id, xid, id), which every read of the outbox
-- walks (cursors, windows, lag, purge). No table refers to events, no query
-- finds one by its id alone, and retention reads the BRIN index on
-- created_at. An event is written for every mail sent and every contact
-- written, and each paid for both entries: now the consumers' order is the
-- primary key, and an event writes one index entry fewer (issue 26).
-- Built CONCURRENTLY, so that the outbox stays writable meanwhile; every step
-- may run again after an interrupted attempt, as in 00044: an index an
-- interrupted build left invalid is dropped first, the key is swapped only
-- while it still is the old one, and the new index a repeated run builds once
-- the key was swapped is dropped again. The swap holds the table's lock only
-- for the catalog change.
DROP INDEX CONCURRENTLY IF EXISTS events_outbox_key;
CREATE UNIQUE INDEX CONCURRENTLY events_outbox_key ON events (account_id, xid, id);
-- +goose StatementBegin
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = 'events_pkey'::regclass AND indnatts = 1) THEN
    ALTER TABLE events DROP CONSTRAINT events_pkey,
      ADD CONSTRAINT events_pkey PRIMARY KEY USING INDEX events_outbox_key;
  END IF;
END $$;
-- +goose StatementEnd
DROP INDEX CONCURRENTLY IF EXISTS events_outbox_key;
DROP INDEX CONCURRENTLY IF EXISTS events_outbox_idx;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS events_id_key;
CREATE UNIQUE INDEX CONCURRENTLY events_id_key ON events (id);
DROP INDEX CONCURRENTLY IF EXISTS events_outbox_idx;
CREATE INDEX CONCURRENTLY events_outbox_idx ON events (account_id, xid, id);
-- +goose StatementBegin
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = 'events_pkey'::regclass AND indnatts = 3) THEN
    ALTER TABLE events DROP CONSTRAINT events_pkey,
      ADD CONSTRAINT events_pkey PRIMARY KEY USING INDEX events_id_key;
  END IF;
END $$;
-- +goose StatementEnd
DROP INDEX CONCURRENTLY IF EXISTS events_id_key;
