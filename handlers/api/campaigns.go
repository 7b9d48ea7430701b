package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// engagementResponse is what became of sent mail, with rates between 0 and 1:
// open_rate and click_rate per sent mail, click_to_open_rate per opener,
// bounce_rate per attempted mail (sent + failed), unsubscribe_rate per sent
// mail. unique_opens and unique_clicks count recipients, clicks every click.
type engagementResponse struct {
	Sent            int64   `json:"sent"`
	Failed          int64   `json:"failed"`
	Bounces         int64   `json:"bounces"`
	UniqueOpens     int64   `json:"unique_opens"`
	UniqueClicks    int64   `json:"unique_clicks"`
	Clicks          int64   `json:"clicks"`
	Unsubscribes    int64   `json:"unsubscribes"`
	OpenRate        float64 `json:"open_rate"`
	ClickRate       float64 `json:"click_rate"`
	ClickToOpenRate float64 `json:"click_to_open_rate"`
	BounceRate      float64 `json:"bounce_rate"`
	UnsubscribeRate float64 `json:"unsubscribe_rate"`
}

func newEngagementResponse(e store.Engagement) engagementResponse {
	return engagementResponse{
		Sent: e.Sent, Failed: e.Failed, Bounces: e.Bounces, UniqueOpens: e.Opens, UniqueClicks: e.Clicks,
		Clicks: e.TotalClicks, Unsubscribes: e.Unsubscribes, OpenRate: e.OpenRate(), ClickRate: e.ClickRate(),
		ClickToOpenRate: e.ClickToOpenRate(), BounceRate: e.BounceRate(), UnsubscribeRate: e.UnsubscribeRate(),
	}
}

// campaignResponse is a campaign (a newsletter or a single email) with its
// engagement, as GET /campaigns lists it.
type campaignResponse struct {
	ID          int64  `json:"id"`
	Kind        string `json:"kind"`
	Type        string `json:"type"`
	Name        string `json:"name"`
	Subject     string `json:"subject"`
	Status      string `json:"status"`
	StatusLabel string `json:"status_label"`
	ScheduledAt *Time  `json:"scheduled_at"`
	StartedAt   *Time  `json:"started_at"`
	FinishedAt  *Time  `json:"finished_at"`
	Queued      int64  `json:"queued"`
	Skipped     int64  `json:"skipped"`
	engagementResponse
	CreatedAt Time `json:"created_at"`
	UpdatedAt Time `json:"updated_at"`
}

func newCampaignResponse(s store.CampaignSummary) campaignResponse {
	c := s.Campaign
	return campaignResponse{
		ID: c.ID, Kind: c.Kind, Type: c.Type, Name: c.Name, Subject: c.Subject, Status: c.Status,
		StatusLabel: statusLabel(c.Status), ScheduledAt: timePtr(c.ScheduledAt), StartedAt: timePtr(c.StartedAt),
		FinishedAt: timePtr(c.FinishedAt), Queued: c.RecipientsCount, Skipped: c.SkippedCount,
		engagementResponse: newEngagementResponse(s.Engagement), CreatedAt: Time(c.CreatedAt), UpdatedAt: Time(c.UpdatedAt),
	}
}

// dayResponse is one point of a time series: the day (or the first day of the
// week or month) and what happened in it.
type dayResponse struct {
	Date string `json:"date"`
	engagementResponse
}

func dateOf(t time.Time) string { return t.In(store.Berlin).Format(time.DateOnly) }

// campaignDetailResponse is GET /campaigns/{id}: the campaign with its
// settings and its engagement per day.
type campaignDetailResponse struct {
	campaignResponse
	FromName     string        `json:"from_name"`
	ReplyTo      *string       `json:"reply_to"`
	SMTPServerID *int64        `json:"smtp_server_id"`
	TrackOpens   bool          `json:"track_opens"`
	TrackClicks  bool          `json:"track_clicks"`
	ListIDs      []int64       `json:"list_ids"`
	LastError    *string       `json:"last_error"`
	Timeline     []dayResponse `json:"timeline"`
}

func (a *API) listCampaigns(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := store.CampaignFilter{Kind: q.Get("kind"), Type: q.Get("type"), Status: q.Get("status")}
	list, total, err := a.db.ListCampaigns(r.Context(), accountID(r), f, page)
	if err != nil {
		return err
	}
	out := make([]campaignResponse, len(list))
	for i, s := range list {
		out[i] = newCampaignResponse(s)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) getCampaign(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	s, err := a.db.CampaignSummaryOf(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	days, err := a.db.CampaignDays(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	c := s.Campaign
	out := campaignDetailResponse{
		campaignResponse: newCampaignResponse(s), FromName: c.FromName, ReplyTo: optString(c.ReplyTo),
		SMTPServerID: c.SMTPServerID, TrackOpens: c.TrackOpens, TrackClicks: c.TrackClicks,
		ListIDs: nonNil([]int64(c.ListIDs)), LastError: optString(c.LastError), Timeline: dayResponses(days),
	}
	return writeData(w, r, http.StatusOK, out)
}

func dayResponses(days []store.DayEngagement) []dayResponse {
	out := make([]dayResponse, len(days))
	for i, d := range days {
		out[i] = dayResponse{Date: dateOf(d.Day), engagementResponse: newEngagementResponse(d.Engagement)}
	}
	return out
}

// campaignRecipientResponse is a recipient of a campaign and its outcome.
type campaignRecipientResponse struct {
	ID        int64   `json:"id"`
	ContactID *int64  `json:"contact_id"`
	Email     string  `json:"email"`
	Status    string  `json:"status"`
	Attempts  int     `json:"attempts"`
	MessageID *string `json:"message_id"`
	Error     *string `json:"error"`
	SentAt    *Time   `json:"sent_at"`
	OpenedAt  *Time   `json:"opened_at"`
	ClickedAt *Time   `json:"clicked_at"`
}

// mergeErrs adds the fields of a ValidationError to errs.
func mergeErrs(errs store.Errs, err error) {
	if ve, ok := err.(*store.ValidationError); ok {
		for k, v := range ve.Fields {
			errs.Add(k, v)
		}
	}
}

// queryBool reads an optional true/false query parameter.
func queryBool(r *http.Request, name string, errs store.Errs) *bool {
	s := r.URL.Query().Get(name)
	if s == "" {
		return nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		errs.Add(name, "Erlaubt sind true und false.")
		return nil
	}
	return &b
}

func (a *API) listCampaignRecipients(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	errs := store.Errs{}
	f := store.RecipientFilter{Status: r.URL.Query().Get("status"), Opened: queryBool(r, "opened", errs), Clicked: queryBool(r, "clicked", errs)}
	mergeErrs(errs, f.Validate())
	if err := errs.Err(); err != nil {
		return err
	}
	list, total, err := a.db.CampaignRecipients(r.Context(), accountID(r), id, f, page)
	if err != nil {
		return err
	}
	out := make([]campaignRecipientResponse, len(list))
	for i, c := range list {
		out[i] = campaignRecipientResponse{ID: c.ID, ContactID: c.ContactID, Email: c.Email, Status: c.Status,
			Attempts: c.Attempts, MessageID: c.MessageID, Error: c.Error, SentAt: timePtr(c.SentAt),
			OpenedAt: timePtr(c.OpenedAt), ClickedAt: timePtr(c.ClickedAt)}
	}
	return writeList(w, r, out, page, total)
}

// campaignLinkResponse is a tracked link of a campaign with its clicks;
// click_rate is unique clickers of the link per sent mail of the campaign.
type campaignLinkResponse struct {
	ID            int64   `json:"id"`
	Position      int     `json:"position"`
	URL           string  `json:"url"`
	Personalized  bool    `json:"personalized"`
	UniqueClicks  int64   `json:"unique_clicks"`
	Clicks        int64   `json:"clicks"`
	ClickRate     float64 `json:"click_rate"`
	LastClickedAt *Time   `json:"last_clicked_at"`
}

func (a *API) listCampaignLinks(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	list, total, sent, err := a.db.CampaignLinkStats(r.Context(), accountID(r), id, page)
	if err != nil {
		return err
	}
	out := make([]campaignLinkResponse, len(list))
	for i, l := range list {
		out[i] = campaignLinkResponse{ID: l.ID, Position: l.Position, URL: l.URL, Personalized: l.Personalized,
			UniqueClicks: l.UniqueClicks, Clicks: l.Clicks, ClickRate: store.Ratio(l.UniqueClicks, sent),
			LastClickedAt: timePtr(l.LastClickedAt)}
	}
	return writeList(w, r, out, page, total)
}
