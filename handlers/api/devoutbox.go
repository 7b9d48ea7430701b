package api

import (
	"net/http"
	"strings"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
)

// devOutboxMailResponse is a mail captured by the development outbox; Raw, Text
// and HTML are set only on GET /dev/outbox/{id}.
type devOutboxMailResponse struct {
	ID        int64   `json:"id"`
	MessageID string  `json:"message_id"`
	From      string  `json:"from"`
	To        string  `json:"to"`
	Subject   string  `json:"subject"`
	SizeBytes int64   `json:"size_bytes"`
	Raw       *string `json:"raw,omitempty"`
	Text      *string `json:"text,omitempty"`
	HTML      *string `json:"html,omitempty"`
	CreatedAt Time    `json:"created_at"`
}

func newDevOutboxMailResponse(m store.DevOutboxMail) devOutboxMailResponse {
	out := devOutboxMailResponse{ID: m.ID, MessageID: m.MessageID, From: m.FromEmail, To: m.ToEmail,
		Subject: m.Subject, SizeBytes: m.Size, CreatedAt: Time(m.CreatedAt)}
	if m.Raw != nil {
		raw := strings.ToValidUTF8(string(m.Raw), "\uFFFD")
		out.Raw = &raw
	}
	return out
}

// devOutboxEnabled: the outbox exists only in development, i.e. without
// RUNDBRIEF_SMTP_URL; otherwise its paths answer 404 like any unknown path.
func (a *API) devOutboxEnabled() bool { return a.mail != nil && a.mail.DevOutboxEnabled() }

func (a *API) listDevOutbox(w http.ResponseWriter, r *http.Request) error {
	if !a.devOutboxEnabled() {
		return errNotFound
	}
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	mails, total, err := a.db.DevOutbox(r.Context(), accountID(r), page)
	if err != nil {
		return err
	}
	out := make([]devOutboxMailResponse, len(mails))
	for i, m := range mails {
		out[i] = newDevOutboxMailResponse(m)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) getDevOutboxMail(w http.ResponseWriter, r *http.Request) error {
	if !a.devOutboxEnabled() {
		return errNotFound
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	m, err := a.db.DevOutboxMail(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	out := newDevOutboxMailResponse(m)
	// The decoded bodies save a developer from undoing quoted-printable by hand.
	// A part that cannot be read leaves what was decoded before it (raw still has
	// everything), as the portal shows it.
	msg, err := mailer.ReadMail(m.Raw)
	if err != nil {
		a.log.Warn("dev outbox: unreadable mail", "request_id", requestID(r.Context()), "id", m.ID, "err", err)
	}
	text, html := strings.ToValidUTF8(msg.Text, "\uFFFD"), strings.ToValidUTF8(msg.HTML, "\uFFFD")
	out.Text, out.HTML = &text, &html
	return writeData(w, r, http.StatusOK, out)
}
