-- +goose Up

-- CSV imports of contacts (portal, issue 7). The uploaded file lives here as
-- bytea, not on a local disk: any serve process may run the job, and a job
-- survives the process that took the upload. The file is dropped (data NULL)
-- when the job ends; the counters and row errors stay as its summary.
--
-- A job moves uploaded (waiting for the column mapping) → queued → running →
-- done or failed. A worker claims a queued job, or a running one whose lease ran
-- out (its worker died), with FOR UPDATE SKIP LOCKED and renews the lease with
-- every batch. processed_rows is the resume point: it is written in the same
-- transaction as the batch's contacts, so a resumed job neither skips nor
-- repeats a row.
CREATE TABLE import_jobs (
    id              bigserial PRIMARY KEY,
    account_id      bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id         bigint,
    status          text NOT NULL DEFAULT 'uploaded'
                    CHECK (status IN ('uploaded', 'queued', 'running', 'done', 'failed')),
    filename        text NOT NULL,
    size_bytes      bigint NOT NULL,
    data            bytea,
    delimiter       text NOT NULL,
    header          jsonb NOT NULL,              -- the CSV's column names
    preview         jsonb NOT NULL DEFAULT '[]', -- the first rows, for the mapping step
    mapping         jsonb NOT NULL DEFAULT '[]', -- per column: "", a field name or "custom:<key>"
    list_ids        bigint[] NOT NULL DEFAULT '{}',
    tags            text[] NOT NULL DEFAULT '{}',
    total_rows      integer NOT NULL,
    processed_rows  integer NOT NULL DEFAULT 0,
    created_count   integer NOT NULL DEFAULT 0,
    updated_count   integer NOT NULL DEFAULT 0,
    failed_count    integer NOT NULL DEFAULT 0,
    errors          jsonb NOT NULL DEFAULT '[]', -- the first row errors: [{row, email, message}]
    error           text NOT NULL DEFAULT '',    -- why the whole job failed
    lease_owner     text,
    lease_until     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    started_at      timestamptz,
    finished_at     timestamptz
);
CREATE INDEX import_jobs_account_idx ON import_jobs (account_id, id DESC);
-- The worker's queue: only jobs that wait or run, so the claim stays cheap.
CREATE INDEX import_jobs_queue_idx ON import_jobs (id) WHERE status IN ('queued', 'running');

-- +goose Down
DROP TABLE import_jobs;
