package portal

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/sequence"
	"github.com/rundbrief/rundbrief/views"
)

// The story email calendar and the sequence builder call the same service as
// /v1/story-emails and /v1/sequences (sequence.Service).

// errNoSequences means the process was started without the sequence service.
var errNoSequences = errors.New("portal: no sequence service")

// storyCalendarDays is how many days the story calendar shows.
const storyCalendarDays = 28

func (p *Portal) sequenceService() (*sequence.Service, error) {
	if p.sequences == nil {
		return nil, errNoSequences
	}
	return p.sequences, nil
}

// needSequences serves h only to accounts whose plan has sequences; others
// get a page saying so (402, as the API answers).
func (p *Portal) needSequences(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return p.needPlan("sequences", func(t views.Text) (string, string) { return t.Sequences.PlanTitle, t.Sequences.PlanBody }, h)
}

func (p *Portal) storyCalendar(w http.ResponseWriter, r *http.Request) error {
	return p.renderStoryCalendar(w, r, http.StatusOK, views.StoryCalendar{Errors: map[string]string{}, Editor: storedMailEditor("", "", "")})
}

func (p *Portal) renderStoryCalendar(w http.ResponseWriter, r *http.Request, status int, c views.StoryCalendar) error {
	ctx := r.Context()
	var err error
	if c.Editor.Fields, c.AI, err = p.editorExtras(r, c.Editor); err != nil {
		return err
	}
	settings, err := p.db.StorySettingsOf(ctx, accountID(r))
	if err != nil {
		return err
	}
	local := p.now().In(store.Berlin)
	from := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, store.Berlin)
	to := from.AddDate(0, 0, storyCalendarDays)
	stories, err := p.db.StoryCalendar(ctx, accountID(r), from, to)
	if err != nil {
		return err
	}
	allowed := map[int64]bool{}
	for _, d := range settings.Weekdays {
		allowed[d] = true
	}
	byDay := map[string][]store.Campaign{}
	for _, st := range stories {
		if st.Status == store.CampaignDraft {
			c.Drafts = append(c.Drafts, st)
			continue
		}
		at := st.ScheduledAt
		if at == nil {
			at = st.StartedAt
		}
		if at != nil {
			k := at.In(store.Berlin).Format("2006-01-02")
			byDay[k] = append(byDay[k], st)
		}
	}
	for i := 0; i < storyCalendarDays; i++ {
		d := from.AddDate(0, 0, i)
		wd := int64(d.Weekday())
		if wd == 0 {
			wd = 7
		}
		c.Days = append(c.Days, views.StoryDay{Date: d, Allowed: allowed[wd], Stories: byDay[d.Format("2006-01-02")]})
	}
	c.Settings = settings
	s := p.shell(r, views.TextFor(ctx).Sequences.StoryTitle, views.NavStoryEmails)
	p.render(w, r, status, views.StoryCalendarPage(s, c))
	return nil
}

func (p *Portal) createStory(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.sequenceService()
	if err != nil {
		return err
	}
	if err := parseFormMax(w, r, maxNewsletterForm); err != nil {
		return err
	}
	c := views.StoryCalendar{Errors: map[string]string{}, Subject: r.PostFormValue("subject"), Preheader: r.PostFormValue("preheader")}
	var html, markdown string
	c.Editor, html, markdown = postedMailEditor(r.PostForm, "")
	_, err = svc.CreateStoryEmail(r.Context(), accountID(r), actor(r), store.NewsletterInput{Subject: &c.Subject, Preheader: &c.Preheader,
		HTML: &html, Markdown: &markdown})
	if fieldErrors(err, c.Errors) {
		return p.renderStoryCalendar(w, r, http.StatusUnprocessableEntity, c)
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/story-emails", http.StatusSeeOther)
	return nil
}

// storyAction schedules (on the next free day) or sends a story email and
// comes back to the calendar with the outcome.
func (p *Portal) storyAction(send bool) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		svc, err := p.sequenceService()
		if err != nil {
			return err
		}
		id, err := pathID(r, "id")
		if err != nil {
			return err
		}
		t := views.TextFor(r.Context()).Sequences
		var msg string
		if send {
			_, _, err = svc.SendStoryEmail(r.Context(), accountID(r), actor(r), id)
			msg = t.SentNow
		} else {
			var c store.Campaign
			c, err = svc.ScheduleStoryEmail(r.Context(), accountID(r), actor(r), id, time.Time{})
			if err == nil {
				msg = fmt.Sprintf(t.Scheduled, c.ScheduledAt.In(store.Berlin).Format("02.01.2006 15:04"))
			}
		}
		if msg2, ok := seqRefusal(err); ok {
			p.flash(r.Context(), "error", msg2)
		} else if err != nil {
			return err
		} else {
			p.flash(r.Context(), "success", msg)
		}
		http.Redirect(w, r, "/story-emails", http.StatusSeeOther)
		return nil
	}
}

// storyEditable reports whether a story email's content may still change
// (the store refuses others with 409 already_sent).
func storyEditable(c store.Campaign) bool {
	return c.Status == store.CampaignDraft || c.Status == store.CampaignScheduled
}

func (p *Portal) storyEditForm(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := p.db.StoryEmail(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return p.renderStoryEdit(w, r, http.StatusOK, views.StoryEditForm{ID: c.ID, Status: c.Status, Subject: c.Subject,
		Preheader: c.Preheader, Editor: storedMailEditor("", c.HTML, c.Markdown), Locked: !storyEditable(c), Saved: r.URL.Query().Get("saved") == "1",
		Errors: map[string]string{}})
}

func (p *Portal) renderStoryEdit(w http.ResponseWriter, r *http.Request, status int, f views.StoryEditForm) error {
	var err error
	if f.Editor.Fields, f.AI, err = p.editorExtras(r, f.Editor); err != nil {
		return err
	}
	s := p.shell(r, views.TextFor(r.Context()).Sequences.EditStory, views.NavStoryEmails)
	p.render(w, r, status, views.StoryEditPage(s, f))
	return nil
}

// saveStory changes a story email's subject, preheader and content through
// the service the API's PATCH uses.
func (p *Portal) saveStory(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.sequenceService()
	if err != nil {
		return err
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := parseFormMax(w, r, maxNewsletterForm); err != nil {
		return err
	}
	f := views.StoryEditForm{ID: id, Subject: r.PostFormValue("subject"), Preheader: r.PostFormValue("preheader"),
		Errors: map[string]string{}}
	var html, markdown string
	f.Editor, html, markdown = postedMailEditor(r.PostForm, "")
	_, err = svc.UpdateStoryEmail(r.Context(), accountID(r), actor(r), id, store.NewsletterInput{Subject: &f.Subject,
		Preheader: &f.Preheader, HTML: &html, Markdown: &markdown})
	if err == nil {
		http.Redirect(w, r, fmt.Sprintf("/story-emails/%d?saved=1", id), http.StatusSeeOther)
		return nil
	}
	msg, ok := seqRefusal(err)
	if !ok {
		return err
	}
	c, cerr := p.db.StoryEmail(r.Context(), accountID(r), id)
	if cerr != nil {
		return cerr
	}
	f.Status = c.Status
	status := http.StatusUnprocessableEntity
	var ce *store.ConflictError
	if errors.As(err, &ce) {
		status, f.Alert = http.StatusConflict, msg
	} else if !fieldErrors(err, f.Errors) {
		f.Alert = msg
	}
	return p.renderStoryEdit(w, r, status, f)
}

// previewStory renders the typed content with the story email's stored
// settings (template, sender) for the live preview.
func (p *Portal) previewStory(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := p.db.StoryEmail(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	if err := parseFormMax(w, r, maxNewsletterForm); err != nil {
		return err
	}
	c.Subject, c.Preheader = r.PostFormValue("subject"), r.PostFormValue("preheader")
	_, c.HTML, c.Markdown = postedMailEditor(r.PostForm, "")
	c.HTML, c.Text = previewHTML(c.HTML), ""
	p.render(w, r, http.StatusOK, views.NewsletterPreviewFrame(p.preview(r, c, "")))
	return nil
}

// seqRefusal is the German message of a refused change (validation,
// conflict, limit, plan, an unavailable AI), for a flash or the builder's
// alert; ok is false for other errors.
func seqRefusal(err error) (string, bool) {
	var (
		ve *store.ValidationError
		ce *store.ConflictError
		le *store.LimitError
		ue *store.UnavailableError
		pe *store.PlanError
	)
	switch {
	case errors.As(err, &ve), errors.As(err, &le):
		return store.RefusalMessage(err), true
	case errors.As(err, &ce):
		return ce.Message, true
	case errors.As(err, &ue):
		return ue.Message, true
	case errors.As(err, &pe):
		return "Ihr Tarif enthält diese Funktion nicht.", true
	}
	return "", false
}

func (p *Portal) storySettingsForm(w http.ResponseWriter, r *http.Request) error {
	s, err := p.db.StorySettingsOf(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	f := views.StorySettingsForm{SendTime: s.SendTime, FromName: s.FromName, ReplyTo: s.ReplyTo, Errors: map[string]string{},
		Weekdays: map[int64]bool{}, ListIDs: map[int64]bool{}, Saved: r.URL.Query().Get("saved") == "1", TemplateKey: s.TemplateKey}
	if s.SMTPServerID != nil {
		f.SMTPServerID = *s.SMTPServerID
	}
	for _, d := range s.Weekdays {
		f.Weekdays[d] = true
	}
	for _, id := range s.ListIDs {
		f.ListIDs[id] = true
	}
	return p.renderStorySettings(w, r, http.StatusOK, f)
}

func (p *Portal) renderStorySettings(w http.ResponseWriter, r *http.Request, status int, f views.StorySettingsForm) error {
	lists, _, err := p.db.Lists(r.Context(), accountID(r), store.Page{Page: 1, PerPage: 100})
	if err != nil {
		return err
	}
	f.Lists = lists
	if f.Servers, _, err = p.db.SMTPServers(r.Context(), accountID(r), store.Page{Page: 1, PerPage: maxPickerLists}); err != nil {
		return err
	}
	if f.Templates, _, err = p.db.Templates(r.Context(), accountID(r), store.Page{Page: 1, PerPage: maxPickerTemplates}); err != nil {
		return err
	}
	s := p.shell(r, views.TextFor(r.Context()).Sequences.StorySettings, views.NavStoryEmails)
	p.render(w, r, status, views.StorySettingsPage(s, f))
	return nil
}

func (p *Portal) saveStorySettings(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.sequenceService()
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	f := views.StorySettingsForm{SendTime: r.PostFormValue("send_time"), FromName: r.PostFormValue("from_name"),
		ReplyTo: r.PostFormValue("reply_to"), Errors: map[string]string{}, Weekdays: map[int64]bool{}, ListIDs: map[int64]bool{}}
	days, lists := formIDs(r.PostForm["weekdays"]), formIDs(r.PostForm["list_ids"])
	for _, d := range days {
		f.Weekdays[d] = true
	}
	for _, id := range lists {
		f.ListIDs[id] = true
	}
	f.TemplateKey = r.PostFormValue("template_key")
	if v := r.PostFormValue("smtp_server_id"); v != "" {
		id, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || id < 0 {
			f.Errors["smtp_server_id"] = views.TextFor(r.Context()).Common.FormInvalid
			return p.renderStorySettings(w, r, http.StatusUnprocessableEntity, f)
		}
		f.SMTPServerID = id
	}
	_, err = svc.PutStorySettings(r.Context(), accountID(r), actor(r), store.StorySettingsInput{ListIDs: &lists,
		SendTime: &f.SendTime, Weekdays: &days, FromName: &f.FromName, ReplyTo: &f.ReplyTo,
		SMTPServerID: &f.SMTPServerID, TemplateKey: &f.TemplateKey})
	if fieldErrors(err, f.Errors) {
		return p.renderStorySettings(w, r, http.StatusUnprocessableEntity, f)
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/story-emails/settings?saved=1", http.StatusSeeOther)
	return nil
}

func (p *Portal) listSequences(w http.ResponseWriter, r *http.Request) error {
	return p.renderSequences(w, r, http.StatusOK, views.SequenceList{Errors: map[string]string{}})
}

func (p *Portal) renderSequences(w http.ResponseWriter, r *http.Request, status int, l views.SequenceList) error {
	list, _, err := p.db.Sequences(r.Context(), accountID(r), store.Page{Page: 1, PerPage: 100})
	if err != nil {
		return err
	}
	l.Sequences = list
	s := p.shell(r, views.TextFor(r.Context()).Sequences.Title, views.NavSequences)
	p.render(w, r, status, views.SequencesPage(s, l))
	return nil
}

func (p *Portal) createSequence(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.sequenceService()
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	l := views.SequenceList{Errors: map[string]string{}, Name: r.PostFormValue("name")}
	sendTime := r.PostFormValue("send_time")
	q, err := svc.CreateSequence(r.Context(), accountID(r), actor(r), store.SequenceInput{Name: &l.Name, SendTime: &sendTime})
	if fieldErrors(err, l.Errors) {
		return p.renderSequences(w, r, http.StatusUnprocessableEntity, l)
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/sequences/%d", q.ID), http.StatusSeeOther)
	return nil
}

// participantsShown bounds the participants the builder lists.
const participantsShown = 50

func (p *Portal) showSequence(w http.ResponseWriter, r *http.Request) error {
	return p.renderBuilder(w, r, http.StatusOK, "", nil)
}

func (p *Portal) renderBuilder(w http.ResponseWriter, r *http.Request, status int, alert string, errs map[string]string) error {
	ctx := r.Context()
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q, err := p.db.Sequence(ctx, accountID(r), id)
	if err != nil {
		return err
	}
	days, err := p.db.SequenceDays(ctx, accountID(r), id)
	if err != nil {
		return err
	}
	parts, _, err := p.db.Participants(ctx, accountID(r), id, "", store.Page{Page: 1, PerPage: participantsShown})
	if err != nil {
		return err
	}
	funnel, err := p.db.Funnel(ctx, accountID(r), id)
	if err != nil {
		return err
	}
	x, err := p.editorExtrasOf(r)
	if err != nil {
		return err
	}
	s := p.shell(r, q.Name, views.NavSequences)
	p.render(w, r, status, views.SequenceBuilderPage(s, views.SequenceBuilder{Sequence: q, Days: days, Participants: parts,
		Funnel: funnel, Alert: alert, Errors: errs, Extras: x}))
	return nil
}

// sequencePost runs a change of the builder and comes back to it: a refusal
// shows on the page, anything else is an error.
func (p *Portal) sequencePost(fn func(r *http.Request, svc *sequence.Service, id int64) (string, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		svc, err := p.sequenceService()
		if err != nil {
			return err
		}
		id, err := pathID(r, "id")
		if err != nil {
			return err
		}
		if err := parseFormMax(w, r, maxNewsletterForm); err != nil {
			return err
		}
		msg, err := fn(r, svc, id)
		if text, ok := seqRefusal(err); ok {
			errs := map[string]string{}
			fieldErrors(err, errs)
			return p.renderBuilder(w, r, http.StatusUnprocessableEntity, text, errs)
		}
		if err != nil {
			return err
		}
		if msg != "" {
			p.flash(r.Context(), "success", msg)
		}
		http.Redirect(w, r, fmt.Sprintf("/sequences/%d", id), http.StatusSeeOther)
		return nil
	}
}

func (p *Portal) activateSequence(r *http.Request, svc *sequence.Service, id int64) (string, error) {
	_, err := svc.Activate(r.Context(), accountID(r), actor(r), id)
	return "", err
}

func (p *Portal) deactivateSequence(r *http.Request, svc *sequence.Service, id int64) (string, error) {
	_, err := svc.Deactivate(r.Context(), accountID(r), actor(r), id)
	return "", err
}

// dayForm reads a day's fields, its content from the editor with prefix;
// fields not posted are not given.
func dayForm(r *http.Request, prefix string) store.DayInput {
	var in store.DayInput
	for name, dst := range map[string]**string{"subject": &in.Content.Subject, "preheader": &in.Content.Preheader} {
		if vs, ok := r.PostForm[name]; ok {
			v := vs[0]
			*dst = &v
		}
	}
	_, hasHTML := r.PostForm["html"]
	_, hasRich := r.PostForm["html_rich"]
	if hasHTML || hasRich {
		_, html, markdown := postedMailEditor(r.PostForm, prefix)
		in.Content.HTML, in.Content.Markdown = &html, &markdown
	}
	if v := strings.TrimSpace(r.PostFormValue("delay_days")); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			in.DelayDays = &n
		} else {
			bad := -1
			in.DelayDays = &bad
		}
	}
	return in
}

func (p *Portal) addDay(r *http.Request, svc *sequence.Service, id int64) (string, error) {
	_, err := svc.CreateDay(r.Context(), accountID(r), actor(r), id, dayForm(r, ""))
	return "", err
}

func (p *Portal) editDay(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.sequenceService()
	if err != nil {
		return err
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	dayID, err := pathID(r, "day_id")
	if err != nil {
		return err
	}
	if err := parseFormMax(w, r, maxNewsletterForm); err != nil {
		return err
	}
	d, err := svc.UpdateDay(r.Context(), accountID(r), actor(r), id, dayID, dayForm(r, "day"+strconv.FormatInt(dayID, 10)))
	errs := map[string]string{}
	if !isHTMX(r) {
		if text, ok := seqRefusal(err); ok {
			fieldErrors(err, errs)
			return p.renderBuilder(w, r, http.StatusUnprocessableEntity, text, errs)
		}
		if err != nil {
			return err
		}
		http.Redirect(w, r, fmt.Sprintf("/sequences/%d", id), http.StatusSeeOther)
		return nil
	}
	status := http.StatusOK
	if fieldErrors(err, errs) {
		status = http.StatusUnprocessableEntity
		if d, err = p.db.SequenceDayByID(r.Context(), accountID(r), id, dayID); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	q, err := p.db.Sequence(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	x, err := p.editorExtrasOf(r)
	if err != nil {
		return err
	}
	p.render(w, r, status, views.SequenceDayItem(q, d, d.Position == 1, int64(d.Position) == q.DaysCount, errs, x))
	return nil
}

func (p *Portal) moveDay(r *http.Request, svc *sequence.Service, id int64) (string, error) {
	dayID, err := pathID(r, "day_id")
	if err != nil {
		return "", err
	}
	to, err := strconv.Atoi(r.URL.Query().Get("to"))
	if err != nil || to < 1 {
		return "", store.Invalid("position", "Ungültige Position.")
	}
	_, err = svc.UpdateDay(r.Context(), accountID(r), actor(r), id, dayID, store.DayInput{Position: &to})
	return "", err
}

func (p *Portal) deleteDay(r *http.Request, svc *sequence.Service, id int64) (string, error) {
	dayID, err := pathID(r, "day_id")
	if err != nil {
		return "", err
	}
	return "", svc.DeleteDay(r.Context(), accountID(r), actor(r), id, dayID)
}

func (p *Portal) enrolSequence(r *http.Request, svc *sequence.Service, id int64) (string, error) {
	var emails []string
	for _, line := range strings.FieldsFunc(r.PostFormValue("emails"), func(c rune) bool { return c == '\n' || c == ',' || c == ';' }) {
		if e := strings.TrimSpace(line); e != "" {
			emails = append(emails, e)
		}
	}
	res, err := svc.Enrol(r.Context(), accountID(r), actor(r), id, nil, emails)
	if errors.Is(err, sequence.ErrTooMany) {
		return "", store.Invalid("emails", "Höchstens 1000 Adressen auf einmal.")
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(views.TextFor(r.Context()).Sequences.Enrolled, res.Enrolled, res.Skipped), nil
}

func (p *Portal) outlineSequence(r *http.Request, svc *sequence.Service, id int64) (string, error) {
	if err := viewer(r).Plan.Require("ai"); err != nil {
		return "", err
	}
	days, _ := strconv.Atoi(r.PostFormValue("days"))
	res, err := svc.Outline(r.Context(), accountID(r), actor(r), id, sequence.OutlineInput{Topic: r.PostFormValue("topic"),
		Goal: r.PostFormValue("goal"), Tone: r.PostFormValue("tone"), Days: days, Save: true})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(views.TextFor(r.Context()).Sequences.OutlineDone, len(res.Saved)), nil
}

// previewDay renders a day's editor content for the live preview.
func (p *Portal) previewDay(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if _, err := p.db.Sequence(r.Context(), accountID(r), id); err != nil {
		return err
	}
	if err := parseFormMax(w, r, maxNewsletterForm); err != nil {
		return err
	}
	c := store.Campaign{AccountID: accountID(r), Kind: store.KindSequence, Type: store.TypeNewsletter,
		Subject: r.PostFormValue("subject"), Preheader: r.PostFormValue("preheader")}
	_, c.HTML, c.Markdown = postedMailEditor(r.PostForm, r.URL.Query().Get("prefix"))
	c.HTML = previewHTML(c.HTML)
	p.render(w, r, http.StatusOK, views.NewsletterPreviewFrame(p.preview(r, c, "")))
	return nil
}
