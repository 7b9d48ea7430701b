package portal

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// The single-email pages call the same services as the API's /emails
// endpoints: Emails and Email to read, campaign.Service's SendEmail and
// CancelEmail to change; the campaigns overview reads what GET /v1/campaigns
// reads.

// emailsPerPage is the number of emails (and of recipients) per page.
const emailsPerPage = 50

func (p *Portal) listEmails(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	status := r.URL.Query().Get("status")
	if !store.ValidCampaignStatus(status) {
		status = ""
	}
	page := queryPage(r)
	items, total, err := p.db.Emails(ctx, accountID(r), status, store.Page{Page: page, PerPage: emailsPerPage})
	if err != nil {
		return err
	}
	withRates, err := p.db.Summarize(ctx, accountID(r), items)
	if err != nil {
		return err
	}
	l := views.EmailList{Items: withRates, Status: status, Pager: views.Pager{Page: page, PerPage: emailsPerPage, Total: total, Target: "#emails",
		URL: func(n int) string { return pageURL("/emails", url.Values{"status": {status}}, n) }}}
	s := p.shell(r, views.TextFor(ctx).Emails.Title, views.NavEmails)
	p.page(w, r, http.StatusOK, views.EmailsPage(s, l), views.EmailSection(l))
	return nil
}

func (p *Portal) newEmail(w http.ResponseWriter, r *http.Request) error {
	return p.renderEmailForm(w, r, http.StatusOK, views.EmailForm{Editor: storedMailEditor("", "", ""), TrackOpens: true, TrackClicks: true,
		Errors: map[string]string{}})
}

func (p *Portal) renderEmailForm(w http.ResponseWriter, r *http.Request, status int, f views.EmailForm) error {
	var err error
	if f.Editor.Fields, f.AI, err = p.editorExtras(r, f.Editor); err != nil {
		return err
	}
	s := p.shell(r, views.TextFor(r.Context()).Emails.NewTitle, views.NavEmails)
	p.render(w, r, status, views.EmailFormPage(s, f))
	return nil
}

// sendEmail sends or schedules a single email as POST /v1/emails/send does.
func (p *Portal) sendEmail(w http.ResponseWriter, r *http.Request) error {
	if err := parseFormMax(w, r, store.MaxHTMLBytes+64<<10); err != nil {
		return err
	}
	t := views.TextFor(r.Context())
	f := views.EmailForm{
		To: r.PostFormValue("to"), Subject: r.PostFormValue("subject"), Preheader: r.PostFormValue("preheader"),
		Type: r.PostFormValue("type"), ScheduleAt: strings.TrimSpace(r.PostFormValue("scheduled_at")),
		TrackOpens: r.PostFormValue("track_opens") != "", TrackClicks: r.PostFormValue("track_clicks") != "",
		Errors: map[string]string{},
	}
	var html, markdown string
	f.Editor, html, markdown = postedMailEditor(r.PostForm, "")
	in := store.EmailInput{To: splitAddresses(f.To), Subject: f.Subject, Preheader: f.Preheader, HTML: html, Markdown: markdown,
		Type: f.Type, TrackOpens: f.TrackOpens, TrackClicks: f.TrackClicks}
	if f.ScheduleAt != "" {
		at, ok := parseLocalTime(f.ScheduleAt)
		if !ok {
			f.Errors["scheduled_at"] = t.Newsletters.ScheduleInvalid
			return p.renderEmailForm(w, r, http.StatusUnprocessableEntity, f)
		}
		in.ScheduledAt = &at
	}
	if p.campaigns == nil {
		return errors.New("portal: sending is not configured")
	}
	res, err := p.campaigns.SendEmail(r.Context(), accountID(r), actor(r), in)
	var le *store.LimitError
	switch {
	case fieldErrors(err, f.Errors):
		return p.renderEmailForm(w, r, http.StatusUnprocessableEntity, f)
	case errors.As(err, &le):
		f.Alert = sprintf(t.Newsletters.LimitReached, le.Max)
		return p.renderEmailForm(w, r, http.StatusConflict, f)
	case err != nil:
		return err
	}
	msg := sprintf(t.Emails.SentFlash, res.Queued)
	switch {
	case res.Campaign.Status == store.CampaignScheduled:
		msg = t.Emails.ScheduledFlash
	case res.Queued == 0 && res.Skipped == 1:
		msg = t.Emails.AllSkippedFlashOne
	case res.Queued == 0:
		msg = sprintf(t.Emails.AllSkippedFlash, res.Skipped)
	case res.Skipped > 0:
		msg = sprintf(views.ByCount(res.Skipped, t.Emails.SkippedFlashOne, t.Emails.SkippedFlash), res.Queued, res.Skipped)
	}
	p.flash(r.Context(), "success", msg)
	p.redirect(w, r, "/emails/"+strconv.FormatInt(res.Campaign.ID, 10))
	return nil
}

func (p *Portal) showEmail(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := p.db.Email(ctx, accountID(r), id)
	if err != nil {
		return err
	}
	sum, err := p.db.Summarize(ctx, accountID(r), []store.Campaign{c})
	if err != nil {
		return err
	}
	d := views.EmailDetail{Email: sum[0]}
	if d.Recipients, err = p.recipientsOf(r, c.ID, "/emails/"+strconv.FormatInt(c.ID, 10), "#recipients"); err != nil {
		return err
	}
	s := p.shell(r, views.TextFor(ctx).Emails.Title, views.NavEmails)
	p.page(w, r, http.StatusOK, views.EmailDetailPage(s, d), views.RecipientSection(d.Recipients))
	return nil
}

// recipientCountCap is how far the recipient tables count their rows.
const recipientCountCap = 10_000

// recipientsOf is one page of a campaign's recipients under the ?outcome=
// filter (opened, clicked, failed, skipped), for its detail page at path.
func (p *Portal) recipientsOf(r *http.Request, campaignID int64, path, target string) (views.RecipientTable, error) {
	f, outcome := recipientFilter(r.URL.Query().Get("outcome"))
	page := queryPage(r)
	// Counted past the page only (issue 24: a send to 333,000), so that a
	// "more than" still knows the page's rows and whether a next one follows.
	rows, total, atLeast, err := p.db.CampaignRecipientsUpTo(r.Context(), accountID(r), campaignID, f,
		store.Page{Page: page, PerPage: emailsPerPage}, max(recipientCountCap, page*emailsPerPage+1))
	if err != nil {
		return views.RecipientTable{}, err
	}
	return views.RecipientTable{Path: path, Outcome: outcome, Rows: rows, Pager: views.Pager{Page: page, PerPage: emailsPerPage, Total: total,
		AtLeast: atLeast, Shown: len(rows), More: total > page*emailsPerPage,
		Target: target, URL: func(n int) string { return pageURL(path, url.Values{"outcome": {outcome}}, n) }}}, nil
}

// recipientFilter reads an outcome filter (opened, clicked, failed,
// skipped); anything else is every recipient ("").
func recipientFilter(outcome string) (store.RecipientFilter, string) {
	yes := true
	switch outcome {
	case "opened":
		return store.RecipientFilter{Opened: &yes}, outcome
	case "clicked":
		return store.RecipientFilter{Clicked: &yes}, outcome
	case store.RecipientFailed, store.RecipientSkipped:
		return store.RecipientFilter{Status: outcome}, outcome
	}
	return store.RecipientFilter{}, ""
}

func (p *Portal) cancelEmail(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if p.campaigns == nil {
		return errors.New("portal: sending is not configured")
	}
	if _, err := p.campaigns.CancelEmail(r.Context(), accountID(r), actor(r), id); err != nil {
		return err
	}
	p.flash(r.Context(), "success", views.TextFor(r.Context()).Emails.CancelledFlash)
	p.redirect(w, r, "/emails/"+strconv.FormatInt(id, 10))
	return nil
}

// listCampaigns is the overview of everything sent: newsletters, single
// emails (and every other kind of campaign), with their rates.
func (p *Portal) listCampaigns(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	kind := r.URL.Query().Get("kind")
	f := store.CampaignFilter{Kind: kind}
	if f.Validate() != nil {
		f.Kind, kind = "", ""
	}
	page := queryPage(r)
	items, total, err := p.db.ListCampaigns(ctx, accountID(r), f, store.Page{Page: page, PerPage: emailsPerPage})
	if err != nil {
		return err
	}
	l := views.CampaignOverview{Items: items, Kind: kind, Pager: views.Pager{Page: page, PerPage: emailsPerPage, Total: total, Target: "#campaigns",
		URL: func(n int) string { return pageURL("/campaigns", url.Values{"kind": {kind}}, n) }}}
	s := p.shell(r, views.TextFor(ctx).Campaigns.Title, views.NavCampaigns)
	p.page(w, r, http.StatusOK, views.CampaignsPage(s, l), views.CampaignSection(l))
	return nil
}
