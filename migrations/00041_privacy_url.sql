-- +goose Up

-- The address of the account's privacy policy (Datenschutzerklärung), linked
-- under every sign-up form (hosted page and embed snippet) and on the booking
-- page: visitors who leave their address are to be told where it is (DSGVO
-- Art. 13). Empty: no link.
ALTER TABLE account_settings ADD COLUMN privacy_url text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE account_settings DROP COLUMN privacy_url;
