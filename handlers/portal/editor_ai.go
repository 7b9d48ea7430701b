package portal

import (
	"cmp"
	"errors"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/views"
)

// The editor's AI assistant runs the actions of POST /v1/ai/generate through
// the same service (store/ai: prompts, providers, credit and ledger) on what
// the editor holds, and answers a fragment in place of #ai-result: ideas to
// take over, or a rewritten content, with the cost and the credit left.

// editorAIActions are the actions the assistant offers, and the field each
// answer goes into.
var editorAIActions = map[string]string{
	ai.ActionSubjectIdeas: "subject", ai.ActionPreheader: "preheader",
	ai.ActionImprove: "content", ai.ActionShorten: "content", ai.ActionFix: "content",
}

// editorNames are the content fields' names of the mail forms: "content"
// (newsletters) and "html" (single emails, story emails, sequence days,
// templates, which kept the name of their former textarea).
var editorNames = map[string]bool{"content": true, "html": true}

// editorPrefix is what a ContentEditor's Prefix may be.
var editorPrefix = regexp.MustCompile(`^[a-z0-9-]{0,32}$`)

// aiAssistant is the assistant of a mail form: on plans with the feature ai,
// with the account's remaining credit.
func (p *Portal) aiAssistant(r *http.Request) (views.AIAssistantView, error) {
	if viewer(r).Plan.Require("ai") != nil {
		return views.AIAssistantView{}, nil
	}
	bal, err := p.db.AIBalance(r.Context(), accountID(r))
	if err != nil {
		return views.AIAssistantView{}, err
	}
	return views.AIAssistantView{Enabled: true, Remaining: bal.Float()}, nil
}

// editorAI runs one assistant action on the posted editor form (subject,
// preheader, format, content) for the account, charged to its AI credit.
func (p *Portal) editorAI(w http.ResponseWriter, r *http.Request) error {
	if err := parseFormMax(w, r, maxNewsletterForm); err != nil {
		return err
	}
	form := r.PostForm
	t := views.TextFor(r.Context())
	action := form.Get("ai_action")
	target, ok := editorAIActions[action]
	if !ok {
		return errBadForm
	}
	name, prefix := form.Get("ai_name"), form.Get("ai_prefix")
	if name == "" {
		name = "content"
	}
	if !editorNames[name] || !editorPrefix.MatchString(prefix) {
		return errBadForm
	}
	res := views.AIAssistantResult{Action: action, Target: target, Prefix: prefix}
	// The account's AI budget of the minute, the same as the API's (every
	// attempt counts there too), before anything is charged.
	now := p.now()
	lim, err := p.db.HitAI(r.Context(), accountID(r), now)
	if err != nil {
		return err
	}
	if !lim.Allowed {
		w.Header().Set("Retry-After", strconv.Itoa(lim.RetryAfter(now)))
		res.Error = sprintf(views.ByCount(lim.RetryAfter(now), t.Editor.AI.RateLimitedOne, t.Editor.AI.RateLimited), lim.RetryAfter(now))
		p.render(w, r, http.StatusTooManyRequests, views.AIAssistantAnswer(res))
		return nil
	}
	format, content, rich := readEditorContent(form, name, editorFormatName(prefix))
	in := ai.Input{Action: action, Subject: strings.TrimSpace(form.Get("subject")), Scope: "newsletter"}
	switch format {
	case views.FormatRichText:
		in.HTML = rich
	case views.FormatHTML:
		in.HTML = content
	default:
		in.Text = content
	}
	if strings.TrimSpace(in.HTML+in.Text) == "" && target == "content" || strings.TrimSpace(in.HTML+in.Text+in.Subject) == "" {
		res.Error = t.Editor.AI.NoContent
		p.render(w, r, http.StatusUnprocessableEntity, views.AIAssistantAnswer(res))
		return nil
	}
	status := http.StatusOK
	if p.ai == nil {
		res.Error = t.Editor.AI.Unavailable
		p.render(w, r, http.StatusServiceUnavailable, views.AIAssistantAnswer(res))
		return nil
	}
	out, err := p.ai.Generate(r.Context(), accountID(r), in, "")
	var (
		ve *store.ValidationError
		ue *store.UnavailableError
		le *store.LimitError
	)
	switch {
	case err == nil:
		res.Ideas, res.Cost, res.Remaining = out.Ideas, out.Cost.Float(), out.Remaining.Float()
		res.Content = out.Text
		if out.HTML != nil {
			res.Content = *out.HTML
		}
	case errors.As(err, &ve):
		status, res.Error = http.StatusUnprocessableEntity, strings.Join(slices.Sorted(maps.Values(ve.Fields)), " ")
	case errors.As(err, &le): // the credit is spent
		status, res.Error = http.StatusPaymentRequired, t.Editor.AI.NoCredit
	case errors.As(err, &ue):
		status, res.Error = http.StatusServiceUnavailable, cmp.Or(ue.Message, t.Editor.AI.Unavailable)
	default:
		return err
	}
	p.render(w, r, status, views.AIAssistantAnswer(res))
	return nil
}
