package portal

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/abtest"
	"github.com/rundbrief/rundbrief/views"
)

// The A/B test pages use the same services as /v1/ab-tests: the store's A/B
// methods for results, and store/abtest for every change: drafts, the winner and
// stopping (it wakes the send workers for released recipients).

// abPerPage is the number of tests per page.
const abPerPage = 25

// errNoABTests means the process was started without the A/B service.
var errNoABTests = errors.New("portal: no a/b test service")

func (p *Portal) abService() (*abtest.Service, error) {
	if p.abTests == nil {
		return nil, errNoABTests
	}
	return p.abTests, nil
}

// needAB serves h only to accounts whose plan has A/B tests; others get a
// page saying so (402, as the API answers).
func (p *Portal) needAB(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return p.needPlan("ab_tests", func(t views.Text) (string, string) { return t.AB.PlanTitle, t.AB.PlanBody }, h)
}

func (p *Portal) listABTests(w http.ResponseWriter, r *http.Request) error {
	page := queryPage(r)
	tests, total, err := p.db.ABTests(r.Context(), accountID(r), store.ABFilter{}, store.Page{Page: page, PerPage: abPerPage})
	if err != nil {
		return err
	}
	l := views.ABList{Tests: tests, Pager: views.Pager{Page: page, PerPage: abPerPage, Total: total, URL: func(n int) string {
		return "/ab-tests?page=" + strconv.Itoa(n)
	}}}
	s := p.shell(r, views.TextFor(r.Context()).AB.Title, views.NavABTests)
	p.render(w, r, http.StatusOK, views.ABTestsPage(s, l))
	return nil
}

// abDrafts are the account's newsletter drafts that have no test yet.
func (p *Portal) abDrafts(r *http.Request) ([]store.Campaign, error) {
	drafts, _, err := p.db.Newsletters(r.Context(), accountID(r), store.CampaignDraft, store.Page{Page: 1, PerPage: 100})
	if err != nil {
		return nil, err
	}
	tests, _, err := p.db.ABTests(r.Context(), accountID(r), store.ABFilter{Status: "all", TargetType: store.ABTargetNewsletter},
		store.Page{Page: 1, PerPage: 100})
	if err != nil {
		return nil, err
	}
	taken := map[int64]bool{}
	for _, t := range tests {
		taken[t.TargetID] = true
	}
	out := drafts[:0]
	for _, c := range drafts {
		if !taken[c.ID] {
			out = append(out, c)
		}
	}
	return out, nil
}

func (p *Portal) newABForm(w http.ResponseWriter, r *http.Request) error {
	drafts, err := p.abDrafts(r)
	if err != nil {
		return err
	}
	f := views.ABForm{Drafts: drafts, CampaignID: r.URL.Query().Get("newsletter"), TestType: store.ABTypeSubject,
		Mode: store.ABModeSplit, SplitA: "50", SamplePct: "20", WaitHours: "4", AutoApply: true, Errors: map[string]string{}}
	p.renderABForm(w, r, http.StatusOK, f)
	return nil
}

func (p *Portal) renderABForm(w http.ResponseWriter, r *http.Request, status int, f views.ABForm) {
	p.abPreviews(r, &f)
	s := p.shell(r, views.TextFor(r.Context()).AB.NewTitle, views.NavABTests)
	p.render(w, r, status, views.ABFormPage(s, f))
}

// readABForm reads the form into the view's values and the store's input;
// numbers that are no integers are field errors.
func readABForm(r *http.Request, f views.ABForm) (views.ABForm, store.ABInput) {
	t := views.TextFor(r.Context()).AB
	v := func(name string) string { return strings.TrimSpace(r.PostFormValue(name)) }
	f.CampaignID, f.Name, f.TestType, f.Mode, f.Metric = v("campaign_id"), v("name"), v("test_type"), v("mode"), v("winner_metric")
	f.SplitA, f.SamplePct, f.WaitHours = v("split_a"), v("sample_pct"), v("wait_hours")
	f.BSubject, f.BPreheader, f.BFromName = v("b_subject"), v("b_preheader"), v("b_from_name")
	bHTML := abVariantHTML(r, &f)
	f.AutoApply = r.PostFormValue("auto_apply_winner") != ""
	f.Errors = map[string]string{}
	in := store.ABInput{TestType: &f.TestType, Mode: &f.Mode, AutoApplyWinner: &f.AutoApply,
		BSubject: &f.BSubject, BPreheader: &f.BPreheader, BFromName: &f.BFromName, BHTML: &bHTML}
	if f.Name != "" {
		in.Name = &f.Name
	}
	if f.Metric != "" {
		in.WinnerMetric = &f.Metric
	}
	if id, err := strconv.ParseInt(f.CampaignID, 10, 64); err == nil {
		in.CampaignID = &id
	} else {
		f.Errors["campaign_id"] = t.TargetHint
	}
	for _, n := range []struct {
		name string
		raw  string
		dst  **int
	}{{"split_a", f.SplitA, &in.SplitA}, {"sample_pct", f.SamplePct, &in.SamplePct}, {"wait_hours", f.WaitHours, &in.WaitHours}} {
		if n.raw == "" {
			continue
		}
		i, err := strconv.Atoi(n.raw)
		if err != nil {
			f.Errors[n.name] = t.NotANumber
			continue
		}
		*n.dst = &i
	}
	return f, in
}

func (p *Portal) createABTest(w http.ResponseWriter, r *http.Request) error {
	if err := parseFormMax(w, r, maxNewsletterForm); err != nil { // variant B's content may be large
		return err
	}
	drafts, err := p.abDrafts(r)
	if err != nil {
		return err
	}
	f, in := readABForm(r, views.ABForm{Drafts: drafts})
	if len(f.Errors) > 0 {
		p.renderABForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	ab, err := p.abTests.CreateABTest(r.Context(), accountID(r), actor(r), in)
	var ce *store.ConflictError
	switch {
	case fieldErrors(err, f.Errors):
		for _, k := range []string{"target_type", "target_id"} {
			if msg, ok := f.Errors[k]; ok {
				delete(f.Errors, k)
				f.Errors["campaign_id"] = msg
			}
		}
		p.renderABForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	case errors.As(err, &ce), errors.Is(err, store.ErrNotFound):
		f.Alert = views.TextFor(r.Context()).AB.TargetHint
		if ce != nil {
			f.Alert = ce.Message
		}
		f.Errors["campaign_id"] = f.Alert
		p.renderABForm(w, r, http.StatusConflict, f)
		return nil
	case err != nil:
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).AB.CreatedFlash, ab.Name))
	p.redirect(w, r, "/ab-tests/"+strconv.FormatInt(ab.ID, 10))
	return nil
}

func (p *Portal) abTest(r *http.Request) (store.ABTest, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return store.ABTest{}, err
	}
	return p.db.ABTest(r.Context(), accountID(r), id)
}

// showABTest is the results page; htmx polling gets the results section only.
func (p *Portal) showABTest(w http.ResponseWriter, r *http.Request) error {
	ab, err := p.abTest(r)
	if err != nil {
		return err
	}
	res, err := p.db.ABResults(r.Context(), ab)
	if err != nil {
		return err
	}
	d := views.ABDetail{Test: ab, Results: res}
	s := p.shell(r, ab.Name, views.NavABTests)
	p.page(w, r, http.StatusOK, views.ABTestPage(s, d), views.ABResultsSection(d))
	return nil
}

func (p *Portal) setABWinner(w http.ResponseWriter, r *http.Request) error {
	ab, err := p.abTest(r)
	if err != nil {
		return err
	}
	svc, err := p.abService()
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	t := views.TextFor(r.Context()).AB
	res, err := svc.SetWinner(r.Context(), accountID(r), actor(r), ab.ID, r.PostFormValue("variant"))
	if err := p.abConflict(r, err); err != nil {
		return err
	}
	if err == nil {
		msg := sprintf(t.WinnerFlash, res.Winner, res.Released)
		if res.Copied {
			msg += " " + t.CopiedFlash
		}
		p.flash(r.Context(), "success", msg)
	}
	p.redirect(w, r, "/ab-tests/"+strconv.FormatInt(ab.ID, 10))
	return nil
}

// abConflict turns a conflict (the test is no longer running) into an error
// flash on the test's page; other errors are returned.
func (p *Portal) abConflict(r *http.Request, err error) error {
	var ce *store.ConflictError
	var ve *store.ValidationError
	switch {
	case errors.As(err, &ce):
		p.flash(r.Context(), "error", ce.Message)
		return nil
	case errors.As(err, &ve):
		for _, msg := range ve.Fields {
			p.flash(r.Context(), "error", msg)
		}
		return nil
	}
	return err
}

func (p *Portal) stopABTest(w http.ResponseWriter, r *http.Request) error {
	ab, err := p.abTest(r)
	if err != nil {
		return err
	}
	svc, err := p.abService()
	if err != nil {
		return err
	}
	_, released, err := svc.Stop(r.Context(), accountID(r), actor(r), ab.ID)
	if err := p.abConflict(r, err); err != nil {
		return err
	}
	if err == nil {
		p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).AB.StoppedFlash, released))
	}
	p.redirect(w, r, "/ab-tests/"+strconv.FormatInt(ab.ID, 10))
	return nil
}

func (p *Portal) deleteABTest(w http.ResponseWriter, r *http.Request) error {
	ab, err := p.abTest(r)
	if err != nil {
		return err
	}
	err = p.abTests.DeleteABTest(r.Context(), accountID(r), actor(r), ab.ID)
	if err := p.abConflict(r, err); err != nil {
		return err
	}
	if err != nil {
		p.redirect(w, r, "/ab-tests/"+strconv.FormatInt(ab.ID, 10))
		return nil
	}
	p.flash(r.Context(), "success", views.TextFor(r.Context()).AB.DeletedFlash)
	p.redirect(w, r, "/ab-tests")
	return nil
}

// abVariantHTML reads variant B's content from the shared editor (b_format,
// b_content, b_content_rich) into f and returns it as the test's b_html:
// Markdown rendered, HTML as typed, rich text with its marker (the store
// sanitises it). A form without the editor (the API's field name) posts
// b_html itself.
func abVariantHTML(r *http.Request, f *views.ABForm) string {
	form := r.PostForm
	if _, ok := form["b_format"]; !ok {
		f.BFormat, f.BContent = views.FormatHTML, form.Get("b_html")
		f.BRich = f.BContent
		return f.BContent
	}
	f.BFormat, f.BContent, f.BRich = readEditorContent(form, "b_content", "b_format")
	return abFormHTML(f)
}

// previewABTest renders variants A and B side by side from the form as it is
// typed (htmx), without saving anything.
func (p *Portal) previewABTest(w http.ResponseWriter, r *http.Request) error {
	if err := parseFormMax(w, r, maxNewsletterForm); err != nil {
		return err
	}
	f, _ := readABForm(r, views.ABForm{})
	p.abPreviews(r, &f)
	p.render(w, r, http.StatusOK, views.ABPreviews(f.PreviewA, f.PreviewB))
	return nil
}

// abPreviews renders the chosen draft as variant A and, with the changes
// of the chosen test type, as variant B (store.ABTest.ApplyB, as the send
// does).
func (p *Portal) abPreviews(r *http.Request, f *views.ABForm) {
	empty := views.NewsletterPreview{Empty: true}
	f.PreviewA, f.PreviewB = empty, empty
	id, err := strconv.ParseInt(f.CampaignID, 10, 64)
	if err != nil {
		return
	}
	c, err := p.db.Newsletter(r.Context(), accountID(r), id)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			p.log.Warn("a/b preview", "err", err)
		}
		return
	}
	nonEmpty := func(s string) *string {
		if strings.TrimSpace(s) == "" {
			return nil
		}
		return &s
	}
	var b store.ABTest
	types := map[string][]string{store.ABTypeSubject: {"subject"}, store.ABTypeSender: {"sender"}, store.ABTypeContent: {"content"},
		store.ABTypeDesign: {"content"}, store.ABTypeCombo: {"subject", "sender", "content"}}
	for _, part := range types[f.TestType] {
		switch part {
		case "subject":
			b.BSubject, b.BPreheader = nonEmpty(f.BSubject), nonEmpty(f.BPreheader)
		case "sender":
			b.BFromName = nonEmpty(f.BFromName)
		case "content":
			if h := abFormHTML(f); h != "" {
				if store.IsRichText(h) {
					h = store.SanitizeRichText(h)
				}
				b.BHTML = &h
			}
		}
	}
	f.PreviewA, f.PreviewB = p.preview(r, c, ""), p.preview(r, b.ApplyB(c), "")
}

// abFormHTML is variant B's content of f as b_html.
func abFormHTML(f *views.ABForm) string {
	html, markdown, _ := editorInput(f.BFormat, f.BContent, f.BRich)
	if *markdown == "" {
		return *html
	}
	out, err := mailer.MarkdownToHTML(*markdown)
	if err != nil { // goldmark does not fail on text; keep the source rather than lose it
		return *markdown
	}
	return out
}
