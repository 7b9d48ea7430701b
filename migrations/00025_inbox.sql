-- +goose Up
-- The connected IMAP inbox (issue 21): one connection per account, the
-- synced messages, reply drafts, rules and the auto-reply log.

-- inbox_settings is the account's IMAP connection and its sync state. The
-- password is sealed like SMTP passwords (store/secret). The sync is claimed
-- across processes with a lease (sync_lease_until): whoever moves it into the
-- future owns the sync until it ends or the lease runs out.
CREATE TABLE inbox_settings (
    account_id       bigint PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
    host             text NOT NULL,
    port             int NOT NULL,
    username         text NOT NULL DEFAULT '',
    password_sealed  text NOT NULL DEFAULT '',
    encryption       text NOT NULL DEFAULT 'tls' CHECK (encryption IN ('tls', 'starttls', 'none')),
    folder           text NOT NULL DEFAULT 'INBOX',
    smtp_server_id   bigint REFERENCES smtp_servers(id) ON DELETE SET NULL,
    from_email       text NOT NULL DEFAULT '',
    from_name        text NOT NULL DEFAULT '',
    signature        text NOT NULL DEFAULT '',
    auto_draft       boolean NOT NULL DEFAULT false,
    uidvalidity      bigint NOT NULL DEFAULT 0,
    last_uid         bigint NOT NULL DEFAULT 0,
    last_sync_at     timestamptz,
    last_error       text NOT NULL DEFAULT '',
    next_sync_at     timestamptz NOT NULL DEFAULT now(),
    sync_lease_until timestamptz,
    sync_lease_owner text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inbox_settings_due_idx ON inbox_settings (next_sync_at);

-- inbox_messages holds each message once: per account by its place on the
-- server (folder, UIDVALIDITY, UID) and by its Message-ID. search is the
-- lower-cased text GET /inbox/messages?q= matches (trigram index).
CREATE TABLE inbox_messages (
    id               bigserial PRIMARY KEY,
    account_id       bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    folder           text NOT NULL,
    uidvalidity      bigint NOT NULL,
    uid              bigint NOT NULL,
    message_id       text,
    in_reply_to      text NOT NULL DEFAULT '',
    refs             text[] NOT NULL DEFAULT '{}',
    thread_key       text NOT NULL DEFAULT '',
    from_email       text NOT NULL DEFAULT '',
    from_name        text NOT NULL DEFAULT '',
    to_addrs         jsonb NOT NULL DEFAULT '[]',
    subject          text NOT NULL DEFAULT '',
    text_body        text NOT NULL DEFAULT '',
    html_body        text NOT NULL DEFAULT '',
    attachments      jsonb NOT NULL DEFAULT '[]',
    automated        boolean NOT NULL DEFAULT false,
    received_at      timestamptz NOT NULL,
    read             boolean NOT NULL DEFAULT false,
    archived         boolean NOT NULL DEFAULT false,
    labels           text[] NOT NULL DEFAULT '{}',
    contact_id       bigint REFERENCES contacts(id) ON DELETE SET NULL,
    replied_at       timestamptz,
    first_replied_at timestamptz,
    seen_synced      boolean NOT NULL DEFAULT true,
    search           text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account_id, folder, uidvalidity, uid)
);
CREATE UNIQUE INDEX inbox_messages_msgid_idx ON inbox_messages (account_id, message_id) WHERE message_id IS NOT NULL;
CREATE INDEX inbox_messages_list_idx ON inbox_messages (account_id, received_at DESC, id DESC);
CREATE INDEX inbox_messages_unread_idx ON inbox_messages (account_id, received_at DESC, id DESC) WHERE NOT read AND NOT archived;
CREATE INDEX inbox_messages_open_idx ON inbox_messages (account_id, received_at DESC, id DESC) WHERE NOT archived;
CREATE INDEX inbox_messages_labels_idx ON inbox_messages USING gin (labels);
CREATE INDEX inbox_messages_thread_idx ON inbox_messages (account_id, thread_key);
CREATE INDEX inbox_messages_search_idx ON inbox_messages USING gin (search gin_trgm_ops);
CREATE INDEX inbox_messages_seen_idx ON inbox_messages (account_id) WHERE NOT seen_synced;

-- inbox_replies are the replies sent from the inbox (user, ai, rule).
CREATE TABLE inbox_replies (
    id          bigserial PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    message_id  bigint NOT NULL REFERENCES inbox_messages(id) ON DELETE CASCADE,
    to_email    text NOT NULL,
    subject     text NOT NULL,
    text_body   text NOT NULL DEFAULT '',
    html_body   text NOT NULL DEFAULT '',
    source      text NOT NULL CHECK (source IN ('user', 'ai', 'rule')),
    mail_id     text NOT NULL DEFAULT '',
    sent_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inbox_replies_message_idx ON inbox_replies (account_id, message_id);

-- inbox_auto_replies is the loop guard of rule replies: one per sender and
-- day (Europe/Berlin), whatever process runs the rule.
CREATE TABLE inbox_auto_replies (
    account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    email      text NOT NULL,
    day        date NOT NULL,
    PRIMARY KEY (account_id, email, day)
);

CREATE TABLE inbox_drafts (
    id          bigserial PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    message_id  bigint NOT NULL REFERENCES inbox_messages(id) ON DELETE CASCADE,
    text        text NOT NULL,
    status      text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'discarded')),
    cost        bigint NOT NULL DEFAULT 0, -- store.Money, 0.0001 EUR
    model       text NOT NULL DEFAULT '',
    reply_id    bigint REFERENCES inbox_replies(id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    decided_at  timestamptz
);
CREATE INDEX inbox_drafts_account_idx ON inbox_drafts (account_id, status, id DESC);

CREATE TABLE inbox_rules (
    id               bigserial PRIMARY KEY,
    account_id       bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    position         int NOT NULL,
    name             text NOT NULL,
    from_contains    text NOT NULL DEFAULT '',
    subject_contains text NOT NULL DEFAULT '',
    body_contains    text NOT NULL DEFAULT '',
    action           text NOT NULL CHECK (action IN ('label', 'archive', 'mark_read', 'reply', 'ai_draft')),
    value            text NOT NULL DEFAULT '',
    text             text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inbox_rules_account_idx ON inbox_rules (account_id, position, id);

-- inbox_pending holds new messages whose rules and auto draft have yet to
-- run: inserted with the message, deleted by whichever process runs them
-- (FOR UPDATE SKIP LOCKED), so each message is processed once.
CREATE TABLE inbox_pending (
    message_id bigint PRIMARY KEY REFERENCES inbox_messages(id) ON DELETE CASCADE,
    account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    attempts   int NOT NULL DEFAULT 0,
    run_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inbox_pending_run_idx ON inbox_pending (run_at);

-- +goose Down
DROP TABLE inbox_pending;
DROP TABLE inbox_rules;
DROP TABLE inbox_drafts;
DROP TABLE inbox_auto_replies;
DROP TABLE inbox_replies;
DROP TABLE inbox_messages;
DROP TABLE inbox_settings;
