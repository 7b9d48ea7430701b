-- +goose Up

-- require_account_contacts is add_account_contacts for a change that runs as a
-- single statement outside a transaction block (the optimistic contact write,
-- store/contacts_optimistic.go): there is no transaction for the caller to roll
-- back when the plan's limit is exceeded, so the statement itself fails, with
-- SQLSTATE RB001, and takes every row it wrote with it.
-- +goose StatementBegin
CREATE FUNCTION require_account_contacts(p_account bigint, p_n bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF NOT add_account_contacts(p_account, p_n) THEN
        RAISE EXCEPTION 'account % would exceed its plan''s contact limit', p_account USING ERRCODE = 'RB001';
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION require_account_contacts(bigint, bigint);
