package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"
)

// HourEngagement is one hour after a send: recipients who opened or clicked
// for the first time in it.
type HourEngagement struct {
	Hour   time.Time `db:"hour"`
	Opens  int64     `db:"opens"`
	Clicks int64     `db:"clicks"`
}

// The first opens and clicks per hour are maintained by the tracking pages in
// campaign_hours (migrations/00038_campaign_hours.sql): at most 16 shard rows
// per hour, instead of every recipient who opened (issue 24).
const selectCampaignHours = `SELECT hour, sum(opens)::bigint AS opens, sum(clicks)::bigint AS clicks
FROM campaign_hours WHERE campaign_id = $2 AND account_id = $1 AND hour >= $3 AND hour < $4
GROUP BY hour HAVING sum(opens) + sum(clicks) > 0 ORDER BY hour`

// CampaignHours counts first opens and clicks per hour in [from, to), for the
// curve of the first hours after a send. Hours without any are left out. The
// counters are kept per whole hour, so from and to are whole hours (an hour
// counts when it begins in [from, to)).
func (db *DB) CampaignHours(ctx context.Context, accountID, campaignID int64, from, to time.Time) ([]HourEngagement, error) {
	var out []HourEngagement
	if err := db.SelectContext(ctx, &out, selectCampaignHours, accountID, campaignID, from, to); err != nil {
		return nil, fmt.Errorf("store: campaign hours: %w", err)
	}
	return out, nil
}

// exportRecipientsBatch is the number of recipients per read of an export.
const exportRecipientsBatch = 2000

// ExportCampaignRecipients hands a campaign's recipients under f to fn in
// batches, in queue order, reading by key (never by offset), so that an
// export of a million recipients costs what one page does, a million times
// over at most.
func (db *DB) ExportCampaignRecipients(ctx context.Context, accountID, campaignID int64, f RecipientFilter, fn func([]CampaignRecipient) error) error {
	if err := f.Validate(); err != nil {
		return err
	}
	if err := campaignExists(ctx, db, accountID, campaignID); err != nil {
		return err
	}
	where, args := f.conds([]string{"campaign_id = $1", "account_id = $2", "id > $3"}, []any{campaignID, accountID, int64(0)})
	q := fmt.Sprintf(`SELECT id, nullif(contact_id, 0) AS contact_id, email, status, attempts, message_id, error, sent_at,
  opened_at, clicked_at FROM campaign_recipients WHERE %s ORDER BY id LIMIT %d`, strings.Join(where, " AND "), exportRecipientsBatch)
	for {
		var batch []CampaignRecipient
		if err := db.SelectContext(ctx, &batch, q, args...); err != nil {
			return fmt.Errorf("store: export recipients: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		if err := fn(batch); err != nil {
			return err
		}
		if len(batch) < exportRecipientsBatch {
			return nil
		}
		args[2] = batch[len(batch)-1].ID
	}
}

// CampaignRef is how a campaign is named where something refers to it.
type CampaignRef struct {
	ID      int64  `db:"id"`
	Kind    string `db:"kind"`
	Name    string `db:"name"`
	Subject string `db:"subject"`
}

const selectCampaignRefs = `SELECT id, kind, name, subject FROM campaigns WHERE account_id = $1 AND id = ANY($2)`

// CampaignRefs names the account's campaigns among ids (one statement), for a
// timeline that mentions them; ids of other accounts are left out.
func (db *DB) CampaignRefs(ctx context.Context, accountID int64, ids []int64) (map[int64]CampaignRef, error) {
	out := make(map[int64]CampaignRef, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []CampaignRef
	if err := db.SelectContext(ctx, &rows, selectCampaignRefs, accountID, pq.Int64Array(ids)); err != nil {
		return nil, fmt.Errorf("store: campaign names: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = r
	}
	return out, nil
}
