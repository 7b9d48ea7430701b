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
-- STABLE: the function runs with its caller's snapshot.
-- pg_stat_get_activity(NULL) rather than the pg_stat_activity view, whose
-- joins cost several times as much; this database's oid is read from this
-- backend's own row of the same call. PL/pgSQL rather than SQL: it keeps the
-- plan for the session, where a SQL function that cannot be inlined is
-- planned anew on every call (several times the cost of running it).
-- +goose StatementBegin
CREATE FUNCTION outbox_horizon() RETURNS xid8 LANGUAGE plpgsql STABLE AS $$
DECLARE
  h xid8;
BEGIN
  WITH a AS (SELECT pid, datid, backend_xid FROM pg_stat_get_activity(NULL))
  SELECT coalesce(
    (SELECT min(x) FROM pg_snapshot_xip(pg_current_snapshot()) AS x
     WHERE (x::text::bigint % 4294967296) NOT IN (
       SELECT a.backend_xid::text::bigint FROM a
       WHERE a.backend_xid IS NOT NULL
         AND a.datid <> (SELECT me.datid FROM a me WHERE me.pid = pg_backend_pid()))),
    pg_snapshot_xmax(pg_current_snapshot()))
  INTO h;
  RETURN h;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION outbox_horizon();
