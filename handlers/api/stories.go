package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

type storySettingsResponse struct {
	ListIDs      []int64 `json:"list_ids"`
	SendTime     string  `json:"send_time"`
	Weekdays     []int64 `json:"weekdays"`
	FromName     string  `json:"from_name"`
	ReplyTo      *string `json:"reply_to"`
	SMTPServerID *int64  `json:"smtp_server_id"`
	TemplateKey  *string `json:"template_key"`
	UpdatedAt    Time    `json:"updated_at"`
}

func newStorySettingsResponse(s store.StorySettings) storySettingsResponse {
	return storySettingsResponse{ListIDs: nonNil([]int64(s.ListIDs)), SendTime: s.SendTime, Weekdays: nonNil([]int64(s.Weekdays)),
		FromName: s.FromName, ReplyTo: optString(s.ReplyTo), SMTPServerID: s.SMTPServerID, TemplateKey: optString(s.TemplateKey),
		UpdatedAt: Time(s.UpdatedAt)}
}

type storySettingsRequest struct {
	ListIDs      *[]int64         `json:"list_ids"`
	SendTime     *string          `json:"send_time"`
	Weekdays     *[]int64         `json:"weekdays"`
	FromName     *string          `json:"from_name"`
	ReplyTo      nullable[string] `json:"reply_to"`
	SMTPServerID nullable[int64]  `json:"smtp_server_id"`
	TemplateKey  nullable[string] `json:"template_key"`
}

func (a *API) getStorySettings(w http.ResponseWriter, r *http.Request) error {
	s, err := a.db.StorySettingsOf(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newStorySettingsResponse(s))
}

func (a *API) putStorySettings(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
	}
	var req storySettingsRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	s, err := a.sequences.PutStorySettings(r.Context(), accountID(r), actor(r), store.StorySettingsInput{
		ListIDs: req.ListIDs, SendTime: req.SendTime, Weekdays: req.Weekdays, FromName: req.FromName,
		ReplyTo: optIn(req.ReplyTo), SMTPServerID: optIn(req.SMTPServerID), TemplateKey: optIn(req.TemplateKey)})
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newStorySettingsResponse(s))
}

// storyEmailResponse is a story email; sent, opens and clicks are null
// until it was sent.
type storyEmailResponse struct {
	ID            int64   `json:"id"`
	Name          string  `json:"name"`
	Subject       string  `json:"subject"`
	Preheader     string  `json:"preheader"`
	HTML          *string `json:"html,omitempty"`
	Text          *string `json:"text,omitempty"`
	Markdown      *string `json:"markdown,omitempty"`
	TemplateKey   *string `json:"template_key"`
	AttachmentIDs []int64 `json:"attachment_ids"`
	Status        string  `json:"status"`
	ScheduledAt   *Time   `json:"scheduled_at"`
	SentAt        *Time   `json:"sent_at"`
	CampaignID    int64   `json:"campaign_id"`
	Sent          *int64  `json:"sent"`
	Opens         *int64  `json:"opens"`
	Clicks        *int64  `json:"clicks"`
	LastError     *string `json:"last_error"`
	CreatedAt     Time    `json:"created_at"`
	UpdatedAt     Time    `json:"updated_at"`
}

func newStoryEmailResponse(s store.CampaignSummary, withContent bool) storyEmailResponse {
	c := s.Campaign
	out := storyEmailResponse{ID: c.ID, Name: c.Name, Subject: c.Subject, Preheader: c.Preheader, TemplateKey: optString(c.TemplateKey),
		AttachmentIDs: nonNil([]int64(c.AttachmentIDs)), Status: c.Status, ScheduledAt: timePtr(c.ScheduledAt), SentAt: timePtr(c.StartedAt), CampaignID: c.ID,
		LastError: optString(c.LastError), CreatedAt: Time(c.CreatedAt), UpdatedAt: Time(c.UpdatedAt)}
	if c.StartedAt != nil {
		sent, opens, clicks := c.SentCount, s.Opens, s.Clicks
		out.Sent, out.Opens, out.Clicks = &sent, &opens, &clicks
	}
	if withContent {
		out.HTML, out.Text, out.Markdown = &c.HTML, &c.Text, &c.Markdown
	}
	return out
}

func (a *API) storyEmailOut(r *http.Request, c store.Campaign) (storyEmailResponse, error) {
	s, err := a.db.CampaignSummaryOf(r.Context(), accountID(r), c.ID)
	if err != nil {
		return storyEmailResponse{}, err
	}
	return newStoryEmailResponse(s, true), nil
}

func (a *API) listStoryEmails(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	status, err := campaignStatusFilter(r)
	if err != nil {
		return err
	}
	list, total, err := a.db.StoryEmails(r.Context(), accountID(r), status, page)
	if err != nil {
		return err
	}
	out := make([]storyEmailResponse, len(list))
	for i, s := range list {
		out[i] = newStoryEmailResponse(s, false)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) createStoryEmail(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
	}
	var req newsletterRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := req.validate(); err != nil {
		return err
	}
	c, err := a.sequences.CreateStoryEmail(r.Context(), accountID(r), actor(r), req.input())
	if err != nil {
		return err
	}
	out, err := a.storyEmailOut(r, c)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, out)
}

func (a *API) getStoryEmail(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := a.db.StoryEmail(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	out, err := a.storyEmailOut(r, c)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, out)
}

func (a *API) patchStoryEmail(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
	}
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
	c, err := a.sequences.UpdateStoryEmail(r.Context(), accountID(r), actor(r), id, req.input())
	if err != nil {
		return err
	}
	out, err := a.storyEmailOut(r, c)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, out)
}

func (a *API) deleteStoryEmail(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := a.sequences.DeleteStoryEmail(r.Context(), accountID(r), actor(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) testStoryEmail(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
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
	results, err := a.sequences.TestStoryEmail(r.Context(), accountID(r), id, to)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newTestResponse(results))
}

type storySendResponse struct {
	ID         int64  `json:"id"`
	CampaignID int64  `json:"campaign_id"`
	Status     string `json:"status"`
	Queued     int64  `json:"queued"`
	Skipped    int64  `json:"skipped"`
	Message    string `json:"message"`
}

func (a *API) sendStoryEmail(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, res, err := a.sequences.SendStoryEmail(r.Context(), accountID(r), actor(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusAccepted, storySendResponse{ID: c.ID, CampaignID: c.ID, Status: c.Status,
		Queued: res.Queued, Skipped: res.Skipped, Message: "Die Story-E-Mail wird verschickt."})
}

type storyScheduleRequest struct {
	ScheduledAt *string `json:"scheduled_at"`
}

func (a *API) scheduleStoryEmail(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req storyScheduleRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	var at time.Time
	if req.ScheduledAt != nil && strings.TrimSpace(*req.ScheduledAt) != "" {
		var ok bool
		if at, ok = ParseTime(strings.TrimSpace(*req.ScheduledAt)); !ok {
			return errValidation(map[string]string{"scheduled_at": "Bitte einen Zeitpunkt angeben, z. B. 2026-12-01T09:00:00+01:00 oder 2026-12-01 09:00."})
		}
	}
	c, err := a.sequences.ScheduleStoryEmail(r.Context(), accountID(r), actor(r), id, at)
	if err != nil {
		return err
	}
	out, err := a.storyEmailOut(r, c)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, out)
}
