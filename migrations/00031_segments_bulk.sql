-- +goose Up

-- Segments and bulk actions on contacts (issue 24, "contacts at scale").
--
-- A segment is a saved contact filter: its conditions are the JSON form of
-- store.ContactFilter, the one filter type of the contact listing, the export,
-- bulk actions and newsletter audiences, so the portal's filter and a segment
-- can never mean different things.
CREATE TABLE segments (
    id          bigserial PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name        text NOT NULL,
    filter      jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account_id, name)
);
CREATE INDEX segments_account_idx ON segments (account_id, id DESC);

-- A newsletter's audience may be a segment, evaluated when the send starts.
-- Deleting a segment that a scheduled or sending newsletter names is refused
-- (409 in_use, checked in the store); a draft just loses it.
ALTER TABLE campaigns ADD COLUMN segment_id bigint REFERENCES segments (id) ON DELETE SET NULL;
CREATE INDEX campaigns_segment_idx ON campaigns (segment_id) WHERE segment_id IS NOT NULL;

-- Bulk actions run as jobs: the worker walks the matching contacts in id order,
-- cursor_id the last one done, and applies each chunk in the transaction that
-- moves the cursor, so a crash never applies a chunk twice nor skips one.
CREATE TABLE bulk_jobs (
    id            bigserial PRIMARY KEY,
    account_id    bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    actor_type    text NOT NULL,
    actor_id      bigint,
    action        text NOT NULL CHECK (action IN ('add_tag', 'remove_tag', 'add_to_list', 'remove_from_list', 'unsubscribe', 'delete')),
    tag           text NOT NULL DEFAULT '',
    list_id       bigint,
    contact_ids   bigint[],                    -- chosen rows; NULL: every match of filter
    filter        jsonb NOT NULL DEFAULT '{}',
    segment_id    bigint,                      -- informational: the filter is the segment's at creation
    status        text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'done', 'failed')),
    total         bigint,                      -- NULL until the worker counted the matches
    processed     bigint NOT NULL DEFAULT 0,
    changed       bigint NOT NULL DEFAULT 0,
    cursor_id     bigint NOT NULL DEFAULT 0,
    error         text NOT NULL DEFAULT '',
    lease_owner   text,
    lease_until   timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz
);
CREATE INDEX bulk_jobs_account_idx ON bulk_jobs (account_id, id DESC);
CREATE INDEX bulk_jobs_queue_idx ON bulk_jobs (id) WHERE status IN ('queued', 'running');

-- Sorting the contact table by name walks this index like the others.
CREATE INDEX contacts_name_idx ON contacts (account_id, last_name, first_name, id);

-- +goose Down
DROP INDEX IF EXISTS contacts_name_idx;
DROP TABLE IF EXISTS bulk_jobs;
ALTER TABLE campaigns DROP COLUMN IF EXISTS segment_id;
DROP TABLE IF EXISTS segments;
