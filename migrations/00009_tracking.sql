-- +goose Up

-- Clicks per recipient and link: the first one emits email.clicked, later ones
-- only count (the description: "the first click per link").
CREATE TABLE link_clicks (
    account_id        bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    recipient_id      bigint NOT NULL REFERENCES campaign_recipients (id) ON DELETE CASCADE,
    link_id           bigint NOT NULL REFERENCES campaign_links (id) ON DELETE CASCADE,
    clicks            integer NOT NULL DEFAULT 1,
    first_clicked_at  timestamptz NOT NULL,
    last_clicked_at   timestamptz NOT NULL,
    PRIMARY KEY (recipient_id, link_id)
);
CREATE INDEX link_clicks_link_idx ON link_clicks (account_id, link_id);

-- +goose Down
DROP TABLE link_clicks;
