package api

import (
	"net/http"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/inbox"
)

// inboxSettingsResponse is the connection as the API shows it: the password
// is write-only, has_password says whether one is stored.
type inboxSettingsResponse struct {
	Host         string `json:"host"`
	Port         int    `json:"port"`
	Username     string `json:"username"`
	HasPassword  bool   `json:"has_password"`
	Encryption   string `json:"encryption"`
	Folder       string `json:"folder"`
	SMTPServerID *int64 `json:"smtp_server_id"`
	FromEmail    string `json:"from_email"`
	FromName     string `json:"from_name"`
	Signature    string `json:"signature"`
	AutoDraft    bool   `json:"auto_draft"`
	LastSyncAt   *Time  `json:"last_sync_at"`
	LastError    string `json:"last_error"`
	UpdatedAt    Time   `json:"updated_at"`
}

func newInboxSettingsResponse(s store.InboxSettings) inboxSettingsResponse {
	return inboxSettingsResponse{Host: s.Host, Port: s.Port, Username: s.Username, HasPassword: s.HasPassword, Encryption: s.Encryption,
		Folder: s.Folder, SMTPServerID: s.SMTPServerID, FromEmail: s.FromEmail, FromName: s.FromName, Signature: s.Signature,
		AutoDraft: s.AutoDraft, LastSyncAt: timePtr(s.LastSyncAt), LastError: s.LastError, UpdatedAt: Time(s.UpdatedAt)}
}

type inboxSettingsRequest struct {
	Host         string  `json:"host"`
	Port         int     `json:"port"`
	Username     string  `json:"username"`
	Password     *string `json:"password"`
	Encryption   string  `json:"encryption"`
	Folder       string  `json:"folder"`
	SMTPServerID *int64  `json:"smtp_server_id"`
	FromEmail    string  `json:"from_email"`
	FromName     string  `json:"from_name"`
	Signature    string  `json:"signature"`
	AutoDraft    bool    `json:"auto_draft"`
}

type inboxAttachment struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
}

// inboxMessageResponse is a message; the list leaves out text and html.
type inboxMessageResponse struct {
	ID          int64                `json:"id"`
	MessageID   *string              `json:"message_id"`
	InReplyTo   string               `json:"in_reply_to"`
	References  []string             `json:"references"`
	From        store.InboxAddress   `json:"from"`
	To          []store.InboxAddress `json:"to"`
	Subject     string               `json:"subject"`
	Text        *string              `json:"text,omitempty"`
	HTML        *string              `json:"html,omitempty"`
	Attachments []inboxAttachment    `json:"attachments"`
	ReceivedAt  Time                 `json:"received_at"`
	Read        bool                 `json:"read"`
	Archived    bool                 `json:"archived"`
	Labels      []string             `json:"labels"`
	ContactID   *int64               `json:"contact_id"`
	RepliedAt   *Time                `json:"replied_at"`
}

func newInboxMessageResponse(m store.InboxMessage, bodies bool) inboxMessageResponse {
	out := inboxMessageResponse{ID: m.ID, InReplyTo: m.InReplyTo, References: m.References, From: store.InboxAddress{Email: m.FromEmail, Name: m.FromName},
		To: m.To(), Subject: m.Subject, ReceivedAt: Time(m.ReceivedAt), Read: m.Read, Archived: m.Archived, Labels: m.Labels,
		ContactID: m.ContactID, RepliedAt: timePtr(m.RepliedAt), Attachments: []inboxAttachment{}}
	if m.MessageID.Valid {
		out.MessageID = &m.MessageID.String
	}
	if out.References == nil {
		out.References = []string{}
	}
	if out.Labels == nil {
		out.Labels = []string{}
	}
	for _, a := range m.Attachments() {
		out.Attachments = append(out.Attachments, inboxAttachment(a))
	}
	if bodies {
		out.Text, out.HTML = &m.Text, &m.HTML
	}
	return out
}

type inboxReplyResponse struct {
	ID        int64  `json:"id"`
	MessageID int64  `json:"message_id"`
	To        string `json:"to"`
	Subject   string `json:"subject"`
	Text      string `json:"text"`
	HTML      string `json:"html"`
	Source    string `json:"source"`
	SentAt    Time   `json:"sent_at"`
}

func newInboxReplyResponse(r store.InboxReply) inboxReplyResponse {
	return inboxReplyResponse{ID: r.ID, MessageID: r.MessageID, To: r.ToEmail, Subject: r.Subject, Text: r.Text, HTML: r.HTML,
		Source: r.Source, SentAt: Time(r.SentAt)}
}

type inboxDraftResponse struct {
	ID        int64   `json:"id"`
	MessageID int64   `json:"message_id"`
	Text      string  `json:"text"`
	Status    string  `json:"status"`
	CostEUR   float64 `json:"cost_eur"`
	Model     string  `json:"model"`
	ReplyID   *int64  `json:"reply_id"`
	CreatedAt Time    `json:"created_at"`
	DecidedAt *Time   `json:"decided_at"`
}

func newInboxDraftResponse(d store.InboxDraft) inboxDraftResponse {
	return inboxDraftResponse{ID: d.ID, MessageID: d.MessageID, Text: d.Text, Status: d.Status, CostEUR: d.Cost.Float(), Model: d.Model,
		ReplyID: d.ReplyID, CreatedAt: Time(d.CreatedAt), DecidedAt: timePtr(d.DecidedAt)}
}

type inboxRuleMatch struct {
	FromContains    string `json:"from_contains,omitempty"`
	SubjectContains string `json:"subject_contains,omitempty"`
	BodyContains    string `json:"body_contains,omitempty"`
}

type inboxRuleResponse struct {
	ID        int64          `json:"id"`
	Position  int            `json:"position"`
	Name      string         `json:"name"`
	Match     inboxRuleMatch `json:"match"`
	Action    string         `json:"action"`
	Value     string         `json:"value"`
	Text      string         `json:"text"`
	CreatedAt Time           `json:"created_at"`
}

func newInboxRuleResponse(r store.InboxRule) inboxRuleResponse {
	return inboxRuleResponse{ID: r.ID, Position: r.Position, Name: r.Name, Action: r.Action, Value: r.Value, Text: r.Text, CreatedAt: Time(r.CreatedAt),
		Match: inboxRuleMatch{FromContains: r.FromContains, SubjectContains: r.SubjectContains, BodyContains: r.BodyContains}}
}

type inboxRuleRequest struct {
	Name     string         `json:"name"`
	Match    inboxRuleMatch `json:"match"`
	Action   string         `json:"action"`
	Value    string         `json:"value"`
	Text     string         `json:"text"`
	Position *int           `json:"position"`
}

type inboxMetricsResponse struct {
	From                    Time     `json:"from"`
	To                      Time     `json:"to"`
	Received                int      `json:"received"`
	Unread                  int      `json:"unread"`
	Replied                 int      `json:"replied"`
	AvgFirstResponseMinutes *float64 `json:"avg_first_response_minutes"`
	AIDrafts                int      `json:"ai_drafts"`
	AIDraftsApproved        int      `json:"ai_drafts_approved"`
}

func (a *API) getInboxSettings(w http.ResponseWriter, r *http.Request) error {
	s, err := a.db.InboxSettings(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newInboxSettingsResponse(s))
}

func (a *API) putInboxSettings(w http.ResponseWriter, r *http.Request) error {
	if a.inbox == nil {
		return errUnavailable
	}
	var q inboxSettingsRequest
	if err := decode(r, &q); err != nil {
		return err
	}
	s, err := a.inbox.SaveSettings(r.Context(), accountID(r), store.InboxSettingsInput{Host: q.Host, Port: q.Port, Username: q.Username,
		Password: q.Password, Encryption: q.Encryption, Folder: q.Folder, SMTPServerID: q.SMTPServerID, FromEmail: q.FromEmail,
		FromName: q.FromName, Signature: q.Signature, AutoDraft: q.AutoDraft})
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newInboxSettingsResponse(s))
}

func (a *API) syncInbox(w http.ResponseWriter, r *http.Request) error {
	if a.inbox == nil {
		return errUnavailable
	}
	if err := a.inbox.RequestSync(r.Context(), accountID(r)); err != nil {
		return err
	}
	return writeData(w, r, http.StatusAccepted, struct {
		Status string `json:"status"`
	}{"queued"})
}

func (a *API) listInboxMessages(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := store.InboxFilter{Status: q.Get("status"), Q: q.Get("q"), Label: q.Get("label")}
	if err := f.Validate(); err != nil {
		return err
	}
	msgs, total, err := a.db.InboxMessages(r.Context(), accountID(r), f, page)
	if err != nil {
		return err
	}
	out := make([]inboxMessageResponse, len(msgs))
	for i, m := range msgs {
		out[i] = newInboxMessageResponse(m, false)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) getInboxMessage(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	m, err := a.db.InboxMessage(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newInboxMessageResponse(m, true))
}

func (a *API) patchInboxMessage(w http.ResponseWriter, r *http.Request) error {
	if a.inbox == nil {
		return errUnavailable
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var q struct {
		Read     *bool     `json:"read"`
		Archived *bool     `json:"archived"`
		Labels   *[]string `json:"labels"`
	}
	if err := decode(r, &q); err != nil {
		return err
	}
	m, err := a.inbox.Patch(r.Context(), accountID(r), id, store.InboxPatch{Read: q.Read, Archived: q.Archived, Labels: q.Labels})
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newInboxMessageResponse(m, true))
}

func (a *API) replyInboxMessage(w http.ResponseWriter, r *http.Request) error {
	if a.inbox == nil {
		return errUnavailable
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var q struct {
		Text string `json:"text"`
		HTML string `json:"html"`
	}
	if err := decode(r, &q); err != nil {
		return err
	}
	rep, err := a.inbox.Reply(r.Context(), accountID(r), id, inbox.ReplyInput{Text: q.Text, HTML: q.HTML})
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newInboxReplyResponse(rep))
}

func (a *API) draftInboxMessage(w http.ResponseWriter, r *http.Request) error {
	if a.inbox == nil {
		return errUnavailable
	}
	// Drafts are charged to the AI credit: they need the plan's AI too.
	if err := principal(r.Context()).Plan.Require("ai"); err != nil {
		return err
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var q struct {
		Instruction string `json:"instruction"`
		Model       string `json:"model"`
	}
	if err := decode(r, &q); err != nil {
		return err
	}
	d, err := a.inbox.Draft(r.Context(), accountID(r), id, inbox.DraftInput{Instruction: q.Instruction, Model: q.Model, RequestID: requestID(r.Context())})
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newInboxDraftResponse(d))
}

func (a *API) listInboxDrafts(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	status := r.URL.Query().Get("status")
	switch status {
	case "", store.DraftPending, store.DraftApproved, store.DraftDiscarded:
	default:
		return store.Invalid("status", "Erlaubt sind pending, approved und discarded.")
	}
	ds, total, err := a.db.InboxDrafts(r.Context(), accountID(r), status, page)
	if err != nil {
		return err
	}
	out := make([]inboxDraftResponse, len(ds))
	for i, d := range ds {
		out[i] = newInboxDraftResponse(d)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) approveInboxDraft(w http.ResponseWriter, r *http.Request) error {
	if a.inbox == nil {
		return errUnavailable
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var q struct {
		Text *string `json:"text"`
	}
	if r.ContentLength != 0 {
		if err := decode(r, &q); err != nil {
			return err
		}
	}
	d, rep, err := a.inbox.Approve(r.Context(), accountID(r), id, q.Text)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, struct {
		Draft inboxDraftResponse `json:"draft"`
		Reply inboxReplyResponse `json:"reply"`
	}{newInboxDraftResponse(d), newInboxReplyResponse(rep)})
}

func (a *API) discardInboxDraft(w http.ResponseWriter, r *http.Request) error {
	if a.inbox == nil {
		return errUnavailable
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := a.inbox.Discard(r.Context(), accountID(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) listInboxRules(w http.ResponseWriter, r *http.Request) error {
	rules, err := a.db.InboxRules(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	out := make([]inboxRuleResponse, len(rules))
	for i, x := range rules {
		out[i] = newInboxRuleResponse(x)
	}
	return writeData(w, r, http.StatusOK, out)
}

func (a *API) createInboxRule(w http.ResponseWriter, r *http.Request) error {
	var q inboxRuleRequest
	if err := decode(r, &q); err != nil {
		return err
	}
	rule, err := a.db.CreateInboxRule(r.Context(), accountID(r), store.NewInboxRule{Name: q.Name, FromContains: q.Match.FromContains,
		SubjectContains: q.Match.SubjectContains, BodyContains: q.Match.BodyContains, Action: q.Action, Value: q.Value, Text: q.Text, Position: q.Position})
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newInboxRuleResponse(rule))
}

func (a *API) deleteInboxRule(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := a.db.DeleteInboxRule(r.Context(), accountID(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) inboxMetrics(w http.ResponseWriter, r *http.Request) error {
	to := a.cfg.Now()
	from := to.AddDate(0, 0, -30)
	errs := store.Errs{}
	if s := r.URL.Query().Get("from"); s != "" {
		if t, ok := parseDateOrTime(s); ok {
			from = t
		} else {
			errs.Add("from", "Bitte ein Datum (JJJJ-MM-TT) oder einen Zeitpunkt nach ISO 8601 angeben.")
		}
	}
	if s := r.URL.Query().Get("to"); s != "" {
		if t, ok := parseDateOrTime(s); ok {
			if len(s) == len("2006-01-02") {
				t = t.AddDate(0, 0, 1) // the whole day
			}
			to = t
		} else {
			errs.Add("to", "Bitte ein Datum (JJJJ-MM-TT) oder einen Zeitpunkt nach ISO 8601 angeben.")
		}
	}
	if len(errs) == 0 && !from.Before(to) {
		errs.Add("to", "Das Ende muss nach dem Anfang liegen.")
	}
	if err := errs.Err(); err != nil {
		return err
	}
	m, err := a.db.InboxMetrics(r.Context(), accountID(r), from, to)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, inboxMetricsResponse{From: Time(from), To: Time(to), Received: m.Received, Unread: m.Unread,
		Replied: m.Replied, AvgFirstResponseMinutes: m.AvgFirstResponseMinutes, AIDrafts: m.AIDrafts, AIDraftsApproved: m.AIDraftsApproved})
}

// parseDateOrTime reads YYYY-MM-DD (midnight in Europe/Berlin) or a date-time.
func parseDateOrTime(s string) (time.Time, bool) {
	if t, err := time.ParseInLocation("2006-01-02", s, store.Berlin); err == nil {
		return t, store.ValidTime(t)
	}
	return ParseTime(s)
}
