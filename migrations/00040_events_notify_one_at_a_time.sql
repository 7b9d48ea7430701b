-- +goose Up

-- The throttle of 00036 read and set the time of the last notification
-- without taking turns: at the start of a burst (a new process's first
-- requests, a provider's retries) every writer that saw an old time notified,
-- and their commits queued one behind the other on NOTIFY's cluster-wide lock,
-- each holding it through its WAL flush (seen as a tail of tens of
-- milliseconds on inbound payment hooks). Now a writer notifies only if it
-- also gets a transaction-level advisory lock that no other transaction
-- holds: while one notifying transaction is on its way to its commit, the
-- others leave the wake-up to it. If that one rolls back, the next writer
-- after 10 ms, or the consumers' poll, wakes them instead.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION events_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    now_ms bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
BEGIN
    IF now_ms - (SELECT last_value FROM events_notified_at_ms) >= 10
       AND pg_try_advisory_xact_lock(hashtextextended('rundbrief:events_notify', 0)) THEN
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
