package portal

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/inbox"
	"github.com/rundbrief/rundbrief/views"
)

// The inbox pages call the same service as /v1/inbox (store/inbox): the
// connection test, \Seen write-back, replies, AI drafts and rules.

const inboxPerPage = 50

// needInbox answers 402 with an explanation when the plan lacks the inbox.
func (p *Portal) needInbox(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return p.needPlan(store.FeatureInbox, func(t views.Text) (string, string) { return t.Inbox.PlanTitle, t.Inbox.PlanBody },
		func(w http.ResponseWriter, r *http.Request) error {
			if p.inbox == nil {
				return errors.New("portal: no inbox service")
			}
			return h(w, r)
		})
}

// inboxPage is the three-pane inbox; ?id= opens a message in the reading pane.
func (p *Portal) inboxPage(w http.ResponseWriter, r *http.Request) error {
	var selected int64
	if s := r.URL.Query().Get("id"); s != "" {
		selected, _ = strconv.ParseInt(s, 10, 64)
	}
	return p.renderInbox(w, r, selected, "")
}

func (p *Portal) renderInbox(w http.ResponseWriter, r *http.Request, selected int64, readErr string) error {
	ctx := r.Context()
	acct := accountID(r)
	q := r.URL.Query()
	f := store.InboxFilter{Status: q.Get("status"), Q: q.Get("q"), Label: q.Get("label")}
	if f.Validate() != nil {
		f = store.InboxFilter{Status: store.InboxStatusOpen}
	}
	page := queryPage(r)
	v := views.InboxView{Status: f.Status, Q: f.Q, Label: f.Label}
	st, err := p.db.InboxSettings(ctx, acct)
	switch {
	case err == nil:
		v.Settings = &st
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	if v.Messages, v.Pager.Total, err = p.db.InboxMessages(ctx, acct, f, store.Page{Page: page, PerPage: inboxPerPage}); err != nil {
		return err
	}
	v.Pager.Page, v.Pager.PerPage = page, inboxPerPage
	v.Pager.URL = func(n int) string { return views.InboxURL(f.Status, f.Q, f.Label, n, 0) }
	if v.Labels, err = p.db.InboxLabels(ctx, acct); err != nil {
		return err
	}
	if v.Unread, err = p.db.InboxUnread(ctx, acct); err != nil {
		return err
	}
	if selected != 0 {
		rd, err := p.reading(r, selected)
		if err != nil {
			return err
		}
		rd.Error = readErr
		v.Reading = rd
	}
	p.render(w, r, http.StatusOK, views.InboxPage(p.shell(r, views.TextFor(ctx).Inbox.Title, views.NavInbox), v))
	return nil
}

// reading loads a message with its thread, replies and drafts, marking it read
// (written back as \Seen).
func (p *Portal) reading(r *http.Request, id int64) (*views.InboxReading, error) {
	ctx := r.Context()
	acct := accountID(r)
	m, err := p.db.InboxMessage(ctx, acct, id)
	if err != nil {
		return nil, err
	}
	if !m.Read {
		yes := true
		if m, err = p.inbox.Patch(ctx, acct, id, store.InboxPatch{Read: &yes}); err != nil {
			return nil, err
		}
	}
	thread, err := p.db.InboxThread(ctx, acct, m)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(thread))
	for i, t := range thread {
		ids[i] = t.ID
	}
	rd := &views.InboxReading{Message: m, Thread: thread}
	if rd.Replies, err = p.db.RepliesOf(ctx, acct, ids); err != nil {
		return nil, err
	}
	if rd.Drafts, err = p.db.PendingDraftsOf(ctx, acct, id); err != nil {
		return nil, err
	}
	if st, err := p.db.InboxSettings(ctx, acct); err == nil {
		rd.Signature = st.Signature
	}
	return rd, nil
}

// inboxMessage is the reading pane for htmx, the whole inbox otherwise.
func (p *Portal) inboxMessage(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if !isHTMX(r) {
		return p.renderInbox(w, r, id, "")
	}
	rd, err := p.reading(r, id)
	if err != nil {
		return err
	}
	p.render(w, r, http.StatusOK, views.InboxReadingPane(rd))
	return nil
}

func msgPath(id int64) string { return "/inbox?status=all&id=" + strconv.FormatInt(id, 10) }

// inboxFlag sets read or archived from the reading pane's buttons.
func (p *Portal) inboxFlag(read, archived *bool) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r, "id")
		if err != nil {
			return err
		}
		if _, err := p.inbox.Patch(r.Context(), accountID(r), id, store.InboxPatch{Read: read, Archived: archived}); err != nil {
			return err
		}
		p.redirect(w, r, "/inbox")
		return nil
	}
}

// inboxLabels sets a message's labels from a comma-separated field.
func (p *Portal) inboxLabels(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	labels := []string{}
	for l := range strings.SplitSeq(r.PostFormValue("labels"), ",") {
		if l = strings.TrimSpace(l); l != "" {
			labels = append(labels, l)
		}
	}
	_, err = p.inbox.Patch(r.Context(), accountID(r), id, store.InboxPatch{Labels: &labels})
	return p.afterInboxAction(w, r, id, err, views.TextFor(r.Context()).Inbox.LabelsSaved)
}

func (p *Portal) inboxReply(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	_, err = p.inbox.Reply(r.Context(), accountID(r), id, inbox.ReplyInput{Text: r.PostFormValue("text")})
	return p.afterInboxAction(w, r, id, err, views.TextFor(r.Context()).Inbox.RepliedFlash)
}

func (p *Portal) inboxDraft(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	if err := viewer(r).Plan.Require("ai"); err != nil {
		return p.afterInboxAction(w, r, id, err, "")
	}
	_, err = p.inbox.Draft(r.Context(), accountID(r), id, inbox.DraftInput{Instruction: r.PostFormValue("text"), RequestID: "portal"})
	return p.afterInboxAction(w, r, id, err, views.TextFor(r.Context()).Inbox.DraftFlash)
}

func (p *Portal) inboxApprove(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	text := r.PostFormValue("text")
	d, err := p.db.InboxDraft(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	_, _, err = p.inbox.Approve(r.Context(), accountID(r), id, &text)
	return p.afterInboxAction(w, r, d.MessageID, err, views.TextFor(r.Context()).Inbox.ApprovedFlash)
}

func (p *Portal) inboxDiscard(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	d, err := p.db.InboxDraft(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	err = p.inbox.Discard(r.Context(), accountID(r), id)
	return p.afterInboxAction(w, r, d.MessageID, err, views.TextFor(r.Context()).Inbox.DiscardedFlash)
}

// afterInboxAction goes back to the message with a flash; a refusal the user
// can act on (no credit, no provider, a rejected send, a bad text) is shown on
// the message, anything else is an error page.
func (p *Portal) afterInboxAction(w http.ResponseWriter, r *http.Request, id int64, err error, okMsg string) error {
	if err == nil {
		p.flash(r.Context(), "success", okMsg)
		p.redirect(w, r, msgPath(id))
		return nil
	}
	var (
		ve    *store.ValidationError
		ue    *store.UnavailableError
		le    *store.LimitError
		pe    *store.PlanError
		ce    *store.ConflictError
		msg   string
		fixed = true
	)
	switch {
	case errors.As(err, &ve):
		var parts []string
		for _, v := range ve.Fields {
			parts = append(parts, v)
		}
		msg = strings.Join(parts, " ")
	case errors.As(err, &ue):
		msg = ue.Message
	case errors.As(err, &le):
		msg = "Ihr KI-Guthaben ist aufgebraucht."
	case errors.As(err, &pe):
		msg = "Ihr Tarif enthält die KI-Funktionen nicht."
	case errors.As(err, &ce):
		msg = ce.Message
	default:
		fixed = false
	}
	if !fixed {
		return err
	}
	p.flash(r.Context(), "error", msg)
	p.redirect(w, r, msgPath(id))
	return nil
}

func (p *Portal) inboxSync(w http.ResponseWriter, r *http.Request) error {
	err := p.inbox.RequestSync(r.Context(), accountID(r))
	if errors.Is(err, store.ErrNotFound) {
		p.redirect(w, r, "/inbox/settings")
		return nil
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", views.TextFor(r.Context()).Inbox.SyncFlash)
	p.redirect(w, r, "/inbox")
	return nil
}

// ---- settings ----

func (p *Portal) inboxSettingsPage(w http.ResponseWriter, r *http.Request) error {
	f := views.InboxSettingsForm{Errors: map[string]string{}, Folder: "INBOX", Encryption: store.EncryptionTLS}
	st, err := p.db.InboxSettings(r.Context(), accountID(r))
	switch {
	case err == nil:
		f = settingsForm(st)
		t := views.TextFor(r.Context())
		if st.LastSyncAt != nil {
			f.LastSyncAt = st.LastSyncAt.In(store.Berlin).Format("02.01.2006 15:04")
		}
		if st.LastError != "" {
			f.Alert = t.Inbox.SyncError + " " + st.LastError
		}
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	return p.renderInboxSettings(w, r, http.StatusOK, f)
}

func settingsForm(st store.InboxSettings) views.InboxSettingsForm {
	f := views.InboxSettingsForm{Host: st.Host, Port: strconv.Itoa(st.Port), Username: st.Username, Encryption: st.Encryption,
		Folder: st.Folder, FromEmail: st.FromEmail, FromName: st.FromName, Signature: st.Signature, AutoDraft: st.AutoDraft,
		HasPassword: st.HasPassword, Errors: map[string]string{}}
	if st.SMTPServerID != nil {
		f.SMTPServerID = strconv.FormatInt(*st.SMTPServerID, 10)
	}
	return f
}

func (p *Portal) renderInboxSettings(w http.ResponseWriter, r *http.Request, status int, f views.InboxSettingsForm) error {
	servers, _, err := p.db.SMTPServers(r.Context(), accountID(r), store.Page{Page: 1, PerPage: 100})
	if err != nil {
		return err
	}
	f.Servers = servers
	s := p.shell(r, views.TextFor(r.Context()).Inbox.SettingsTitle, views.NavInbox)
	p.render(w, r, status, views.InboxSettingsPage(s, f))
	return nil
}

func (p *Portal) saveInboxSettings(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	get := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	f := views.InboxSettingsForm{Host: get("host"), Port: get("port"), Username: get("username"), Encryption: get("encryption"),
		Folder: get("folder"), FromEmail: get("from_email"), FromName: get("from_name"), Signature: r.PostFormValue("signature"),
		SMTPServerID: get("smtp_server_id"), AutoDraft: r.PostFormValue("auto_draft") != "", Errors: map[string]string{}}
	if st, err := p.db.InboxSettings(r.Context(), accountID(r)); err == nil {
		f.HasPassword = st.HasPassword
	}
	in := store.InboxSettingsInput{Host: f.Host, Username: f.Username, Encryption: f.Encryption, Folder: f.Folder,
		FromEmail: f.FromEmail, FromName: f.FromName, Signature: f.Signature, AutoDraft: f.AutoDraft}
	if f.Port != "" {
		n, err := strconv.Atoi(f.Port)
		if err != nil {
			f.Errors["port"] = "Der Port muss zwischen 1 und 65535 liegen."
		}
		in.Port = n
	}
	if f.SMTPServerID != "" {
		n, err := strconv.ParseInt(f.SMTPServerID, 10, 64)
		if err != nil {
			f.Errors["smtp_server_id"] = "Unbekannter SMTP-Server."
		}
		in.SMTPServerID = &n
	}
	if pw := r.PostFormValue("password"); pw != "" {
		in.Password = &pw
	}
	if len(f.Errors) == 0 {
		_, err := p.inbox.SaveSettings(r.Context(), accountID(r), in)
		if err == nil {
			p.flash(r.Context(), "success", views.TextFor(r.Context()).Inbox.SavedFlash)
			p.redirect(w, r, "/inbox")
			return nil
		}
		if !fieldErrors(err, f.Errors) {
			return err
		}
		p.logHint(r, err)
	}
	return p.renderInboxSettings(w, r, http.StatusUnprocessableEntity, f)
}

// testInboxSettings tests the stored connection.
func (p *Portal) testInboxSettings(w http.ResponseWriter, r *http.Request) error {
	err := p.inbox.TestSettings(r.Context(), accountID(r))
	msg := ""
	var ve *store.ValidationError
	switch {
	case err == nil:
	case errors.As(err, &ve):
		for _, v := range ve.Fields {
			msg = v
		}
	default:
		return err
	}
	if isHTMX(r) {
		p.render(w, r, http.StatusOK, views.InboxTestResult(err == nil, msg))
		return nil
	}
	if err == nil {
		p.flash(r.Context(), "success", views.TextFor(r.Context()).Inbox.TestOK)
	} else {
		p.flash(r.Context(), "error", msg)
	}
	p.redirect(w, r, "/inbox/settings")
	return nil
}

// ---- rules ----

func (p *Portal) inboxRulesPage(w http.ResponseWriter, r *http.Request) error {
	return p.renderInboxRules(w, r, http.StatusOK, views.InboxRulesView{Errors: map[string]string{}, Form: store.NewInboxRule{Action: store.RuleLabel}})
}

func (p *Portal) renderInboxRules(w http.ResponseWriter, r *http.Request, status int, v views.InboxRulesView) error {
	rules, err := p.db.InboxRules(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	v.Rules = rules
	p.render(w, r, status, views.InboxRulesPage(p.shell(r, views.TextFor(r.Context()).Inbox.RulesTitle, views.NavInbox), v))
	return nil
}

func (p *Portal) createInboxRule(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	in := store.NewInboxRule{Name: r.PostFormValue("name"), FromContains: r.PostFormValue("from_contains"),
		SubjectContains: r.PostFormValue("subject_contains"), BodyContains: r.PostFormValue("body_contains"),
		Action: r.PostFormValue("action"), Value: r.PostFormValue("value"), Text: r.PostFormValue("text")}
	_, err := p.db.CreateInboxRule(r.Context(), accountID(r), in)
	v := views.InboxRulesView{Errors: map[string]string{}, Form: in}
	if fieldErrors(err, v.Errors) {
		return p.renderInboxRules(w, r, http.StatusUnprocessableEntity, v)
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", views.TextFor(r.Context()).Inbox.RuleFlash)
	p.redirect(w, r, "/inbox/rules")
	return nil
}

func (p *Portal) deleteInboxRule(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := p.db.DeleteInboxRule(r.Context(), accountID(r), id); err != nil {
		return err
	}
	p.flash(r.Context(), "success", views.TextFor(r.Context()).Inbox.RuleGoneFlash)
	p.redirect(w, r, "/inbox/rules")
	return nil
}

// ---- metrics ----

func (p *Portal) inboxMetricsPage(w http.ResponseWriter, r *http.Request) error {
	t := views.TextFor(r.Context())
	now := p.now()
	to := now
	from := time.Date(now.In(store.Berlin).Year(), now.In(store.Berlin).Month(), now.In(store.Berlin).Day(), 0, 0, 0, 0, store.Berlin).AddDate(0, 0, -29)
	m, err := p.db.InboxMetrics(r.Context(), accountID(r), from, to)
	if err != nil {
		return err
	}
	days, err := p.db.InboxDays(r.Context(), accountID(r), from, to)
	if err != nil {
		return err
	}
	c := views.Chart{ID: "inbox-days", Kind: views.ChartBar, Title: t.Inbox.ChartTitle, Desc: t.Inbox.ChartDesc, LabelHead: t.Inbox.ChartDay,
		Series: []views.ChartSeries{{Name: t.Inbox.ChartReceived}, {Name: t.Inbox.ChartReplied}}}
	for _, d := range days {
		c.Labels = append(c.Labels, d.Day.Format("02.01."))
		c.Series[0].Values = append(c.Series[0].Values, float64(d.Received))
		c.Series[1].Values = append(c.Series[1].Values, float64(d.Replied))
	}
	v := views.InboxMetricsView{From: from.Format("02.01.2006"), To: to.In(store.Berlin).Format("02.01.2006"), Metrics: m, Chart: c}
	p.render(w, r, http.StatusOK, views.InboxMetricsPage(p.shell(r, t.Inbox.MetricsTitle, views.NavInbox), v))
	return nil
}
