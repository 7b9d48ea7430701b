-- +goose Up

-- Revoking a key takes effect at once in every serve process (issue 27, item 14).
-- Every change that can invalidate a cached key (revoke, renew, settings, plan,
-- blocked account) bumps key_generation.gen in its transaction: the row lock
-- orders the changes, so a higher generation always committed later. Each
-- process's notification listener flushes its key cache on the change's NOTIFY
-- and then records the generation it has flushed up to in key_cache_acks; the
-- change returns once every connected listener (found by its application_name
-- in pg_stat_activity) has acknowledged it, or after the cache's TTL at most.
--
-- No account_id: the generation and the listeners belong to the processes, not
-- to an account; no account reads or writes them.
CREATE TABLE key_generation (
    id   boolean PRIMARY KEY DEFAULT true CHECK (id),
    gen  bigint NOT NULL
);
INSERT INTO key_generation (id, gen) VALUES (true, 0);

CREATE TABLE key_cache_acks (
    listener    text PRIMARY KEY,
    gen         bigint NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE key_cache_acks;
DROP TABLE key_generation;
