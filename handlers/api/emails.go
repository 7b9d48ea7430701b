package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/views"
)

// emailRequest is the body of POST /emails/send.
type emailRequest struct {
	To            json.RawMessage   `json:"to"` // one address or a list
	Subject       string            `json:"subject"`
	Preheader     string            `json:"preheader"`
	HTML          string            `json:"html"`
	Text          string            `json:"text"`
	Markdown      string            `json:"markdown"`
	TemplateKey   string            `json:"template_key"`
	AttachmentIDs []int64           `json:"attachment_ids"`
	Placeholders  map[string]string `json:"placeholders"`
	FromName      string            `json:"from_name"`
	ReplyTo       string            `json:"reply_to"`
	TrackOpens    bool              `json:"track_opens"`
	TrackClicks   bool              `json:"track_clicks"`
	ScheduledAt   *string           `json:"scheduled_at"`
	Type          string            `json:"type"`
	ListIDs       []int64           `json:"list_ids"`
	ContactIDs    []int64           `json:"contact_ids"`
	SMTPServerID  *int64            `json:"smtp_server_id"`
}

// input validates what needs no database (413 for content over 2 MB, 422 for
// the placeholders and the time) and returns the store's input.
func (q emailRequest) input() (store.EmailInput, error) {
	if len(q.HTML) > store.MaxHTMLBytes || len(q.Text) > store.MaxHTMLBytes || len(q.Markdown) > store.MaxHTMLBytes {
		return store.EmailInput{}, errTooLarge
	}
	to, err := recipientList(q.To)
	if err != nil {
		return store.EmailInput{}, err
	}
	errs := store.Errs{}
	for k, v := range mailer.ValidateCustom(q.Placeholders) {
		errs.Add(k, v)
	}
	in := store.EmailInput{To: to, Subject: q.Subject, Preheader: q.Preheader, HTML: q.HTML, Text: q.Text, Markdown: q.Markdown,
		TemplateKey: q.TemplateKey, AttachmentIDs: q.AttachmentIDs, Placeholders: q.Placeholders,
		FromName: q.FromName, ReplyTo: q.ReplyTo, TrackOpens: q.TrackOpens, TrackClicks: q.TrackClicks, Type: q.Type,
		ListIDs: q.ListIDs, ContactIDs: q.ContactIDs, SMTPServerID: q.SMTPServerID}
	if q.ScheduledAt != nil && strings.TrimSpace(*q.ScheduledAt) != "" {
		at, ok := ParseTime(strings.TrimSpace(*q.ScheduledAt))
		if !ok {
			errs.Add("scheduled_at", "Bitte einen Zeitpunkt angeben, z. B. 2026-12-01T09:00:00+01:00 oder 2026-12-01 09:00.")
		}
		in.ScheduledAt = &at
	}
	return in, errs.Err()
}

// emailSendResponse is the single email send result (202).
type emailSendResponse struct {
	CampaignID  int64             `json:"campaign_id"`
	Status      string            `json:"status"`
	Type        string            `json:"type"`
	Queued      int64             `json:"queued"`
	Sent        int64             `json:"sent"`
	Failed      int64             `json:"failed"`
	Skipped     int64             `json:"skipped"`
	ScheduledAt *Time             `json:"scheduled_at"`
	Message     string            `json:"message"`
	Warnings    []warningResponse `json:"warnings"`
}

// emailResponse is a single email as GET /emails and GET /emails/{id} show it;
// the content only on single retrieval.
type emailResponse struct {
	ID            int64             `json:"id"`
	CampaignID    int64             `json:"campaign_id"`
	Type          string            `json:"type"`
	Status        string            `json:"status"`
	StatusLabel   string            `json:"status_label"`
	Subject       string            `json:"subject"`
	Preheader     string            `json:"preheader"`
	HTML          *string           `json:"html,omitempty"`
	Text          *string           `json:"text,omitempty"`
	Markdown      *string           `json:"markdown,omitempty"`
	TemplateKey   *string           `json:"template_key"`
	AttachmentIDs []int64           `json:"attachment_ids"`
	To            []string          `json:"to"`
	ListIDs       []int64           `json:"list_ids"`
	ContactIDs    []int64           `json:"contact_ids"`
	Placeholders  map[string]string `json:"placeholders"`
	FromName      string            `json:"from_name"`
	ReplyTo       *string           `json:"reply_to"`
	SMTPServerID  *int64            `json:"smtp_server_id"`
	TrackOpens    bool              `json:"track_opens"`
	TrackClicks   bool              `json:"track_clicks"`
	ScheduledAt   *Time             `json:"scheduled_at"`
	StartedAt     *Time             `json:"started_at"`
	FinishedAt    *Time             `json:"finished_at"`
	Queued        int64             `json:"queued"`
	Sent          int64             `json:"sent"`
	Failed        int64             `json:"failed"`
	Skipped       int64             `json:"skipped"`
	LastError     *string           `json:"last_error"`
	CreatedAt     Time              `json:"created_at"`
	UpdatedAt     Time              `json:"updated_at"`
}

func newEmailResponse(c store.Campaign, withContent bool) emailResponse {
	ph := map[string]string(c.Placeholders)
	if ph == nil {
		ph = map[string]string{}
	}
	out := emailResponse{
		ID: c.ID, CampaignID: c.ID, Type: c.Type, Status: c.Status, StatusLabel: statusLabel(c.Status), Subject: c.Subject,
		Preheader: c.Preheader, TemplateKey: optString(c.TemplateKey), AttachmentIDs: nonNil([]int64(c.AttachmentIDs)),
		To: nonNil([]string(c.ToEmails)), ListIDs: nonNil([]int64(c.ListIDs)), ContactIDs: nonNil([]int64(c.ContactIDs)),
		Placeholders: ph, FromName: c.FromName, ReplyTo: optString(c.ReplyTo), SMTPServerID: c.SMTPServerID,
		TrackOpens: c.TrackOpens, TrackClicks: c.TrackClicks, ScheduledAt: timePtr(c.ScheduledAt),
		StartedAt: timePtr(c.StartedAt), FinishedAt: timePtr(c.FinishedAt), Queued: c.RecipientsCount, Sent: c.SentCount,
		Failed: c.FailedCount, Skipped: c.SkippedCount, LastError: optString(c.LastError), CreatedAt: Time(c.CreatedAt),
		UpdatedAt: Time(c.UpdatedAt),
	}
	if withContent {
		out.HTML, out.Text, out.Markdown = &c.HTML, &c.Text, &c.Markdown
	}
	return out
}

// emailMessage is the German message of an email send result.
func emailMessage(res campaign.SendResult) string {
	c := res.Campaign
	switch {
	case c.Status == store.CampaignScheduled:
		return "Die E-Mail ist für " + time.Time(*c.ScheduledAt).In(store.Berlin).Format("02.01.2006 15:04") + " Uhr geplant."
	case res.Queued == 0 && res.Skipped == 1:
		return "Nichts versendet: Der Empfänger wurde übersprungen (gesperrt oder nicht angemeldet)."
	case res.Queued == 0:
		return fmt.Sprintf("Nichts versendet: alle %d Empfänger wurden übersprungen (gesperrt oder nicht angemeldet).", res.Skipped)
	}
	msg := fmt.Sprintf(views.ByCount(res.Queued, "%d E-Mail wird versendet", "%d E-Mails werden versendet"), res.Queued)
	if res.Skipped > 0 {
		msg += fmt.Sprintf(views.ByCount(res.Skipped, ", %d Empfänger wurde übersprungen", ", %d Empfänger wurden übersprungen"), res.Skipped) +
			" (gesperrt oder nicht angemeldet)"
	}
	return msg + "."
}

// sendEmail sends a single email now (the first recipients inline) or
// schedules it with scheduled_at. Without a type it is a follow_up: it carries
// the unsubscribe line and skips blocked addresses (reported in skipped); only
// "type": "transactional" goes to blocked addresses too, without the line.
func (a *API) sendEmail(w http.ResponseWriter, r *http.Request) error {
	if a.campaigns == nil {
		return errSendingOff
	}
	var req emailRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	respondInTx(a, w, r, http.StatusAccepted, newEmailSendResponse)
	res, err := a.campaigns.SendEmail(r.Context(), accountID(r), actor(r), in)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusAccepted, newEmailSendResponse(res))
}

func newEmailSendResponse(res campaign.SendResult) any {
	c := res.Campaign
	return emailSendResponse{
		CampaignID: c.ID, Status: c.Status, Type: c.Type, Queued: res.Queued, Sent: res.Sent, Failed: res.Failed,
		Skipped: res.Skipped, ScheduledAt: timePtr(c.ScheduledAt), Message: emailMessage(res), Warnings: newWarnings(res.Warnings),
	}
}

func (a *API) listEmails(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	status, err := campaignStatusFilter(r)
	if err != nil {
		return err
	}
	list, total, err := a.db.Emails(r.Context(), accountID(r), status, page)
	if err != nil {
		return err
	}
	out := make([]emailResponse, len(list))
	for i, c := range list {
		out[i] = newEmailResponse(c, false)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) getEmail(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := a.db.Email(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newEmailResponse(c, true))
}

// cancelEmail calls off a scheduled email; its record stays (status
// cancelled) and is returned.
func (a *API) cancelEmail(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := a.campaigns.CancelEmail(r.Context(), accountID(r), actor(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newEmailResponse(c, true))
}
