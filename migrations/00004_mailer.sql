-- +goose Up

-- An account's own SMTP servers. The password is stored only sealed (AES-256-GCM
-- under a key derived from RUNDBRIEF_SECRET, see store/secret); '' means none.
CREATE TABLE smtp_servers (
    id               bigserial PRIMARY KEY,
    account_id       bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name             text NOT NULL,
    host             text NOT NULL,
    port             integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
    username         text NOT NULL DEFAULT '',
    password_sealed  text NOT NULL DEFAULT '',
    encryption       text NOT NULL CHECK (encryption IN ('none', 'starttls', 'tls')),
    from_email       text NOT NULL,
    from_name        text NOT NULL DEFAULT '',
    is_default       boolean NOT NULL DEFAULT false,
    -- Messages per second the send pipeline keeps to; 0 = unlimited.
    rate_per_second  integer NOT NULL DEFAULT 0 CHECK (rate_per_second >= 0),
    -- Outcome of the last connection test (POST /smtp-servers/{id}/test): a code
    -- such as 'ok' or 'auth_failed', '' when never tested.
    last_test_at     timestamptz,
    last_test_code   text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX smtp_servers_account_idx ON smtp_servers (account_id, id);
-- At most one default server per account.
CREATE UNIQUE INDEX smtp_servers_default_key ON smtp_servers (account_id) WHERE is_default;

-- Mail captured by the development outbox: with neither an own SMTP server nor
-- RUNDBRIEF_SMTP_URL, messages are stored here instead of being sent.
CREATE TABLE dev_outbox (
    id          bigserial PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    message_id  text NOT NULL,
    from_email  text NOT NULL,
    to_email    text NOT NULL,
    subject     text NOT NULL DEFAULT '',
    raw         bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dev_outbox_account_idx ON dev_outbox (account_id, id DESC);

-- +goose Down
DROP TABLE dev_outbox;
DROP TABLE smtp_servers;
