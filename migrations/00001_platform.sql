-- +goose Up

-- Plans are the operator's catalogue, shared by all accounts; every other table
-- belongs to exactly one account.
CREATE TABLE plans (
    name                text PRIMARY KEY,
    features            text[] NOT NULL DEFAULT '{}',
    max_contacts        bigint NOT NULL,
    max_lists           integer NOT NULL,
    max_sends_per_day   bigint NOT NULL,
    max_storage_bytes   bigint NOT NULL,
    max_webhooks        integer NOT NULL DEFAULT 20,
    max_api_keys        integer NOT NULL DEFAULT 25,
    upgrade_url         text NOT NULL DEFAULT ''
);

INSERT INTO plans (name, features, max_contacts, max_lists, max_sends_per_day, max_storage_bytes) VALUES
    ('free',     '{}',                                                              500,       3,     500,        50000000),
    ('starter',  '{api}',                                                           5000,      20,    10000,      500000000),
    ('pro',      '{api,ab_tests,ai,inbox,sequences}',                               50000,     100,   100000,     5000000000),
    ('business', '{api,ab_tests,ai,inbox,sequences,integrations,appointments}',     1000000,   1000,  2000000,    50000000000);

CREATE TABLE accounts (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL,
    plan        text NOT NULL REFERENCES plans (name),
    blocked_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id             bigserial PRIMARY KEY,
    account_id     bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email          text NOT NULL,
    name           text NOT NULL DEFAULT '',
    role           text NOT NULL DEFAULT 'owner' CHECK (role IN ('owner', 'admin', 'member')),
    password_hash  text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);
-- A person signs in with an email address, so it names one user across all accounts.
CREATE UNIQUE INDEX users_email_key ON users (lower(email));
CREATE INDEX users_account_idx ON users (account_id);

CREATE TABLE api_keys (
    id               bigserial PRIMARY KEY,
    account_id       bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name             text NOT NULL DEFAULT '',
    prefix           text NOT NULL,
    key_hash         bytea NOT NULL,
    scopes           text[] NOT NULL DEFAULT '{*}',
    allowed_ips      text[] NOT NULL DEFAULT '{}',
    allowed_origins  text[] NOT NULL DEFAULT '{}',
    rate_limit       integer CHECK (rate_limit IS NULL OR rate_limit > 0),
    renewed_from     bigint REFERENCES api_keys (id) ON DELETE SET NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    last_used_at     timestamptz,
    revoked_at       timestamptz
);
CREATE UNIQUE INDEX api_keys_hash_key ON api_keys (key_hash);
CREATE INDEX api_keys_account_idx ON api_keys (account_id, id);

-- One row per (account, key): the stored answer of an idempotent POST. state is
-- 'running' while the first request executes; expires_at bounds the 24 h replay window.
CREATE TABLE idempotency_keys (
    account_id        bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key               text NOT NULL,
    request_hash      bytea NOT NULL,
    state             text NOT NULL CHECK (state IN ('running', 'done')),
    response_status   integer,
    response_headers  jsonb,
    response_body     bytea,
    locked_until      timestamptz NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    expires_at        timestamptz NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);

-- Fixed one-minute windows per bucket (an API key, or an account-wide budget such as AI).
CREATE TABLE rate_counters (
    account_id    bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    bucket        text NOT NULL,
    window_start  timestamptz NOT NULL,
    count         integer NOT NULL,
    PRIMARY KEY (bucket, window_start)
);
CREATE INDEX rate_counters_window_idx ON rate_counters (window_start);

CREATE TABLE api_log (
    id           bigserial PRIMARY KEY,
    account_id   bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key_id       bigint,
    request_id   text NOT NULL,
    method       text NOT NULL,
    path         text NOT NULL,
    status       integer NOT NULL,
    ip           text NOT NULL DEFAULT '',
    origin       text NOT NULL DEFAULT '',
    user_agent   text NOT NULL DEFAULT '',
    duration_us  bigint NOT NULL,
    created_at   timestamptz NOT NULL
);
CREATE INDEX api_log_account_idx ON api_log (account_id, id DESC);
CREATE INDEX api_log_created_idx ON api_log (created_at);

-- Usage the plan limits are checked against, kept current by the features that
-- change it (in the same transaction), so that a limit check never counts rows.
CREATE TABLE account_usage (
    account_id     bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    contacts       bigint NOT NULL DEFAULT 0,
    lists          integer NOT NULL DEFAULT 0,
    storage_bytes  bigint NOT NULL DEFAULT 0,
    webhooks       integer NOT NULL DEFAULT 0
);

CREATE TABLE send_counters (
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    day         date NOT NULL,
    count       bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, day)
);

-- AI credit in EUR: positive rows are top-ups, negative rows are debits.
CREATE TABLE ai_ledger (
    id             bigserial PRIMARY KEY,
    account_id     bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    amount_eur     numeric(14, 4) NOT NULL,
    kind           text NOT NULL CHECK (kind IN ('topup', 'debit')),
    action         text NOT NULL DEFAULT '',
    model          text NOT NULL DEFAULT '',
    provider       text NOT NULL DEFAULT '',
    tokens_in      integer NOT NULL DEFAULT 0,
    tokens_out     integer NOT NULL DEFAULT 0,
    fallback_used  boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ai_ledger_account_idx ON ai_ledger (account_id, id DESC);

-- +goose Down
DROP TABLE ai_ledger;
DROP TABLE send_counters;
DROP TABLE account_usage;
DROP TABLE api_log;
DROP TABLE rate_counters;
DROP TABLE idempotency_keys;
DROP TABLE api_keys;
DROP TABLE users;
DROP TABLE accounts;
DROP TABLE plans;
