-- +goose Up

-- A campaign's outcome counters, striped (issue 26). Every write of send
-- outcomes used to add to the campaign's own row (sent_count, failed_count,
-- skipped_count) and held that row's lock until its commit, so the lanes of
-- all processes queued behind each other's WAL flushes on one row. Now each
-- write adds to one of 16 stripes here instead (the stripe follows the
-- batch's first recipient id, as campaign_stats' shard does). A campaign's
-- count is its column plus the sum of its stripes, so every read is exact;
-- the stripes are folded into the columns (and deleted) in the same statement
-- that finishes, restarts or reopens a campaign, so a finished campaign has
-- none.
CREATE TABLE campaign_counts (
    campaign_id  bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    stripe       smallint NOT NULL,
    account_id   bigint NOT NULL,
    sent         bigint NOT NULL DEFAULT 0,
    failed       bigint NOT NULL DEFAULT 0,
    skipped      bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (campaign_id, stripe)
);

-- +goose Down
UPDATE campaigns c SET sent_count = c.sent_count + k.sent, failed_count = c.failed_count + k.failed,
  skipped_count = c.skipped_count + k.skipped
FROM (SELECT campaign_id, sum(sent) AS sent, sum(failed) AS failed, sum(skipped) AS skipped
      FROM campaign_counts GROUP BY campaign_id) k
WHERE k.campaign_id = c.id;
DROP TABLE campaign_counts;
