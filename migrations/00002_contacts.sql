-- +goose Up

-- Contacts, lists, blocked addresses, the event outbox, the activity log and the
-- system mail queue (issue 3).
--
-- Tags are a text[] on the contact with a GIN index rather than a tags table: a
-- contact is always read with its tags, adding tags is an array union inside the
-- one UPDATE that changes the contact anyway, and the tag filter (tags @> '{x}')
-- is served by the GIN index. GET /tags aggregates on the fly, the price of this
-- choice (no per-tag counter rows that every upsert would have to lock).
--
-- updated_at and created_at are whole seconds (timestamptz(0)) because the API
-- shows whole seconds: a client can only page through updated_after with the
-- (updated_at, id) key it has seen, so the stored key must be exactly that one.
CREATE TABLE contacts (
    id                bigserial PRIMARY KEY,
    account_id        bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email             text NOT NULL,
    first_name        text NOT NULL DEFAULT '',
    last_name         text NOT NULL DEFAULT '',
    address           text NOT NULL DEFAULT '',
    zip               text NOT NULL DEFAULT '',
    city              text NOT NULL DEFAULT '',
    phone             text NOT NULL DEFAULT '',
    note              text NOT NULL DEFAULT '',
    tags              text[] NOT NULL DEFAULT '{}',
    status            text NOT NULL DEFAULT 'subscribed' CHECK (status IN ('subscribed', 'unsubscribed', 'pending')),
    source            text NOT NULL DEFAULT 'api',
    custom_fields     jsonb NOT NULL DEFAULT '{}',
    doi_confirmed_at  timestamptz(0),
    unsubscribed_at   timestamptz(0),
    created_at        timestamptz(0) NOT NULL DEFAULT now(),
    updated_at        timestamptz(0) NOT NULL DEFAULT now()
);
-- The address is the contact's key within an account (stored trimmed and lower-case);
-- the index also serves sort=email_asc and the upsert's ON CONFLICT.
CREATE UNIQUE INDEX contacts_email_key ON contacts (account_id, email);
-- Keyset-friendly indexes for every sort (both directions scan the same index) with
-- the id tie-break, so that a page is stable and deep pages can be counted off
-- inside the index (index-only scans).
CREATE INDEX contacts_updated_idx ON contacts (account_id, updated_at, id);
CREATE INDEX contacts_created_idx ON contacts (account_id, created_at, id);
CREATE INDEX contacts_tags_idx ON contacts USING gin (tags);

CREATE TABLE lists (
    id             bigserial PRIMARY KEY,
    account_id     bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name           text NOT NULL,
    color          text NOT NULL DEFAULT '#4f46e5',
    description    text NOT NULL DEFAULT '',
    double_opt_in  boolean NOT NULL DEFAULT false,
    -- Kept current in the same transaction as every membership change, so that the
    -- member listing's total never counts rows.
    member_count   bigint NOT NULL DEFAULT 0,
    created_at     timestamptz(0) NOT NULL DEFAULT now(),
    updated_at     timestamptz(0) NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX lists_name_key ON lists (account_id, lower(name));
CREATE INDEX lists_account_idx ON lists (account_id, id);

-- account_id has no foreign key of its own: the list's and the contact's already
-- tie the row to its account (and delete it with them), and every foreign-key
-- check is a query per inserted row.
CREATE TABLE list_members (
    list_id     bigint NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    contact_id  bigint NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    account_id  bigint NOT NULL,
    created_at  timestamptz(0) NOT NULL DEFAULT now(),
    PRIMARY KEY (list_id, contact_id)
);
CREATE INDEX list_members_contact_idx ON list_members (contact_id, list_id);

-- The addresses an account must never mail again. Every send path asks
-- store.BlockedAddresses; an unsubscribe always lands here.
CREATE TABLE blocked_addresses (
    account_id   bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email        text NOT NULL,
    source       text NOT NULL,
    reason       text,
    campaign_id  bigint,
    created_at   timestamptz(0) NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, email)
);
CREATE INDEX blocked_addresses_created_idx ON blocked_addresses (account_id, created_at DESC, email);

-- The event outbox: every change writes its events here in its own transaction;
-- the webhook worker delivers rows with dispatched_at NULL and then sets it.
-- payload is the event's data object exactly as the webhook sends it.
-- The outbox and the activity log are append-only and written in bulk (an import
-- of 1000 contacts onto a list writes 2000 events), so they carry no foreign key
-- (its per-row check cost as much as the insert itself) and no index a write
-- does not need: public_id is unique by construction (143 random bits) and looked
-- up by nobody; rows are found by id.
CREATE TABLE events (
    id             bigserial PRIMARY KEY,
    account_id     bigint NOT NULL,
    public_id      text NOT NULL,
    name           text NOT NULL,
    payload        jsonb NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    dispatched_at  timestamptz
);
CREATE INDEX events_pending_idx ON events (id) WHERE dispatched_at IS NULL;
-- For the retention purge of dispatched events; maintained only when dispatched.
CREATE INDEX events_dispatched_idx ON events (dispatched_at) WHERE dispatched_at IS NOT NULL;

-- Who did what: the account's activity log (GET /logs/activity). A contact's
-- activities (GET /contacts/{id}/activities) are its rows here (object_type
-- 'contact'): one write per change serves both views, so they cannot disagree.
CREATE TABLE activity_log (
    id           bigserial PRIMARY KEY,
    account_id   bigint NOT NULL,
    actor_type   text NOT NULL CHECK (actor_type IN ('key', 'user', 'system', 'public')),
    actor_id     bigint,
    action       text NOT NULL,
    object_type  text NOT NULL,
    object_id    bigint,
    details      jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX activity_log_account_idx ON activity_log (account_id, id DESC);
CREATE INDEX activity_log_object_idx ON activity_log (account_id, object_type, object_id, id DESC);

-- Mail the service itself sends on an account's behalf (double opt-in
-- confirmations, later notifications). The mailer sends rows with sent_at NULL;
-- until then they are visible in the development outbox. body_text and body_html
-- contain {{confirm_url}}, which the sender fills with RUNDBRIEF_BASE_URL + link_path.
CREATE TABLE system_mails (
    id          bigserial PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    contact_id  bigint REFERENCES contacts (id) ON DELETE SET NULL,
    kind        text NOT NULL,
    to_email    text NOT NULL,
    subject     text NOT NULL,
    body_text   text NOT NULL,
    body_html   text NOT NULL DEFAULT '',
    link_path   text NOT NULL DEFAULT '',
    attempts    integer NOT NULL DEFAULT 0,
    last_error  text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    sent_at     timestamptz
);
CREATE INDEX system_mails_pending_idx ON system_mails (id) WHERE sent_at IS NULL;
CREATE INDEX system_mails_account_idx ON system_mails (account_id, id DESC);

-- Double opt-in confirmation tokens. Only a SHA-256 of the token is stored; the
-- token itself is in the confirmation link of the system mail.
CREATE TABLE doi_tokens (
    token_hash  bytea PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    contact_id  bigint NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX doi_tokens_contact_idx ON doi_tokens (contact_id);
CREATE INDEX doi_tokens_expires_idx ON doi_tokens (expires_at);

-- +goose Down
DROP TABLE doi_tokens;
DROP TABLE system_mails;
DROP TABLE activity_log;
DROP TABLE events;
DROP TABLE blocked_addresses;
DROP TABLE list_members;
DROP TABLE lists;
DROP TABLE contacts;
