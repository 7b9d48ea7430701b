-- +goose Up

-- Sign-up forms and their bot protection (issue 3).
--
-- A form's public token is the one value a visitor's browser knows: the sign-up
-- endpoint POST /v1/subscribe/{token} and the hosted page /subscribe/{token} look
-- the form up by it across accounts (the unique index serves that lookup), and
-- everything after that filters on the form's account_id.
--
-- list_ids is an array rather than a join table: a form is always read and written
-- whole, and a list that is deleted later simply drops out when the form is read
-- (the store intersects list_ids with the account's lists), so no foreign key is
-- needed to keep sign-ups from pointing at a missing list.
CREATE TABLE forms (
    id                bigserial PRIMARY KEY,
    account_id        bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name              text NOT NULL,
    token             text NOT NULL,
    list_ids          bigint[] NOT NULL DEFAULT '{}',
    tags              text[] NOT NULL DEFAULT '{}',
    double_opt_in     boolean NOT NULL DEFAULT true,
    -- Visible fields besides the address: first_name, last_name, phone, zip, city.
    fields            text[] NOT NULL DEFAULT '{first_name}',
    -- An http(s) URL the browser is sent to after signing up, or '' for the hosted
    -- thank-you page.
    success_redirect  text NOT NULL DEFAULT '',
    success_message   text NOT NULL DEFAULT '',
    proof_of_work     boolean NOT NULL DEFAULT false,
    -- Minimum seconds between rendering and posting the form (signed stamp _rb_ts);
    -- 0 turns the stamp off for server-to-server integrations.
    min_fill_seconds  integer NOT NULL DEFAULT 3 CHECK (min_fill_seconds >= 0),
    submissions       bigint NOT NULL DEFAULT 0,
    created_at        timestamptz(0) NOT NULL DEFAULT now(),
    updated_at        timestamptz(0) NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX forms_token_key ON forms (token);
CREATE INDEX forms_account_idx ON forms (account_id, id);

-- Solved proof-of-work challenges, each accepted once: a replayed solution hits
-- the primary key. Rows are purged once the challenge has expired (store.Purge),
-- after which botguard refuses the solution anyway.
CREATE TABLE used_challenges (
    challenge   text PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX used_challenges_expires_idx ON used_challenges (expires_at);

-- +goose Down
DROP TABLE used_challenges;
DROP TABLE forms;
