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

// home is the public start page; signed-in users go on to their dashboard.
func (p *Portal) home(w http.ResponseWriter, r *http.Request) error {
	if p.sessions.GetInt64(r.Context(), store.SessionUserKey) != 0 {
		http.Redirect(w, r, "/dashboard", http.StatusSeeOther)
		return nil
	}
	p.render(w, r, http.StatusOK, views.Home(p.baseURL+"/v1"))
	return nil
}

func (p *Portal) signInPage(w http.ResponseWriter, r *http.Request) error {
	next := localPath(r.URL.Query().Get("next"))
	if p.sessions.GetInt64(r.Context(), store.SessionUserKey) != 0 {
		http.Redirect(w, r, or(next, "/dashboard"), http.StatusSeeOther)
		return nil
	}
	f := views.SignInForm{Next: next, Notice: p.popFlash(r.Context())}
	if f.Notice == nil && next != "" {
		f.Notice = &views.Flash{Kind: "info", Message: views.TextFor(r.Context()).Auth.SessionExpired}
	}
	p.render(w, r, http.StatusOK, views.SignInPage(f))
	return nil
}

// signIn checks the credentials under the shared throttle and starts a session
// with a new token (so a token planted before sign-in is worthless).
func (p *Portal) signIn(w http.ResponseWriter, r *http.Request) error {
	t := views.TextFor(r.Context())
	if err := parseForm(w, r); err != nil {
		return err
	}
	f := views.SignInForm{
		Email:  strings.TrimSpace(r.PostForm.Get("email")),
		Next:   localPath(r.PostForm.Get("next")),
		Errors: map[string]string{},
	}
	password := r.PostForm.Get("password")
	if f.Email == "" {
		f.Errors["email"] = t.Auth.EmailRequired
	}
	if password == "" {
		f.Errors["password"] = t.Auth.PasswordRequired
	}
	if len(f.Errors) > 0 {
		p.render(w, r, http.StatusUnprocessableEntity, views.SignInPage(f))
		return nil
	}
	u, err := p.db.SignIn(r.Context(), store.Credentials{Email: f.Email, Password: password, IP: clientIP(r)}, p.now())
	switch {
	case errors.Is(err, store.ErrLoginThrottled):
		p.log.Warn("portal sign-in throttled", "email", f.Email, "ip", clientIP(r))
		f.Alert = t.Auth.Throttled
		w.Header().Set("Retry-After", strconv.Itoa(int(store.LoginWindow.Seconds())))
		p.render(w, r, http.StatusTooManyRequests, views.SignInPage(f))
		return nil
	case errors.Is(err, store.ErrInvalidLogin):
		f.Alert = t.Auth.InvalidLogin
		p.render(w, r, http.StatusUnauthorized, views.SignInPage(f))
		return nil
	case errors.Is(err, store.ErrAccountBlocked):
		f.Alert = t.Auth.Blocked
		p.render(w, r, http.StatusForbidden, views.SignInPage(f))
		return nil
	case err != nil:
		return err
	}
	if err := p.sessions.RenewToken(r.Context()); err != nil {
		return err
	}
	p.sessions.Put(r.Context(), store.SessionUserKey, u.ID)
	p.sessions.Put(r.Context(), store.SessionAccountKey, u.AccountID)
	p.log.Info("portal sign-in", "user_id", u.ID, "account_id", u.AccountID, "ip", clientIP(r))
	p.redirect(w, r, or(f.Next, "/dashboard"))
	return nil
}

// signOut ends the session everywhere (its row is gone for every process).
func (p *Portal) signOut(w http.ResponseWriter, r *http.Request) error {
	if err := p.sessions.Destroy(r.Context()); err != nil {
		return err
	}
	p.flash(r.Context(), "success", views.TextFor(r.Context()).Auth.SignedOut)
	p.redirect(w, r, "/login")
	return nil
}

// requireUser lets only signed-in users through, with their user, account and plan
// loaded fresh from the database (a removed user or a blocked account is out at
// once). Their pages are never cached.
func (p *Portal) requireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		userID := p.sessions.GetInt64(ctx, store.SessionUserKey)
		if userID == 0 {
			p.toSignIn(w, r)
			return
		}
		v, err := p.db.Viewer(ctx, p.sessions.GetInt64(ctx, store.SessionAccountKey), userID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && v.Account.BlockedAt != nil) {
			if err := p.sessions.Destroy(ctx); err != nil {
				p.fail(w, r, err)
				return
			}
			p.toSignIn(w, r)
			return
		}
		if err != nil {
			p.fail(w, r, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r.WithContext(withViewer(ctx, v)))
	})
}

// optionalUser adds the signed-in user, if any, to the request, and lets
// everyone through (requireUser sends the signed-out to the sign-in page).
func (p *Portal) optionalUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if userID := p.sessions.GetInt64(ctx, store.SessionUserKey); userID != 0 {
			v, err := p.db.Viewer(ctx, p.sessions.GetInt64(ctx, store.SessionAccountKey), userID)
			if err == nil && v.Account.BlockedAt == nil {
				w.Header().Set("Cache-Control", "no-store")
				ctx = withViewer(ctx, v)
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// toSignIn sends a signed-out visitor to the sign-in page, which brings them back
// to the page they asked for.
func (p *Portal) toSignIn(w http.ResponseWriter, r *http.Request) {
	to := "/login"
	if r.Method == http.MethodGet && !isHTMX(r) {
		to += "?next=" + url.QueryEscape(r.URL.RequestURI())
	}
	p.redirect(w, r, to)
}

// requireAdmin lets only owners and admins through.
func (p *Portal) requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !viewer(r).User.CanManageKeys() {
			p.fail(w, r, errForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (p *Portal) passwordPage(w http.ResponseWriter, r *http.Request) error {
	s := p.shell(r, views.TextFor(r.Context()).Auth.PasswordTitle, views.NavPassword)
	p.render(w, r, http.StatusOK, views.PasswordPage(s, views.PasswordForm{MinLength: store.MinPasswordLength}))
	return nil
}

// changePassword sets a new password and signs the user out everywhere else: this
// session continues under a new token, every other one of the user ends.
func (p *Portal) changePassword(w http.ResponseWriter, r *http.Request) error {
	t := views.TextFor(r.Context())
	if err := parseForm(w, r); err != nil {
		return err
	}
	v := viewer(r)
	f := views.PasswordForm{Errors: map[string]string{}, MinLength: store.MinPasswordLength}
	change := store.PasswordChange{Current: r.PostForm.Get("current_password"), New: r.PostForm.Get("new_password"), IP: clientIP(r)}
	shell := func() views.Shell { return p.shell(r, t.Auth.PasswordTitle, views.NavPassword) }
	if change.New != r.PostForm.Get("new_password_confirm") {
		f.Errors["new_password_confirm"] = t.Auth.PasswordMismatch
		p.render(w, r, http.StatusUnprocessableEntity, views.PasswordPage(shell(), f))
		return nil
	}
	err := p.db.ChangePassword(r.Context(), v.Account.ID, v.User.ID, change, p.now())
	switch {
	case errors.Is(err, store.ErrLoginThrottled):
		f.Alert = t.Auth.PasswordThrottled
		p.render(w, r, http.StatusTooManyRequests, views.PasswordPage(shell(), f))
		return nil
	case fieldErrors(err, f.Errors):
		p.render(w, r, http.StatusUnprocessableEntity, views.PasswordPage(shell(), f))
		return nil
	case err != nil:
		return err
	}
	if err := p.sessions.RenewToken(r.Context()); err != nil {
		return err
	}
	if err := p.db.EndUserSessions(r.Context(), v.Account.ID, v.User.ID, p.now()); err != nil {
		return err
	}
	p.flash(r.Context(), "success", t.Auth.PasswordChanged)
	p.redirect(w, r, "/account/password")
	return nil
}

// or returns s, or def when s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
