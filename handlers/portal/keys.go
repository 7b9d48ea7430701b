package portal

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// The API keys pages use the same store services as `rundbrief key …`: CreateKey,
// RenewKey, RevokeKey, UpdateKey and Keys, always with the signed-in account.

func (p *Portal) listKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := p.db.Keys(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	s := p.shell(r, views.TextFor(r.Context()).Keys.Title, views.NavAPIKeys)
	p.render(w, r, http.StatusOK, views.KeysPage(s, keys, p.popNewKey(r.Context())))
	return nil
}

func (p *Portal) newKeyForm(w http.ResponseWriter, r *http.Request) error {
	p.renderKeyForm(w, r, http.StatusOK, p.blankKeyForm(r))
	return nil
}

func (p *Portal) createKey(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	f, settings := readKeyForm(r, p.blankKeyForm(r))
	if len(f.Errors) > 0 {
		p.renderKeyForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	k, full, err := p.db.CreateKey(r.Context(), accountID(r), settings)
	var le *store.LimitError
	switch {
	case fieldErrors(err, f.Errors):
		p.renderKeyForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	case errors.As(err, &le):
		f.Alert = sprintf(views.TextFor(r.Context()).Keys.LimitReached, le.Max)
		p.renderKeyForm(w, r, http.StatusConflict, f)
		return nil
	case err != nil:
		return err
	}
	if err := p.putNewKey(r.Context(), full, k); err != nil {
		return err
	}
	p.redirect(w, r, "/api-keys")
	return nil
}

func (p *Portal) editKeyForm(w http.ResponseWriter, r *http.Request) error {
	k, err := p.activeKey(r)
	if err != nil {
		return err
	}
	p.renderKeyForm(w, r, http.StatusOK, editKeyForm(r, k))
	return nil
}

func (p *Portal) updateKey(w http.ResponseWriter, r *http.Request) error {
	k, err := p.activeKey(r)
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	f, settings := readKeyForm(r, editKeyForm(r, k))
	if len(f.Errors) > 0 {
		p.renderKeyForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	k, err = p.db.UpdateKey(r.Context(), accountID(r), k.ID, settings)
	if fieldErrors(err, f.Errors) {
		p.renderKeyForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Keys.UpdatedFlash, displayName(r, k)))
	p.redirect(w, r, "/api-keys")
	return nil
}

// confirmKey asks before action (views.KeyRenew or views.KeyRevoke): inline in the
// list for htmx, as a page of its own without JavaScript.
func (p *Portal) confirmKey(action string) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		k, err := p.activeKey(r)
		if err != nil {
			return err
		}
		s := p.shell(r, views.TextFor(r.Context()).Keys.Title, views.NavAPIKeys)
		p.page(w, r, http.StatusOK, views.KeyConfirmPage(s, k, action), views.KeyConfirmRow(k, action))
		return nil
	}
}

// revokeKey revokes a key at once; htmx gets the key's new row and the message.
func (p *Portal) revokeKey(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := p.db.RevokeKey(r.Context(), accountID(r), id); err != nil {
		return err
	}
	k, err := p.key(r, id)
	if err != nil {
		return err
	}
	msg := sprintf(views.TextFor(r.Context()).Keys.RevokedFlash, displayName(r, k))
	if isHTMX(r) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := views.KeyRow(k).Render(r.Context(), w); err != nil {
			return err
		}
		return views.FlashRegion(&views.Flash{Kind: "success", Message: msg}, true).Render(r.Context(), w)
	}
	p.flash(r.Context(), "success", msg)
	p.redirect(w, r, "/api-keys")
	return nil
}

// renewKey replaces a key by a new one with the same settings; the list shows the
// new key once.
func (p *Portal) renewKey(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	k, full, err := p.db.RenewKey(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	if err := p.putNewKey(r.Context(), full, k); err != nil {
		return err
	}
	p.redirect(w, r, "/api-keys")
	return nil
}

// key finds one of the signed-in account's keys (Keys filters on the account, so
// another account's id is not found).
func (p *Portal) key(r *http.Request, id int64) (store.APIKey, error) {
	keys, err := p.db.Keys(r.Context(), accountID(r))
	if err != nil {
		return store.APIKey{}, err
	}
	for _, k := range keys {
		if k.ID == id {
			return k, nil
		}
	}
	return store.APIKey{}, store.ErrNotFound
}

// activeKey is the route's key if it is not revoked.
func (p *Portal) activeKey(r *http.Request) (store.APIKey, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return store.APIKey{}, err
	}
	k, err := p.key(r, id)
	if err == nil && k.RevokedAt != nil {
		return store.APIKey{}, store.ErrNotFound
	}
	return k, err
}

// newKeyPurpose is the putOnce purpose of a new key's full value.
const newKeyPurpose = "portal.new_api_key"

// putNewKey keeps a new key's full value until the list has shown it once.
func (p *Portal) putNewKey(ctx context.Context, full string, k store.APIKey) error {
	return p.putOnce(ctx, newKeyPurpose, full, or(k.Name, views.TextFor(ctx).Keys.Unnamed))
}

func (p *Portal) popNewKey(ctx context.Context) *views.NewKey {
	full, name, ok := p.popOnce(ctx, newKeyPurpose)
	if !ok {
		return nil
	}
	return &views.NewKey{Full: full, Name: name}
}

func (p *Portal) renderKeyForm(w http.ResponseWriter, r *http.Request, status int, f views.KeyForm) {
	p.render(w, r, status, views.KeyFormPage(p.shell(r, f.Title, views.NavAPIKeys), f))
}

func (p *Portal) blankKeyForm(r *http.Request) views.KeyForm {
	t := views.TextFor(r.Context()).Keys
	return views.KeyForm{Title: t.NewTitle, Action: "/api-keys/new", Submit: t.Create}
}

func editKeyForm(r *http.Request, k store.APIKey) views.KeyForm {
	t := views.TextFor(r.Context())
	f := views.KeyForm{
		Title:          sprintf(t.Keys.EditTitle, displayName(r, k)),
		Action:         "/api-keys/" + strconv.FormatInt(k.ID, 10) + "/edit",
		Submit:         t.Common.Save,
		Name:           k.Name,
		Scopes:         k.Scopes,
		AllowedIPs:     strings.Join(k.AllowedIPs, "\n"),
		AllowedOrigins: strings.Join(k.AllowedOrigins, "\n"),
	}
	if k.RateLimit != nil {
		f.RateLimit = strconv.Itoa(*k.RateLimit)
	}
	return f
}

// readKeyForm reads the posted form into f (kept as typed, for showing it again)
// and into settings, validated: f.Errors holds every field error, the form's own
// (a rate limit that is no number) and store.KeySettings.Validate's.
func readKeyForm(r *http.Request, f views.KeyForm) (views.KeyForm, store.KeySettings) {
	t := views.TextFor(r.Context())
	form := r.PostForm
	f.Name = strings.TrimSpace(form.Get("name"))
	f.Scopes = form["scopes"]
	f.AllowedIPs = form.Get("allowed_ips")
	f.AllowedOrigins = form.Get("allowed_origins")
	f.RateLimit = strings.TrimSpace(form.Get("rate_limit"))
	f.Errors = map[string]string{}
	s := store.KeySettings{
		Name:           f.Name,
		Scopes:         f.Scopes,
		AllowedIPs:     splitList(f.AllowedIPs),
		AllowedOrigins: splitList(f.AllowedOrigins),
	}
	if f.RateLimit != "" {
		n, err := strconv.Atoi(f.RateLimit)
		if err != nil {
			f.Errors["rate_limit"] = t.Keys.RateLimitNumber
		} else {
			s.RateLimit = &n
		}
	}
	fieldErrors(s.Validate(), f.Errors)
	return f, s
}

// splitList splits a textarea into entries: one per line, commas and spaces also
// separate.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return r == '\n' || r == '\r' || r == ',' || r == ' ' || r == '\t'
	})
}

func displayName(r *http.Request, k store.APIKey) string {
	return or(k.Name, views.TextFor(r.Context()).Keys.Unnamed)
}
