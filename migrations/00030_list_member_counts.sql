-- +goose Up

-- List member counters without a hot row (issues 23 and 26, speed).
--
-- lists.member_count used to be updated by every transaction that added a
-- member to the list, and that row lock is held until commit: concurrent
-- purchases of one integration, sign-ups of one form and contact creates with
-- list_ids all queued one commit after the other on the list's row, and every
-- reader of that row walked its chain of dead versions (and, because the
-- member inserts lock the row FOR KEY SHARE, the multixacts on it). The
-- changes now count in one of 32 stripes per list, chosen by the backend, as
-- the contact and tag counters do. A list's members are lists.member_count
-- (the base, which seeds and older rows keep, and which a contact's deletion
-- still decrements) plus the sum of its stripes.
CREATE TABLE list_member_counts (
    list_id     bigint NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    stripe      smallint NOT NULL,
    account_id  bigint NOT NULL,
    members     bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (list_id, stripe)
);

-- +goose Down
DROP TABLE list_member_counts;
