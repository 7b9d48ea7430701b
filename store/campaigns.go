package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// This file holds what newsletters and single emails share: the campaign row,
// starting a send (materialising the recipients, counting the daily limit),
// the list of running campaigns the send workers serve, and finishing.
// newsletters.go and emails.go hold the operations of each resource,
// recipients.go the send queue.

// Campaign kinds.
const (
	KindNewsletter = "newsletter"
	KindEmail      = "email"
)

// Campaign types: newsletters are TypeNewsletter; single emails are
// follow-ups (the default) or transactional.
const (
	TypeNewsletter    = "newsletter"
	TypeTransactional = "transactional"
	TypeFollowUp      = "follow_up"
)

// Campaign statuses (see migrations/00007_campaigns.sql).
const (
	CampaignDraft     = "draft"
	CampaignScheduled = "scheduled"
	CampaignSending   = "sending"
	CampaignSent      = "sent"
	CampaignPaused    = "paused"
	CampaignFailed    = "failed"
	CampaignCancelled = "cancelled"
)

// Object types of the activity log for campaigns.
const (
	ObjectNewsletter = "newsletter"
	ObjectEmail      = "email"
)

// Limits of campaign content.
const (
	// MaxHTMLBytes is the spec's limit of email content (2 MB); larger
	// content is a 413 payload_too_large.
	MaxHTMLBytes    = 2 << 20
	maxSubjectLen   = 255
	maxPreheaderLen = 500
	maxNameLen      = 200
	maxFromNameLen  = 100
	maxCampaignList = 100
)

// Placeholders are the request placeholders of a single email, stored as jsonb.
type Placeholders map[string]string

// Scan reads jsonb.
func (p *Placeholders) Scan(src any) error {
	b, ok := src.([]byte)
	if !ok {
		return fmt.Errorf("store: placeholders: unexpected %T", src)
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("store: placeholders: %w", err)
	}
	*p = m
	return nil
}

// Value writes jsonb.
func (p Placeholders) Value() (driver.Value, error) {
	if p == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]string(p))
}

// Campaign is a newsletter or a single email with its send counters.
type Campaign struct {
	ID              int64          `db:"id"`
	AccountID       int64          `db:"account_id"`
	Kind            string         `db:"kind"`
	Type            string         `db:"type"`
	Status          string         `db:"status"`
	Name            string         `db:"name"`
	Subject         string         `db:"subject"`
	Preheader       string         `db:"preheader"`
	HTML            string         `db:"html"`
	Text            string         `db:"plain_text"`
	Markdown        string         `db:"markdown"`
	TemplateKey     string         `db:"template_key"`
	AttachmentIDs   pq.Int64Array  `db:"attachment_ids"`
	FromName        string         `db:"from_name"`
	ReplyTo         string         `db:"reply_to"`
	SMTPServerID    *int64         `db:"smtp_server_id"`
	TrackOpens      bool           `db:"track_opens"`
	TrackClicks     bool           `db:"track_clicks"`
	ListIDs         pq.Int64Array  `db:"list_ids"`
	SegmentID       *int64         `db:"segment_id"` // newsletters: the audience is the segment's contacts (store/segments.go)
	ContactIDs      pq.Int64Array  `db:"contact_ids"`
	ToEmails        pq.StringArray `db:"to_emails"`
	Placeholders    Placeholders   `db:"placeholders"`
	ScheduledAt     *time.Time     `db:"scheduled_at"`
	StartedAt       *time.Time     `db:"started_at"`
	FinishedAt      *time.Time     `db:"finished_at"`
	RecipientsCount int64          `db:"recipients_count"`
	SentCount       int64          `db:"sent_count"`
	FailedCount     int64          `db:"failed_count"`
	SkippedCount    int64          `db:"skipped_count"`
	LastError       string         `db:"last_error"`
	CreatedAt       time.Time      `db:"created_at"`
	UpdatedAt       time.Time      `db:"updated_at"`
}

// ServerID is the chosen SMTP server, 0 for the account's default route.
func (c Campaign) ServerID() int64 {
	if c.SMTPServerID == nil {
		return 0
	}
	return *c.SMTPServerID
}

// Transactional reports whether the campaign is a transactional single email:
// no unsubscribe line or header, and blocked addresses still get it.
func (c Campaign) Transactional() bool { return c.Type == TypeTransactional }

// HasContent reports whether the campaign has content of its own (html, text
// or markdown). A layout named by template_key wraps that content; it never
// stands for it.
func (c Campaign) HasContent() bool { return c.Content().HasBody() }

// startable reports whether a send may start from the campaign's status: a
// draft, a scheduled campaign, or one that failed before anything was queued.
func (c Campaign) startable() bool {
	return c.Status == CampaignDraft || c.Status == CampaignScheduled ||
		c.Status == CampaignFailed && c.RecipientsCount == 0 && c.SkippedCount == 0
}

// ReadyErrors checks what a send needs from the campaign itself: a subject,
// content and (newsletters) lists. The SMTP server and the recipients are
// checked when the send starts.
func (c Campaign) ReadyErrors() Errs {
	errs := Errs{}
	if strings.TrimSpace(c.Subject) == "" {
		errs.Add("subject", "Bitte einen Betreff angeben.")
	}
	if !c.HasContent() {
		errs.Add("html", "Bitte einen Inhalt angeben (html, text oder markdown).")
	}
	if (c.Kind == KindNewsletter || c.Kind == KindStory) && len(c.ListIDs) == 0 && c.SegmentID == nil {
		errs.Add("list_ids", "Bitte mindestens eine Liste oder ein Segment angeben.")
	}
	return errs
}

const campaignColumns = `id, account_id, kind, type, status, name, subject, preheader, html, plain_text, markdown,
  template_key, attachment_ids, from_name, reply_to, smtp_server_id, track_opens, track_clicks, list_ids, segment_id, contact_ids, to_emails,
  placeholders, scheduled_at, started_at, finished_at, recipients_count, ` + campaignCounts + `,
  last_error, created_at, updated_at`

// campaignCounts are a campaign's outcome counters as every read reports
// them: the columns plus the stripes that outcome writes added since the last
// fold (campaign_counts, migration 00026). The subqueries name the campaign's
// id unqualified, so they work with or without an alias and in RETURNING;
// campaign_counts has no column of that name. (CAST, not ::, because sqlx's
// named queries read "::" as an escaped colon.)
const campaignCounts = `sent_count + (SELECT CAST(coalesce(sum(k.sent), 0) AS bigint) FROM campaign_counts k WHERE k.campaign_id = id) AS sent_count,
  failed_count + (SELECT CAST(coalesce(sum(k.failed), 0) AS bigint) FROM campaign_counts k WHERE k.campaign_id = id) AS failed_count,
  skipped_count + (SELECT CAST(coalesce(sum(k.skipped), 0) AS bigint) FROM campaign_counts k WHERE k.campaign_id = id) AS skipped_count`

// campaignStoredColumns are campaignColumns with the stored counters alone,
// for the statements that fold the stripes into them first (whose
// subqueries would still see the stripes they deleted).
const campaignStoredColumns = `id, account_id, kind, type, status, name, subject, preheader, html, plain_text, markdown,
  template_key, attachment_ids, from_name, reply_to, smtp_server_id, track_opens, track_clicks, list_ids, segment_id, contact_ids, to_emails,
  placeholders, scheduled_at, started_at, finished_at, recipients_count, sent_count, failed_count, skipped_count,
  last_error, created_at, updated_at`

// foldCounts is the start of a statement that folds a campaign's ($1)
// stripes into its counters: folded has their sums.
const foldCounts = `WITH gone AS (
  DELETE FROM campaign_counts WHERE campaign_id = $1 RETURNING sent, failed, skipped
), folded AS (
  SELECT coalesce(sum(sent), 0)::bigint AS sent, coalesce(sum(failed), 0)::bigint AS failed,
    coalesce(sum(skipped), 0)::bigint AS skipped FROM gone
)
`

const selectCampaign = `SELECT ` + campaignColumns + ` FROM campaigns WHERE account_id = $1 AND id = $2 AND kind = $3`

const lockCampaign = `SELECT ` + campaignColumns + ` FROM campaigns WHERE account_id = $1 AND id = $2 AND kind = $3 FOR UPDATE`

// campaign reads one campaign of a kind; another kind's id is not found.
func (db *DB) campaign(ctx context.Context, accountID, id int64, kind string) (Campaign, error) {
	var c Campaign
	if err := db.GetContext(ctx, &c, selectCampaign, accountID, id, kind); err != nil {
		return Campaign{}, notFound("campaign", err)
	}
	return c, nil
}

func lockCampaignTx(ctx context.Context, tx *sqlx.Tx, accountID, id int64, kind string) (Campaign, error) {
	var c Campaign
	if err := tx.GetContext(ctx, &c, lockCampaign, accountID, id, kind); err != nil {
		return Campaign{}, notFound("campaign", err)
	}
	return c, nil
}

const selectCampaignByID = `SELECT ` + campaignColumns + ` FROM campaigns WHERE id = $1`

// CampaignByID reads a campaign by id alone, for the send workers, which serve
// every account.
func (db *DB) CampaignByID(ctx context.Context, id int64) (Campaign, error) {
	var c Campaign
	if err := db.GetContext(ctx, &c, selectCampaignByID, id); err != nil {
		return Campaign{}, notFound("campaign", err)
	}
	return c, nil
}

// campaignSummaryColumns are campaignColumns without the content (up to 2 MB
// each), for list pages.
const campaignSummaryColumns = `id, account_id, kind, type, status, name, subject, preheader, '' AS html, '' AS plain_text,
  '' AS markdown, template_key, attachment_ids, from_name, reply_to, smtp_server_id, track_opens, track_clicks, list_ids, segment_id, contact_ids,
  to_emails, placeholders, scheduled_at, started_at, finished_at, recipients_count, ` + campaignCounts + `,
  last_error, created_at, updated_at`

const selectCampaignPage = `SELECT ` + campaignSummaryColumns + ` FROM campaigns WHERE account_id = $1 AND kind = $2 %s
ORDER BY id DESC LIMIT $3 OFFSET $4`

const countCampaigns = `SELECT count(*) FROM campaigns WHERE account_id = $1 AND kind = $2 %s`

// campaigns lists an account's campaigns of a kind, newest first, without
// their content; status filters when not empty.
func (db *DB) campaigns(ctx context.Context, accountID int64, kind, status string, p Page) ([]Campaign, int, error) {
	cond, args := "", []any{accountID, kind}
	if status != "" {
		cond = "AND status = $5"
	}
	var out []Campaign
	var total int
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		q := fmt.Sprintf(selectCampaignPage, cond)
		pageArgs := append(append([]any{}, args...), p.PerPage, p.Offset())
		if status != "" {
			pageArgs = append(pageArgs, status)
		}
		if err := tx.SelectContext(ctx, &out, q, pageArgs...); err != nil {
			return fmt.Errorf("store: campaigns: %w", err)
		}
		countArgs := args
		if status != "" {
			cond = "AND status = $3"
			countArgs = append(countArgs, status)
		}
		if err := tx.GetContext(ctx, &total, fmt.Sprintf(countCampaigns, cond), countArgs...); err != nil {
			return fmt.Errorf("store: campaigns: %w", err)
		}
		return nil
	})
	return out, total, err
}

// ValidCampaignStatus reports whether s is a campaign status (list filters).
func ValidCampaignStatus(s string) bool {
	switch s {
	case CampaignDraft, CampaignScheduled, CampaignSending, CampaignSent, CampaignPaused, CampaignFailed, CampaignCancelled:
		return true
	}
	return false
}

// RecipientCounts are a campaign's recipient rows by status, counted live.
type RecipientCounts struct {
	Total   int64 `db:"total"`
	Queued  int64 `db:"queued"`
	Sending int64 `db:"sending"`
	Sent    int64 `db:"sent"`
	Failed  int64 `db:"failed"`
	Skipped int64 `db:"skipped"`
	Opened  int64 `db:"opened"`
	Clicked int64 `db:"clicked"`
}

const selectRecipientCounts = `SELECT count(*) AS total,
  count(*) FILTER (WHERE status = 'queued') AS queued, count(*) FILTER (WHERE status = 'sending') AS sending,
  count(*) FILTER (WHERE status = 'sent') AS sent, count(*) FILTER (WHERE status = 'failed') AS failed,
  count(*) FILTER (WHERE status = 'skipped') AS skipped,
  count(*) FILTER (WHERE opened_at IS NOT NULL) AS opened, count(*) FILTER (WHERE clicked_at IS NOT NULL) AS clicked
FROM campaign_recipients WHERE campaign_id = $1 AND account_id = $2`

// CampaignRecipientCounts counts a campaign's recipients by status (the stats
// endpoints; it reads every row of the campaign once).
func (db *DB) CampaignRecipientCounts(ctx context.Context, accountID, campaignID int64) (RecipientCounts, error) {
	var rc RecipientCounts
	if err := db.GetContext(ctx, &rc, selectRecipientCounts, campaignID, accountID); err != nil {
		return RecipientCounts{}, fmt.Errorf("store: recipient counts: %w", err)
	}
	return rc, nil
}

// selectUnfinishedCounts counts the recipients a campaign has not finished
// with, through the partial indexes of migration 00028 (pending, waiting): a
// sent campaign has none, a sending one only what is left.
const selectUnfinishedCounts = `SELECT
  (SELECT count(*) FROM campaign_recipients WHERE campaign_id = $1 AND account_id = $2 AND pending AND status = 'queued') AS queued,
  (SELECT count(*) FROM campaign_recipients WHERE campaign_id = $1 AND account_id = $2 AND pending AND status = 'sending') AS sending,
  (SELECT count(*) FROM campaign_recipients WHERE campaign_id = $1 AND account_id = $2 AND waiting) AS waiting`

// maintainedRecipientCounts is CampaignRecipientCounts without reading every
// recipient (issue 24: a newsletter to 333,000 took over a second): sent,
// failed and skipped are the campaign's maintained counters (c as read, with
// its stripes, campaign_counts), the unfinished recipients (queued, sending,
// and waiting for an A/B test's winner) are counted through their partial
// indexes, and the total is their sum: every recipient is in exactly one of
// these statuses. Opened and Clicked are left to the caller (the engagement
// counters of campaign_stats have them).
func (db *DB) maintainedRecipientCounts(ctx context.Context, c Campaign) (RecipientCounts, error) {
	var u struct {
		Queued  int64 `db:"queued"`
		Sending int64 `db:"sending"`
		Waiting int64 `db:"waiting"`
	}
	if err := db.GetContext(ctx, &u, selectUnfinishedCounts, c.ID, c.AccountID); err != nil {
		return RecipientCounts{}, fmt.Errorf("store: recipient counts: %w", err)
	}
	rc := RecipientCounts{Queued: u.Queued, Sending: u.Sending, Sent: c.SentCount, Failed: c.FailedCount, Skipped: c.SkippedCount}
	rc.Total = rc.Queued + rc.Sending + u.Waiting + rc.Sent + rc.Failed + rc.Skipped
	return rc, nil
}

// LinkInput is a tracked link of a campaign, in document order.
type LinkInput struct {
	URL string
	// Personalized links contain placeholders: the click URL carries the
	// rendered address.
	Personalized bool
}

// StartOptions carry what starting a send needs from the mailer.
type StartOptions struct {
	// Now is the start time (the scheduler's clock); zero: time.Now().
	Now time.Time
	// Check is called with the locked campaign before anything is queued: the
	// mailer checks the SMTP route there. A *ValidationError is merged with
	// the campaign's own problems into one 422.
	Check func(ctx context.Context, c Campaign) error
	// Links returns the campaign's trackable links (called when it tracks
	// clicks); they are stored as campaign_links in the same transaction.
	Links func(c Campaign) ([]LinkInput, error)
	// Respond, if set, is called last in the transaction that starts (or
	// schedules) the campaign: the service stores the request's idempotent
	// response there (RecordIdempotent), so that it commits with the send.
	Respond func(ctx context.Context, tx *sqlx.Tx, c Campaign, res StartResult) error
}

func (o StartOptions) respond(ctx context.Context, tx *sqlx.Tx, c Campaign, res StartResult) error {
	if o.Respond == nil {
		return nil
	}
	return o.Respond(ctx, tx, c, res)
}

func (o StartOptions) now() time.Time {
	if o.Now.IsZero() {
		return time.Now()
	}
	return o.Now
}

// StartResult is what starting a send queued.
type StartResult struct {
	Queued  int64
	Skipped int64
}

// check runs the readiness checks of a campaign about to start, merging the
// mailer's Check into one ValidationError.
func (o StartOptions) check(ctx context.Context, c Campaign, errs Errs) error {
	if o.Check != nil {
		err := o.Check(ctx, c)
		var ve *ValidationError
		switch {
		case errors.As(err, &ve):
			for k, v := range ve.Fields {
				errs.Add(k, v)
			}
		case err != nil:
			return err
		}
	}
	return errs.Err()
}

// The recipient materialisation: one INSERT … SELECT per start, returning the
// counts. Addresses are unique per campaign by construction (contacts are
// unique per account, to addresses are deduplicated first).
//
// listAudience is who a newsletter to the lists $2 of account $1 goes to: the
// subscribed members, with b.email set for a blocked address (recorded as
// skipped). The send and the count shown before it (NewsletterAudience) share
// it, so the two cannot disagree.
const listAudience = `FROM contacts c
  LEFT JOIN blocked_addresses b ON b.account_id = $1 AND b.email = c.email
  WHERE c.account_id = $1 AND c.status = 'subscribed'
    AND EXISTS (SELECT 1 FROM list_members m WHERE m.contact_id = c.id AND m.list_id = ANY($2))`

const insertListRecipients = `WITH ins AS (
  INSERT INTO campaign_recipients (account_id, campaign_id, contact_id, email, status, error)
  SELECT $1, $3, c.id, c.email,
    CASE WHEN b.email IS NULL THEN 'queued' ELSE 'skipped' END,
    CASE WHEN b.email IS NULL THEN NULL ELSE 'blocked' END
  ` + listAudience + `
  ORDER BY c.id
  RETURNING status)
SELECT count(*) FILTER (WHERE status = 'queued') AS queued, count(*) FILTER (WHERE status = 'skipped') AS skipped FROM ins`

const countListAudience = `SELECT count(*) FILTER (WHERE b.email IS NULL) AS queued,
  count(*) FILTER (WHERE b.email IS NOT NULL) AS skipped
` + listAudience

// NewsletterAudience counts whom a newsletter to listIDs would go to now:
// Queued mails and Skipped (blocked) addresses, by the same rule the send
// uses when it queues the recipients.
func (db *DB) NewsletterAudience(ctx context.Context, accountID int64, listIDs []int64) (StartResult, error) {
	var res StartResult
	if len(listIDs) == 0 {
		return res, nil
	}
	if err := db.QueryRowxContext(ctx, countListAudience, accountID, pq.Int64Array(listIDs)).Scan(&res.Queued, &res.Skipped); err != nil {
		return StartResult{}, fmt.Errorf("store: newsletter audience: %w", err)
	}
	return res, nil
}

// insertEmailRecipients materialises a single email: the to addresses, and for
// follow-ups the contacts and the subscribed list members. A transactional
// email goes to every address; a follow-up skips blocked addresses and
// contacts that are not subscribed.
const insertEmailRecipients = `WITH targets AS (
  SELECT e AS email, 1 AS src FROM unnest($3::text[]) AS e
  UNION ALL
  SELECT c.email, 2 FROM contacts c WHERE c.account_id = $1 AND c.id = ANY($4)
  UNION ALL
  SELECT c.email, 3 FROM contacts c WHERE c.account_id = $1 AND c.status = 'subscribed'
    AND EXISTS (SELECT 1 FROM list_members m WHERE m.contact_id = c.id AND m.list_id = ANY($5))
), uniq AS (
  SELECT email, min(src) AS src FROM targets GROUP BY email
), ins AS (
  INSERT INTO campaign_recipients (account_id, campaign_id, contact_id, email, status, error)
  SELECT $1, $2, c.id, u.email,
    CASE WHEN $6 AND b.email IS NOT NULL THEN 'skipped'
         WHEN $6 AND c.status IS NOT NULL AND c.status <> 'subscribed' THEN 'skipped'
         ELSE 'queued' END,
    CASE WHEN $6 AND b.email IS NOT NULL THEN 'blocked'
         WHEN $6 AND c.status IS NOT NULL AND c.status <> 'subscribed' THEN 'not_subscribed' END
  FROM uniq u
  LEFT JOIN contacts c ON c.account_id = $1 AND c.email = u.email
  LEFT JOIN blocked_addresses b ON b.account_id = $1 AND b.email = u.email
  ORDER BY u.src, u.email
  RETURNING status)
SELECT count(*) FILTER (WHERE status = 'queued') AS queued, count(*) FILTER (WHERE status = 'skipped') AS skipped FROM ins`

const insertCampaignLinks = `INSERT INTO campaign_links (account_id, campaign_id, position, url, personalized)
SELECT $1, $2, x.n - 1, x.url, x.p FROM unnest($3::text[], $4::boolean[]) WITH ORDINALITY AS x(url, p, n)`

const markStarted = `WITH gone AS (DELETE FROM campaign_counts WHERE campaign_id = $1)
UPDATE campaigns SET status = $2, started_at = $3, finished_at = $4, recipients_count = $5,
  skipped_count = $6, sent_count = 0, failed_count = 0, last_error = '', updated_at = now()
WHERE id = $1`

// addSends counts n sends on the account's Berlin day, refusing (no row) when
// the day's total would pass the plan's max_sends_per_day.
const addSends = `INSERT INTO send_counters AS s (account_id, day, count)
SELECT a.id, $2::date, $3 FROM accounts a JOIN plans p ON p.name = a.plan WHERE a.id = $1 AND $3 <= p.max_sends_per_day
ON CONFLICT (account_id, day) DO UPDATE SET count = s.count + excluded.count
WHERE s.count + excluded.count <= (SELECT p.max_sends_per_day FROM accounts a JOIN plans p ON p.name = a.plan WHERE a.id = $1)
RETURNING s.count`

// countSends adds n to the account's sends of the day of now, or returns a
// *LimitError (and adds nothing) when that passes the daily limit.
func countSends(ctx context.Context, tx *sqlx.Tx, accountID int64, n int64, now time.Time) error {
	if n <= 0 {
		return nil
	}
	var total int64
	if err := tx.GetContext(ctx, &total, addSends, accountID, Day(now), n); err != nil {
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: count sends: %w", err)
		}
		plan, err := accountPlan(ctx, tx, accountID)
		if err != nil {
			return err
		}
		return &LimitError{Limit: "sends_per_day", Max: plan.MaxSendsPerDay, UpgradeURL: plan.UpgradeURL}
	}
	return nil
}

// CountSends counts sends outside a campaign (test mails) against the daily
// limit: a *LimitError when they would pass it.
func (db *DB) CountSends(ctx context.Context, accountID int64, n int64, now time.Time) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error { return countSends(ctx, tx, accountID, n, now) })
}

// errNoRecipients is the 422 of a send whose targets have nobody to send to.
func errNoRecipients(c Campaign) error {
	if c.SegmentID != nil && c.Kind == KindNewsletter {
		return Invalid("segment_id", "Das Segment hat keine angemeldeten Empfänger (gesperrte Adressen ausgenommen).")
	}
	if c.Kind == KindNewsletter || c.Kind == KindStory {
		return Invalid("list_ids", "Die gewählten Listen haben keine angemeldeten Empfänger (gesperrte Adressen ausgenommen).")
	}
	return Invalid("to", "Es gibt keine Empfänger.")
}

// startCampaign queues a locked campaign's recipients and marks it sending:
// the readiness checks, one INSERT … SELECT of the recipients (blocked
// addresses recorded as skipped), the daily limit, the tracked links. All in
// tx, so a refused start leaves nothing behind. A single email whose
// recipients are all skipped is finished at once.
func startCampaign(ctx context.Context, tx *sqlx.Tx, c *Campaign, opts StartOptions) (StartResult, error) {
	now := opts.now()
	if err := checkStoredContentTx(ctx, tx, *c); err != nil {
		return StartResult{}, err
	}
	if err := opts.check(ctx, *c, c.ReadyErrors()); err != nil {
		return StartResult{}, err
	}
	var res StartResult
	var err error
	switch {
	case c.SegmentID != nil && c.Kind == KindNewsletter:
		res, err = insertSegmentRecipients(ctx, tx, *c)
	case c.Kind == KindNewsletter || c.Kind == KindStory:
		err = tx.QueryRowxContext(ctx, insertListRecipients, c.AccountID, c.ListIDs, c.ID).Scan(&res.Queued, &res.Skipped)
	default:
		err = tx.QueryRowxContext(ctx, insertEmailRecipients, c.AccountID, c.ID, c.ToEmails, c.ContactIDs, c.ListIDs,
			c.Type == TypeFollowUp).Scan(&res.Queued, &res.Skipped)
	}
	if err != nil {
		return StartResult{}, fmt.Errorf("store: queue recipients: %w", err)
	}
	if res.Queued == 0 && (res.Skipped == 0 || c.Kind == KindNewsletter || c.Kind == KindStory) {
		return StartResult{}, errNoRecipients(*c)
	}
	if err := countSends(ctx, tx, c.AccountID, res.Queued, now); err != nil {
		return StartResult{}, err
	}
	if c.TrackClicks && opts.Links != nil {
		links, err := opts.Links(*c)
		if err != nil {
			return StartResult{}, err
		}
		if len(links) > 0 {
			urls := make(pq.StringArray, len(links))
			pers := make(pq.BoolArray, len(links))
			for i, l := range links {
				urls[i], pers[i] = l.URL, l.Personalized
			}
			if _, err := tx.ExecContext(ctx, insertCampaignLinks, c.AccountID, c.ID, urls, pers); err != nil {
				return StartResult{}, fmt.Errorf("store: campaign links: %w", err)
			}
		}
	}
	if err := startABTestTx(ctx, tx, c, opts, now); err != nil {
		return StartResult{}, err
	}
	status, finished := CampaignSending, (*time.Time)(nil)
	if res.Queued == 0 {
		status, finished = CampaignSent, &now
	}
	if _, err := tx.ExecContext(ctx, markStarted, c.ID, status, now, finished, res.Queued, res.Skipped); err != nil {
		return StartResult{}, fmt.Errorf("store: start campaign: %w", err)
	}
	c.Status, c.StartedAt, c.FinishedAt = status, &now, finished
	c.RecipientsCount, c.SkippedCount, c.SentCount, c.FailedCount, c.LastError = res.Queued, res.Skipped, 0, 0, ""
	return res, nil
}

// objectOf is the activity log object type of a campaign.
func objectOf(c Campaign) string {
	switch c.Kind {
	case KindNewsletter:
		return ObjectNewsletter
	case KindStory:
		return ObjectStoryEmail
	case KindSequence:
		return ObjectSequence
	}
	return ObjectEmail
}

const pickDue = `SELECT ` + campaignColumns + ` FROM campaigns
WHERE status = 'scheduled' AND scheduled_at <= $1 ORDER BY scheduled_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`

const failScheduled = `UPDATE campaigns SET status = 'failed', last_error = $2, finished_at = $3, updated_at = now()
WHERE id = $1 AND status = 'scheduled'`

// ErrNothingDue means no scheduled campaign is due.
var ErrNothingDue = errors.New("store: no scheduled campaign is due")

// StartNextDue starts the scheduled campaign that has been due longest
// (scheduled_at ≤ opts.Now). Several processes may call it at once: the row
// is taken with FOR UPDATE SKIP LOCKED and the start commits with the status
// change, so each scheduled campaign starts exactly once. When the start is
// refused (limit, recipients, SMTP server, content), the campaign is marked
// failed with the reason in last_error and returned with the refusal as err.
// ErrNothingDue when none is due.
func (db *DB) StartNextDue(ctx context.Context, opts StartOptions) (Campaign, StartResult, error) {
	now := opts.now()
	opts.Now = now
	var (
		c        Campaign
		res      StartResult
		refusal  error
		nothing  bool
		refusedC Campaign
	)
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &c, pickDue, now); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				nothing = true
				return nil
			}
			return fmt.Errorf("store: due campaign: %w", err)
		}
		sp, err := savepoint(ctx, tx)
		if err != nil {
			return err
		}
		res, err = startCampaign(ctx, tx, &c, opts)
		if err == nil {
			return LogActivity(ctx, tx, c.AccountID, Actor{Type: ActorSystem}, ActivityEntry{Action: objectOf(c) + ".started",
				ObjectType: objectOf(c), ObjectID: c.ID, Details: map[string]any{"scheduled": true, "queued": res.Queued}})
		}
		if !isRefusal(err) {
			return err
		}
		if err := sp.rollback(ctx); err != nil {
			return err
		}
		refusal, refusedC = err, c
		if _, err := tx.ExecContext(ctx, failScheduled, c.ID, RefusalMessage(err), now); err != nil {
			return fmt.Errorf("store: fail campaign: %w", err)
		}
		return LogActivity(ctx, tx, c.AccountID, Actor{Type: ActorSystem}, ActivityEntry{Action: objectOf(c) + ".failed",
			ObjectType: objectOf(c), ObjectID: c.ID, Details: map[string]any{"reason": RefusalMessage(err)}})
	})
	switch {
	case err != nil:
		return Campaign{}, StartResult{}, err
	case nothing:
		return Campaign{}, StartResult{}, ErrNothingDue
	case refusal != nil:
		refusedC.Status, refusedC.LastError = CampaignFailed, RefusalMessage(refusal)
		return refusedC, StartResult{}, refusal
	}
	return c, res, nil
}

// isRefusal reports whether err refuses a start for a reason of the campaign
// or the account (not a database failure).
func isRefusal(err error) bool {
	var (
		ve *ValidationError
		le *LimitError
		ce *ConflictError
	)
	return errors.As(err, &ve) || errors.As(err, &le) || errors.As(err, &ce) || errors.Is(err, ErrNotFound)
}

// RefusalMessage explains a refused start in German, for last_error.
func RefusalMessage(err error) string {
	var (
		ve *ValidationError
		le *LimitError
		ce *ConflictError
	)
	switch {
	case errors.As(err, &ve):
		msgs := make([]string, 0, len(ve.Fields))
		for _, k := range sortedKeys(ve.Fields) {
			msgs = append(msgs, k+": "+ve.Fields[k])
		}
		return strings.Join(msgs, " ")
	case errors.As(err, &le):
		return fmt.Sprintf("Das Tageslimit Ihres Tarifs ist erreicht (%d Sendungen pro Tag).", le.Max)
	case errors.As(err, &ce):
		return ce.Message
	}
	return "Der Versand konnte nicht gestartet werden."
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// sp is a savepoint inside a transaction.
type sp struct{ tx *sqlx.Tx }

func savepoint(ctx context.Context, tx *sqlx.Tx) (sp, error) {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT campaign_start`); err != nil {
		return sp{}, fmt.Errorf("store: savepoint: %w", err)
	}
	return sp{tx: tx}, nil
}

func (s sp) rollback(ctx context.Context) error {
	if _, err := s.tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT campaign_start`); err != nil {
		return fmt.Errorf("store: rollback to savepoint: %w", err)
	}
	return nil
}

// ActiveCampaign is a campaign the send workers serve.
type ActiveCampaign struct {
	ID        int64 `db:"id"`
	AccountID int64 `db:"account_id"`
}

const selectActive = `SELECT id, account_id FROM campaigns WHERE status = 'sending' ORDER BY started_at, id LIMIT $1`

// ActiveCampaigns lists the campaigns being sent, oldest start first, at most
// limit of them. Every send lane of every process polls it, so it runs
// prepared on the send queue's pool (recipients.go) like the claim.
func (db *DB) ActiveCampaigns(ctx context.Context, limit int) ([]ActiveCampaign, error) {
	stmt, err := db.prepared(ctx, selectActive)
	if err != nil {
		return nil, fmt.Errorf("store: active campaigns: %w", err)
	}
	rows, err := stmt.QueryContext(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("store: active campaigns: %w", err)
	}
	defer rows.Close()
	var out []ActiveCampaign
	for rows.Next() {
		var a ActiveCampaign
		if err := rows.Scan(&a.ID, &a.AccountID); err != nil {
			return nil, fmt.Errorf("store: active campaigns: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: active campaigns: %w", err)
	}
	return out, nil
}

// lockFinished locks a sending campaign that has nothing left to send; the
// lock keeps its status while finishCampaign folds its counters.
const lockFinished = `SELECT id FROM campaigns c
WHERE c.id = $1 AND c.status = 'sending'
  AND NOT EXISTS (SELECT 1 FROM campaign_recipients r WHERE r.campaign_id = $1 AND r.pending)
  AND NOT EXISTS (SELECT 1 FROM campaign_recipients r WHERE r.campaign_id = $1 AND r.waiting)
FOR NO KEY UPDATE`

// finishCampaign folds the counters of a campaign locked by lockFinished and
// marks it sent, or failed when nothing could be delivered. No outcome can
// be written meanwhile: none of its recipients is queued or being sent.
const finishCampaign = foldCounts + `UPDATE campaigns c SET
  sent_count = c.sent_count + f.sent, failed_count = c.failed_count + f.failed, skipped_count = c.skipped_count + f.skipped,
  status = CASE WHEN c.sent_count + f.sent = 0 AND c.failed_count + f.failed > 0 THEN 'failed' ELSE 'sent' END,
  last_error = CASE WHEN c.sent_count + f.sent = 0 AND c.failed_count + f.failed > 0 THEN 'Keine E-Mail konnte zugestellt werden.' ELSE '' END,
  finished_at = now(), updated_at = now()
FROM folded f WHERE c.id = $1
RETURNING ` + campaignStoredColumns

// newsletterSent is the payload of newsletter.sent.
type newsletterSent struct {
	Newsletter newsletterSentData `json:"newsletter"`
}

type newsletterSentData struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Queued int64  `json:"queued"`
	Sent   int64  `json:"sent"`
	Failed int64  `json:"failed"`
}

// FinishCampaign marks a sending campaign sent (or failed, when nothing could
// be delivered) once no recipient is queued or being sent, and emits
// newsletter.sent for a newsletter in the same transaction. It reports
// whether it finished the campaign now; several workers may call it, one wins.
func (db *DB) FinishCampaign(ctx context.Context, id int64) (bool, error) {
	done := false
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		// The row lock first, so that the finish statements' snapshots are
		// taken after any transaction that queued recipients into a running
		// campaign has committed (the sequence worker adds rows to sending
		// day campaigns; see ClaimSequenceDays).
		if _, err := tx.ExecContext(ctx, `SELECT 1 FROM campaigns WHERE id = $1 FOR UPDATE`, id); err != nil {
			return fmt.Errorf("store: finish campaign: %w", err)
		}
		var locked int64
		if err := tx.GetContext(ctx, &locked, lockFinished, id); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			return fmt.Errorf("store: finish campaign: %w", err)
		}
		var c Campaign
		if err := tx.GetContext(ctx, &c, finishCampaign, id); err != nil {
			return fmt.Errorf("store: finish campaign: %w", err)
		}
		done = true
		if c.Kind == KindNewsletter {
			if _, err := Emit(ctx, tx, c.AccountID, EventNewsletterSent, newsletterSent{Newsletter: newsletterSentData{
				ID: c.ID, Name: c.Name, Queued: c.RecipientsCount, Sent: c.SentCount, Failed: c.FailedCount,
			}}); err != nil {
				return err
			}
		}
		return LogActivity(ctx, tx, c.AccountID, Actor{Type: ActorSystem}, ActivityEntry{Action: objectOf(c) + ".finished",
			ObjectType: objectOf(c), ObjectID: c.ID, Details: map[string]any{"status": c.Status, "queued": c.RecipientsCount,
				"sent": c.SentCount, "failed": c.FailedCount, "skipped": c.SkippedCount}})
	})
	return done, err
}

const failCampaign = `UPDATE campaigns SET status = 'failed', last_error = $2, finished_at = now(), updated_at = now()
WHERE id = $1 AND status IN ('sending', 'paused') RETURNING account_id, kind`

const failQueued = `UPDATE campaign_recipients SET status = 'failed', error = $2, claimed_until = NULL
WHERE campaign_id = $1 AND pending`

const addFailed = `UPDATE campaigns SET failed_count = failed_count + $2 WHERE id = $1`

// FailCampaign ends a campaign that cannot be sent any more (its SMTP server
// was deleted): the unsent recipients are failed with msg, so retry-failed
// can send them once the cause is fixed.
func (db *DB) FailCampaign(ctx context.Context, id int64, msg string) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var row struct {
			AccountID int64  `db:"account_id"`
			Kind      string `db:"kind"`
		}
		if err := tx.GetContext(ctx, &row, failCampaign, id, msg); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			return fmt.Errorf("store: fail campaign: %w", err)
		}
		res, err := tx.ExecContext(ctx, failQueued, id, msg)
		if err != nil {
			return fmt.Errorf("store: fail campaign: %w", err)
		}
		n, _ := res.RowsAffected()
		if _, err := tx.ExecContext(ctx, addFailed, id, n); err != nil {
			return fmt.Errorf("store: fail campaign: %w", err)
		}
		obj := ObjectEmail
		if row.Kind == KindNewsletter {
			obj = ObjectNewsletter
		}
		return LogActivity(ctx, tx, row.AccountID, Actor{Type: ActorSystem}, ActivityEntry{Action: obj + ".failed",
			ObjectType: obj, ObjectID: id, Details: map[string]any{"reason": msg, "failed": n}})
	})
}

// checkListIDs returns a ValidationError naming field when one of ids is not
// a list of the account.
func checkListIDs(ctx context.Context, q sqlx.QueryerContext, accountID int64, field string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	var found []int64
	if err := sqlx.SelectContext(ctx, q, &found, `SELECT id FROM lists WHERE account_id = $1 AND id = ANY($2)`, accountID, pq.Int64Array(ids)); err != nil {
		return fmt.Errorf("store: check lists: %w", err)
	}
	if missing := missingIDs(ids, found); len(missing) > 0 {
		return Invalid(field, unknownIDs("Die Liste %d gibt es nicht.", "Diese Listen gibt es nicht: %s.", missing))
	}
	return nil
}

// checkSMTPServer returns a ValidationError when id is not an SMTP server of
// the account.
func checkSMTPServer(ctx context.Context, q sqlx.QueryerContext, accountID int64, id *int64) error {
	if id == nil {
		return nil
	}
	var ok bool
	if err := sqlx.GetContext(ctx, q, &ok, `SELECT EXISTS (SELECT 1 FROM smtp_servers WHERE account_id = $1 AND id = $2)`, accountID, *id); err != nil {
		return fmt.Errorf("store: check smtp server: %w", err)
	}
	if !ok {
		return Invalid("smtp_server_id", "Diesen SMTP-Server gibt es nicht.")
	}
	return nil
}

func missingIDs(want, found []int64) []int64 {
	have := make(map[int64]bool, len(found))
	for _, id := range found {
		have[id] = true
	}
	var out []int64
	for _, id := range want {
		if !have[id] {
			out = append(out, id)
		}
	}
	return out
}

// unknownIDs says which ids name nothing: one in the singular form (one %d),
// more in the plural form (many %s, the ids joined).
func unknownIDs(one, many string, ids []int64) string {
	if len(ids) == 1 {
		return fmt.Sprintf(one, ids[0])
	}
	return fmt.Sprintf(many, joinIDs(ids))
}

func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ", ")
}

// normIDs deduplicates ids keeping their order and checks they are positive.
func normIDs(errs Errs, field string, ids []int64) []int64 {
	if len(ids) > maxCampaignList {
		errs.Add(field, fmt.Sprintf("Höchstens %d Einträge.", maxCampaignList))
	}
	out := make([]int64, 0, len(ids))
	seen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if id <= 0 {
			errs.Add(field, "IDs sind positive ganze Zahlen.")
			continue
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// normLine trims a one-line text field and checks its length; control
// characters (a line break in a subject) are refused.
func normLine(errs Errs, field string, v *string, max int) {
	if v == nil {
		return
	}
	*v = strings.TrimSpace(*v)
	if strings.ContainsAny(*v, "\r\n\x00") {
		errs.Add(field, "Bitte ohne Zeilenumbrüche.")
	}
	if len([]rune(*v)) > max {
		errs.Add(field, fmt.Sprintf("Höchstens %d Zeichen.", max))
	}
}

// normReplyTo checks an optional reply-to address.
func normReplyTo(errs Errs, v *string) {
	if v == nil {
		return
	}
	*v = strings.TrimSpace(*v)
	if *v != "" && !ValidEmail(*v) {
		errs.Add("reply_to", msgEmail)
	}
}
