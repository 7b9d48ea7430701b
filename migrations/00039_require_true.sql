-- +goose Up

-- require_true fails the statement it runs in (SQLSTATE RB002, with the
-- message given) unless ok is true. A purchase from a payment provider is
-- applied optimistically as one statement outside a transaction block
-- (store/integrations_optimistic.go): it checks at its end that what it read
-- before still held (the order items all new or all recorded, the buyer's
-- contact written at the version read, every list joined), and when not, the
-- statement must take back every row it wrote so that the locked path can
-- apply the call instead. Like require_account_contacts (migration 00016).
-- +goose StatementBegin
CREATE FUNCTION require_true(ok boolean, msg text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION '%', msg USING ERRCODE = 'RB002';
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION require_true(boolean, text);
