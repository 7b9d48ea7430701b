-- +goose Up

-- NOTIFY serialises commits across the whole server: a transaction that has
-- notified takes a cluster-wide lock before its commit and holds it through
-- the commit's WAL flush, so that notifications queue in commit order. With
-- the events trigger notifying from every transaction that writes events,
-- every contact create, purchase and send batch of every database waited in
-- that one line (seen as "Lock: object" waits at COMMIT under load).
--
-- The notification only wakes consumers early; they poll as well and come
-- back quickly while older transactions are still running (store/outbox.go).
-- So one notification per 10 ms is enough: the trigger notifies only when the
-- last one was sent 10 ms ago or longer. The time of the last one lives in a
-- sequence, which is read and set outside transactions, so concurrent writers
-- do not wait on each other for it; a race lets two notify, which is harmless.
-- The last writer of a burst may then be picked up by the next notification
-- or poll rather than its own.
CREATE SEQUENCE events_notified_at_ms;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION events_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    now_ms bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
BEGIN
    IF now_ms - (SELECT last_value FROM events_notified_at_ms) >= 10 THEN
        PERFORM setval('events_notified_at_ms', now_ms);
        PERFORM pg_notify('rundbrief_events', '');
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION events_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('rundbrief_events', '');
    RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP SEQUENCE events_notified_at_ms;
