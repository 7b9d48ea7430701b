-- +goose Up

-- add_account_contacts (00012) could deadlock close to the plan's limit. A
-- transaction whose fast-path check passed took its stripe, read the total
-- again, found that others had committed meanwhile, and went on to the slow
-- path holding its stripe, where it waited for the usage row. The transaction
-- holding that row was on the slow path too, waiting for every stripe, its
-- own included. PostgreSQL broke the cycle after deadlock_timeout (a second)
-- by failing one of them. The same cycle formed when an earlier statement of
-- the transaction had counted contacts on its stripe. Now a transaction that
-- holds its stripe takes the usage row only if it is free, and otherwise
-- fails at once with a serialization failure (40001), which the contact
-- writes retry (retryTxOn) and the single-statement writes hand to their
-- locked path. The fast path is unchanged.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION add_account_contacts(p_account bigint, p_n bigint) RETURNS boolean
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
    -- transaction that holds a stripe. A transaction that holds its stripe
    -- already must not wait for the usage row: its holder may be waiting for
    -- that stripe. It holds it when its second check here failed, or when an
    -- earlier statement of it counted contacts (the row version it sees is
    -- its own). It gives up instead, and its caller retries. After a failed
    -- second check the retry reads at least the total that failed it, so its
    -- first check fails and it comes to this path without a stripe (unless
    -- contacts were deleted meanwhile).
    IF added OR EXISTS (SELECT 1 FROM account_contact_counts
                        WHERE account_id = p_account AND stripe = my_stripe
                          AND xmin::text::bigint = pg_current_xact_id_if_assigned()::text::bigint % 4294967296) THEN
        PERFORM 1 FROM account_usage WHERE account_id = p_account FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'account % is counting contacts near its limit in another transaction', p_account
                USING ERRCODE = 'serialization_failure';
        END IF;
    ELSE
        PERFORM 1 FROM account_usage WHERE account_id = p_account FOR UPDATE;
    END IF;
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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION add_account_contacts(p_account bigint, p_n bigint) RETURNS boolean
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
