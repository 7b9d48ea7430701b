-- +goose Up

-- Contacts per account and day of creation (Europe/Berlin), for "contacts over
-- time" on the dashboard and in GET /analytics/timeseries and the new contacts
-- of GET /analytics/overview. Counting contacts by created_at read every
-- contact of the period: after importing 100,000 addresses the dashboard spent
-- ~250 ms on it per view. Maintained by the statements that create and delete
-- contacts, striped like account_contact_counts so that concurrent sign-ups
-- rarely share a row; a day's count is the sum over its stripes. Deleting a
-- contact takes it off its creation day, so the counts are the contacts that
-- exist, as the query they replace counted.
CREATE TABLE contact_days (
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    day         date NOT NULL,
    stripe      smallint NOT NULL,
    contacts    bigint NOT NULL,
    PRIMARY KEY (account_id, day, stripe)
);

INSERT INTO contact_days (account_id, day, stripe, contacts)
SELECT account_id, (created_at AT TIME ZONE 'Europe/Berlin')::date, 0, count(*)
FROM contacts GROUP BY 1, 2;

-- +goose Down
DROP TABLE contact_days;
