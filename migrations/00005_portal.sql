-- +goose Up

-- Portal sessions (github.com/alexedwards/scs/v2), shared by every `rundbrief serve`
-- process on this database. token is the SHA-256 of the cookie value (scs's
-- HashTokenInStore), so a copy of this table signs nobody in. data is scs's encoded
-- session. account_id and user_id are set for signed-in sessions, so that all
-- sessions of an account or a user can be ended (password change, blocked account);
-- an anonymous session (e.g. one that only carries a flash message) has neither.
-- An ended session (sign-out, password change) stays as a tombstone with ended_at set
-- until its expiry, so that a request still running with it cannot store it again.
CREATE TABLE sessions (
    token       text PRIMARY KEY,
    data        bytea NOT NULL,
    expiry      timestamptz NOT NULL,
    account_id  bigint REFERENCES accounts (id) ON DELETE CASCADE,
    user_id     bigint REFERENCES users (id) ON DELETE CASCADE,
    ended_at    timestamptz
);
CREATE INDEX sessions_expiry_idx ON sessions (expiry);
CREATE INDEX sessions_account_idx ON sessions (account_id) WHERE account_id IS NOT NULL;
CREATE INDEX sessions_user_idx ON sessions (user_id) WHERE user_id IS NOT NULL;

-- Sign-in attempts, for throttling across processes. Every row is written before the
-- password is checked and removed again when the sign-in succeeds, so the rows in a
-- window are the failed (or still running) attempts.
--
-- Exception to "every tenant table has a NOT NULL account_id": an attempt precedes
-- knowing the account, and attempts for addresses that belong to nobody must be
-- throttled too (otherwise the throttle would tell which addresses exist). account_id
-- is filled when the address belongs to a user, so that an account's rows go with it;
-- throttling itself looks rows up by email and by ip, never by account. No portal
-- page lists these rows.
CREATE TABLE login_attempts (
    id          bigserial PRIMARY KEY,
    email       text NOT NULL, -- lower-cased as typed
    ip          text NOT NULL,
    account_id  bigint REFERENCES accounts (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL
);
CREATE INDEX login_attempts_email_idx ON login_attempts (email, created_at);
CREATE INDEX login_attempts_ip_idx ON login_attempts (ip, created_at);
CREATE INDEX login_attempts_created_idx ON login_attempts (created_at);

-- +goose Down
DROP TABLE login_attempts;
DROP TABLE sessions;
