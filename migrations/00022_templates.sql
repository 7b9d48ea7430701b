-- +goose Up

-- Templates, attachments and the sender's identity (issue 19).
--
-- A template whose html holds {{content}} / {{inhalt}} is a layout: mails that
-- name it by template_key are rendered into its slot at send time. Any other
-- template is a starting point copied into a mail when it is created.
CREATE TABLE templates (
    id          bigserial PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key         text NOT NULL CHECK (key ~ '^[a-z0-9_-]{1,64}$'),
    name        text NOT NULL,
    subject     text NOT NULL DEFAULT '',
    preheader   text NOT NULL DEFAULT '',
    html        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account_id, key)
);

-- The sender's identity: what the imprint and company placeholders say and the
-- defaults of From name and Reply-To. One row per account, created on first PUT.
CREATE TABLE account_settings (
    account_id      bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    company         text NOT NULL DEFAULT '',
    postal_address  text NOT NULL DEFAULT '',
    imprint         text NOT NULL DEFAULT '',
    from_name       text NOT NULL DEFAULT '',
    reply_to        text NOT NULL DEFAULT '',
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- Attachments: the file's metadata; its bytes are attachment_chunks, written
-- while the upload streams in, so no process ever holds a whole file. One
-- file per content per account (sha256 unique): a second upload of the same
-- bytes returns the first. size counts against the plan's storage
-- (account_usage.storage_bytes, kept in the same transaction).
CREATE TABLE attachments (
    id            bigserial PRIMARY KEY,
    account_id    bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    filename      text NOT NULL,
    content_type  text NOT NULL,
    size          bigint NOT NULL CHECK (size >= 0),
    sha256        text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account_id, sha256)
);
CREATE INDEX attachments_account_idx ON attachments (account_id, id DESC);

CREATE TABLE attachment_chunks (
    attachment_id  bigint NOT NULL REFERENCES attachments (id) ON DELETE CASCADE,
    account_id     bigint NOT NULL,
    seq            integer NOT NULL,
    data           bytea NOT NULL,
    PRIMARY KEY (attachment_id, seq)
);
-- The chunks are compressed files mostly; PostgreSQL's own compression would
-- only cost CPU.
ALTER TABLE attachment_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- Every mail kind carries the same content model: subject, preheader,
-- html/markdown, template_key and attachment_ids.
ALTER TABLE campaigns ADD COLUMN attachment_ids bigint[] NOT NULL DEFAULT '{}';
-- "Is this template or attachment used by a scheduled or sending mail?"
CREATE INDEX campaigns_template_use_idx ON campaigns (account_id, template_key)
    WHERE status IN ('scheduled', 'sending', 'paused') AND template_key <> '';
CREATE INDEX campaigns_attachment_use_idx ON campaigns USING gin (attachment_ids)
    WHERE status IN ('scheduled', 'sending', 'paused');

-- +goose Down
DROP INDEX campaigns_attachment_use_idx;
DROP INDEX campaigns_template_use_idx;
ALTER TABLE campaigns DROP COLUMN attachment_ids;
DROP TABLE attachment_chunks;
DROP TABLE attachments;
DROP TABLE account_settings;
DROP TABLE templates;
