-- +goose Up

-- Engagement of campaigns per Berlin day (issue 4, campaigns and analytics).
-- Every statement that records an outcome adds to these counters in its own
-- transaction: the send workers (sent, failed, bounces), the tracking pages
-- (first open, first click of a recipient, every counted click) and the
-- unsubscribes that name a campaign. The analytics read a few rows per
-- campaign and day instead of the recipient rows: a campaign's totals are the
-- sum of its rows, a time series the sum per day over an account.
--
-- shard spreads concurrent writers of one campaign and day over several rows
-- (recipient id modulo 16), so that a burst of opens does not queue on one
-- row lock. opens and clicks count recipients (unique), total_clicks every
-- counted click; bounces are permanent rejections (a part of failed);
-- unsubscribes are addresses that went on the blocked list from the campaign.
CREATE TABLE campaign_stats (
    account_id    bigint NOT NULL,
    campaign_id   bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    day           date NOT NULL,
    shard         smallint NOT NULL DEFAULT 0,
    sent          bigint NOT NULL DEFAULT 0,
    failed        bigint NOT NULL DEFAULT 0,
    bounces       bigint NOT NULL DEFAULT 0,
    opens         bigint NOT NULL DEFAULT 0,
    clicks        bigint NOT NULL DEFAULT 0,
    total_clicks  bigint NOT NULL DEFAULT 0,
    unsubscribes  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (campaign_id, day, shard)
);

-- The same counters per account and day, written in the same statements: the
-- account's time series and overview read at most 16 rows a day, however many
-- campaigns (every single email is one) the account sends.
CREATE TABLE account_stats (
    account_id    bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    day           date NOT NULL,
    shard         smallint NOT NULL DEFAULT 0,
    sent          bigint NOT NULL DEFAULT 0,
    failed        bigint NOT NULL DEFAULT 0,
    bounces       bigint NOT NULL DEFAULT 0,
    opens         bigint NOT NULL DEFAULT 0,
    clicks        bigint NOT NULL DEFAULT 0,
    total_clicks  bigint NOT NULL DEFAULT 0,
    unsubscribes  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, day, shard)
);

-- Existing engagement, once (bounces cannot be told apart from other failures
-- in old rows and stay 0).
INSERT INTO campaign_stats (account_id, campaign_id, day, sent)
SELECT account_id, campaign_id, (sent_at AT TIME ZONE 'Europe/Berlin')::date, count(*)
FROM campaign_recipients WHERE status = 'sent' AND sent_at IS NOT NULL GROUP BY 1, 2, 3;

INSERT INTO campaign_stats AS s (account_id, campaign_id, day, opens)
SELECT account_id, campaign_id, (opened_at AT TIME ZONE 'Europe/Berlin')::date, count(*)
FROM campaign_recipients WHERE opened_at IS NOT NULL GROUP BY 1, 2, 3
ON CONFLICT (campaign_id, day, shard) DO UPDATE SET opens = s.opens + EXCLUDED.opens;

INSERT INTO campaign_stats AS s (account_id, campaign_id, day, clicks)
SELECT account_id, campaign_id, (clicked_at AT TIME ZONE 'Europe/Berlin')::date, count(*)
FROM campaign_recipients WHERE clicked_at IS NOT NULL GROUP BY 1, 2, 3
ON CONFLICT (campaign_id, day, shard) DO UPDATE SET clicks = s.clicks + EXCLUDED.clicks;

INSERT INTO campaign_stats AS s (account_id, campaign_id, day, total_clicks)
SELECT k.account_id, l.campaign_id, (k.first_clicked_at AT TIME ZONE 'Europe/Berlin')::date, sum(k.clicks)
FROM link_clicks k JOIN campaign_links l ON l.id = k.link_id GROUP BY 1, 2, 3
ON CONFLICT (campaign_id, day, shard) DO UPDATE SET total_clicks = s.total_clicks + EXCLUDED.total_clicks;

INSERT INTO campaign_stats AS s (account_id, campaign_id, day, unsubscribes)
SELECT b.account_id, b.campaign_id, (b.created_at AT TIME ZONE 'Europe/Berlin')::date, count(*)
FROM blocked_addresses b JOIN campaigns c ON c.id = b.campaign_id AND c.account_id = b.account_id
WHERE b.source <> 'bounce' GROUP BY 1, 2, 3
ON CONFLICT (campaign_id, day, shard) DO UPDATE SET unsubscribes = s.unsubscribes + EXCLUDED.unsubscribes;

INSERT INTO account_stats (account_id, day, sent, failed, bounces, opens, clicks, total_clicks, unsubscribes)
SELECT account_id, day, sum(sent), sum(failed), sum(bounces), sum(opens), sum(clicks), sum(total_clicks), sum(unsubscribes)
FROM campaign_stats GROUP BY 1, 2;

-- +goose Down
DROP TABLE account_stats;
DROP TABLE campaign_stats;
