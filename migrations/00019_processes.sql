-- +goose Up

-- The running `serve` processes (issue 18): each registers at start and renews
-- heartbeat_at from a worker; a row whose heartbeat is older than a few
-- intervals belongs to a process that is gone and is deleted by the next
-- process that registers or renews. settings holds the configuration every
-- process on one database must agree on, by variable name
-- (RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE, RUNDBRIEF_SMTP_ALLOW_PRIVATE): a process
-- whose settings differ from a live process's refuses to start.
--
-- No account_id: a process serves every account, and the rule it enforces holds
-- for the whole database, so this table is cluster-wide by nature. No account
-- ever reads or writes it; only `serve` does, about itself.
CREATE TABLE processes (
    id            text PRIMARY KEY,
    hostname      text NOT NULL,
    pid           integer NOT NULL,
    settings      jsonb NOT NULL,
    started_at    timestamptz NOT NULL DEFAULT now(),
    heartbeat_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE processes;
