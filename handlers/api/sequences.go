package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/sequence"
)

// errSequencesOff answers the sequence endpoints of an API without the service.
var errSequencesOff = &Error{Status: http.StatusServiceUnavailable, Code: "service_unavailable",
	Message: "Sequenzen sind in diesem Dienst nicht eingerichtet."}

// nullable is a request field that may be absent, null (clear it) or a value.
type nullable[T any] struct {
	Set   bool // present in the body
	Null  bool // present as null
	Value T
}

func (n *nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		n.Null = true
		return nil
	}
	return json.Unmarshal(b, &n.Value)
}

type sequenceResponse struct {
	ID                int64   `json:"id"`
	Name              string  `json:"name"`
	Status            string  `json:"status"`
	Trigger           string  `json:"trigger"`
	TriggerListID     *int64  `json:"trigger_list_id"`
	TriggerTag        *string `json:"trigger_tag"`
	SendTime          *string `json:"send_time"`
	FromName          string  `json:"from_name"`
	ReplyTo           *string `json:"reply_to"`
	SMTPServerID      *int64  `json:"smtp_server_id"`
	TemplateKey       *string `json:"template_key"`
	DaysCount         int64   `json:"days_count"`
	ParticipantsCount int64   `json:"participants_count"`
	ActivatedAt       *Time   `json:"activated_at"`
	CreatedAt         Time    `json:"created_at"`
	UpdatedAt         Time    `json:"updated_at"`
}

func newSequenceResponse(s store.Sequence) sequenceResponse {
	return sequenceResponse{ID: s.ID, Name: s.Name, Status: s.Status, Trigger: s.Trigger, TriggerListID: s.TriggerListID,
		TriggerTag: optString(s.TriggerTag), SendTime: s.SendTime, FromName: s.FromName, ReplyTo: optString(s.ReplyTo),
		SMTPServerID: s.SMTPServerID, TemplateKey: optString(s.TemplateKey), DaysCount: s.DaysCount,
		ParticipantsCount: s.ParticipantsCount, ActivatedAt: timePtr(s.ActivatedAt), CreatedAt: Time(s.CreatedAt), UpdatedAt: Time(s.UpdatedAt)}
}

// sequenceRequest is the body of POST /sequences and PATCH /sequences/{id}.
type sequenceRequest struct {
	Name          *string          `json:"name"`
	Trigger       *string          `json:"trigger"`
	TriggerListID nullable[int64]  `json:"trigger_list_id"`
	TriggerTag    nullable[string] `json:"trigger_tag"`
	SendTime      nullable[string] `json:"send_time"`
	FromName      *string          `json:"from_name"`
	ReplyTo       nullable[string] `json:"reply_to"`
	SMTPServerID  nullable[int64]  `json:"smtp_server_id"`
	TemplateKey   nullable[string] `json:"template_key"`
}

func optIn[T any](n nullable[T]) *T {
	if !n.Set {
		return nil
	}
	v := n.Value // the zero value clears
	return &v
}

func (q sequenceRequest) input() store.SequenceInput {
	return store.SequenceInput{Name: q.Name, Trigger: q.Trigger, TriggerListID: optIn(q.TriggerListID), TriggerTag: optIn(q.TriggerTag),
		SendTime: optIn(q.SendTime), FromName: q.FromName, ReplyTo: optIn(q.ReplyTo), SMTPServerID: optIn(q.SMTPServerID),
		TemplateKey: optIn(q.TemplateKey)}
}

func (a *API) listSequences(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	list, total, err := a.db.Sequences(r.Context(), accountID(r), page)
	if err != nil {
		return err
	}
	out := make([]sequenceResponse, len(list))
	for i, s := range list {
		out[i] = newSequenceResponse(s)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) createSequence(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
	}
	var req sequenceRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	s, err := a.sequences.CreateSequence(r.Context(), accountID(r), actor(r), req.input())
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newSequenceResponse(s))
}

func (a *API) getSequence(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	s, err := a.db.Sequence(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newSequenceResponse(s))
}

func (a *API) patchSequence(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req sequenceRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	s, err := a.sequences.UpdateSequence(r.Context(), accountID(r), actor(r), id, req.input())
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newSequenceResponse(s))
}

func (a *API) deleteSequence(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := a.sequences.DeleteSequence(r.Context(), accountID(r), actor(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) activateSequence(w http.ResponseWriter, r *http.Request) error {
	return a.switchSequence(w, r, a.sequences.Activate)
}

func (a *API) deactivateSequence(w http.ResponseWriter, r *http.Request) error {
	return a.switchSequence(w, r, a.sequences.Deactivate)
}

func (a *API) switchSequence(w http.ResponseWriter, r *http.Request,
	fn func(ctx context.Context, accountID int64, actor store.Actor, id int64) (store.Sequence, error)) error {
	if a.sequences == nil {
		return errSequencesOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	s, err := fn(r.Context(), accountID(r), actor(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newSequenceResponse(s))
}

type seqDayResponse struct {
	ID            int64   `json:"id"`
	SequenceID    int64   `json:"sequence_id"`
	Position      int     `json:"position"`
	DelayDays     int     `json:"delay_days"`
	Subject       string  `json:"subject"`
	Preheader     string  `json:"preheader"`
	HTML          string  `json:"html"`
	Text          string  `json:"text"`
	Markdown      string  `json:"markdown"`
	TemplateKey   *string `json:"template_key"`
	AttachmentIDs []int64 `json:"attachment_ids"`
	CampaignID    int64   `json:"campaign_id"`
	CreatedAt     Time    `json:"created_at"`
	UpdatedAt     Time    `json:"updated_at"`
}

func newSeqDayResponse(d store.SequenceDay) seqDayResponse {
	return seqDayResponse{ID: d.ID, SequenceID: d.SequenceID, Position: d.Position, DelayDays: d.DelayDays, Subject: d.Subject,
		Preheader: d.Preheader, HTML: d.HTML, Text: d.Text, Markdown: d.Markdown, TemplateKey: optString(d.TemplateKey),
		AttachmentIDs: nonNil([]int64(d.AttachmentIDs)), CampaignID: d.CampaignID, CreatedAt: Time(d.CreatedAt), UpdatedAt: Time(d.UpdatedAt)}
}

// dayRequest is the body of POST /sequences/{id}/days and PATCH …/days/{day_id}.
type dayRequest struct {
	Position      *int     `json:"position"`
	DelayDays     *int     `json:"delay_days"`
	Subject       *string  `json:"subject"`
	Preheader     *string  `json:"preheader"`
	HTML          *string  `json:"html"`
	Text          *string  `json:"text"`
	Markdown      *string  `json:"markdown"`
	TemplateKey   *string  `json:"template_key"`
	AttachmentIDs *[]int64 `json:"attachment_ids"`
}

func (q dayRequest) input() (store.DayInput, error) {
	for _, v := range []*string{q.HTML, q.Text, q.Markdown} {
		if v != nil && len(*v) > store.MaxHTMLBytes {
			return store.DayInput{}, errTooLarge
		}
	}
	return store.DayInput{Position: q.Position, DelayDays: q.DelayDays, Content: store.NewsletterInput{
		Subject: q.Subject, Preheader: q.Preheader, HTML: q.HTML, Text: q.Text, Markdown: q.Markdown, TemplateKey: q.TemplateKey,
		AttachmentIDs: q.AttachmentIDs}}, nil
}

func (a *API) listSequenceDays(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	days, err := a.db.SequenceDays(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	out := make([]seqDayResponse, 0, len(days))
	for i, d := range days {
		if i >= page.Offset() && len(out) < page.PerPage {
			out = append(out, newSeqDayResponse(d))
		}
	}
	return writeList(w, r, out, page, len(days))
}

func (a *API) createSequenceDay(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req dayRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	d, err := a.sequences.CreateDay(r.Context(), accountID(r), actor(r), id, in)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newSeqDayResponse(d))
}

func (a *API) patchSequenceDay(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	dayID, err := pathID(r, "day_id")
	if err != nil {
		return err
	}
	var req dayRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	d, err := a.sequences.UpdateDay(r.Context(), accountID(r), actor(r), id, dayID, in)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newSeqDayResponse(d))
}

func (a *API) deleteSequenceDay(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	dayID, err := pathID(r, "day_id")
	if err != nil {
		return err
	}
	if err := a.sequences.DeleteDay(r.Context(), accountID(r), actor(r), id, dayID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type participantResponse struct {
	ContactID   int64   `json:"contact_id"`
	Email       string  `json:"email"`
	Status      string  `json:"status"`
	CurrentDay  int     `json:"current_day"`
	NextSendAt  *Time   `json:"next_send_at"`
	JoinedAt    Time    `json:"joined_at"`
	CompletedAt *Time   `json:"completed_at"`
	ExitedAt    *Time   `json:"exited_at"`
	ExitReason  *string `json:"exit_reason"`
}

func newParticipantResponse(p store.Participant) participantResponse {
	return participantResponse{ContactID: p.ContactID, Email: p.Email, Status: p.Status, CurrentDay: p.CurrentDay,
		NextSendAt: timePtr(p.NextSendAt), JoinedAt: Time(p.JoinedAt), CompletedAt: timePtr(p.CompletedAt),
		ExitedAt: timePtr(p.ExitedAt), ExitReason: optString(p.ExitReason)}
}

func (a *API) listParticipants(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	status := r.URL.Query().Get("status")
	if status != "" && !store.ValidParticipantStatus(status) {
		return errValidation(map[string]string{"status": "Erlaubt sind active, completed und exited."})
	}
	list, total, err := a.db.Participants(r.Context(), accountID(r), id, status, page)
	if err != nil {
		return err
	}
	out := make([]participantResponse, len(list))
	for i, p := range list {
		out[i] = newParticipantResponse(p)
	}
	return writeList(w, r, out, page, total)
}

type enrolRequest struct {
	ContactIDs []int64  `json:"contact_ids"`
	Emails     []string `json:"emails"`
}

type enrolResponse struct {
	Enrolled int64 `json:"enrolled"`
	Skipped  int64 `json:"skipped"`
}

func (a *API) enrolParticipants(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req enrolRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	res, err := a.sequences.Enrol(r.Context(), accountID(r), actor(r), id, req.ContactIDs, req.Emails)
	if errors.Is(err, sequence.ErrTooMany) {
		return errTooLarge
	}
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, enrolResponse{Enrolled: res.Enrolled, Skipped: res.Skipped})
}

func (a *API) removeParticipant(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	contactID, err := pathID(r, "contact_id")
	if err != nil {
		return err
	}
	if err := a.sequences.RemoveParticipant(r.Context(), accountID(r), actor(r), id, contactID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// outlineRequest is the body of POST /sequences/{id}/outline.
type outlineRequest struct {
	Topic string `json:"topic"`
	Days  int    `json:"days"`
	Goal  string `json:"goal"`
	Tone  string `json:"tone"`
	Model string `json:"model"`
	Save  *bool  `json:"save"`
}

type outlineDayResponse struct {
	ID        *int64 `json:"id"`
	Position  *int   `json:"position"`
	DelayDays *int   `json:"delay_days"`
	Subject   string `json:"subject"`
	Preheader string `json:"preheader"`
	HTML      string `json:"html"`
}

type outlineResponse struct {
	Days         []outlineDayResponse `json:"days"`
	Saved        bool                 `json:"saved"`
	CostEUR      float64              `json:"cost_eur"`
	RemainingEUR float64              `json:"remaining_eur"`
	Model        string               `json:"model"`
	Provider     string               `json:"provider"`
	FallbackUsed bool                 `json:"fallback_used"`
}

// requireFeature refuses a plan without feature (402 plan_required) before h.
func requireFeature(feature string, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := principal(r.Context()).Plan.Require(feature); err != nil {
			return err
		}
		return h(w, r)
	}
}

func (a *API) outlineSequence(w http.ResponseWriter, r *http.Request) error {
	if a.sequences == nil {
		return errSequencesOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req outlineRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if a.ai == nil || !a.ai.Enabled() {
		if _, err := a.db.Sequence(r.Context(), accountID(r), id); err != nil {
			return err
		}
		return store.WithHint(errUnavailable, ai.HintNotConfigured)
	}
	save := req.Save == nil || *req.Save
	respondInTx(a, w, r, http.StatusOK, newOutlineResponse)
	res, err := a.sequences.Outline(r.Context(), accountID(r), actor(r), id, sequence.OutlineInput{
		Topic: req.Topic, Goal: req.Goal, Tone: req.Tone, Model: req.Model, Days: req.Days, Save: save,
		RequestID: requestID(r.Context())})
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newOutlineResponse(res))
}

func newOutlineResponse(res sequence.OutlineResult) any {
	out := outlineResponse{Days: make([]outlineDayResponse, len(res.Days)), Saved: len(res.Saved) > 0,
		CostEUR: res.Completion.Cost.Float(), RemainingEUR: res.Completion.Remaining.Float(), Model: res.Completion.Model,
		Provider: res.Completion.Provider, FallbackUsed: res.Completion.FallbackUsed}
	for i, d := range res.Days {
		out.Days[i] = outlineDayResponse{Subject: d.Subject, Preheader: d.Preheader, HTML: d.HTML}
		if i < len(res.Saved) {
			s := res.Saved[i]
			out.Days[i].ID, out.Days[i].Position, out.Days[i].DelayDays = &s.ID, &s.Position, &s.DelayDays
		}
	}
	return out
}
