-- +goose Up

-- Contact counters without a hot row (issue 3, speed).
--
-- account_usage.contacts used to be the one row every new contact of an account
-- updated: its lock is held until commit, so concurrent sign-ups and upserts
-- queued one commit (and one WAL flush) after the other. New contacts now count
-- in one of 32 stripes per account, chosen by the backend, so that concurrent
-- transactions rarely share a row. An account's contacts are
-- account_usage.contacts (the base, which operators and older rows keep) plus
-- the sum of its stripes.
CREATE TABLE account_contact_counts (
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    stripe      smallint NOT NULL,
    contacts    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, stripe)
);

-- add_account_contacts counts n new contacts (negative: deleted) of an account
-- and reports whether the account stays within its plan's contact limit. The
-- caller rolls back on false. It must run in READ COMMITTED and be VOLATILE: each
-- statement inside sees a fresh snapshot.
--
-- Why the limit stays exact: far from the limit, a transaction adds n <= 1000
-- (store.MaxBatch) to its stripe, which locks that stripe until commit, and only
-- then reads the total. Every adding transaction it cannot see yet holds another
-- stripe's lock, so at most 31 others, each adding at most 1000, are missing from
-- what it reads: a total of at most max - 31,000 is safe. Closer to the limit
-- (or for more than 1000 at once) a transaction takes the account's usage row
-- and every stripe, waiting for all adding transactions to commit, and checks the
-- exact total: there, contact creation is one transaction at a time, as before.
-- +goose StatementBegin
CREATE FUNCTION add_account_contacts(p_account bigint, p_n bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    stripes CONSTANT integer := 32;
    batch CONSTANT bigint := 1000;
    my_stripe integer := pg_backend_pid() % stripes;
    max_n bigint;
    total bigint;
    added boolean := false;
BEGIN
    IF p_n = 0 THEN
        RETURN true;
    END IF;
    IF p_n < 0 THEN
        -- Fewer contacts never break a limit.
        UPDATE account_contact_counts SET contacts = contacts + p_n
        WHERE account_id = p_account AND stripe = my_stripe;
        IF NOT FOUND THEN
            UPDATE account_usage SET contacts = contacts + p_n WHERE account_id = p_account;
        END IF;
        RETURN true;
    END IF;
    SELECT p.max_contacts INTO max_n FROM accounts a JOIN plans p ON p.name = a.plan WHERE a.id = p_account;
    IF max_n IS NULL THEN
        RETURN false;
    END IF;
    SELECT u.contacts + coalesce((SELECT sum(s.contacts) FROM account_contact_counts s WHERE s.account_id = p_account), 0)
    INTO total FROM account_usage u WHERE u.account_id = p_account;
    IF p_n <= batch AND total + p_n + stripes * batch <= max_n THEN
        UPDATE account_contact_counts SET contacts = contacts + p_n
        WHERE account_id = p_account AND stripe = my_stripe;
        IF FOUND THEN
            added := true;
            SELECT u.contacts + coalesce((SELECT sum(s.contacts) FROM account_contact_counts s WHERE s.account_id = p_account), 0)
            INTO total FROM account_usage u WHERE u.account_id = p_account;
            IF total + (stripes - 1) * batch <= max_n THEN
                RETURN true;
            END IF;
        END IF;
    END IF;
    -- Close to the limit: serialise on the usage row, then wait for every
    -- transaction that holds a stripe.
    PERFORM 1 FROM account_usage WHERE account_id = p_account FOR UPDATE;
    IF (SELECT count(*) FROM account_contact_counts WHERE account_id = p_account) < stripes THEN
        INSERT INTO account_contact_counts (account_id, stripe)
        SELECT p_account, g FROM generate_series(0, stripes - 1) AS g
        ON CONFLICT DO NOTHING;
    END IF;
    PERFORM 1 FROM account_contact_counts WHERE account_id = p_account ORDER BY stripe FOR UPDATE;
    IF NOT added THEN
        UPDATE account_contact_counts SET contacts = contacts + p_n
        WHERE account_id = p_account AND stripe = my_stripe;
    END IF;
    SELECT u.contacts + coalesce((SELECT sum(s.contacts) FROM account_contact_counts s WHERE s.account_id = p_account), 0)
    INTO total FROM account_usage u WHERE u.account_id = p_account;
    RETURN total <= max_n;
END
$$;
-- +goose StatementEnd

-- Stripes for the accounts there are; a new account gets its stripes from its
-- first add_account_contacts call (which takes the slow path without them).
INSERT INTO account_contact_counts (account_id, stripe)
SELECT a.id, g FROM accounts a CROSS JOIN generate_series(0, 31) AS g;

-- Tag counts for GET /tags, maintained by every contact change in the same
-- statement that writes its events, striped like the contact counter (a
-- popular tag would otherwise be a hot row). A tag's count is the sum over its
-- stripes.
CREATE TABLE contact_tag_counts (
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    tag         text NOT NULL,
    stripe      smallint NOT NULL,
    contacts    bigint NOT NULL,
    PRIMARY KEY (account_id, tag, stripe)
);
INSERT INTO contact_tag_counts (account_id, tag, stripe, contacts)
SELECT c.account_id, t, 0, count(*) FROM contacts c CROSS JOIN LATERAL unnest(c.tags) AS t
WHERE c.tags <> '{}' GROUP BY 1, 2;

-- Substring search (GET /contacts?q=) over address and names: a trigram index
-- on the one expression the search matches first (the exact per-field match is
-- checked on the rows it finds).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX contacts_search_idx ON contacts USING gin
    ((email || ' ' || lower(first_name) || ' ' || lower(last_name)) gin_trgm_ops);

-- +goose Down
DROP INDEX contacts_search_idx;
DROP TABLE contact_tag_counts;
UPDATE account_usage u SET contacts = u.contacts + s.n
FROM (SELECT account_id, sum(contacts) AS n FROM account_contact_counts GROUP BY account_id) s
WHERE s.account_id = u.account_id;
DROP FUNCTION add_account_contacts(bigint, bigint);
DROP TABLE account_contact_counts;
