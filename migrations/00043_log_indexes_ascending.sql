-- +goose NO TRANSACTION
-- +goose Up

-- activity_log_account_idx and api_log_account_idx were (account_id, id DESC).
-- A new row has the account's highest id, which in that order is the lowest
-- key of the account's range: every insert landed at the left edge of the
-- range, missed btree's fast path for the rightmost page, and split full
-- pages in halves that were never filled again. On 400,000 activities
-- written 25 at a time the index took 22 MB, against 12 MB in ascending
-- order (issue 26). Both logs grow by a row per mail sent and per API call;
-- "ORDER BY id DESC" reads the ascending index backwards just as fast.
-- Built CONCURRENTLY, so that a large log stays writable meanwhile, which
-- cannot run in a transaction; every step may run again after an interrupted
-- attempt (an index an interrupted build left invalid is dropped first).
DROP INDEX CONCURRENTLY IF EXISTS activity_log_account_asc_idx;
CREATE INDEX CONCURRENTLY activity_log_account_asc_idx ON activity_log (account_id, id);
DROP INDEX CONCURRENTLY IF EXISTS activity_log_account_idx;
ALTER INDEX activity_log_account_asc_idx RENAME TO activity_log_account_idx;

DROP INDEX CONCURRENTLY IF EXISTS api_log_account_asc_idx;
CREATE INDEX CONCURRENTLY api_log_account_asc_idx ON api_log (account_id, id);
DROP INDEX CONCURRENTLY IF EXISTS api_log_account_idx;
ALTER INDEX api_log_account_asc_idx RENAME TO api_log_account_idx;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS activity_log_account_desc_idx;
CREATE INDEX CONCURRENTLY activity_log_account_desc_idx ON activity_log (account_id, id DESC);
DROP INDEX CONCURRENTLY IF EXISTS activity_log_account_idx;
ALTER INDEX activity_log_account_desc_idx RENAME TO activity_log_account_idx;

DROP INDEX CONCURRENTLY IF EXISTS api_log_account_desc_idx;
CREATE INDEX CONCURRENTLY api_log_account_desc_idx ON api_log (account_id, id DESC);
DROP INDEX CONCURRENTLY IF EXISTS api_log_account_idx;
ALTER INDEX api_log_account_desc_idx RENAME TO api_log_account_idx;
