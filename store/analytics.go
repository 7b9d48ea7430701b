package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// This file is campaigns and analytics (issue 4): campaigns of every kind with
// their engagement, a campaign's recipients and links, and the account's
// overview and time series. Engagement comes from the counters in
// campaign_stats and account_stats (migrations/00011_campaign_stats.sql),
// which the send workers, the tracking pages and the unsubscribes keep in
// their own transactions, so no read here scans the recipients of more than
// one campaign.

// Engagement is what became of sent mail: counters of a campaign, a day or a
// period. Opens and Clicks count recipients (the first open, the first click);
// TotalClicks every counted click.
type Engagement struct {
	Sent         int64 `db:"sent"`
	Failed       int64 `db:"failed"`
	Bounces      int64 `db:"bounces"`
	Opens        int64 `db:"opens"`
	Clicks       int64 `db:"clicks"`
	TotalClicks  int64 `db:"total_clicks"`
	Unsubscribes int64 `db:"unsubscribes"`
}

// Ratio is n of total as a number between 0 and 1 (0 when total is 0).
func Ratio(n, total int64) float64 {
	if total <= 0 || n <= 0 {
		return 0
	}
	if n >= total {
		return 1
	}
	return float64(n) / float64(total)
}

// OpenRate is unique opens per sent mail.
func (e Engagement) OpenRate() float64 { return Ratio(e.Opens, e.Sent) }

// ClickRate is unique clickers per sent mail.
func (e Engagement) ClickRate() float64 { return Ratio(e.Clicks, e.Sent) }

// ClickToOpenRate is unique clickers per unique opener.
func (e Engagement) ClickToOpenRate() float64 { return Ratio(e.Clicks, e.Opens) }

// BounceRate is permanent rejections per attempted mail (sent or failed).
func (e Engagement) BounceRate() float64 { return Ratio(e.Bounces, e.Sent+e.Failed) }

// UnsubscribeRate is unsubscribes per sent mail.
func (e Engagement) UnsubscribeRate() float64 { return Ratio(e.Unsubscribes, e.Sent) }

func (e *Engagement) add(o Engagement) {
	e.Sent += o.Sent
	e.Failed += o.Failed
	e.Bounces += o.Bounces
	e.Opens += o.Opens
	e.Clicks += o.Clicks
	e.TotalClicks += o.TotalClicks
	e.Unsubscribes += o.Unsubscribes
}

// CampaignSummary is a campaign (without its content in lists) with its
// engagement. Sent and Failed are the campaign's own counters (current state:
// a retried failure is no longer failed); the rest comes from campaign_stats.
type CampaignSummary struct {
	Campaign
	Engagement
}

// CampaignFilter narrows GET /campaigns; empty fields do not filter.
type CampaignFilter struct {
	Kind   string // newsletter, email, story or sequence
	Type   string // newsletter, transactional or follow_up
	Status string
}

// Validate checks the filter values.
func (f CampaignFilter) Validate() error {
	errs := Errs{}
	if f.Kind != "" && f.Kind != KindNewsletter && f.Kind != KindEmail && f.Kind != KindStory && f.Kind != KindSequence {
		errs.Add("kind", "Erlaubt sind newsletter, email, story und sequence.")
	}
	if f.Type != "" && f.Type != TypeNewsletter && f.Type != TypeTransactional && f.Type != TypeFollowUp {
		errs.Add("type", "Erlaubt sind newsletter, transactional und follow_up.")
	}
	if f.Status != "" && !ValidCampaignStatus(f.Status) {
		errs.Add("status", "Unbekannter Status.")
	}
	return errs.Err()
}

const selectStatsOf = `SELECT campaign_id, coalesce(sum(bounces), 0) AS bounces, coalesce(sum(opens), 0) AS opens,
  coalesce(sum(clicks), 0) AS clicks, coalesce(sum(total_clicks), 0) AS total_clicks,
  coalesce(sum(unsubscribes), 0) AS unsubscribes
FROM campaign_stats WHERE account_id = $1 AND campaign_id = ANY($2) GROUP BY campaign_id`

// summarize adds the engagement of campaigns (one indexed query for all).
// Summarize adds their engagement to one page of campaigns (one statement).
func (db *DB) Summarize(ctx context.Context, accountID int64, list []Campaign) ([]CampaignSummary, error) {
	return summarize(ctx, db, accountID, list)
}

func summarize(ctx context.Context, q sqlx.QueryerContext, accountID int64, list []Campaign) ([]CampaignSummary, error) {
	out := make([]CampaignSummary, len(list))
	if len(list) == 0 {
		return out, nil
	}
	ids := make(pq.Int64Array, len(list))
	for i, c := range list {
		ids[i] = c.ID
	}
	var rows []struct {
		CampaignID int64 `db:"campaign_id"`
		Engagement
	}
	if err := sqlx.SelectContext(ctx, q, &rows, selectStatsOf, accountID, ids); err != nil {
		return nil, fmt.Errorf("store: campaign stats: %w", err)
	}
	byID := make(map[int64]Engagement, len(rows))
	for _, r := range rows {
		byID[r.CampaignID] = r.Engagement
	}
	for i, c := range list {
		e := byID[c.ID]
		e.Sent, e.Failed = c.SentCount, c.FailedCount
		out[i] = CampaignSummary{Campaign: c, Engagement: e}
	}
	return out, nil
}

// ListCampaigns lists an account's campaigns (newsletters and single emails),
// newest first, without their content, with their engagement.
func (db *DB) ListCampaigns(ctx context.Context, accountID int64, f CampaignFilter, p Page) ([]CampaignSummary, int, error) {
	if err := f.Validate(); err != nil {
		return nil, 0, err
	}
	where := []string{"account_id = $1"}
	args := []any{accountID}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.Kind != "" {
		add("kind = $%d", f.Kind)
	}
	if f.Type != "" {
		add("type = $%d", f.Type)
	}
	if f.Status != "" {
		add("status = $%d", f.Status)
	}
	cond := strings.Join(where, " AND ")
	var (
		out   []CampaignSummary
		total int
	)
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &total, `SELECT count(*) FROM campaigns WHERE `+cond, args...); err != nil {
			return fmt.Errorf("store: campaigns: %w", err)
		}
		q := fmt.Sprintf(`SELECT %s FROM campaigns WHERE %s ORDER BY id DESC LIMIT $%d OFFSET $%d`,
			campaignSummaryColumns, cond, len(args)+1, len(args)+2)
		var list []Campaign
		if err := tx.SelectContext(ctx, &list, q, append(args, p.PerPage, p.Offset())...); err != nil {
			return fmt.Errorf("store: campaigns: %w", err)
		}
		var err error
		out, err = summarize(ctx, tx, accountID, list)
		return err
	})
	return out, total, err
}

const selectAnyCampaign = `SELECT ` + campaignColumns + ` FROM campaigns WHERE account_id = $1 AND id = $2`

// CampaignSummaryOf returns one campaign of any kind with its content and
// engagement.
func (db *DB) CampaignSummaryOf(ctx context.Context, accountID, id int64) (CampaignSummary, error) {
	var c Campaign
	if err := db.GetContext(ctx, &c, selectAnyCampaign, accountID, id); err != nil {
		return CampaignSummary{}, notFound("campaign", err)
	}
	s, err := summarize(ctx, db, accountID, []Campaign{c})
	if err != nil {
		return CampaignSummary{}, err
	}
	return s[0], nil
}

// DayEngagement is the engagement of one day (or the first day of a week or
// month) together with the contacts: NewContacts created in it, and
// Contacts, the number of today's contacts that existed at its end.
type DayEngagement struct {
	Day time.Time // midnight in Europe/Berlin
	Engagement
	NewContacts int64
	Contacts    int64
}

const selectCampaignDays = `SELECT day, sum(sent) AS sent, sum(failed) AS failed, sum(bounces) AS bounces, sum(opens) AS opens,
  sum(clicks) AS clicks, sum(total_clicks) AS total_clicks, sum(unsubscribes) AS unsubscribes
FROM campaign_stats WHERE account_id = $1 AND campaign_id = $2 GROUP BY day ORDER BY day`

// CampaignDays is a campaign's engagement per day, the days with any
// activity in order.
func (db *DB) CampaignDays(ctx context.Context, accountID, campaignID int64) ([]DayEngagement, error) {
	var rows []struct {
		Day time.Time `db:"day"`
		Engagement
	}
	if err := db.SelectContext(ctx, &rows, selectCampaignDays, accountID, campaignID); err != nil {
		return nil, fmt.Errorf("store: campaign days: %w", err)
	}
	out := make([]DayEngagement, len(rows))
	for i, r := range rows {
		out[i] = DayEngagement{Day: berlinDate(r.Day), Engagement: r.Engagement}
	}
	return out, nil
}

// berlinDate turns a date column (read as midnight UTC) into midnight in Berlin.
func berlinDate(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, Berlin)
}

// RecipientFilter narrows GET /campaigns/{id}/recipients; nil and empty
// fields do not filter.
type RecipientFilter struct {
	Status  string
	Opened  *bool
	Clicked *bool
}

// Validate checks the filter values.
func (f RecipientFilter) Validate() error {
	switch f.Status {
	case "", RecipientQueued, RecipientSending, RecipientSent, RecipientFailed, RecipientSkipped:
		return nil
	}
	return Invalid("status", "Erlaubt sind queued, sending, sent, failed und skipped.")
}

// CampaignRecipient is a recipient of a campaign with its outcome.
type CampaignRecipient struct {
	ID        int64      `db:"id"`
	ContactID *int64     `db:"contact_id"`
	Email     string     `db:"email"`
	Status    string     `db:"status"`
	Attempts  int        `db:"attempts"`
	MessageID *string    `db:"message_id"`
	Error     *string    `db:"error"`
	SentAt    *time.Time `db:"sent_at"`
	OpenedAt  *time.Time `db:"opened_at"`
	ClickedAt *time.Time `db:"clicked_at"`
}

// CampaignRecipients lists a campaign's recipients in queue order (ErrNotFound
// when the account has no such campaign). It reads one campaign's rows
// through campaign_recipients_campaign_idx.
func (db *DB) CampaignRecipients(ctx context.Context, accountID, campaignID int64, f RecipientFilter, p Page) ([]CampaignRecipient, int, error) {
	if err := f.Validate(); err != nil {
		return nil, 0, err
	}
	where, args := f.conds([]string{"campaign_id = $1", "account_id = $2"}, []any{campaignID, accountID})
	cond := strings.Join(where, " AND ")
	var (
		out   []CampaignRecipient
		total int
	)
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := campaignExists(ctx, tx, accountID, campaignID); err != nil {
			return err
		}
		if err := tx.GetContext(ctx, &total, `SELECT count(*) FROM campaign_recipients WHERE `+cond, args...); err != nil {
			return fmt.Errorf("store: campaign recipients: %w", err)
		}
		q := fmt.Sprintf(`SELECT id, nullif(contact_id, 0) AS contact_id, email, status, attempts, message_id, error, sent_at,
  opened_at, clicked_at FROM campaign_recipients WHERE %s ORDER BY id LIMIT $%d OFFSET $%d`, cond, len(args)+1, len(args)+2)
		if err := tx.SelectContext(ctx, &out, q, append(args, p.PerPage, p.Offset())...); err != nil {
			return fmt.Errorf("store: campaign recipients: %w", err)
		}
		return nil
	})
	return out, total, err
}

// CampaignRecipientsUpTo is CampaignRecipients with the total counted up to
// limit only (atLeast: there are more): the portal's recipient table under a
// newsletter's statistics counted all 333,000 rows of a large send for every
// page (issue 24), where a walk of limit index entries suffices.
func (db *DB) CampaignRecipientsUpTo(ctx context.Context, accountID, campaignID int64, f RecipientFilter, p Page, limit int) ([]CampaignRecipient, int, bool, error) {
	if err := f.Validate(); err != nil {
		return nil, 0, false, err
	}
	where, args := f.conds([]string{"campaign_id = $1", "account_id = $2"}, []any{campaignID, accountID})
	cond := strings.Join(where, " AND ")
	var (
		out     []CampaignRecipient
		total   int
		atLeast bool
	)
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := campaignExists(ctx, tx, accountID, campaignID); err != nil {
			return err
		}
		var err error
		if total, atLeast, err = countUpTo(ctx, tx, "campaign_recipients", cond, args, limit); err != nil {
			return fmt.Errorf("store: campaign recipients: %w", err)
		}
		q := fmt.Sprintf(`SELECT id, nullif(contact_id, 0) AS contact_id, email, status, attempts, message_id, error, sent_at,
  opened_at, clicked_at FROM campaign_recipients WHERE %s ORDER BY id LIMIT $%d OFFSET $%d`, cond, len(args)+1, len(args)+2)
		if err := tx.SelectContext(ctx, &out, q, append(args, p.PerPage, p.Offset())...); err != nil {
			return fmt.Errorf("store: campaign recipients: %w", err)
		}
		return nil
	})
	return out, total, atLeast, err
}

// conds adds the filter's conditions on campaign_recipients to where, with
// their arguments numbered after args.
func (f RecipientFilter) conds(where []string, args []any) ([]string, []any) {
	if f.Status != "" {
		args = append(args, f.Status)
		where = append(where, fmt.Sprintf("status = $%d", len(args)))
	}
	if f.Opened != nil {
		where = append(where, map[bool]string{true: "opened_at IS NOT NULL", false: "opened_at IS NULL"}[*f.Opened])
	}
	if f.Clicked != nil {
		where = append(where, map[bool]string{true: "clicked_at IS NOT NULL", false: "clicked_at IS NULL"}[*f.Clicked])
	}
	return where, args
}

func campaignExists(ctx context.Context, q sqlx.QueryerContext, accountID, id int64) error {
	var ok bool
	if err := sqlx.GetContext(ctx, q, &ok, `SELECT EXISTS (SELECT 1 FROM campaigns WHERE account_id = $1 AND id = $2)`, accountID, id); err != nil {
		return fmt.Errorf("store: campaign: %w", err)
	}
	if !ok {
		return ErrNotFound
	}
	return nil
}

// LinkStats is a tracked link of a campaign with its clicks: UniqueClicks
// recipients clicked it, Clicks counts every counted click.
type LinkStats struct {
	ID            int64      `db:"id"`
	Position      int        `db:"position"`
	URL           string     `db:"url"`
	Personalized  bool       `db:"personalized"`
	UniqueClicks  int64      `db:"unique_clicks"`
	Clicks        int64      `db:"clicks"`
	LastClickedAt *time.Time `db:"last_clicked_at"`
}

const selectLinkStats = `SELECT l.id, l.position, l.url, l.personalized, count(k.recipient_id) AS unique_clicks,
  coalesce(sum(k.clicks), 0) AS clicks, max(k.last_clicked_at) AS last_clicked_at
FROM campaign_links l LEFT JOIN link_clicks k ON k.account_id = l.account_id AND k.link_id = l.id
WHERE l.account_id = $1 AND l.campaign_id = $2
GROUP BY l.id ORDER BY l.position LIMIT $3 OFFSET $4`

// CampaignLinkStats lists a campaign's tracked links in document order with
// their clicks, and returns the campaign's sent mails, the base of a link's
// click rate (ErrNotFound when the account has no such campaign).
func (db *DB) CampaignLinkStats(ctx context.Context, accountID, campaignID int64, p Page) ([]LinkStats, int, int64, error) {
	var (
		out   []LinkStats
		total int
		sent  int64
	)
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &sent, `SELECT sent_count FROM (SELECT `+campaignCounts+` FROM campaigns WHERE account_id = $1 AND id = $2) c`, accountID, campaignID); err != nil {
			return notFound("campaign", err)
		}
		if err := tx.GetContext(ctx, &total, `SELECT count(*) FROM campaign_links WHERE account_id = $1 AND campaign_id = $2`,
			accountID, campaignID); err != nil {
			return fmt.Errorf("store: campaign links: %w", err)
		}
		if err := tx.SelectContext(ctx, &out, selectLinkStats, accountID, campaignID, p.PerPage, p.Offset()); err != nil {
			return fmt.Errorf("store: campaign links: %w", err)
		}
		return nil
	})
	return out, total, sent, err
}

// Period is a range of Berlin calendar days, both ends included.
type Period struct {
	From, To time.Time // midnight in Europe/Berlin
}

// Days is the number of days of the period.
func (p Period) Days() int {
	return int(p.To.Sub(p.From).Round(24*time.Hour)/(24*time.Hour)) + 1
}

// MaxPeriodDays bounds an analytics period (a time series of days).
const MaxPeriodDays = 366

// ParsePeriod reads the from/to query values (YYYY-MM-DD, Berlin days; empty:
// the 30 days ending today) and checks them: a ValidationError naming the field.
func ParsePeriod(from, to string, now time.Time) (Period, error) {
	errs := Errs{}
	today := BerlinMidnight(now)
	p := Period{From: today.AddDate(0, 0, -29), To: today}
	parse := func(field, v string, dst *time.Time) {
		if v == "" {
			return
		}
		t, err := time.ParseInLocation(time.DateOnly, v, Berlin)
		if err != nil || !ValidTime(t) {
			errs.Add(field, "Bitte ein Datum im Format JJJJ-MM-TT angeben.")
			return
		}
		*dst = t
	}
	parse("from", from, &p.From)
	parse("to", to, &p.To)
	if err := errs.Err(); err != nil {
		return Period{}, err
	}
	if from != "" && to == "" && p.From.After(today) {
		p.To = p.From
	}
	if to != "" && from == "" {
		p.From = p.To.AddDate(0, 0, -29)
	}
	switch {
	case p.To.Before(p.From):
		errs.Add("to", "Das Ende liegt vor dem Anfang.")
	case p.Days() > MaxPeriodDays:
		errs.Add("to", fmt.Sprintf("Höchstens %d Tage auf einmal.", MaxPeriodDays))
	}
	return p, errs.Err()
}

// BerlinMidnight is the start of t's day in Europe/Berlin.
func BerlinMidnight(t time.Time) time.Time { return berlinMidnight(t) }

// Overview is the account's figures of a period.
type Overview struct {
	Period Period
	Engagement
	// Newsletters started in the period; Emails are the single emails
	// (campaigns of kind email) that sent anything in it.
	Newsletters int64
	// Contacts now, and those created in the period (that still exist).
	Contacts    int64
	NewContacts int64
}

const selectAccountEngagement = `SELECT coalesce(sum(sent), 0) AS sent, coalesce(sum(failed), 0) AS failed,
  coalesce(sum(bounces), 0) AS bounces, coalesce(sum(opens), 0) AS opens, coalesce(sum(clicks), 0) AS clicks,
  coalesce(sum(total_clicks), 0) AS total_clicks, coalesce(sum(unsubscribes), 0) AS unsubscribes
FROM account_stats WHERE account_id = $1 AND day BETWEEN $2 AND $3`

const selectNewslettersStarted = `SELECT count(*) FROM campaigns
WHERE account_id = $1 AND kind = 'newsletter' AND started_at >= $2 AND started_at < $3`

// selectContactCount is the account's contacts as Usage counts them: the
// base in account_usage plus the stripes of account_contact_counts.
const selectContactCount = `SELECT (coalesce((SELECT contacts FROM account_usage WHERE account_id = $1), 0)
  + coalesce((SELECT sum(contacts) FROM account_contact_counts WHERE account_id = $1), 0))::bigint`

// selectNewContacts sums contact_days (migration 00014) from day $2 up to, not
// including, day $3.
const selectNewContacts = `SELECT coalesce(sum(contacts), 0)::bigint FROM contact_days
WHERE account_id = $1 AND day >= $2::date AND day < $3::date`

// AnalyticsOverview sums the account's engagement over a period. Opens,
// clicks and unsubscribes count on the day they happened, whichever campaign
// they belong to.
func (db *DB) AnalyticsOverview(ctx context.Context, accountID int64, p Period) (Overview, error) {
	o := Overview{Period: p}
	end := p.To.AddDate(0, 0, 1)
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &o.Engagement, selectAccountEngagement, accountID, Day(p.From), Day(p.To)); err != nil {
			return fmt.Errorf("store: analytics overview: %w", err)
		}
		if err := tx.GetContext(ctx, &o.Newsletters, selectNewslettersStarted, accountID, p.From, end); err != nil {
			return fmt.Errorf("store: analytics overview: %w", err)
		}
		if err := tx.GetContext(ctx, &o.Contacts, selectContactCount, accountID); err != nil {
			return fmt.Errorf("store: analytics overview: %w", err)
		}
		if err := tx.GetContext(ctx, &o.NewContacts, selectNewContacts, accountID, Day(p.From), Day(end)); err != nil {
			return fmt.Errorf("store: analytics overview: %w", err)
		}
		return nil
	})
	return o, err
}

// Intervals of a time series.
const (
	IntervalDay   = "day"
	IntervalWeek  = "week"
	IntervalMonth = "month"
)

// ValidInterval reports whether s is a time series interval.
func ValidInterval(s string) bool {
	return s == IntervalDay || s == IntervalWeek || s == IntervalMonth
}

// bucketStart is the first day of the interval that contains day.
func bucketStart(day time.Time, interval string) time.Time {
	switch interval {
	case IntervalWeek: // ISO weeks start on Monday
		wd := (int(day.Weekday()) + 6) % 7
		return day.AddDate(0, 0, -wd)
	case IntervalMonth:
		return time.Date(day.Year(), day.Month(), 1, 0, 0, 0, 0, Berlin)
	}
	return day
}

func nextBucket(b time.Time, interval string) time.Time {
	switch interval {
	case IntervalWeek:
		return b.AddDate(0, 0, 7)
	case IntervalMonth:
		return b.AddDate(0, 1, 0)
	}
	return b.AddDate(0, 0, 1)
}

const selectAccountDays = `SELECT day, sum(sent) AS sent, sum(failed) AS failed, sum(bounces) AS bounces, sum(opens) AS opens,
  sum(clicks) AS clicks, sum(total_clicks) AS total_clicks, sum(unsubscribes) AS unsubscribes
FROM account_stats WHERE account_id = $1 AND day BETWEEN $2 AND $3 GROUP BY day`

const selectContactDays = `SELECT day, sum(contacts)::bigint AS n
FROM contact_days WHERE account_id = $1 AND day >= $2::date GROUP BY 1`

// AnalyticsTimeseries is the account's engagement and contacts per interval
// (day, week or month) over a period, one point per interval, empty ones
// included. A week or month point starts at the interval's first day but
// counts only the days inside the period. Contacts at a point's end is
// today's number of contacts less those created later (deleted contacts are
// not known any more, so they count nowhere).
func (db *DB) AnalyticsTimeseries(ctx context.Context, accountID int64, p Period, interval string) ([]DayEngagement, error) {
	if !ValidInterval(interval) {
		return nil, Invalid("interval", "Erlaubt sind day, week und month.")
	}
	var (
		days []struct {
			Day time.Time `db:"day"`
			Engagement
		}
		created []struct {
			Day time.Time `db:"day"`
			N   int64     `db:"n"`
		}
		total int64
	)
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.SelectContext(ctx, &days, selectAccountDays, accountID, Day(p.From), Day(p.To)); err != nil {
			return fmt.Errorf("store: analytics timeseries: %w", err)
		}
		if err := tx.SelectContext(ctx, &created, selectContactDays, accountID, Day(p.From)); err != nil {
			return fmt.Errorf("store: analytics timeseries: %w", err)
		}
		if err := tx.GetContext(ctx, &total, selectContactCount, accountID); err != nil {
			return fmt.Errorf("store: analytics timeseries: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []DayEngagement
	index := map[time.Time]int{}
	for b := bucketStart(p.From, interval); !b.After(p.To); b = nextBucket(b, interval) {
		index[b] = len(out)
		out = append(out, DayEngagement{Day: b})
	}
	for _, d := range days {
		if i, ok := index[bucketStart(berlinDate(d.Day), interval)]; ok {
			out[i].Engagement.add(d.Engagement)
		}
	}
	// Contacts created after each point's end, from today backwards.
	for i := range out {
		end := nextBucket(out[i].Day, interval)
		if end.After(p.To.AddDate(0, 0, 1)) {
			end = p.To.AddDate(0, 0, 1)
		}
		later := int64(0)
		for _, c := range created {
			day := berlinDate(c.Day)
			if !day.Before(end) {
				later += c.N
			} else if !day.Before(p.From) && bucketStart(day, interval).Equal(out[i].Day) {
				out[i].NewContacts += c.N
			}
		}
		out[i].Contacts = max(total-later, 0)
	}
	return out, nil
}

// NewsletterStatistics is what GET /newsletters/{id}/stats and the portal's
// statistics page show: the recipients by status (from the maintained
// counters, see maintainedRecipientCounts; Sent and Failed of Engagement are
// those counts), the engagement and its days.
type NewsletterStatistics struct {
	Campaign Campaign
	Counts   RecipientCounts
	Engagement
	Days []DayEngagement
}

// NewsletterStats reads a newsletter's statistics (ErrNotFound for another
// account's or a single email's id).
func (db *DB) NewsletterStats(ctx context.Context, accountID, id int64) (NewsletterStatistics, error) {
	c, err := db.Newsletter(ctx, accountID, id)
	if err != nil {
		return NewsletterStatistics{}, err
	}
	st := NewsletterStatistics{Campaign: c}
	if st.Counts, err = db.maintainedRecipientCounts(ctx, c); err != nil {
		return NewsletterStatistics{}, err
	}
	sum, err := summarize(ctx, db, accountID, []Campaign{c})
	if err != nil {
		return NewsletterStatistics{}, err
	}
	st.Engagement = sum[0].Engagement
	st.Sent, st.Failed = st.Counts.Sent, st.Counts.Failed
	st.Counts.Opened, st.Counts.Clicked = st.Opens, st.Clicks
	if st.Days, err = db.CampaignDays(ctx, accountID, id); err != nil {
		return NewsletterStatistics{}, err
	}
	return st, nil
}
