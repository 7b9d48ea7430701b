-- +goose Up

-- Webhooks (issue 5): an account's subscriptions, one delivery per (event,
-- webhook), and every attempt of a delivery.
--
-- The signing secret must be readable to sign, so it is stored sealed with the
-- secret box (store/secret), never hashed, and bound to its account and webhook.
-- After a rotation the previous secret keeps signing until
-- previous_secret_expires_at ('' and NULL when there is none).
CREATE TABLE webhooks (
    id                          bigserial PRIMARY KEY,
    account_id                  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    url                         text NOT NULL,
    -- Event names, or '{*}' for all of them.
    events                      text[] NOT NULL,
    description                 text NOT NULL DEFAULT '',
    status                      text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
    secret_sealed               text NOT NULL,
    previous_secret_sealed      text NOT NULL DEFAULT '',
    previous_secret_expires_at  timestamptz,
    -- Failed attempts since the last success; 20 pause the webhook.
    consecutive_failures        integer NOT NULL DEFAULT 0,
    paused_at                   timestamptz,
    -- Why it is paused: 'manual', 'failures' or 'gone' (410); '' while active.
    pause_reason                text NOT NULL DEFAULT '',
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_account_idx ON webhooks (account_id, id);

-- One row per event and webhook (and per test send). payload is the exact body
-- that is POSTed on every attempt. next_attempt_at is set while an automatic
-- attempt is outstanding; locked_until is the lease of the process that is
-- attempting it right now (claimed with FOR UPDATE SKIP LOCKED), so that several
-- processes deliver each row once and a crashed process's rows are taken over
-- when the lease ends. event_id is the outbox row the delivery came from; the
-- outbox row itself is purged once dispatched, so it is no foreign key.
CREATE TABLE webhook_deliveries (
    id                bigserial PRIMARY KEY,
    public_id         text NOT NULL,
    account_id        bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    webhook_id        bigint NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id          bigint,
    event_public_id   text NOT NULL,
    event             text NOT NULL,
    payload           text NOT NULL,
    test              boolean NOT NULL DEFAULT false,
    status            text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed', 'retrying')),
    attempts          integer NOT NULL DEFAULT 0,
    next_attempt_at   timestamptz,
    locked_until      timestamptz,
    last_status_code  integer,
    last_error        text NOT NULL DEFAULT '',
    response_excerpt  text NOT NULL DEFAULT '',
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL
) WITH (fillfactor = 70);
CREATE UNIQUE INDEX webhook_deliveries_public_id_key ON webhook_deliveries (public_id);
-- Fan-out creates at most one delivery per event and webhook, even if it ran twice.
CREATE UNIQUE INDEX webhook_deliveries_event_key ON webhook_deliveries (webhook_id, event_id) WHERE event_id IS NOT NULL;
-- The worker's queue: only deliveries with an outstanding attempt.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at, id) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (account_id, webhook_id, id DESC);
CREATE INDEX webhook_deliveries_created_idx ON webhook_deliveries (created_at);

-- Every attempt of a delivery, in order (attempt counts from 1).
CREATE TABLE webhook_attempts (
    id                bigserial PRIMARY KEY,
    delivery_id       bigint NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    account_id        bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    attempt           integer NOT NULL,
    status_code       integer,
    error             text NOT NULL DEFAULT '',
    response_excerpt  text NOT NULL DEFAULT '',
    duration_ms       integer NOT NULL DEFAULT 0,
    attempted_at      timestamptz NOT NULL
);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, id);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
