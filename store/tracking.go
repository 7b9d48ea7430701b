package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// automatedAgents are parts of User-Agent headers of link scanners, security
// gateways and prefetchers: their requests are served but not counted.
var automatedAgents = []string{
	"bot", "crawler", "spider", "scanner", "preview", "prefetch", "barracuda", "proofpoint", "mimecast",
	"urldefense", "safelinks", "trendmicro", "forcepoint", "sophos", "symantec", "messagelabs", "cisco",
	"python-requests", "go-http-client", "curl/", "wget/", "java/", "okhttp", "headlesschrome",
}

// applePrivacyProxy is the range Apple Mail Privacy Protection loads images from:
// such an "open" happens for every delivered mail, read or not.
var applePrivacyProxy = netip.MustParsePrefix("17.0.0.0/8")

// IsAutomated reports whether a tracking request comes from a machine rather than
// the recipient: a known scanner or prefetcher by its User-Agent, an empty one, or
// (for opens) Apple's privacy proxy.
func IsAutomated(userAgent string, ip netip.Addr, open bool) bool {
	ua := strings.ToLower(userAgent)
	if ua == "" {
		return true
	}
	for _, a := range automatedAgents {
		if strings.Contains(ua, a) {
			return true
		}
	}
	return open && applePrivacyProxy.Contains(ip.Unmap())
}

// emailEvent is the data of email.opened and email.clicked (decisions.md).
type emailEvent struct {
	CampaignID int64      `json:"campaign_id"`
	ContactID  *int64     `json:"contact_id"`
	Email      string     `json:"email"`
	OpenedAt   *EventTime `json:"opened_at,omitempty"`
	ClickedAt  *EventTime `json:"clicked_at,omitempty"`
	URL        string     `json:"url,omitempty"`
}

type trackedRecipient struct {
	AccountID  int64         `db:"account_id"`
	CampaignID int64         `db:"campaign_id"`
	ContactID  sql.NullInt64 `db:"contact_id"`
	Email      string        `db:"email"`
}

func (r trackedRecipient) contact() *int64 {
	if !r.ContactID.Valid || r.ContactID.Int64 == 0 {
		return nil
	}
	return &r.ContactID.Int64
}

const markOpened = `UPDATE campaign_recipients SET opened_at = $2 WHERE id = $1 AND opened_at IS NULL
RETURNING account_id, campaign_id, contact_id, email`

// TrackOpen records that a recipient opened a mail. Only the first open emits
// email.opened and a contact activity; it reports whether this was the first.
// The recipient comes from a signed token, so it is looked up by id alone.
func (db *DB) TrackOpen(ctx context.Context, recipientID int64, at time.Time) (bool, error) {
	first := false
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var r trackedRecipient
		if err := tx.GetContext(ctx, &r, markOpened, recipientID, at); errors.Is(err, sql.ErrNoRows) {
			return nil // opened before, or no such recipient
		} else if err != nil {
			return fmt.Errorf("store: track open: %w", err)
		}
		first = true
		if err := addEngagement(ctx, tx, r.AccountID, r.CampaignID, recipientID, at, 1, 0, 0); err != nil {
			return err
		}
		t := EventTime(at)
		return recordEngagement(ctx, tx, r, EventEmailOpened, emailEvent{CampaignID: r.CampaignID, ContactID: r.contact(), Email: r.Email, OpenedAt: &t})
	})
	return first, err
}

const selectClickTarget = `SELECT r.account_id, r.campaign_id, r.contact_id, r.email, l.url
FROM campaign_recipients r
JOIN campaign_links l ON l.id = $2 AND l.campaign_id = r.campaign_id AND l.account_id = r.account_id
WHERE r.id = $1`

const upsertLinkClick = `INSERT INTO link_clicks (account_id, recipient_id, link_id, first_clicked_at, last_clicked_at)
VALUES ($1, $2, $3, $4, $4)
ON CONFLICT (recipient_id, link_id) DO UPDATE SET clicks = link_clicks.clicks + 1, last_clicked_at = EXCLUDED.last_clicked_at
RETURNING xmax = 0 AS inserted`

const markClicked = `UPDATE campaign_recipients SET clicked_at = $2 WHERE id = $1 AND clicked_at IS NULL`

// addStatsEngagement adds opens and clicks to a campaign's and its account's
// day, in the shard of the recipient (see migrations/00011_campaign_stats.sql),
// and first opens and clicks to the campaign's hour (campaign_hours, migration
// 00038); a click that is not a recipient's first leaves the hour alone.
const addStatsEngagement = `WITH a AS (
  INSERT INTO account_stats AS s (account_id, day, shard, opens, clicks, total_clicks) VALUES ($1, $3, $4, $5, $6, $7)
  ON CONFLICT (account_id, day, shard) DO UPDATE SET opens = s.opens + EXCLUDED.opens, clicks = s.clicks + EXCLUDED.clicks,
    total_clicks = s.total_clicks + EXCLUDED.total_clicks
), h AS (
  INSERT INTO campaign_hours AS s (account_id, campaign_id, hour, shard, opens, clicks)
  SELECT $1, $2, $8, $4, $5, $6 WHERE $5::bigint + $6::bigint > 0
  ON CONFLICT (campaign_id, hour, shard) DO UPDATE SET opens = s.opens + EXCLUDED.opens, clicks = s.clicks + EXCLUDED.clicks
)
INSERT INTO campaign_stats AS s (account_id, campaign_id, day, shard, opens, clicks, total_clicks)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (campaign_id, day, shard) DO UPDATE SET opens = s.opens + EXCLUDED.opens, clicks = s.clicks + EXCLUDED.clicks,
  total_clicks = s.total_clicks + EXCLUDED.total_clicks`

// addEngagement counts a first open (opens), a recipient's first click
// (clicks) and a counted click (total) on the campaign's Berlin day of at, and
// the first open and click on its hour. Callers pass the at they stored as
// opened_at or clicked_at, so the hour is date_trunc('hour') of that column.
func addEngagement(ctx context.Context, tx *sqlx.Tx, accountID, campaignID, recipientID int64, at time.Time, opens, clicks, total int) error {
	if _, err := tx.ExecContext(ctx, addStatsEngagement, accountID, campaignID, Day(at), recipientID%statsShards,
		opens, clicks, total, at.Truncate(time.Hour)); err != nil {
		return fmt.Errorf("store: campaign stats: %w", err)
	}
	return nil
}

// statsShards is the number of campaign_stats rows per campaign and day that
// concurrent writers spread over.
const statsShards = 16

// TrackClick returns the address a tracked link leads to: the campaign's own
// link, so a token can never redirect anywhere else (a personalised link passes
// the address its token signs as rendered). With record set, the click is
// counted and the first click per link emits email.clicked.
func (db *DB) TrackClick(ctx context.Context, recipientID, linkID int64, rendered string, at time.Time, record bool) (string, error) {
	var target string
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var row struct {
			trackedRecipient
			URL string `db:"url"`
		}
		if err := tx.GetContext(ctx, &row, selectClickTarget, recipientID, linkID); err != nil {
			return notFound("track click", err)
		}
		target = row.URL
		if rendered != "" {
			target = rendered
		}
		if !record {
			return nil
		}
		var inserted bool
		if err := tx.GetContext(ctx, &inserted, upsertLinkClick, row.AccountID, recipientID, linkID, at); err != nil {
			return fmt.Errorf("store: track click: %w", err)
		}
		firstOfRecipient := int64(0)
		if inserted {
			res, err := tx.ExecContext(ctx, markClicked, recipientID, at)
			if err != nil {
				return fmt.Errorf("store: track click: %w", err)
			}
			firstOfRecipient, _ = res.RowsAffected()
		}
		if err := addEngagement(ctx, tx, row.AccountID, row.CampaignID, recipientID, at, 0, int(firstOfRecipient), 1); err != nil {
			return err
		}
		if !inserted {
			return nil
		}
		t := EventTime(at)
		return recordEngagement(ctx, tx, row.trackedRecipient, EventEmailClicked,
			emailEvent{CampaignID: row.CampaignID, ContactID: row.contact(), Email: row.Email, ClickedAt: &t, URL: target})
	})
	return target, err
}

const selectLinkURL = `SELECT url FROM campaign_links WHERE id = $1`

// LinkURL is the address of a campaign link, for the links of test mails, which
// belong to no recipient.
func (db *DB) LinkURL(ctx context.Context, linkID int64) (string, error) {
	var u string
	if err := db.GetContext(ctx, &u, selectLinkURL, linkID); err != nil {
		return "", notFound("link url", err)
	}
	return u, nil
}

func recordEngagement(ctx context.Context, tx *sqlx.Tx, r trackedRecipient, event string, data emailEvent) error {
	if _, err := Emit(ctx, tx, r.AccountID, event, data); err != nil {
		return err
	}
	if c := r.contact(); c != nil {
		details := map[string]any{"campaign_id": r.CampaignID}
		if data.URL != "" {
			details["url"] = data.URL
		}
		return LogActivity(ctx, tx, r.AccountID, Actor{Type: ActorPublic}, ActivityEntry{
			Action: event, ObjectType: ObjectContact, ObjectID: *c, Details: details,
		})
	}
	return nil
}
