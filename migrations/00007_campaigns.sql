-- +goose Up

-- Campaigns (issue 4): newsletters and single emails, their per-recipient send
-- queue, and the links of a campaign for click tracking.
--
-- A newsletter and a single email (POST /emails/send) are both a campaign: kind
-- says which, type is 'newsletter' for newsletters and 'transactional' or
-- 'follow_up' for single emails. Content and targets are fixed once a campaign
-- leaves 'draft' (only drafts change), so the send workers may compile a
-- campaign once and keep it.
--
-- Status: draft → scheduled → sending → sent | failed, with sending ⇄ paused.
-- 'failed' means the send could not be carried out (at its scheduled time the
-- daily limit, the recipients or the SMTP server were missing: last_error
-- says which, nothing was queued), or every recipient failed. 'cancelled' is a
-- scheduled single email that was called off (DELETE /emails/{id}).
--
-- smtp_server_id is no foreign key on purpose: deleting a server must not
-- silently move a scheduled newsletter to another server; the send checks it
-- and answers 422 (or fails the campaign) when it is gone.
CREATE TABLE campaigns (
    id                bigserial PRIMARY KEY,
    account_id        bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind              text NOT NULL CHECK (kind IN ('newsletter', 'email')),
    type              text NOT NULL CHECK (type IN ('newsletter', 'transactional', 'follow_up')),
    status            text NOT NULL DEFAULT 'draft'
                      CHECK (status IN ('draft', 'scheduled', 'sending', 'sent', 'paused', 'failed', 'cancelled')),
    name              text NOT NULL DEFAULT '',
    subject           text NOT NULL DEFAULT '',
    preheader         text NOT NULL DEFAULT '',
    -- Content: html, plain_text and markdown as given; template_key names a
    -- template of the library (resolved by the template feature).
    html              text NOT NULL DEFAULT '',
    plain_text        text NOT NULL DEFAULT '',
    markdown          text NOT NULL DEFAULT '',
    template_key      text NOT NULL DEFAULT '',
    from_name         text NOT NULL DEFAULT '',
    reply_to          text NOT NULL DEFAULT '',
    smtp_server_id    bigint,
    track_opens       boolean NOT NULL DEFAULT false,
    track_clicks      boolean NOT NULL DEFAULT false,
    -- Targets: newsletters and follow-ups go to the subscribed members of
    -- list_ids; follow-ups also to contact_ids; single emails to to_emails.
    list_ids          bigint[] NOT NULL DEFAULT '{}',
    contact_ids       bigint[] NOT NULL DEFAULT '{}',
    to_emails         text[] NOT NULL DEFAULT '{}',
    -- Request placeholders of POST /emails/send, the same for every recipient.
    placeholders      jsonb NOT NULL DEFAULT '{}',
    scheduled_at      timestamptz,
    started_at        timestamptz,
    finished_at       timestamptz,
    -- Counters, kept current in the same transaction as the recipient rows they
    -- count: recipients_count is what was queued for sending, the others are
    -- final outcomes (skipped: blocked or not subscribed).
    recipients_count  bigint NOT NULL DEFAULT 0,
    sent_count        bigint NOT NULL DEFAULT 0,
    failed_count      bigint NOT NULL DEFAULT 0,
    skipped_count     bigint NOT NULL DEFAULT 0,
    last_error        text NOT NULL DEFAULT '',
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX campaigns_account_idx ON campaigns (account_id, kind, id DESC);
-- The scheduler's queue and the send workers' list of running campaigns.
CREATE INDEX campaigns_scheduled_idx ON campaigns (scheduled_at) WHERE status = 'scheduled';
CREATE INDEX campaigns_sending_idx ON campaigns (started_at, id) WHERE status = 'sending';

-- One row per recipient of a campaign: the send queue and the record of what
-- happened. Rows are materialised once when the send starts (one INSERT …
-- SELECT), deduplicated by address.
--
--   queued   waiting; claimable when next_attempt_at (a retry's backoff) is due
--   sending  claimed by a worker until claimed_until (its lease); a worker that
--            dies leaves its rows here and they are claimed again after the lease
--   sent     handed to SMTP (message_id, sent_at)
--   failed   rejected for good (5xx, or attempts used up); error says why
--   skipped  not sent: blocked address or contact not subscribed (error says which)
--
-- Personalisation is joined from contacts at render time (contact_id is a soft
-- reference without a foreign key, so deleting a contact never has to touch
-- the queue; a deleted contact renders with the address only). variant is for
-- A/B tests. opened_at and clicked_at are the first open and click, recorded by
-- the tracking pages.
CREATE TABLE campaign_recipients (
    id               bigserial PRIMARY KEY,
    account_id       bigint NOT NULL,
    campaign_id      bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    contact_id       bigint,
    email            text NOT NULL,
    status           text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sending', 'sent', 'failed', 'skipped')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz,
    claimed_until    timestamptz,
    message_id       text,
    error            text,
    sent_at          timestamptz,
    variant          text,
    opened_at        timestamptz,
    clicked_at       timestamptz
) WITH (fillfactor = 90);
-- A campaign's recipients in order (listing, counting, the cascade).
CREATE INDEX campaign_recipients_campaign_idx ON campaign_recipients (campaign_id, id);
-- Unfinished rows only: the workers' sweep for expired leases and due retries,
-- and the "anything left?" check that finishes a campaign.
CREATE INDEX campaign_recipients_queue_idx ON campaign_recipients (campaign_id, id) WHERE status IN ('queued', 'sending');

-- The tracked links of a campaign, in document order (position from 0). A click
-- token names the recipient and the link id. url is the link as written; when
-- personalized (it contains placeholders) the click URL carries the rendered
-- address in ?u=, covered by the token's signature (mailer/token.go).
CREATE TABLE campaign_links (
    id            bigserial PRIMARY KEY,
    account_id    bigint NOT NULL,
    campaign_id   bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    position      integer NOT NULL,
    url           text NOT NULL,
    personalized  boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (campaign_id, position)
);

-- +goose Down
DROP TABLE campaign_links;
DROP TABLE campaign_recipients;
DROP TABLE campaigns;
