-- +goose Up

-- The outbox gets several consumers, each with its own cursor per account
-- (store/outbox.go), instead of one dispatched_at flag that only the webhook
-- fan-out could use.
--
-- Why xid: a bigserial id is taken at insert, not at commit, so a consumer
-- reading "id > cursor" would skip an event whose transaction commits after a
-- later-numbered one was consumed. Each event records the transaction that
-- inserted it (pg_current_xact_id(), a 64-bit xid8 that never wraps), and a
-- consumer reads only events whose xid is below the oldest transaction still
-- running (pg_snapshot_xmin(pg_current_snapshot())): every transaction below
-- that horizon has ended, and every transaction that can still insert has an
-- xid at or above it, so nothing can appear later behind a cursor that moved
-- in (xid, id) order. The default fills the column on every insert path
-- (EmitAll, the contact write path, the send queue) without touching them;
-- existing rows all get this migration's xid, below every later one.
ALTER TABLE events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
-- A consumer's next batch for an account: a range scan from its cursor.
CREATE INDEX events_outbox_idx ON events (account_id, xid, id);
-- The retention purge of events some consumer never passed (store.Purge): a
-- BRIN index is almost free to keep for an append-only table in time order.
CREATE INDEX events_created_brin ON events USING brin (created_at);

-- Consumers of the outbox, by name ("webhooks", …). Process- and cluster-wide
-- on purpose, without account_id: a consumer is a feature of the service, the
-- same for every account; its per-account progress is in outbox_cursors.
-- Retention keeps an event until every consumer listed here has passed it.
CREATE TABLE outbox_consumers (
    name        text PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- One cursor per consumer and account: the (xid, id) of the last event the
-- consumer handled. A cursor moves in the transaction that runs the
-- consumer's handler, so the handler's writes and the move commit together.
-- Cursors are created lazily for every account (store.Consumer), starting
-- before the account's first event.
CREATE TABLE outbox_cursors (
    consumer     text NOT NULL REFERENCES outbox_consumers (name) ON DELETE CASCADE,
    account_id   bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    last_xid     xid8 NOT NULL DEFAULT '0',
    last_id      bigint NOT NULL DEFAULT 0,
    advanced_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, account_id)
);
CREATE INDEX outbox_cursors_account_idx ON outbox_cursors (account_id);

-- The webhook fan-out becomes the consumer "webhooks" and continues where
-- dispatched_at left it: at the account's first undispatched event, or after
-- its last event. Events dispatched before that point but with a higher id are
-- fanned out again; their deliveries exist already (unique per webhook and
-- event), so no receiver gets one twice.
INSERT INTO outbox_consumers (name) VALUES ('webhooks');
INSERT INTO outbox_cursors (consumer, account_id, last_xid, last_id)
SELECT 'webhooks', a.id, pg_current_xact_id(),
       coalesce((SELECT min(e.id) - 1 FROM events e WHERE e.account_id = a.id AND e.dispatched_at IS NULL),
                (SELECT max(e.id) FROM events e WHERE e.account_id = a.id), 0)
FROM accounts a;

DROP INDEX events_pending_idx;
DROP INDEX events_dispatched_idx;
ALTER TABLE events DROP COLUMN dispatched_at;

-- Wakes the consumers (LISTEN rundbrief_events) when events commit. One
-- notification per statement with the same empty payload, which PostgreSQL
-- folds into one per transaction; consumers poll as well, so a lost
-- notification only delays.
-- +goose StatementBegin
CREATE FUNCTION events_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('rundbrief_events', '');
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_notify();

-- +goose Down
DROP TRIGGER events_notify ON events;
DROP FUNCTION events_notify();
ALTER TABLE events ADD COLUMN dispatched_at timestamptz;
UPDATE events e SET dispatched_at = now()
FROM outbox_cursors k
WHERE k.consumer = 'webhooks' AND k.account_id = e.account_id AND (e.xid, e.id) <= (k.last_xid, k.last_id);
CREATE INDEX events_pending_idx ON events (id) WHERE dispatched_at IS NULL;
CREATE INDEX events_dispatched_idx ON events (dispatched_at) WHERE dispatched_at IS NOT NULL;
DROP TABLE outbox_cursors;
DROP TABLE outbox_consumers;
DROP INDEX events_created_brin;
DROP INDEX events_outbox_idx;
ALTER TABLE events DROP COLUMN xid;
