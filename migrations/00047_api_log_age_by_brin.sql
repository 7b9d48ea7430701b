-- +goose NO TRANSACTION
-- +goose Up

-- The API log's B-tree on created_at served one statement: retention's
-- DELETE of the rows older than 90 days. The log grows by a row per API call
-- in the order of created_at, which a BRIN index summarises in a few pages
-- per gigabyte, as it does for the events; the B-tree cost every API call an
-- index entry and grew with the log (issue 26). Built CONCURRENTLY, so that
-- the log stays writable meanwhile; every step may run again after an
-- interrupted attempt (an index an interrupted build left invalid is dropped
-- first).
DROP INDEX CONCURRENTLY IF EXISTS api_log_created_brin;
CREATE INDEX CONCURRENTLY api_log_created_brin ON api_log USING brin (created_at);
DROP INDEX CONCURRENTLY IF EXISTS api_log_created_idx;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS api_log_created_idx;
CREATE INDEX CONCURRENTLY api_log_created_idx ON api_log (created_at);
DROP INDEX CONCURRENTLY IF EXISTS api_log_created_brin;
