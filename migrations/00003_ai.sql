-- +goose Up

-- A debit names the API request that caused it, so that a charge can be traced to
-- its entry in the API log (and a support question to its request id).
ALTER TABLE ai_ledger ADD COLUMN request_id text NOT NULL DEFAULT '';

-- "Spent this month" sums an account's debits since the first of the month.
CREATE INDEX ai_ledger_account_created_idx ON ai_ledger (account_id, created_at);

-- +goose Down
DROP INDEX ai_ledger_account_created_idx;
ALTER TABLE ai_ledger DROP COLUMN request_id;
