-- +goose NO TRANSACTION
-- +goose Up

-- The activity and API logs had two unique ways to a row: the primary key
-- (id) and the per-account index (account_id, id). Every read of either log
-- names the account (listing, one API log entry, an account's deletion), no
-- other table refers to their rows, and the primary key alone found none of
-- them. Each log grows by a row per mail sent and per API call, and each row
-- paid for both entries: now (account_id, id) is the primary key, and an
-- insert writes one index entry fewer (issue 26).
-- Built CONCURRENTLY, so that a large log stays writable meanwhile, which
-- cannot run in a transaction; every step may run again after an interrupted
-- attempt: an index an interrupted build left invalid is dropped first, the
-- key is swapped only while it still is the old one, and the new index a
-- repeated run builds once the key was swapped is dropped again. The swap
-- holds the table's lock only for the catalog change.
DROP INDEX CONCURRENTLY IF EXISTS activity_log_account_key;
CREATE UNIQUE INDEX CONCURRENTLY activity_log_account_key ON activity_log (account_id, id);
-- +goose StatementBegin
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = 'activity_log_pkey'::regclass AND indnatts = 1) THEN
    ALTER TABLE activity_log DROP CONSTRAINT activity_log_pkey,
      ADD CONSTRAINT activity_log_pkey PRIMARY KEY USING INDEX activity_log_account_key;
  END IF;
END $$;
-- +goose StatementEnd
DROP INDEX CONCURRENTLY IF EXISTS activity_log_account_key;
DROP INDEX CONCURRENTLY IF EXISTS activity_log_account_idx;

DROP INDEX CONCURRENTLY IF EXISTS api_log_account_key;
CREATE UNIQUE INDEX CONCURRENTLY api_log_account_key ON api_log (account_id, id);
-- +goose StatementBegin
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = 'api_log_pkey'::regclass AND indnatts = 1) THEN
    ALTER TABLE api_log DROP CONSTRAINT api_log_pkey,
      ADD CONSTRAINT api_log_pkey PRIMARY KEY USING INDEX api_log_account_key;
  END IF;
END $$;
-- +goose StatementEnd
DROP INDEX CONCURRENTLY IF EXISTS api_log_account_key;
DROP INDEX CONCURRENTLY IF EXISTS api_log_account_idx;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS activity_log_id_key;
CREATE UNIQUE INDEX CONCURRENTLY activity_log_id_key ON activity_log (id);
DROP INDEX CONCURRENTLY IF EXISTS activity_log_account_idx;
CREATE INDEX CONCURRENTLY activity_log_account_idx ON activity_log (account_id, id);
-- +goose StatementBegin
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = 'activity_log_pkey'::regclass AND indnatts = 2) THEN
    ALTER TABLE activity_log DROP CONSTRAINT activity_log_pkey,
      ADD CONSTRAINT activity_log_pkey PRIMARY KEY USING INDEX activity_log_id_key;
  END IF;
END $$;
-- +goose StatementEnd
DROP INDEX CONCURRENTLY IF EXISTS activity_log_id_key;

DROP INDEX CONCURRENTLY IF EXISTS api_log_id_key;
CREATE UNIQUE INDEX CONCURRENTLY api_log_id_key ON api_log (id);
DROP INDEX CONCURRENTLY IF EXISTS api_log_account_idx;
CREATE INDEX CONCURRENTLY api_log_account_idx ON api_log (account_id, id);
-- +goose StatementBegin
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = 'api_log_pkey'::regclass AND indnatts = 2) THEN
    ALTER TABLE api_log DROP CONSTRAINT api_log_pkey,
      ADD CONSTRAINT api_log_pkey PRIMARY KEY USING INDEX api_log_id_key;
  END IF;
END $$;
-- +goose StatementEnd
DROP INDEX CONCURRENTLY IF EXISTS api_log_id_key;
