-- +goose Up

-- Appointments (issue 22): an appointment book per account with a public
-- booking page. Two bookings of one time can never both commit: the exclusion
-- constraint over the booked rows' time ranges is checked by PostgreSQL, so it
-- holds across transactions and serve processes alike.
CREATE EXTENSION IF NOT EXISTS btree_gist;

-- One row per account, created with defaults on first read (the token of the
-- booking page is made then).
CREATE TABLE appointment_settings (
    account_id        bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    enabled           boolean NOT NULL DEFAULT false,
    title             text NOT NULL DEFAULT '',
    description       text NOT NULL DEFAULT '',
    duration_minutes  integer NOT NULL DEFAULT 30,
    buffer_minutes    integer NOT NULL DEFAULT 0,
    min_notice_hours  integer NOT NULL DEFAULT 0,
    max_days_ahead    integer NOT NULL DEFAULT 30,
    reminder_hours    integer NOT NULL DEFAULT 24,
    -- {"mon": [["09:00","17:00"]], …}, wall-clock ranges in Europe/Berlin.
    weekly_hours      jsonb NOT NULL DEFAULT '{}',
    -- [{"from": "2026-12-24", "to": "2026-12-26", "note": "…"}], both days included.
    blocked_dates     jsonb NOT NULL DEFAULT '[]',
    list_id           bigint REFERENCES lists (id) ON DELETE SET NULL,
    min_fill_seconds  integer NOT NULL DEFAULT 3,
    privacy_text      text NOT NULL DEFAULT '',
    token             text NOT NULL UNIQUE,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE appointments (
    id                 bigserial PRIMARY KEY,
    account_id         bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    start_at           timestamptz NOT NULL,
    end_at             timestamptz NOT NULL,
    name               text NOT NULL,
    email              text NOT NULL,
    phone              text NOT NULL DEFAULT '',
    note               text NOT NULL DEFAULT '',
    status             text NOT NULL DEFAULT 'booked' CHECK (status IN ('booked', 'cancelled')),
    source             text NOT NULL CHECK (source IN ('api', 'portal', 'booking_page')),
    contact_id         bigint REFERENCES contacts (id) ON DELETE SET NULL,
    -- The iCalendar UID (stable for the appointment's life) and SEQUENCE
    -- (raised by every reschedule and the cancellation).
    uid                text NOT NULL UNIQUE,
    sequence           integer NOT NULL DEFAULT 0,
    -- SHA-256 of the booker's cancellation link token.
    cancel_token_hash  bytea NOT NULL UNIQUE,
    reminder_sent_at   timestamptz,
    cancelled_at       timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CHECK (end_at > start_at),
    CONSTRAINT appointments_no_overlap EXCLUDE USING gist (
        account_id WITH =, tstzrange(start_at, end_at) WITH &&) WHERE (status = 'booked')
);
CREATE INDEX appointments_account_start_idx ON appointments (account_id, start_at);
-- The reminder worker's queue: booked appointments whose reminder is not sent.
CREATE INDEX appointments_reminder_idx ON appointments (start_at) WHERE status = 'booked' AND reminder_sent_at IS NULL;

-- System mails may carry an iCalendar invitation (sent as a text/calendar
-- part) and may go through the account's own SMTP route (its default server,
-- else the relay) instead of the operator's.
ALTER TABLE system_mails
    ADD COLUMN calendar text NOT NULL DEFAULT '',
    ADD COLUMN account_route boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE system_mails DROP COLUMN calendar, DROP COLUMN account_route;
DROP TABLE appointments;
DROP TABLE appointment_settings;
