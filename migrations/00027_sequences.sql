-- +goose Up

-- Story emails and story sequences (issue 20).
--
-- Both send through the existing send queue: a story email IS a campaign of
-- kind 'story' (its content, status and counters are the campaign's, so it is
-- listed in /campaigns and counted in the analytics); every day of a sequence
-- has a campaign of kind 'sequence' that carries the day's content, and the
-- sequence worker queues one campaign_recipients row per participant and day
-- into it. Content lives in the campaign columns newsletters use (subject,
-- preheader, html, markdown, template_key), so the shared content model of the
-- templates feature applies to story emails and sequence days unchanged.
ALTER TABLE campaigns DROP CONSTRAINT campaigns_kind_check;
ALTER TABLE campaigns ADD CONSTRAINT campaigns_kind_check CHECK (kind IN ('newsletter', 'email', 'story', 'sequence'));

-- The story email settings of an account: where and when the daily email goes.
-- send_time is a Europe/Berlin wall-clock time; weekdays are ISO (1 = Monday).
CREATE TABLE story_settings (
    account_id      bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    list_ids        bigint[] NOT NULL DEFAULT '{}',
    send_time       time NOT NULL DEFAULT '08:00',
    weekdays        smallint[] NOT NULL DEFAULT '{1,2,3,4,5,6,7}',
    from_name       text NOT NULL DEFAULT '',
    reply_to        text NOT NULL DEFAULT '',
    smtp_server_id  bigint,
    template_key    text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
-- The story calendar: story emails by their day.
CREATE INDEX campaigns_story_idx ON campaigns (account_id, scheduled_at) WHERE kind = 'story';

-- A sequence. send_time NULL: every day goes out delay_days after the
-- previous one at the same wall-clock time (position 1 with 0: at entry);
-- otherwise at send_time (Europe/Berlin) on the day delay_days after the
-- previous one. activated_at is when it was last activated: trigger events
-- older than that do not enrol.
CREATE TABLE sequences (
    id               bigserial PRIMARY KEY,
    account_id       bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name             text NOT NULL,
    status           text NOT NULL DEFAULT 'inactive' CHECK (status IN ('inactive', 'active')),
    trigger          text NOT NULL DEFAULT 'manual' CHECK (trigger IN ('manual', 'list', 'tag')),
    trigger_list_id  bigint,
    trigger_tag      text NOT NULL DEFAULT '',
    send_time        time,
    from_name        text NOT NULL DEFAULT '',
    reply_to         text NOT NULL DEFAULT '',
    smtp_server_id   bigint,
    template_key     text NOT NULL DEFAULT '',
    activated_at     timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sequences_account_idx ON sequences (account_id, id DESC);
-- The trigger consumer's look-up: an account's active sequences by trigger.
CREATE INDEX sequences_trigger_idx ON sequences (account_id, trigger) WHERE status = 'active' AND trigger <> 'manual';

-- The days of a sequence, positions 1..n without gaps. campaign_id is the
-- campaign that carries the day's content now; a change of content after the
-- day was queued to anyone gives the day a new campaign (a campaign's content
-- never changes once it is sending, the send workers compile it once), and
-- sequence_day_campaigns keeps every campaign a day ever had for its funnel.
CREATE TABLE sequence_days (
    id           bigserial PRIMARY KEY,
    account_id   bigint NOT NULL,
    sequence_id  bigint NOT NULL REFERENCES sequences (id) ON DELETE CASCADE,
    position     integer NOT NULL CHECK (position >= 1),
    delay_days   integer NOT NULL DEFAULT 1 CHECK (delay_days BETWEEN 0 AND 365),
    campaign_id  bigint NOT NULL REFERENCES campaigns (id),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (sequence_id, position) DEFERRABLE INITIALLY DEFERRED
);

CREATE TABLE sequence_day_campaigns (
    account_id   bigint NOT NULL,
    sequence_id  bigint NOT NULL REFERENCES sequences (id) ON DELETE CASCADE,
    day_id       bigint NOT NULL REFERENCES sequence_days (id) ON DELETE CASCADE,
    campaign_id  bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    PRIMARY KEY (day_id, campaign_id)
);
CREATE INDEX sequence_day_campaigns_seq_idx ON sequence_day_campaigns (sequence_id);

-- Participants. current_day is the position last queued (0 before the
-- first); next_send_at when the next day is due; base_at the due time of the
-- last day queued (the reference of the next delay). running mirrors the
-- sequence's status (false while it is inactive: the participants are held),
-- so that the worker's claim is one range scan of the due index, however many
-- sequences and held participants there are.
CREATE TABLE sequence_participants (
    id            bigserial PRIMARY KEY,
    account_id    bigint NOT NULL,
    sequence_id   bigint NOT NULL REFERENCES sequences (id) ON DELETE CASCADE,
    contact_id    bigint NOT NULL,
    email         text NOT NULL,
    status        text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'completed', 'exited')),
    current_day   integer NOT NULL DEFAULT 0,
    next_send_at  timestamptz,
    base_at       timestamptz,
    running       boolean NOT NULL DEFAULT false,
    joined_at     timestamptz NOT NULL,
    completed_at  timestamptz,
    exited_at     timestamptz,
    exit_reason   text NOT NULL DEFAULT '',
    UNIQUE (sequence_id, contact_id)
);
-- The worker's claim: due participants of running sequences, oldest first.
CREATE INDEX sequence_participants_due_idx ON sequence_participants (next_send_at)
    WHERE status = 'active' AND running;
CREATE INDEX sequence_participants_contact_idx ON sequence_participants (account_id, contact_id) WHERE status = 'active';
CREATE INDEX sequence_participants_list_idx ON sequence_participants (sequence_id, id);

-- When a day with delay_days is due after base (the entry, or the due time
-- of the previous day): without send_time the same wall-clock time delay_days
-- later, otherwise at send_time on the Berlin calendar day delay_days later
-- (delay 0: the next send_time at or after base). Local dates and times are
-- Europe/Berlin, so the wall-clock time holds across daylight-saving changes.
-- +goose StatementBegin
CREATE FUNCTION sequence_due(base timestamptz, delay_days integer, send_time time) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN send_time IS NULL THEN
      ((base AT TIME ZONE 'Europe/Berlin') + make_interval(days => delay_days)) AT TIME ZONE 'Europe/Berlin'
    WHEN ((((base AT TIME ZONE 'Europe/Berlin')::date + delay_days) + send_time) AT TIME ZONE 'Europe/Berlin') >= base THEN
      (((base AT TIME ZONE 'Europe/Berlin')::date + delay_days) + send_time) AT TIME ZONE 'Europe/Berlin'
    ELSE
      (((base AT TIME ZONE 'Europe/Berlin')::date + delay_days + 1) + send_time) AT TIME ZONE 'Europe/Berlin'
  END
$$;
-- +goose StatementEnd

-- The trigger consumer ("sequences", store/sequence/triggers.go) registers
-- itself on its first run and then reads the events retention kept: joins and
-- tags from before a sequence's activated_at enrol nobody, so that replay is
-- harmless.

-- +goose Down
DELETE FROM outbox_consumers WHERE name = 'sequences';
DROP FUNCTION sequence_due(timestamptz, integer, time);
DROP TABLE sequence_participants;
DROP TABLE sequence_day_campaigns;
DROP TABLE sequence_days;
DROP TABLE sequences;
DROP INDEX campaigns_story_idx;
DROP TABLE story_settings;
ALTER TABLE campaigns DROP CONSTRAINT campaigns_kind_check;
ALTER TABLE campaigns ADD CONSTRAINT campaigns_kind_check CHECK (kind IN ('newsletter', 'email'));
