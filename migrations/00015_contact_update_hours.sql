-- +goose Up

-- Contacts per account and hour of their last change (updated_at, in UTC), for
-- the exact meta.pagination.total of an updated_after sync page (issue 3:
-- "an updated_after sync page at any depth < 20 ms"). Counting the contacts
-- behind the cut read up to half of the account's index on every page; with
-- these counts a page sums the whole hours after the cut and counts only the
-- contacts of the cut's own hour.
--
-- Statement-level triggers keep them, so every writer of contacts is covered
-- (upserts, bulk, imports, confirmation, unsubscribe, deletion) with one
-- aggregated write per statement. Rows are striped by backend, as the contact
-- and tag counters are, so concurrent writers never wait for each other here;
-- an hour's count is the sum of its stripes. No foreign key: the delete
-- trigger of an account's cascading deletion must not fail (the rows net to
-- zero).
CREATE TABLE contact_update_hours (
    account_id  bigint NOT NULL,
    hour        timestamp NOT NULL,
    stripe      smallint NOT NULL,
    contacts    bigint NOT NULL,
    PRIMARY KEY (account_id, hour, stripe)
);

-- +goose StatementBegin
CREATE FUNCTION contact_update_hours_count() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO contact_update_hours AS h (account_id, hour, stripe, contacts)
        SELECT n.account_id, date_trunc('hour', n.updated_at AT TIME ZONE 'UTC'), pg_backend_pid() % 32, count(*)
        FROM new_rows n GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (account_id, hour, stripe) DO UPDATE SET contacts = h.contacts + excluded.contacts;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO contact_update_hours AS h (account_id, hour, stripe, contacts)
        SELECT o.account_id, date_trunc('hour', o.updated_at AT TIME ZONE 'UTC'), pg_backend_pid() % 32, -count(*)
        FROM old_rows o GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (account_id, hour, stripe) DO UPDATE SET contacts = h.contacts + excluded.contacts;
    ELSE
        INSERT INTO contact_update_hours AS h (account_id, hour, stripe, contacts)
        SELECT d.account_id, d.hour, pg_backend_pid() % 32, sum(d.n)
        FROM (
            SELECT n.account_id, date_trunc('hour', n.updated_at AT TIME ZONE 'UTC') AS hour, 1 AS n
            FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE o.updated_at IS DISTINCT FROM n.updated_at
            UNION ALL
            SELECT o.account_id, date_trunc('hour', o.updated_at AT TIME ZONE 'UTC'), -1
            FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE o.updated_at IS DISTINCT FROM n.updated_at
        ) d
        GROUP BY 1, 2 HAVING sum(d.n) <> 0 ORDER BY 1, 2
        ON CONFLICT (account_id, hour, stripe) DO UPDATE SET contacts = h.contacts + excluded.contacts;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER contacts_update_hours_insert AFTER INSERT ON contacts
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_update_hours_count();
CREATE TRIGGER contacts_update_hours_update AFTER UPDATE ON contacts
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_update_hours_count();
CREATE TRIGGER contacts_update_hours_delete AFTER DELETE ON contacts
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_update_hours_count();

INSERT INTO contact_update_hours (account_id, hour, stripe, contacts)
SELECT account_id, date_trunc('hour', updated_at AT TIME ZONE 'UTC'), 0, count(*)
FROM contacts GROUP BY 1, 2;

-- +goose Down
DROP TRIGGER contacts_update_hours_delete ON contacts;
DROP TRIGGER contacts_update_hours_update ON contacts;
DROP TRIGGER contacts_update_hours_insert ON contacts;
DROP FUNCTION contact_update_hours_count();
DROP TABLE contact_update_hours;
