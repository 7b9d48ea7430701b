package portal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/webhook"
	"github.com/rundbrief/rundbrief/views"
)

// The webhook pages use the same service as /v1/webhooks (webhook.Service:
// the URL must be public, changes go to the activity log with the signed-in user
// as actor) and the store's delivery log. A signing secret is shown once, the
// way a new API key is.

// errNoWebhooks means the process was started without the webhook service.
var errNoWebhooks = errors.New("portal: no webhook service")

// newSecretPurpose is the putOnce purpose of a webhook secret just created or rotated.
const newSecretPurpose = "portal.new_webhook_secret"

// deliveriesPerPage is the number of deliveries per page of the log.
const deliveriesPerPage = 25

// webhooksPerPage bounds the list (plans allow a few dozen at most).
const webhooksPerPage = 100

func (p *Portal) webhookService() (*webhook.Service, error) {
	if p.webhooks == nil {
		return nil, errNoWebhooks
	}
	return p.webhooks, nil
}

func (p *Portal) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	hooks, _, err := p.db.Webhooks(r.Context(), accountID(r), store.Page{Page: 1, PerPage: webhooksPerPage})
	if err != nil {
		return err
	}
	s := p.shell(r, views.TextFor(r.Context()).Webhooks.Title, views.NavWebhooks)
	p.render(w, r, http.StatusOK, views.WebhooksPage(s, hooks, p.popNewSecret(r.Context()), p.now()))
	return nil
}

func (p *Portal) newWebhookForm(w http.ResponseWriter, r *http.Request) error {
	f := p.blankWebhookForm(r)
	f.Events = []string{store.WebhookAllEvents}
	p.renderWebhookForm(w, r, http.StatusOK, f)
	return nil
}

func (p *Portal) createWebhook(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.webhookService()
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	f := readWebhookForm(r, p.blankWebhookForm(r))
	hook, secret, err := svc.Create(r.Context(), accountID(r), actor(r),
		store.WebhookSettings{URL: f.URL, Events: f.Events, Description: f.Description})
	var le *store.LimitError
	switch {
	case fieldErrors(err, f.Errors):
		p.logHint(r, err)
		p.renderWebhookForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	case errors.As(err, &le):
		f.Alert = sprintf(views.TextFor(r.Context()).Webhooks.LimitReached, le.Max)
		p.renderWebhookForm(w, r, http.StatusConflict, f)
		return nil
	case err != nil:
		return err
	}
	if err := p.putNewSecret(r.Context(), secret, hook.URL); err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Webhooks.CreatedFlash, hook.URL))
	p.redirect(w, r, "/webhooks")
	return nil
}

func (p *Portal) editWebhookForm(w http.ResponseWriter, r *http.Request) error {
	hook, err := p.webhook(r)
	if err != nil {
		return err
	}
	p.renderWebhookForm(w, r, http.StatusOK, editWebhookForm(r, hook))
	return nil
}

func (p *Portal) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.webhookService()
	if err != nil {
		return err
	}
	hook, err := p.webhook(r)
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	f := readWebhookForm(r, editWebhookForm(r, hook))
	patch := store.WebhookPatch{Events: &f.Events, Description: &f.Description}
	if f.URL != hook.URL { // an unchanged URL is not checked again (its host may resolve differently today)
		patch.URL = &f.URL
	}
	hook, err = svc.Update(r.Context(), accountID(r), actor(r), hook.ID, patch)
	if fieldErrors(err, f.Errors) {
		p.logHint(r, err)
		p.renderWebhookForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Webhooks.UpdatedFlash, hook.URL))
	p.redirect(w, r, "/webhooks")
	return nil
}

// setWebhookStatus pauses or resumes a webhook; htmx gets the new row and the
// message out of band.
func (p *Portal) setWebhookStatus(status string) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		svc, err := p.webhookService()
		if err != nil {
			return err
		}
		id, err := pathID(r, "id")
		if err != nil {
			return err
		}
		hook, err := svc.Update(r.Context(), accountID(r), actor(r), id, store.WebhookPatch{Status: &status})
		if err != nil {
			return err
		}
		t := views.TextFor(r.Context()).Webhooks
		msg := sprintf(t.ResumedFlash, hook.URL)
		if status == store.WebhookPaused {
			msg = sprintf(t.PausedFlash, hook.URL)
		}
		if isHTMX(r) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			if err := views.WebhookRow(hook, p.now()).Render(r.Context(), w); err != nil {
				return err
			}
			return views.FlashRegion(&views.Flash{Kind: "success", Message: msg}, true).Render(r.Context(), w)
		}
		p.flash(r.Context(), "success", msg)
		p.redirect(w, r, "/webhooks")
		return nil
	}
}

// confirmWebhook asks before rotating the secret or deleting: a row for htmx, a
// page of its own without JavaScript.
func (p *Portal) confirmWebhook(action string) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		hook, err := p.webhook(r)
		if err != nil {
			return err
		}
		t := views.TextFor(r.Context()).Webhooks
		c := views.Confirm{ID: views.WebhookRowID(hook.ID), Action: "/webhooks/" + strconv.FormatInt(hook.ID, 10) + "/" + action,
			Cancel: "/webhooks", TestID: "confirm-" + action}
		if action == "rotate" {
			c.Question, c.Detail, c.Label = sprintf(t.RotateQuestion, hook.URL), t.RotateDetail, t.RotateConfirm
		} else {
			c.Question, c.Detail, c.Label, c.Danger = sprintf(t.DeleteQuestion, hook.URL), t.DeleteDetail, t.Delete, true
		}
		s := p.shell(r, t.Title, views.NavWebhooks)
		p.page(w, r, http.StatusOK, views.AdminConfirmPage(s, t.Title, c), views.ConfirmRow(views.WebhookRowID(hook.ID), 5, c))
		return nil
	}
}

// rotateWebhookSecret replaces the secret; the list shows the new one once.
func (p *Portal) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.webhookService()
	if err != nil {
		return err
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	hook, secret, err := svc.RotateSecret(r.Context(), accountID(r), actor(r), id)
	if err != nil {
		return err
	}
	if err := p.putNewSecret(r.Context(), secret, hook.URL); err != nil {
		return err
	}
	p.redirect(w, r, "/webhooks")
	return nil
}

func (p *Portal) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.webhookService()
	if err != nil {
		return err
	}
	hook, err := p.webhook(r)
	if err != nil {
		return err
	}
	if err := svc.Delete(r.Context(), accountID(r), actor(r), hook.ID); err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Webhooks.DeletedFlash, hook.URL))
	p.redirect(w, r, "/webhooks")
	return nil
}

// webhookDeliveries is a webhook's delivery log, filtered by status and event,
// newest first; htmx (filter, paging) gets the section alone.
func (p *Portal) webhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	hook, err := p.webhook(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	l := views.DeliveryList{Webhook: hook, Filter: views.DeliveryFilter{Status: q.Get("status"), Event: q.Get("event")}}
	// Unknown values filter nothing rather than everything.
	if !slices.Contains([]string{store.DeliveryPending, store.DeliveryRetrying, store.DeliverySucceeded, store.DeliveryFailed}, l.Filter.Status) {
		l.Filter.Status = ""
	}
	if !slices.Contains(store.EventKinds(), l.Filter.Event) {
		l.Filter.Event = ""
	}
	page := queryPage(r)
	f := store.DeliveryFilter{Status: l.Filter.Status, Event: l.Filter.Event}
	ds, total, err := p.db.WebhookDeliveries(r.Context(), accountID(r), hook.ID, f, store.Page{Page: page, PerPage: deliveriesPerPage})
	if err != nil {
		return err
	}
	if l.Deliveries, err = p.withAttempts(r.Context(), ds); err != nil {
		return err
	}
	base := "/webhooks/" + strconv.FormatInt(hook.ID, 10) + "/deliveries"
	filter := url.Values{"status": {l.Filter.Status}, "event": {l.Filter.Event}}
	l.Pager = views.Pager{Page: page, PerPage: deliveriesPerPage, Total: total, Target: "#deliveries",
		URL: func(n int) string { return pageURL(base, filter, n) }}
	s := p.shell(r, views.TextFor(r.Context()).Webhooks.DeliveriesTitle, views.NavWebhooks)
	p.page(w, r, http.StatusOK, views.DeliveriesPage(s, l, p.now()), views.DeliverySection(l))
	return nil
}

// withAttempts adds every delivery's attempts (one query for the page) and its
// payload indented for reading.
func (p *Portal) withAttempts(ctx context.Context, ds []store.WebhookDelivery) ([]views.Delivery, error) {
	ids := make([]int64, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	attempts, err := p.db.WebhookAttemptsOf(ctx, accountIDOf(ctx), ids)
	if err != nil {
		return nil, err
	}
	out := make([]views.Delivery, len(ds))
	for i, d := range ds {
		out[i] = views.Delivery{WebhookDelivery: d, Log: attempts[d.ID], Pretty: prettyJSON(d.Payload)}
	}
	return out, nil
}

// accountIDOf is the signed-in account of a request's context.
func accountIDOf(ctx context.Context) int64 {
	v, _ := viewerFrom(ctx)
	return v.Account.ID
}

// testWebhook sends a sample of the chosen event at once and shows the outcome in
// the delivery log.
func (p *Portal) testWebhook(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.webhookService()
	if err != nil {
		return err
	}
	hook, err := p.webhook(r)
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	d, _, err := svc.Test(r.Context(), accountID(r), hook.ID, r.PostForm.Get("event"))
	back := "/webhooks/" + strconv.FormatInt(hook.ID, 10) + "/deliveries"
	if errs := map[string]string{}; fieldErrors(err, errs) { // an event the picker does not offer
		p.flash(r.Context(), "error", errs["event"])
		p.redirect(w, r, back)
		return nil
	}
	if err != nil {
		return err
	}
	t := views.TextFor(r.Context()).Webhooks
	p.flash(r.Context(), deliveryFlashKind(d), sprintf(t.TestSentFlash, t.DeliveryStatuses[d.Status], statusCode(d)))
	p.redirect(w, r, back)
	return nil
}

// resendDelivery makes one more attempt of a delivery at once; htmx gets the
// delivery's new rows and the message out of band.
func (p *Portal) resendDelivery(w http.ResponseWriter, r *http.Request) error {
	svc, err := p.webhookService()
	if err != nil {
		return err
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	d, attempts, err := svc.Resend(r.Context(), accountID(r), id)
	var ce *store.ConflictError
	if errors.As(err, &ce) { // another attempt holds it right now: say so, change nothing
		if isHTMX(r) {
			w.Header().Set("HX-Reswap", "none")
			p.render(w, r, http.StatusOK, views.FlashRegion(&views.Flash{Kind: "warning", Message: ce.Message}, true))
			return nil
		}
		p.flash(r.Context(), "warning", ce.Message)
		p.redirect(w, r, "/webhooks")
		return nil
	}
	if err != nil {
		return err
	}
	t := views.TextFor(r.Context()).Webhooks
	msg := sprintf(t.ResentFlash, t.DeliveryStatuses[d.Status]+", "+t.ResponseCode+" "+statusCode(d))
	if isHTMX(r) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := views.DeliveryRows(views.Delivery{WebhookDelivery: d, Log: attempts, Pretty: prettyJSON(d.Payload)}).Render(r.Context(), w); err != nil {
			return err
		}
		return views.FlashRegion(&views.Flash{Kind: deliveryFlashKind(d), Message: msg}, true).Render(r.Context(), w)
	}
	p.flash(r.Context(), deliveryFlashKind(d), msg)
	p.redirect(w, r, "/webhooks/"+strconv.FormatInt(d.WebhookID, 10)+"/deliveries")
	return nil
}

func deliveryFlashKind(d store.WebhookDelivery) string {
	if d.Status == store.DeliverySucceeded {
		return "success"
	}
	return "error"
}

func statusCode(d store.WebhookDelivery) string {
	if d.LastStatusCode == nil {
		return "–"
	}
	return strconv.Itoa(*d.LastStatusCode)
}

// prettyJSON indents a payload; anything that is not JSON stays as it is.
func prettyJSON(s string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(s), "", "  "); err != nil {
		return s
	}
	return b.String()
}

// webhook is the route's webhook of the signed-in account (another account's id
// is not found).
func (p *Portal) webhook(r *http.Request) (store.Webhook, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return store.Webhook{}, err
	}
	return p.db.Webhook(r.Context(), accountID(r), id)
}

func (p *Portal) renderWebhookForm(w http.ResponseWriter, r *http.Request, status int, f views.WebhookForm) {
	p.render(w, r, status, views.WebhookFormPage(p.shell(r, f.Title, views.NavWebhooks), f))
}

func (p *Portal) blankWebhookForm(r *http.Request) views.WebhookForm {
	t := views.TextFor(r.Context()).Webhooks
	return views.WebhookForm{Title: t.NewTitle, Action: "/webhooks/new", Submit: t.Create}
}

func editWebhookForm(r *http.Request, h store.Webhook) views.WebhookForm {
	t := views.TextFor(r.Context())
	return views.WebhookForm{
		Title: sprintf(t.Webhooks.EditTitle, h.URL), Action: "/webhooks/" + strconv.FormatInt(h.ID, 10) + "/edit", Submit: t.Common.Save,
		URL: h.URL, Events: h.Events, Description: h.Description,
	}
}

// readWebhookForm reads the posted form into f; "all events" wins over single ones.
func readWebhookForm(r *http.Request, f views.WebhookForm) views.WebhookForm {
	f.URL = strings.TrimSpace(r.PostForm.Get("url"))
	f.Description = strings.TrimSpace(r.PostForm.Get("description"))
	f.Events = r.PostForm["events"]
	if slices.Contains(f.Events, store.WebhookAllEvents) {
		f.Events = []string{store.WebhookAllEvents}
	}
	if f.Events == nil {
		f.Events = []string{} // none chosen: the store's "at least one" message
	}
	f.Errors = map[string]string{}
	return f
}

// putNewSecret keeps a new secret until the list has shown it once.
func (p *Portal) putNewSecret(ctx context.Context, secret, hookURL string) error {
	return p.putOnce(ctx, newSecretPurpose, secret, hookURL)
}

func (p *Portal) popNewSecret(ctx context.Context) *views.NewSecret {
	secret, hookURL, ok := p.popOnce(ctx, newSecretPurpose)
	if !ok {
		return nil
	}
	return &views.NewSecret{Value: secret, URL: hookURL}
}
