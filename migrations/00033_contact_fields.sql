-- +goose Up

-- The account's custom contact fields (issue 24): each key that contacts carry
-- in custom_fields, with a label and a type that the portal uses to show and
-- offer it (the mail editor's placeholder picker, the contact detail). Keys
-- written on contacts are added by the outbox consumer "fields" (store/fields.go)
-- from contact.created and contact.updated events, so no page scans contacts for
-- them and no contact write waits for this table. A definition without any
-- contact carrying the key is allowed (defined before the first import).
CREATE TABLE contact_fields (
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key         text NOT NULL,
    label       text NOT NULL,
    type        text NOT NULL DEFAULT 'text' CHECK (type IN ('text', 'number', 'date', 'boolean')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, key)
);

-- The keys contacts carry today, typed by their values (numbers, yes/no,
-- ISO dates, otherwise text), at most 1000 per account as the consumer keeps it.
INSERT INTO contact_fields (account_id, key, label, type)
SELECT account_id, key, key, type FROM (
  SELECT account_id, key,
    CASE WHEN bool_and(jsonb_typeof(value) = 'number') THEN 'number'
         WHEN bool_and(jsonb_typeof(value) = 'boolean') THEN 'boolean'
         WHEN bool_and(jsonb_typeof(value) = 'string' AND value #>> '{}' ~ '^\d{4}-\d{2}-\d{2}$') THEN 'date'
         ELSE 'text' END AS type,
    row_number() OVER (PARTITION BY account_id ORDER BY key) AS n
  FROM contacts, jsonb_each(custom_fields)
  GROUP BY account_id, key
) k
WHERE n <= 1000;

-- +goose Down
DROP TABLE contact_fields;
