package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/views"
)

// statusLabel is the German display label of a campaign status, as the
// portal shows it.
func statusLabel(status string) string { return views.CampaignStatusLabel(status) }

// newsletterResponse is a newsletter as the API shows it. The content fields
// are left out of list responses (omitempty on pointers).
type newsletterResponse struct {
	ID            int64   `json:"id"`
	Name          string  `json:"name"`
	Subject       string  `json:"subject"`
	Preheader     string  `json:"preheader"`
	HTML          *string `json:"html,omitempty"`
	Text          *string `json:"text,omitempty"`
	Markdown      *string `json:"markdown,omitempty"`
	TemplateKey   *string `json:"template_key"`
	AttachmentIDs []int64 `json:"attachment_ids"`
	ListIDs       []int64 `json:"list_ids"`
	SegmentID     *int64  `json:"segment_id"`
	FromName      string  `json:"from_name"`
	ReplyTo       *string `json:"reply_to"`
	SMTPServerID  *int64  `json:"smtp_server_id"`
	TrackOpens    bool    `json:"track_opens"`
	TrackClicks   bool    `json:"track_clicks"`
	Status        string  `json:"status"`
	StatusLabel   string  `json:"status_label"`
	ScheduledAt   *Time   `json:"scheduled_at"`
	StartedAt     *Time   `json:"started_at"`
	FinishedAt    *Time   `json:"finished_at"`
	Queued        int64   `json:"queued"`
	Sent          int64   `json:"sent"`
	Failed        int64   `json:"failed"`
	Skipped       int64   `json:"skipped"`
	LastError     *string `json:"last_error"`
	CreatedAt     Time    `json:"created_at"`
	UpdatedAt     Time    `json:"updated_at"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func newNewsletterResponse(c store.Campaign, withContent bool) newsletterResponse {
	out := newsletterResponse{
		ID: c.ID, Name: c.Name, Subject: c.Subject, Preheader: c.Preheader, TemplateKey: optString(c.TemplateKey),
		AttachmentIDs: nonNil([]int64(c.AttachmentIDs)), ListIDs: nonNil([]int64(c.ListIDs)), SegmentID: c.SegmentID, FromName: c.FromName, ReplyTo: optString(c.ReplyTo), SMTPServerID: c.SMTPServerID,
		TrackOpens: c.TrackOpens, TrackClicks: c.TrackClicks, Status: c.Status, StatusLabel: statusLabel(c.Status),
		ScheduledAt: timePtr(c.ScheduledAt), StartedAt: timePtr(c.StartedAt), FinishedAt: timePtr(c.FinishedAt),
		Queued: c.RecipientsCount, Sent: c.SentCount, Failed: c.FailedCount, Skipped: c.SkippedCount,
		LastError: optString(c.LastError), CreatedAt: Time(c.CreatedAt), UpdatedAt: Time(c.UpdatedAt),
	}
	if withContent {
		out.HTML, out.Text, out.Markdown = &c.HTML, &c.Text, &c.Markdown
	}
	return out
}

// newsletterRequest is the body of POST /newsletters and PATCH
// /newsletters/{id}: absent or null fields are not given.
type newsletterRequest struct {
	Name          *string  `json:"name"`
	Subject       *string  `json:"subject"`
	Preheader     *string  `json:"preheader"`
	HTML          *string  `json:"html"`
	Text          *string  `json:"text"`
	Markdown      *string  `json:"markdown"`
	TemplateKey   *string  `json:"template_key"`
	AttachmentIDs *[]int64 `json:"attachment_ids"`
	ListIDs       *[]int64 `json:"list_ids"`
	SegmentID     *int64   `json:"segment_id"`
	FromName      *string  `json:"from_name"`
	ReplyTo       *string  `json:"reply_to"`
	SMTPServerID  *int64   `json:"smtp_server_id"`
	TrackOpens    *bool    `json:"track_opens"`
	TrackClicks   *bool    `json:"track_clicks"`
}

// validate checks what needs no database: content over 2 MB is a 413.
func (q newsletterRequest) validate() error {
	for _, v := range []*string{q.HTML, q.Text, q.Markdown} {
		if v != nil && len(*v) > store.MaxHTMLBytes {
			return errTooLarge
		}
	}
	return nil
}

func (q newsletterRequest) input() store.NewsletterInput {
	return store.NewsletterInput{
		Name: q.Name, Subject: q.Subject, Preheader: q.Preheader, HTML: q.HTML, Text: q.Text, Markdown: q.Markdown,
		TemplateKey: q.TemplateKey, AttachmentIDs: q.AttachmentIDs, ListIDs: q.ListIDs, SegmentID: q.SegmentID, FromName: q.FromName, ReplyTo: q.ReplyTo,
		SMTPServerID: q.SMTPServerID, TrackOpens: q.TrackOpens, TrackClicks: q.TrackClicks,
	}
}

// sendResultResponse is the newsletter send result of api-v1.md (202), also
// the answer of retry-failed.
type sendResultResponse struct {
	ID       int64             `json:"id"`
	Status   string            `json:"status"`
	Queued   int64             `json:"queued"`
	Sent     int64             `json:"sent"`
	Failed   int64             `json:"failed"`
	Skipped  int64             `json:"skipped"`
	Message  string            `json:"message"`
	Warnings []warningResponse `json:"warnings"`
}

func newSendResultResponse(res campaign.SendResult, msg string) sendResultResponse {
	return sendResultResponse{ID: res.Campaign.ID, Status: res.Campaign.Status, Queued: res.Queued, Sent: res.Sent,
		Failed: res.Failed, Skipped: res.Skipped, Message: msg, Warnings: newWarnings(res.Warnings)}
}

// warningResponse is a warning of a send result: what the account should fix,
// although the send went ahead.
type warningResponse struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// newWarnings turns warning codes into the API's warnings (never null).
func newWarnings(codes []string) []warningResponse {
	out := make([]warningResponse, 0, len(codes))
	for _, c := range codes {
		msg := c
		if c == store.WarningNoPostalAddress {
			msg = "Ihr Konto hat noch keine Postanschrift. Werbe-E-Mails müssen Absender und Anschrift nennen (Impressum); " +
				"bitte unter PUT /v1/account/settings oder im Portal unter Einstellungen → Absender eintragen."
		}
		out = append(out, warningResponse{Code: c, Message: msg})
	}
	return out
}

// sendMessage is the German message of a send result.
func sendMessage(res campaign.SendResult) string {
	switch res.Campaign.Status {
	case store.CampaignSent:
		return fmt.Sprintf("Versand abgeschlossen: %d von %d E-Mails verschickt.", res.Sent, res.Queued)
	case store.CampaignFailed:
		return "Der Versand ist fehlgeschlagen: keine E-Mail konnte zugestellt werden."
	}
	return fmt.Sprintf("Der Versand läuft: %d von %d E-Mails sind verschickt, der Rest folgt im Hintergrund.", res.Sent, res.Queued)
}

// errSendingOff answers the sending endpoints of an API without a mailer.
var errSendingOff = &Error{Status: http.StatusServiceUnavailable, Code: "service_unavailable",
	Message: "Der Versand ist in diesem Dienst nicht eingerichtet."}

// campaignStatusFilter reads the ?status= filter of the newsletter and email
// listings ("" for all).
func campaignStatusFilter(r *http.Request) (string, error) {
	status := r.URL.Query().Get("status")
	if status != "" && !store.ValidCampaignStatus(status) {
		return "", errValidation(map[string]string{"status": "Unbekannter Status."})
	}
	return status, nil
}

func (a *API) listNewsletters(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	status, err := campaignStatusFilter(r)
	if err != nil {
		return err
	}
	list, total, err := a.db.Newsletters(r.Context(), accountID(r), status, page)
	if err != nil {
		return err
	}
	out := make([]newsletterResponse, len(list))
	for i, c := range list {
		out[i] = newNewsletterResponse(c, false)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) createNewsletter(w http.ResponseWriter, r *http.Request) error {
	var req newsletterRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := req.validate(); err != nil {
		return err
	}
	c, err := a.campaigns.CreateNewsletter(r.Context(), accountID(r), actor(r), req.input())
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newNewsletterResponse(c, true))
}

func (a *API) getNewsletter(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := a.db.Newsletter(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newNewsletterResponse(c, true))
}

func (a *API) patchNewsletter(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req newsletterRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := req.validate(); err != nil {
		return err
	}
	c, err := a.campaigns.UpdateNewsletter(r.Context(), accountID(r), actor(r), id, req.input())
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newNewsletterResponse(c, true))
}

func (a *API) deleteNewsletter(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := a.campaigns.DeleteNewsletter(r.Context(), accountID(r), actor(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) duplicateNewsletter(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := a.campaigns.DuplicateNewsletter(r.Context(), accountID(r), actor(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newNewsletterResponse(c, true))
}

// recipientList reads "to" given as one address or a list of addresses.
func recipientList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if strings.TrimSpace(one) == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, errValidation(map[string]string{"to": "Erwartet eine Adresse oder eine Liste von Adressen."})
	}
	return many, nil
}

// testRequest is the body of POST /newsletters/{id}/test.
type testRequest struct {
	To json.RawMessage `json:"to"`
}

type testResultResponse struct {
	Email     string  `json:"email"`
	Status    string  `json:"status"` // sent or failed
	MessageID *string `json:"message_id"`
	Error     *string `json:"error"`
}

type testResponse struct {
	Sent    int                  `json:"sent"`
	Failed  int                  `json:"failed"`
	Results []testResultResponse `json:"results"`
}

// testNewsletter sends test mails now: "[TEST]" subject, no tracking,
// personalised with a sample contact; a failed address is reported in the
// result (200), not as an error.
// newTestResponse is the answer of every test send: each address's outcome
// and the counts.
func newTestResponse(results []campaign.TestMailResult) testResponse {
	out := testResponse{Results: make([]testResultResponse, len(results))}
	for i, res := range results {
		tr := testResultResponse{Email: res.Email, Status: "sent", MessageID: optString(res.MessageID), Error: optString(res.Error)}
		if res.Sent {
			out.Sent++
		} else {
			tr.Status = "failed"
			out.Failed++
		}
		out.Results[i] = tr
	}
	return out
}

func (a *API) testNewsletter(w http.ResponseWriter, r *http.Request) error {
	if a.campaigns == nil {
		return errSendingOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req testRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	to, err := recipientList(req.To)
	if err != nil {
		return err
	}
	results, err := a.campaigns.TestNewsletter(r.Context(), accountID(r), id, to)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newTestResponse(results))
}

func (a *API) sendNewsletter(w http.ResponseWriter, r *http.Request) error {
	if a.campaigns == nil {
		return errSendingOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	build := func(res campaign.SendResult) any { return newSendResultResponse(res, sendMessage(res)) }
	respondInTx(a, w, r, http.StatusAccepted, build)
	res, err := a.campaigns.SendNewsletter(r.Context(), accountID(r), actor(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusAccepted, build(res))
}

// scheduleRequest is the body of POST /newsletters/{id}/schedule.
type scheduleRequest struct {
	ScheduledAt string `json:"scheduled_at"`
}

func (a *API) scheduleNewsletter(w http.ResponseWriter, r *http.Request) error {
	if a.campaigns == nil {
		return errSendingOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req scheduleRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	at, ok := ParseTime(strings.TrimSpace(req.ScheduledAt))
	if !ok {
		return errValidation(map[string]string{"scheduled_at": "Bitte einen Zeitpunkt angeben, z. B. 2026-12-01T09:00:00+01:00 oder 2026-12-01 09:00."})
	}
	c, err := a.campaigns.ScheduleNewsletter(r.Context(), accountID(r), actor(r), id, at)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newNewsletterResponse(c, true))
}

func (a *API) unscheduleNewsletter(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := a.campaigns.UnscheduleNewsletter(r.Context(), accountID(r), actor(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newNewsletterResponse(c, true))
}

func (a *API) pauseNewsletter(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := a.campaigns.PauseNewsletter(r.Context(), accountID(r), actor(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newNewsletterResponse(c, true))
}

func (a *API) resumeNewsletter(w http.ResponseWriter, r *http.Request) error {
	if a.campaigns == nil {
		return errSendingOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := a.campaigns.ResumeNewsletter(r.Context(), accountID(r), actor(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newNewsletterResponse(c, true))
}

func (a *API) retryFailedNewsletter(w http.ResponseWriter, r *http.Request) error {
	if a.campaigns == nil {
		return errSendingOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	res, err := a.campaigns.RetryFailed(r.Context(), accountID(r), actor(r), id)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("%d fehlgeschlagene Empfänger werden erneut versendet.", res.Queued)
	return writeData(w, r, http.StatusAccepted, newSendResultResponse(res, msg))
}

// statsResponse is GET /newsletters/{id}/stats: the recipients by status,
// counted live (sent and failed among them), the engagement (unique opens
// and clicks, clicks, bounces, unsubscribes) with its rates, and the same per
// day in timeline.
type statsResponse struct {
	ID         int64  `json:"id"`
	Status     string `json:"status"`
	Recipients int64  `json:"recipients"`
	Queued     int64  `json:"queued"`
	Sending    int64  `json:"sending"`
	Skipped    int64  `json:"skipped"`
	engagementResponse
	StartedAt  *Time         `json:"started_at"`
	FinishedAt *Time         `json:"finished_at"`
	Timeline   []dayResponse `json:"timeline"`
}

func (a *API) newsletterStats(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	st, err := a.db.NewsletterStats(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	c, rc := st.Campaign, st.Counts
	return writeData(w, r, http.StatusOK, statsResponse{
		ID: c.ID, Status: c.Status, Recipients: rc.Total, Queued: rc.Queued, Sending: rc.Sending, Skipped: rc.Skipped,
		engagementResponse: newEngagementResponse(st.Engagement),
		StartedAt:          timePtr(c.StartedAt), FinishedAt: timePtr(c.FinishedAt), Timeline: dayResponses(st.Days),
	})
}

type previewResponse struct {
	Subject   string `json:"subject"`
	Preheader string `json:"preheader"`
	HTML      string `json:"html"`
	Text      string `json:"text"`
	ContactID *int64 `json:"contact_id"`
}

func (a *API) previewNewsletter(w http.ResponseWriter, r *http.Request) error {
	if a.campaigns == nil {
		return errSendingOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	errs := store.Errs{}
	contactID := queryInt(r, "contact_id", errs)
	if contactID < 0 {
		errs.Add("contact_id", "Muss eine positive ganze Zahl sein.")
	}
	if err := errs.Err(); err != nil {
		return err
	}
	p, err := a.campaigns.PreviewNewsletter(r.Context(), accountID(r), id, contactID)
	if err != nil {
		return err
	}
	out := previewResponse{Subject: p.Subject, Preheader: p.Preheader, HTML: p.HTML, Text: p.Text}
	if p.ContactID != 0 {
		out.ContactID = &p.ContactID
	}
	return writeData(w, r, http.StatusOK, out)
}
