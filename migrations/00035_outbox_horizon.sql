-- +goose Up

-- The outbox's horizon (see store/outbox.go), computed for this database alone.
--
-- Until now consumers read events below pg_snapshot_xmin(pg_current_snapshot()),
-- the oldest transaction still running anywhere in the cluster. A transaction
-- belongs to one database and can only insert events there, so one running in
-- another database (another application sharing the server, a long report, a
-- second Rundbrief) held every consumer back for nothing.
--
-- outbox_horizon() is the oldest xid of the statement's snapshot that may still
-- belong to this database: the snapshot's running xids minus those that
-- pg_stat_activity shows running in another database, or the snapshot's xmax
-- when none is left. It errs only towards waiting: a transaction that ended
-- between the snapshot and the read of pg_stat_activity, or whose database the
-- role may not see, is kept, so the horizon is never above a transaction of
-- this database the statement cannot see. Comparing the low 32 bits is exact:
-- running xids lie within 2^31 of each other.
--
-- STABLE: the function runs with its caller's snapshot, so a consumer's
-- "e.xid < outbox_horizon()" and the rows it sees agree.
-- +goose StatementBegin
CREATE FUNCTION outbox_horizon() RETURNS xid8 LANGUAGE sql STABLE AS $$
  SELECT coalesce(
    (SELECT min(x) FROM pg_snapshot_xip(pg_current_snapshot()) AS x
     WHERE (x::text::bigint % 4294967296) NOT IN (
       SELECT a.backend_xid::text::bigint FROM pg_stat_activity a
       WHERE a.backend_xid IS NOT NULL
         AND a.datid <> (SELECT d.oid FROM pg_database d WHERE d.datname = current_database()))),
    pg_snapshot_xmax(pg_current_snapshot()))
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION outbox_horizon();
