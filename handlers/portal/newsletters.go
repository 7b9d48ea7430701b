package portal

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/webhook"
	"github.com/rundbrief/rundbrief/views"
)

// The newsletter pages call the same services as the API's /v1/newsletters:
// store.DB's newsletter methods (drafts, duplicate, delete, unschedule, pause)
// and store/campaign (every change, test mails, preview, send, schedule, resume). The rules
// (only drafts change, what a send needs, whom it reaches) stay there; the
// pages map the services' errors to fields, alerts and flashes.

const (
	// newsletterPerPage is the number of newsletters per list page.
	newsletterPerPage = 25
	// maxPickerLists bounds the lists the editor offers (the plans allow fewer).
	maxPickerLists = 100
	// maxNewsletterForm bounds an editor post: the content (store.MaxHTMLBytes)
	// and the other fields.
	maxNewsletterForm = store.MaxHTMLBytes + 64<<10
	// sampleContacts is the number of addresses the preview suggests.
	sampleContacts = 10
)

// Editor actions: the buttons of the editor form (name="action").
const (
	actionSave     = "save"
	actionPreview  = "preview"
	actionTest     = "test"
	actionSchedule = "schedule"
	actionSend     = "send"
)

// errSendingOff: the portal runs without the sending service (Deps.Campaigns).
var errSendingOff = errors.New("portal: sending is not configured")

func (p *Portal) listNewsletters(w http.ResponseWriter, r *http.Request) error {
	t := views.TextFor(r.Context())
	q := r.URL.Query()
	status := q.Get("status")
	if !store.ValidCampaignStatus(status) {
		status = ""
	}
	page := queryPage(r)
	items, total, err := p.db.Newsletters(r.Context(), accountID(r), status, store.Page{Page: page, PerPage: newsletterPerPage})
	if err != nil {
		return err
	}
	if last := max(1, (total+newsletterPerPage-1)/newsletterPerPage); page > last {
		page = last
		if items, total, err = p.db.Newsletters(r.Context(), accountID(r), status, store.Page{Page: page, PerPage: newsletterPerPage}); err != nil {
			return err
		}
	}
	withRates, err := p.db.Summarize(r.Context(), accountID(r), items)
	if err != nil {
		return err
	}
	l := views.NewsletterList{Items: withRates, Status: status, Pager: views.Pager{
		Page: page, PerPage: newsletterPerPage, Total: total, Target: "#newsletters",
		URL: func(n int) string { return newslettersURL(status, n) },
	}}
	s := p.shell(r, t.Newsletters.Title, views.NavNewsletters)
	p.page(w, r, http.StatusOK, views.NewslettersPage(s, l), views.NewsletterSection(l))
	return nil
}

// newslettersURL is one page of the list under a status filter.
func newslettersURL(status string, page int) string {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	if page > 1 {
		q.Set("page", strconv.Itoa(page))
	}
	if len(q) == 0 {
		return "/newsletters"
	}
	return "/newsletters?" + q.Encode()
}

func (p *Portal) newNewsletter(w http.ResponseWriter, r *http.Request) error {
	c := store.Campaign{TrackOpens: true, TrackClicks: true}
	// ?template=key (the templates page's "use in a newsletter"): a layout is
	// chosen, a starting point's content is filled in.
	if key := r.URL.Query().Get("template"); key != "" {
		tp, err := p.db.TemplateByKey(r.Context(), accountID(r), key)
		if err != nil {
			return err
		}
		c.TemplateKey = tp.Key
		if !tp.IsLayout() {
			c.Subject, c.Preheader, c.HTML = tp.Subject, tp.Preheader, tp.HTML
		}
	}
	f, err := p.newsletterForm(r, c)
	if err != nil {
		return err
	}
	f.Preview = views.NewsletterPreview{Empty: true}
	if c.HasContent() {
		c.AccountID = accountID(r)
		f.Preview = p.preview(r, c, "")
	}
	p.renderNewsletterForm(w, r, http.StatusOK, f)
	return nil
}

func (p *Portal) createNewsletter(w http.ResponseWriter, r *http.Request) error {
	if err := parseFormMax(w, r, maxNewsletterForm); err != nil {
		return err
	}
	f, err := p.newsletterForm(r, store.Campaign{})
	if err != nil {
		return err
	}
	in := readNewsletterForm(r, &f)
	if r.PostForm.Get("action") == actionPreview || len(f.Errors) > 0 {
		return p.rerenderNewsletterForm(w, r, f)
	}
	c, err := p.campaigns.CreateNewsletter(r.Context(), accountID(r), actor(r), in)
	if err != nil {
		if p.newsletterErrors(r, err, &f) {
			return p.rerenderNewsletterForm(w, r, f)
		}
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Newsletters.CreatedFlash, c.Name))
	p.redirect(w, r, views.NewsletterURL(c.ID, ""))
	return nil
}

// showNewsletter is the editor of a draft, or the status page of any other
// newsletter.
func (p *Portal) showNewsletter(w http.ResponseWriter, r *http.Request) error {
	c, err := p.newsletter(r)
	if err != nil {
		return err
	}
	if c.Status != store.CampaignDraft {
		v, err := p.newsletterView(r, c)
		if err != nil {
			return err
		}
		p.render(w, r, http.StatusOK, views.NewsletterPage(p.shell(r, c.Name, views.NavNewsletters), v))
		return nil
	}
	f, err := p.newsletterForm(r, c)
	if err != nil {
		return err
	}
	f.Preview = p.preview(r, c, "")
	p.renderNewsletterForm(w, r, http.StatusOK, f)
	return nil
}

// saveNewsletter saves the editor's fields into the draft (the service refuses
// any other status) and then does what the pressed button asks: nothing more,
// a test mail, scheduling, or on to the send confirmation.
func (p *Portal) saveNewsletter(w http.ResponseWriter, r *http.Request) error {
	c, err := p.newsletter(r)
	if err != nil {
		return err
	}
	if err := parseFormMax(w, r, maxNewsletterForm); err != nil {
		return err
	}
	t := views.TextFor(r.Context()).Newsletters
	f, err := p.newsletterForm(r, c)
	if err != nil {
		return err
	}
	in := readNewsletterForm(r, &f)
	action := r.PostForm.Get("action")
	if action == actionPreview || len(f.Errors) > 0 {
		return p.rerenderNewsletterForm(w, r, f)
	}
	saved, err := p.campaigns.UpdateNewsletter(r.Context(), accountID(r), actor(r), c.ID, in)
	if err != nil {
		var ce *store.ConflictError
		if errors.As(err, &ce) { // not a draft (any more): nothing was saved
			p.flash(r.Context(), "error", ce.Message)
			p.redirect(w, r, views.NewsletterURL(c.ID, ""))
			return nil
		}
		if p.newsletterErrors(r, err, &f) {
			return p.rerenderNewsletterForm(w, r, f)
		}
		return err
	}
	c = saved
	switch action {
	case actionTest:
		return p.testNewsletter(w, r, c, f)
	case actionSchedule:
		return p.scheduleNewsletter(w, r, c, f)
	case actionSend:
		p.redirect(w, r, views.NewsletterURL(c.ID, "send"))
		return nil
	}
	p.flash(r.Context(), "success", sprintf(t.SavedFlash, c.Name))
	p.redirect(w, r, views.NewsletterURL(c.ID, ""))
	return nil
}

// testNewsletter sends the saved draft to the typed addresses and shows the
// outcome per address below the button.
func (p *Portal) testNewsletter(w http.ResponseWriter, r *http.Request, c store.Campaign, f views.NewsletterForm) error {
	if p.campaigns == nil {
		return errSendingOff
	}
	results, err := p.campaigns.TestNewsletter(r.Context(), accountID(r), c.ID, splitList(f.TestTo))
	if err != nil {
		if p.newsletterErrors(r, err, &f) {
			if isHTMX(r) && f.Errors["to"] != "" {
				p.render(w, r, http.StatusUnprocessableEntity, views.TestResultsSlot(nil, f.Errors["to"]))
				return nil
			}
			return p.rerenderNewsletterForm(w, r, f)
		}
		return err
	}
	for _, res := range results {
		f.TestResults = append(f.TestResults, views.TestMailResult{Email: res.Email, Sent: res.Sent, Error: res.Error})
	}
	if isHTMX(r) { // the outcome next to the button; the draft is saved
		p.render(w, r, http.StatusOK, views.TestResultsSlot(f.TestResults, ""))
		return nil
	}
	f.Preview = p.preview(r, c, f.PreviewEmail)
	p.renderNewsletterForm(w, r, http.StatusOK, f)
	return nil
}

// scheduleNewsletter schedules the saved draft for the typed time in Berlin.
func (p *Portal) scheduleNewsletter(w http.ResponseWriter, r *http.Request, c store.Campaign, f views.NewsletterForm) error {
	if p.campaigns == nil {
		return errSendingOff
	}
	t := views.TextFor(r.Context())
	at, ok := parseLocalTime(f.ScheduleAt)
	if !ok {
		f.Errors["scheduled_at"] = t.Newsletters.ScheduleInvalid
		return p.rerenderNewsletterForm(w, r, f)
	}
	c, err := p.campaigns.ScheduleNewsletter(r.Context(), accountID(r), actor(r), c.ID, at)
	if err != nil {
		if p.newsletterErrors(r, err, &f) {
			return p.rerenderNewsletterForm(w, r, f)
		}
		return err
	}
	p.sendFlash(r, sprintf(t.Newsletters.ScheduledFlash, views.FormatTime(t, *c.ScheduledAt)))
	p.redirect(w, r, views.NewsletterURL(c.ID, ""))
	return nil
}

// previewNewsletter renders the editor's fields as they are (not saved) for the
// chosen contact: the htmx live preview.
func (p *Portal) previewNewsletter(w http.ResponseWriter, r *http.Request) error {
	if err := parseFormMax(w, r, maxNewsletterForm); err != nil {
		return err
	}
	f := views.NewsletterForm{Errors: map[string]string{}}
	in := readNewsletterForm(r, &f)
	c := store.Campaign{AccountID: accountID(r), Kind: store.KindNewsletter, Type: store.TypeNewsletter}
	applyPreviewInput(&c, in)
	p.render(w, r, http.StatusOK, views.NewsletterPreviewFrame(p.preview(r, c, f.PreviewEmail)))
	return nil
}

// applyPreviewInput sets what the preview shows of in on c.
func applyPreviewInput(c *store.Campaign, in store.NewsletterInput) {
	for _, s := range []struct {
		dst *string
		src *string
	}{{&c.Subject, in.Subject}, {&c.Preheader, in.Preheader}, {&c.HTML, in.HTML}, {&c.Text, in.Text}, {&c.Markdown, in.Markdown}} {
		if s.src != nil {
			*s.dst = *s.src
		}
	}
	if store.IsRichText(c.HTML) { // the preview shows what the store would keep
		c.HTML = store.SanitizeRichText(c.HTML)
	}
	if in.ListIDs != nil {
		c.ListIDs = *in.ListIDs
	}
	if in.TemplateKey != nil {
		c.TemplateKey = *in.TemplateKey
	}
}

// preview renders c for the contact with the address email ("" : the first
// member of its lists, else the made-up sample) through store/campaign.
func (p *Portal) preview(r *http.Request, c store.Campaign, email string) views.NewsletterPreview {
	t := views.TextFor(r.Context()).Newsletters
	if p.campaigns == nil {
		return views.NewsletterPreview{Error: t.SendingOff}
	}
	if !c.HasContent() {
		return views.NewsletterPreview{Empty: true}
	}
	var contactID int64
	if email = strings.TrimSpace(email); email != "" {
		k, err := p.db.ContactByEmail(r.Context(), accountID(r), email)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return views.NewsletterPreview{Error: sprintf(t.PreviewUnknown, email)}
			}
			p.log.Error("preview contact", "err", err)
			return views.NewsletterPreview{Error: views.TextFor(r.Context()).Errors.Internal}
		}
		contactID = k.ID
	}
	c.AccountID = accountID(r)
	pv, err := p.campaigns.PreviewCampaign(r.Context(), c, contactID)
	if err != nil {
		var ve *store.ValidationError
		if errors.As(err, &ve) {
			return views.NewsletterPreview{Error: strings.Join(slices.Sorted(maps.Values(ve.Fields)), " ")}
		}
		p.log.Error("preview newsletter", "err", err)
		return views.NewsletterPreview{Error: views.TextFor(r.Context()).Errors.Internal}
	}
	out := views.NewsletterPreview{Subject: pv.Subject, Preheader: pv.Preheader, HTML: pv.HTML, Text: pv.Text}
	if pv.ContactID != 0 {
		k, err := p.db.Contact(r.Context(), accountID(r), pv.ContactID)
		if err == nil {
			out.For = k.Email
		}
	}
	return out
}

// audienceCountCap is how far the send confirmation counts the recipients:
// beyond, it says "more than" this many (issue 24: a newsletter to 333,000
// counted them all for three seconds); the send queues them all exactly.
const audienceCountCap = 10_000

// sendConfirmation asks before the send, with the number of recipients the send
// will queue (store.CampaignAudienceUpTo counts by the send's own rule).
func (p *Portal) sendConfirmation(w http.ResponseWriter, r *http.Request) error {
	c, err := p.newsletter(r)
	if err != nil {
		return err
	}
	v, err := p.newsletterSend(r, c)
	if err != nil {
		return err
	}
	p.renderSend(w, r, http.StatusOK, v)
	return nil
}

func (p *Portal) sendNewsletter(w http.ResponseWriter, r *http.Request) error {
	if p.campaigns == nil {
		return errSendingOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	t := views.TextFor(r.Context())
	res, err := p.campaigns.SendNewsletter(r.Context(), accountID(r), actor(r), id)
	if err != nil {
		c, lerr := p.db.Newsletter(r.Context(), accountID(r), id)
		if lerr != nil {
			return lerr
		}
		var (
			ve *store.ValidationError
			le *store.LimitError
			ce *store.ConflictError
		)
		switch {
		case errors.As(err, &ce):
			p.flash(r.Context(), "error", ce.Message)
			p.redirect(w, r, views.NewsletterURL(id, ""))
			return nil
		case errors.As(err, &ve), errors.As(err, &le):
			v, verr := p.newsletterSend(r, c)
			if verr != nil {
				return verr
			}
			status := http.StatusUnprocessableEntity
			if ve != nil {
				v.Problems = ve.Fields
			} else {
				v.Alert, status = sprintf(t.Newsletters.LimitReached, views.FormatInt(t, le.Max)), http.StatusConflict
			}
			p.renderSend(w, r, status, v)
			return nil
		}
		return err
	}
	p.sendFlash(r, sprintf(t.Newsletters.SendStartedFlash, res.Campaign.Name))
	p.redirect(w, r, views.NewsletterURL(id, ""))
	return nil
}

// newsletterSend gathers the send confirmation: what is missing (the
// campaign's own ReadyErrors), whom it reaches and through which route.
func (p *Portal) newsletterSend(r *http.Request, c store.Campaign) (views.NewsletterSend, error) {
	v := views.NewsletterSend{Newsletter: c, Problems: c.ReadyErrors(), Checks: mailer.CheckContent(c)}
	aud, err := p.db.CampaignAudienceUpTo(r.Context(), c, audienceCountCap) // the segment's or the lists' audience
	if err != nil {
		return v, err
	}
	warnings, err := p.db.SendWarnings(r.Context(), accountID(r), false)
	if err != nil {
		return v, err
	}
	v.NoPostalAddress = slices.Contains(warnings, store.WarningNoPostalAddress)
	v.SenderEditable = viewer(r).User.CanManageKeys()
	v.Queued, v.Skipped, v.QueuedAtLeast, v.SkippedAtLeast = aud.Queued, aud.Skipped, aud.QueuedAtLeast, aud.SkippedAtLeast
	if (len(c.ListIDs) > 0 || c.SegmentID != nil) && v.Queued == 0 && len(v.Problems) == 0 {
		v.Problems = map[string]string{"list_ids": views.TextFor(r.Context()).Newsletters.SendNoRecipients}
	}
	if len(v.Problems) == 0 {
		v.Problems = nil
	}
	if v.Lists, v.Server, err = p.newsletterTargets(r, c); err != nil {
		return v, err
	}
	return v, nil
}

// newsletterLinks is the send confirmation's check of the links that answer,
// which the page loads after itself (htmx). The links are asked through the
// SMTP servers' guard (RUNDBRIEF_SMTP_ALLOW_PRIVATE), checked on every
// connection, redirects included: otherwise a newsletter's links would let an
// account probe the operator's own network. The product's own addresses are
// not asked.
func (p *Portal) newsletterLinks(w http.ResponseWriter, r *http.Request) error {
	c, err := p.newsletter(r)
	if err != nil {
		return err
	}
	var own []string
	if p.baseURL != "" {
		own = append(own, p.baseURL+"/")
	}
	dial := webhook.NewGuard(false, nil).DialContext // without the SMTP service: nothing private
	if p.smtpServers != nil {
		dial = p.smtpServers.DialContext
	}
	rep := mailer.CheckLinks(r.Context(), mailer.NewLinkClient(dial), mailer.CheckableLinks(c, own...))
	p.render(w, r, http.StatusOK, views.NewsletterLinkCheck(rep))
	return nil
}

func (p *Portal) renderSend(w http.ResponseWriter, r *http.Request, status int, v views.NewsletterSend) {
	s := p.shell(r, sprintf(views.TextFor(r.Context()).Newsletters.SendTitle, v.Newsletter.Name), views.NavNewsletters)
	p.render(w, r, status, views.NewsletterSendPage(s, v))
}

// newsletterProgress is the status panel alone, which the page polls while the
// newsletter is sending.
func (p *Portal) newsletterProgress(w http.ResponseWriter, r *http.Request) error {
	c, err := p.newsletter(r)
	if err != nil {
		return err
	}
	if !isHTMX(r) {
		p.redirect(w, r, views.NewsletterURL(c.ID, ""))
		return nil
	}
	p.render(w, r, http.StatusOK, views.NewsletterStatusPanel(views.NewsletterView{Newsletter: c, CanSend: p.campaigns != nil}))
	return nil
}

// newsletterAction runs a status change of the newsletter service and reports
// its outcome as a flash on the newsletter's page.
func (p *Portal) newsletterAction(do func(r *http.Request, id int64) (store.Campaign, error), done func(views.Text) string) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r, "id")
		if err != nil {
			return err
		}
		c, err := do(r, id)
		var ce *store.ConflictError
		switch {
		case errors.As(err, &ce):
			p.flash(r.Context(), "error", ce.Message)
		case err != nil:
			return err
		default:
			p.flash(r.Context(), "success", done(views.TextFor(r.Context())))
			id = c.ID
		}
		p.redirect(w, r, views.NewsletterURL(id, ""))
		return nil
	}
}

func (p *Portal) unscheduleNewsletter(r *http.Request, id int64) (store.Campaign, error) {
	return p.campaigns.UnscheduleNewsletter(r.Context(), accountID(r), actor(r), id)
}

func (p *Portal) pauseNewsletter(r *http.Request, id int64) (store.Campaign, error) {
	return p.campaigns.PauseNewsletter(r.Context(), accountID(r), actor(r), id)
}

func (p *Portal) resumeNewsletter(r *http.Request, id int64) (store.Campaign, error) {
	if p.campaigns == nil {
		return store.Campaign{}, errSendingOff
	}
	return p.campaigns.ResumeNewsletter(r.Context(), accountID(r), actor(r), id)
}

func (p *Portal) duplicateNewsletter(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := p.campaigns.DuplicateNewsletter(r.Context(), accountID(r), actor(r), id)
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Newsletters.DuplicatedFlash, c.Name))
	p.redirect(w, r, views.NewsletterURL(c.ID, ""))
	return nil
}

func (p *Portal) confirmDeleteNewsletter(w http.ResponseWriter, r *http.Request) error {
	c, err := p.newsletter(r)
	if err != nil {
		return err
	}
	if c.Status != store.CampaignDraft { // only drafts are deleted: nothing to ask
		p.redirect(w, r, views.NewsletterURL(c.ID, ""))
		return nil
	}
	p.render(w, r, http.StatusOK, views.NewsletterDeletePage(p.shell(r, c.Name, views.NavNewsletters), c))
	return nil
}

func (p *Portal) deleteNewsletter(w http.ResponseWriter, r *http.Request) error {
	c, err := p.newsletter(r)
	if err != nil {
		return err
	}
	err = p.campaigns.DeleteNewsletter(r.Context(), accountID(r), actor(r), c.ID)
	var ce *store.ConflictError
	switch {
	case errors.As(err, &ce):
		p.flash(r.Context(), "error", ce.Message)
		p.redirect(w, r, views.NewsletterURL(c.ID, ""))
		return nil
	case err != nil:
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Newsletters.DeletedFlash, c.Name))
	p.redirect(w, r, "/newsletters")
	return nil
}

// newsletter is the route's newsletter of the signed-in account (another
// account's id is not found).
func (p *Portal) newsletter(r *http.Request) (store.Campaign, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return store.Campaign{}, err
	}
	return p.db.Newsletter(r.Context(), accountID(r), id)
}

// newsletterView is the status page of a newsletter.
func (p *Portal) newsletterView(r *http.Request, c store.Campaign) (views.NewsletterView, error) {
	v := views.NewsletterView{Newsletter: c, CanSend: p.campaigns != nil}
	var err error
	if v.Lists, v.Server, err = p.newsletterTargets(r, c); err != nil {
		return v, err
	}
	v.Preview = p.preview(r, c, "")
	return v, nil
}

// newsletterTargets names a newsletter's lists and its SMTP route.
func (p *Portal) newsletterTargets(r *http.Request, c store.Campaign) ([]store.List, string, error) {
	t := views.TextFor(r.Context()).Newsletters
	lists, _, err := p.db.Lists(r.Context(), accountID(r), store.Page{Page: 1, PerPage: maxPickerLists})
	if err != nil {
		return nil, "", err
	}
	var chosen []store.List
	for _, id := range c.ListIDs {
		if i := slices.IndexFunc(lists, func(l store.List) bool { return l.ID == id }); i >= 0 {
			chosen = append(chosen, lists[i])
		}
	}
	// Without a choice the account's default server sends, if it has one (else
	// the operator relay or the development outbox).
	server := t.DefaultRoute
	var s store.SMTPServer
	if id := c.ServerID(); id != 0 {
		s, err = p.db.SMTPServer(r.Context(), accountID(r), id)
	} else {
		s, err = p.db.DefaultSMTPServer(r.Context(), accountID(r))
	}
	switch {
	case err == nil && c.ServerID() != 0:
		server = s.Name + " (" + s.FromEmail + ")"
	case err == nil:
		server = t.DefaultRoute + ": " + s.Name + " (" + s.FromEmail + ")"
	case !errors.Is(err, store.ErrNotFound):
		return nil, "", err
	}
	return chosen, server, nil
}

// newsletterForm is the editor for c (a zero c: a new draft) with the account's
// lists and SMTP servers to choose from.
func (p *Portal) newsletterForm(r *http.Request, c store.Campaign) (views.NewsletterForm, error) {
	t := views.TextFor(r.Context()).Newsletters
	f := views.NewsletterForm{
		ID: c.ID, Title: t.NewTitle, Action: "/newsletters/new",
		Name: c.Name, Subject: c.Subject, Preheader: c.Preheader, Format: views.FormatMarkdown, Content: c.Markdown,
		ListIDs: c.ListIDs, SegmentID: c.Segment(), SMTPServerID: c.ServerID(), FromName: c.FromName, ReplyTo: c.ReplyTo,
		TrackOpens: c.TrackOpens, TrackClicks: c.TrackClicks, Errors: map[string]string{}, CanSend: p.campaigns != nil,
		CanABTest: viewer(r).Plan.Require("ab_tests") == nil,
	}
	var err error
	if c.Markdown == "" && (c.HTML != "" || c.Text != "") {
		f.Format, f.Content = views.FormatHTML, c.HTML
	}
	f.Rich = editorRich(f.Format, f.Content, c.HTML)
	if store.IsRichText(c.HTML) {
		f.Format, f.Content = views.FormatRichText, f.Rich
	}
	if f.AI, err = p.aiAssistant(r); err != nil {
		return f, err
	}
	if c.ID != 0 {
		f.Title, f.Action = sprintf(t.EditTitle, c.Name), views.NewsletterURL(c.ID, "")
	}
	if f.Segments, _, err = p.db.Segments(r.Context(), accountID(r), store.Page{Page: 1, PerPage: maxPickerLists}); err != nil {
		return f, err
	}
	if f.Lists, _, err = p.db.Lists(r.Context(), accountID(r), store.Page{Page: 1, PerPage: maxPickerLists}); err != nil {
		return f, err
	}
	if f.Servers, _, err = p.db.SMTPServers(r.Context(), accountID(r), store.Page{Page: 1, PerPage: maxPickerLists}); err != nil {
		return f, err
	}
	f.TemplateKey, f.AttachmentIDs = c.TemplateKey, c.AttachmentIDs
	if f.Templates, _, err = p.db.Templates(r.Context(), accountID(r), store.Page{Page: 1, PerPage: maxPickerTemplates}); err != nil {
		return f, err
	}
	if f.Attachments, _, err = p.db.Attachments(r.Context(), accountID(r), store.Page{Page: 1, PerPage: maxPickerTemplates}); err != nil {
		return f, err
	}
	if f.CustomFields, err = p.db.ContactFields(r.Context(), accountID(r)); err != nil {
		return f, err
	}
	return f, nil
}

// readNewsletterForm reads the posted editor into f (as typed, for showing it
// again) and into the service's input; every field is given, since the form
// always holds them all. f.Errors gets what cannot even be read (a list id that
// is no number).
func readNewsletterForm(r *http.Request, f *views.NewsletterForm) store.NewsletterInput {
	form := r.PostForm
	f.Name = strings.TrimSpace(form.Get("name"))
	f.Subject = form.Get("subject")
	f.Preheader = form.Get("preheader")
	f.Format, f.Content, f.Rich = readEditorContent(form, "content", "format")
	f.FromName = form.Get("from_name")
	f.ReplyTo = form.Get("reply_to")
	f.TrackOpens = slices.Contains(form["tracking"], "opens")
	f.TrackClicks = slices.Contains(form["tracking"], "clicks")
	f.TestTo = form.Get("test_to")
	f.ScheduleAt = strings.TrimSpace(form.Get("scheduled_at"))
	f.PreviewEmail = strings.TrimSpace(form.Get("preview_email"))
	f.ListIDs = nil
	for _, v := range form["list_ids"] {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			f.Errors["list_ids"] = views.TextFor(r.Context()).Common.FormInvalid
			continue
		}
		f.ListIDs = append(f.ListIDs, id)
	}
	f.SegmentID = 0
	if v := form.Get("segment_id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 0 {
			f.Errors["segment_id"] = views.TextFor(r.Context()).Common.FormInvalid
		}
		f.SegmentID = id
	}
	f.SMTPServerID = 0
	if v := form.Get("smtp_server_id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 0 {
			f.Errors["smtp_server_id"] = views.TextFor(r.Context()).Common.FormInvalid
		}
		f.SMTPServerID = id
	}
	f.TemplateKey = strings.TrimSpace(form.Get("template_key"))
	f.AttachmentIDs = []int64{}
	for _, v := range form["attachment_ids"] {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			f.Errors["attachment_ids"] = views.TextFor(r.Context()).Common.FormInvalid
			continue
		}
		f.AttachmentIDs = append(f.AttachmentIDs, id)
	}
	ids := slices.Clone(f.ListIDs)
	if ids == nil {
		ids = []int64{}
	}
	in := store.NewsletterInput{
		Name: &f.Name, Subject: &f.Subject, Preheader: &f.Preheader, ListIDs: &ids, SegmentID: &f.SegmentID, FromName: &f.FromName, ReplyTo: &f.ReplyTo,
		SMTPServerID: &f.SMTPServerID, TrackOpens: &f.TrackOpens, TrackClicks: &f.TrackClicks,
		TemplateKey: &f.TemplateKey, AttachmentIDs: &f.AttachmentIDs,
	}
	if f.Name == "" {
		// Optional: a new draft is named after its subject, a saved one keeps its name.
		in.Name = nil
	}
	in.HTML, in.Markdown, in.Text = editorInput(f.Format, f.Content, f.Rich)
	return in
}

// newsletterErrors maps an error of the newsletter services onto the editor:
// field errors next to their fields, limits and conflicts above the form. It
// reports whether err was one of those.
func (p *Portal) newsletterErrors(r *http.Request, err error, f *views.NewsletterForm) bool {
	t := views.TextFor(r.Context())
	var (
		ve *store.ValidationError
		le *store.LimitError
		ce *store.ConflictError
	)
	switch {
	case errors.As(err, &ve):
		for k, msg := range ve.Fields {
			switch k {
			case "html", "text", "markdown":
				k = "content"
			case "template_key":
				f.Alert = t.Newsletters.TemplateConflict
				continue
			case "contact_id":
				k = "preview_email"
			}
			if _, taken := f.Errors[k]; !taken {
				f.Errors[k] = msg
			}
		}
		return true
	case errors.As(err, &le):
		f.Alert = sprintf(t.Newsletters.LimitReached, views.FormatInt(t, le.Max))
		return true
	case errors.As(err, &ce):
		f.Alert = ce.Message
		return true
	}
	return false
}

// rerenderNewsletterForm shows the editor again with what was typed, its
// errors (422) or, for the preview button, the preview of the typed content.
func (p *Portal) rerenderNewsletterForm(w http.ResponseWriter, r *http.Request, f views.NewsletterForm) error {
	c := store.Campaign{AccountID: accountID(r), Kind: store.KindNewsletter, Type: store.TypeNewsletter}
	errs := f.Errors
	in := readNewsletterForm(r, &f)
	f.Errors = errs
	applyPreviewInput(&c, in)
	f.Preview = p.preview(r, c, f.PreviewEmail)
	status := http.StatusOK
	if len(f.Errors) > 0 || f.Alert != "" {
		status = http.StatusUnprocessableEntity
	}
	p.renderNewsletterForm(w, r, status, f)
	return nil
}

func (p *Portal) renderNewsletterForm(w http.ResponseWriter, r *http.Request, status int, f views.NewsletterForm) {
	if len(f.SampleEmails) == 0 {
		f.SampleEmails = p.sampleEmails(r, f.ListIDs)
	}
	p.render(w, r, status, views.NewsletterEditorPage(p.shell(r, f.Title, views.NavNewsletters), f))
}

// sampleEmails suggests addresses for the preview: members of the first chosen
// list, else any contacts (both listings read a maintained counter, so this
// stays cheap for large accounts).
func (p *Portal) sampleEmails(r *http.Request, listIDs []int64) []string {
	var filter store.ContactFilter
	if len(listIDs) > 0 {
		filter.ListID = listIDs[0]
	}
	contacts, _, err := p.db.Contacts(r.Context(), accountID(r), filter, store.Page{Page: 1, PerPage: sampleContacts})
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			p.log.Warn("preview suggestions", "err", err)
		}
		return nil
	}
	out := make([]string, len(contacts))
	for i, k := range contacts {
		out[i] = k.Email
	}
	return out
}

// parseLocalTime reads a datetime-local value ("2026-12-01T09:00", seconds
// optional) as a time in Europe/Berlin, within the years store.ValidTime allows.
func parseLocalTime(s string) (time.Time, bool) {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if at, err := time.ParseInLocation(layout, s, store.Berlin); err == nil {
			return at, store.ValidTime(at)
		}
	}
	return time.Time{}, false
}

// parseFormMax reads a form body of at most limit bytes.
func parseFormMax(w http.ResponseWriter, r *http.Request, limit int64) error {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseForm(); err != nil {
		return fmt.Errorf("%w: %w", errBadForm, err)
	}
	return nil
}
