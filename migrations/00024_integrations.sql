-- +goose Up

-- Integrations (issue 23): payment providers whose calls to
-- POST /hooks/{provider}/{token} turn buyers into contacts.
--
-- The provider's signing secret (Stripe's endpoint secret, Digistore24's IPN
-- passphrase, CopeCart's IPN secret, PayPal's webhook id, the generic HMAC key)
-- must be readable to verify, so it is sealed with the secret box (store/secret)
-- and bound to its account and integration; '' while none is set, and then
-- every inbound call is refused.
CREATE TABLE integrations (
    id             bigserial PRIMARY KEY,
    account_id     bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    provider       text NOT NULL CHECK (provider IN ('stripe', 'digistore24', 'copecart', 'paypal', 'generic')),
    name           text NOT NULL,
    -- The public token of the inbound URL: the one lookup across accounts.
    token          text NOT NULL,
    secret_sealed  text NOT NULL DEFAULT '',
    list_ids       bigint[] NOT NULL DEFAULT '{}',
    tags           text[] NOT NULL DEFAULT '{}',
    active         boolean NOT NULL DEFAULT true,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX integrations_token_key ON integrations (token);
CREATE INDEX integrations_account_idx ON integrations (account_id, id);

-- One row per order item. The unique key is what makes a provider's retries,
-- replays and concurrent duplicates create nothing more: the first
-- transaction's insert wins, the others find the row (ON CONFLICT DO NOTHING,
-- which waits for an uncommitted competitor) and record a duplicate.
CREATE TABLE integration_orders (
    id              bigserial PRIMARY KEY,
    account_id      bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    integration_id  bigint NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
    provider        text NOT NULL,
    order_id        text NOT NULL,
    product         text NOT NULL,
    amount          numeric(18, 4) NOT NULL DEFAULT 0,
    currency        text NOT NULL DEFAULT '',
    email           text NOT NULL,
    contact_id      bigint REFERENCES contacts (id) ON DELETE SET NULL,
    refunded_at     timestamptz,
    created_at      timestamptz NOT NULL
);
CREATE UNIQUE INDEX integration_orders_item_key ON integration_orders (integration_id, order_id, product);
CREATE INDEX integration_orders_account_idx ON integration_orders (account_id, integration_id, id DESC);

-- Every inbound call, verified or not, with the raw body for debugging; kept
-- 90 days (store.Purge).
CREATE TABLE integration_events (
    id                 bigserial PRIMARY KEY,
    account_id         bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    integration_id     bigint NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
    status             text NOT NULL CHECK (status IN ('processed', 'duplicate', 'ignored', 'rejected')),
    event_type         text NOT NULL DEFAULT '',
    provider_event_id  text NOT NULL DEFAULT '',
    order_id           text NOT NULL DEFAULT '',
    email              text NOT NULL DEFAULT '',
    error              text NOT NULL DEFAULT '',
    payload            text NOT NULL DEFAULT '',
    content_type       text NOT NULL DEFAULT '',
    received_at        timestamptz NOT NULL
);
CREATE INDEX integration_events_list_idx ON integration_events (account_id, integration_id, id DESC);
CREATE INDEX integration_events_received_idx ON integration_events (received_at);

-- PayPal's signing certificates, fetched only from PayPal's own hosts, cached
-- per account and URL so that every serve process shares one fetch (and a
-- bounded number of rows: one per certificate URL an account's calls named).
CREATE TABLE integration_certs (
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    url         text NOT NULL,
    pem         text NOT NULL,
    fetched_at  timestamptz NOT NULL,
    PRIMARY KEY (account_id, url)
);

-- +goose Down
DROP TABLE integration_certs;
DROP TABLE integration_events;
DROP TABLE integration_orders;
DROP TABLE integrations;
