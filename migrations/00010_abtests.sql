-- +goose Up

-- A/B tests (issue 6). A test belongs to one target mail: a newsletter or a
-- single email (campaign_id set), later a story email or a sequence day.
-- Variant A is the target's own content; variant B is the target with the
-- b_* fields that are not NULL put over it.
--
-- Status: draft → running (the target's send started the test) → completed
-- (a winner) | stopped (called off; waiting recipients got variant A).
--
-- The send: in mode 'split' every recipient gets A or B, decided by a hash of
-- the test id and the address (store.ABBucket), so an assignment can be
-- reproduced. In mode 'winner' a sample_pct share (by a second hash) is split
-- that way and sent; the others wait in campaign_recipients with status
-- 'waiting' and ab_held set, until the winner is decided and they are queued
-- with the winner's letter. decide_at (started_at + wait_hours) is when the
-- scheduler decides; decided_at records that it did (exactly once: the row is
-- claimed with FOR UPDATE SKIP LOCKED).
CREATE TABLE ab_tests (
    id                 bigserial PRIMARY KEY,
    account_id         bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name               text NOT NULL DEFAULT '',
    target_type        text NOT NULL CHECK (target_type IN ('newsletter', 'email', 'seinfeld', 'soap')),
    target_id          bigint NOT NULL,
    campaign_id        bigint REFERENCES campaigns (id) ON DELETE CASCADE,
    test_type          text NOT NULL CHECK (test_type IN ('subject', 'content', 'design', 'sender', 'combo')),
    mode               text NOT NULL CHECK (mode IN ('split', 'winner')),
    split_a            integer NOT NULL CHECK (split_a BETWEEN 10 AND 90),
    sample_pct         integer NOT NULL CHECK (sample_pct BETWEEN 5 AND 50),
    wait_hours         integer NOT NULL CHECK (wait_hours BETWEEN 1 AND 72),
    winner_metric      text NOT NULL CHECK (winner_metric IN ('clicks', 'opens', 'ctr')),
    auto_apply_winner  boolean NOT NULL DEFAULT true,
    status             text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'running', 'completed', 'stopped')),
    -- Variant B: NULL keeps variant A's value.
    b_subject          text,
    b_preheader        text,
    b_html             text,
    b_from_name        text,
    -- Variant A as it was sent (content stays on the target): for the
    -- insights, since copying the winner overwrites the target.
    a_subject          text NOT NULL DEFAULT '',
    a_preheader        text NOT NULL DEFAULT '',
    a_from_name        text NOT NULL DEFAULT '',
    winner             text CHECK (winner IN ('A', 'B')),
    -- The scheduler's pick when the test does not apply it by itself.
    suggested_winner   text CHECK (suggested_winner IN ('A', 'B')),
    -- The result at completion: rates of the metric, confidence 0..1.
    a_rate             double precision,
    b_rate             double precision,
    confidence         double precision,
    released           bigint NOT NULL DEFAULT 0,
    copied             boolean NOT NULL DEFAULT false,
    started_at         timestamptz,
    decide_at          timestamptz,
    decided_at         timestamptz,
    finished_at        timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
-- One test per target mail.
CREATE UNIQUE INDEX ab_tests_target_key ON ab_tests (account_id, target_type, target_id);
CREATE INDEX ab_tests_account_idx ON ab_tests (account_id, id DESC);
CREATE INDEX ab_tests_campaign_idx ON ab_tests (campaign_id) WHERE campaign_id IS NOT NULL;
-- The winner scheduler's queue.
CREATE INDEX ab_tests_due_idx ON ab_tests (decide_at) WHERE status = 'running' AND decided_at IS NULL;

-- Recipients held back in mode 'winner' wait with status 'waiting'; ab_held
-- stays set after they are released, so that results count the test group
-- only.
ALTER TABLE campaign_recipients DROP CONSTRAINT campaign_recipients_status_check;
ALTER TABLE campaign_recipients ADD CONSTRAINT campaign_recipients_status_check
    CHECK (status IN ('queued', 'sending', 'sent', 'failed', 'skipped', 'waiting'));
ALTER TABLE campaign_recipients ADD COLUMN ab_held boolean NOT NULL DEFAULT false;
CREATE INDEX campaign_recipients_waiting_idx ON campaign_recipients (campaign_id) WHERE status = 'waiting';

-- +goose Down
DROP INDEX campaign_recipients_waiting_idx;
ALTER TABLE campaign_recipients DROP COLUMN ab_held;
UPDATE campaign_recipients SET status = 'queued' WHERE status = 'waiting';
ALTER TABLE campaign_recipients DROP CONSTRAINT campaign_recipients_status_check;
ALTER TABLE campaign_recipients ADD CONSTRAINT campaign_recipients_status_check
    CHECK (status IN ('queued', 'sending', 'sent', 'failed', 'skipped'));
DROP TABLE ab_tests;
