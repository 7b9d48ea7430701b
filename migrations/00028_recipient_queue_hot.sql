-- +goose Up

-- A claim updates every recipient it takes (status 'queued' to 'sending', the
-- lease, the attempt), and it was never a HOT update: status was named by the
-- predicates of campaign_recipients_queue_idx and _waiting_idx, so each claim
-- wrote a new entry into all three indexes of the row, and the outcome that
-- followed wrote two more (issue 26). The predicates now read two stored
-- generated columns instead. pending does not change when a claim moves
-- 'queued' to 'sending', and no index names status any more, so a claim
-- touches no index when the row's page has room for the new version:
-- fillfactor 50 leaves that room (a row gets three versions, queued, sending
-- and done, and the first is pruned away once the claim committed). The
-- outcome still leaves the queue index (pending turns false), which is why
-- it remains an ordinary update. Queries that want these indexes say
-- "pending" or "waiting" (the planner cannot derive them from status).
-- Adding stored columns rewrites the table once, under an exclusive lock.
ALTER TABLE campaign_recipients SET (fillfactor = 50);
ALTER TABLE campaign_recipients
    ADD COLUMN pending boolean GENERATED ALWAYS AS (status IN ('queued', 'sending')) STORED,
    ADD COLUMN waiting boolean GENERATED ALWAYS AS (status = 'waiting') STORED;
DROP INDEX campaign_recipients_queue_idx;
DROP INDEX campaign_recipients_waiting_idx;
CREATE INDEX campaign_recipients_queue_idx ON campaign_recipients (campaign_id, id) WHERE pending;
CREATE INDEX campaign_recipients_waiting_idx ON campaign_recipients (campaign_id) WHERE waiting;

-- +goose Down
DROP INDEX campaign_recipients_queue_idx;
DROP INDEX campaign_recipients_waiting_idx;
ALTER TABLE campaign_recipients DROP COLUMN pending, DROP COLUMN waiting;
ALTER TABLE campaign_recipients SET (fillfactor = 90);
CREATE INDEX campaign_recipients_queue_idx ON campaign_recipients (campaign_id, id) WHERE status IN ('queued', 'sending');
CREATE INDEX campaign_recipients_waiting_idx ON campaign_recipients (campaign_id) WHERE status = 'waiting';
