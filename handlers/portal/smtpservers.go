package portal

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// The SMTP server pages use the same service as /v1/smtp-servers
// (store/smtpserver): it seals passwords, keeps hosts public and runs the
// connection test. A stored password never
// goes back to the browser: the form has no value for it, and an empty password
// field keeps the stored one.

// smtpPerPage is the number of servers per page (accounts rarely have more than a few).
const smtpPerPage = 50

func (p *Portal) listSMTPServers(w http.ResponseWriter, r *http.Request) error {
	page := queryPage(r)
	servers, total, err := p.db.SMTPServers(r.Context(), accountID(r), store.Page{Page: page, PerPage: smtpPerPage})
	if err != nil {
		return err
	}
	l := views.SMTPList{Servers: servers, DevOutbox: p.devOutboxEnabled()}
	l.Pager = views.Pager{Page: page, PerPage: smtpPerPage, Total: total, URL: func(n int) string {
		return "/smtp-servers?page=" + strconv.Itoa(n)
	}}
	s := p.shell(r, views.TextFor(r.Context()).SMTP.Title, views.NavSMTP)
	p.render(w, r, http.StatusOK, views.SMTPServersPage(s, l))
	return nil
}

func (p *Portal) newSMTPForm(w http.ResponseWriter, r *http.Request) error {
	f := p.blankSMTPForm(r)
	// The first server becomes the default anyway; say so by ticking the box.
	_, total, err := p.db.SMTPServers(r.Context(), accountID(r), store.Page{Page: 1, PerPage: 1})
	if err != nil {
		return err
	}
	f.IsDefault = total == 0
	p.renderSMTPForm(w, r, http.StatusOK, f)
	return nil
}

func (p *Portal) createSMTPServer(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	f, settings, password := readSMTPForm(r, p.blankSMTPForm(r))
	if len(f.Errors) > 0 {
		p.renderSMTPForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	// The box is always sent: the new form ticks it for an account's first server.
	in := store.NewSMTPServer{SMTPServerSettings: settings, Password: password, IsDefault: &f.IsDefault}
	srv, err := p.smtpServers.Create(r.Context(), accountID(r), in)
	if fieldErrors(err, f.Errors) {
		p.logHint(r, err)
		p.renderSMTPForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).SMTP.CreatedFlash, srv.Name))
	p.redirect(w, r, "/smtp-servers")
	return nil
}

func (p *Portal) editSMTPForm(w http.ResponseWriter, r *http.Request) error {
	srv, err := p.smtpServer(r)
	if err != nil {
		return err
	}
	p.renderSMTPForm(w, r, http.StatusOK, editSMTPForm(r, srv))
	return nil
}

func (p *Portal) updateSMTPServer(w http.ResponseWriter, r *http.Request) error {
	srv, err := p.smtpServer(r)
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	f, settings, password := readSMTPForm(r, editSMTPForm(r, srv))
	if len(f.Errors) > 0 {
		p.renderSMTPForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	patch := store.SMTPServerPatch{
		Name: &settings.Name, Host: &settings.Host, Port: &settings.Port, Username: &settings.Username,
		Encryption: &settings.Encryption, FromEmail: &settings.FromEmail, FromName: &settings.FromName,
		RatePerSecond: &settings.RatePerSecond, IsDefault: &f.IsDefault,
	}
	switch {
	case password != "": // a new password replaces the stored one
		patch.Password = &password
	case f.RemovePassword:
		patch.Password = new(string) // "" removes it
	}
	srv, err = p.smtpServers.Update(r.Context(), accountID(r), srv.ID, patch)
	if fieldErrors(err, f.Errors) {
		p.logHint(r, err)
		p.renderSMTPForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).SMTP.UpdatedFlash, srv.Name))
	p.redirect(w, r, "/smtp-servers")
	return nil
}

// confirmDeleteSMTP asks before deleting: inline in the list for htmx, as a page
// of its own without JavaScript.
func (p *Portal) confirmDeleteSMTP(w http.ResponseWriter, r *http.Request) error {
	srv, err := p.smtpServer(r)
	if err != nil {
		return err
	}
	t := views.TextFor(r.Context()).SMTP
	c := views.Confirm{
		ID: views.SMTPRowID(srv.ID), Question: sprintf(t.DeleteQuestion, srv.Name), Detail: t.DeleteDetail,
		Action: "/smtp-servers/" + strconv.FormatInt(srv.ID, 10) + "/delete", Label: t.Delete, Danger: true,
		Cancel: "/smtp-servers", TestID: "confirm-delete",
	}
	if srv.IsDefault {
		c.Detail = t.DeleteDefaultDetail
	}
	s := p.shell(r, t.Title, views.NavSMTP)
	p.page(w, r, http.StatusOK, views.AdminConfirmPage(s, t.Title, c), views.ConfirmRow(views.SMTPRowID(srv.ID), 6, c))
	return nil
}

func (p *Portal) deleteSMTPServer(w http.ResponseWriter, r *http.Request) error {
	srv, err := p.smtpServer(r)
	if err != nil {
		return err
	}
	if err := p.smtpServers.Delete(r.Context(), accountID(r), srv.ID); err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).SMTP.DeletedFlash, srv.Name))
	p.redirect(w, r, "/smtp-servers")
	return nil
}

// testSMTPServer runs the connection test (connect, TLS, AUTH) and shows the
// German result: htmx puts it into the server's row, without JavaScript it comes
// back as the flash of the list.
func (p *Portal) testSMTPServer(w http.ResponseWriter, r *http.Request) error {
	srv, err := p.smtpServer(r)
	if err != nil {
		return err
	}
	res, err := p.smtpServers.Test(r.Context(), accountID(r), srv.ID)
	if err != nil {
		return err
	}
	if isHTMX(r) {
		p.render(w, r, http.StatusOK, views.SMTPTestResult(res))
		return nil
	}
	kind, msg := "success", res.Message
	if !res.OK {
		kind = "error"
		if res.Detail != "" {
			msg += " (" + res.Detail + ")"
		}
	}
	p.flash(r.Context(), kind, srv.Name+": "+msg)
	p.redirect(w, r, "/smtp-servers")
	return nil
}

// smtpServer is the route's server of the signed-in account (another account's
// id is not found).
func (p *Portal) smtpServer(r *http.Request) (store.SMTPServer, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return store.SMTPServer{}, err
	}
	return p.db.SMTPServer(r.Context(), accountID(r), id)
}

func (p *Portal) renderSMTPForm(w http.ResponseWriter, r *http.Request, status int, f views.SMTPForm) {
	p.render(w, r, status, views.SMTPFormPage(p.shell(r, f.Title, views.NavSMTP), f))
}

func (p *Portal) blankSMTPForm(r *http.Request) views.SMTPForm {
	t := views.TextFor(r.Context()).SMTP
	return views.SMTPForm{Title: t.NewTitle, Action: "/smtp-servers/new", Submit: t.Create, Encryption: store.EncryptionSTARTTLS}
}

func editSMTPForm(r *http.Request, srv store.SMTPServer) views.SMTPForm {
	t := views.TextFor(r.Context())
	f := views.SMTPForm{
		Title:       sprintf(t.SMTP.EditTitle, srv.Name),
		Action:      "/smtp-servers/" + strconv.FormatInt(srv.ID, 10) + "/edit",
		Submit:      t.Common.Save,
		Edit:        true,
		HasPassword: srv.HasPassword,
		Name:        srv.Name, Host: srv.Host, Port: strconv.Itoa(srv.Port), Encryption: srv.Encryption,
		Username: srv.Username, FromEmail: srv.FromEmail, FromName: srv.FromName, IsDefault: srv.IsDefault,
	}
	if srv.RatePerSecond > 0 {
		f.RatePerSecond = strconv.Itoa(srv.RatePerSecond)
	}
	return f
}

// readSMTPForm reads the posted form into f (as typed, for showing it again, the
// password excepted) and into settings and the new password, validated with
// store.SMTPServerSettings.Validate.
func readSMTPForm(r *http.Request, f views.SMTPForm) (views.SMTPForm, store.SMTPServerSettings, string) {
	t := views.TextFor(r.Context()).SMTP
	form := r.PostForm
	f.Name = strings.TrimSpace(form.Get("name"))
	f.Host = strings.TrimSpace(form.Get("host"))
	f.Port = strings.TrimSpace(form.Get("port"))
	f.Encryption = form.Get("encryption")
	f.Username = strings.TrimSpace(form.Get("username"))
	f.FromEmail = strings.TrimSpace(form.Get("from_email"))
	f.FromName = strings.TrimSpace(form.Get("from_name"))
	f.RatePerSecond = strings.TrimSpace(form.Get("rate_per_second"))
	f.IsDefault = form.Get("is_default") != ""
	f.RemovePassword = f.HasPassword && form.Get("remove_password") != ""
	f.Errors = map[string]string{}
	password := form.Get("password")
	s := store.SMTPServerSettings{Name: f.Name, Host: f.Host, Encryption: f.Encryption, Username: f.Username,
		FromEmail: f.FromEmail, FromName: f.FromName}
	if f.Port != "" {
		n, err := strconv.Atoi(f.Port)
		if err != nil {
			f.Errors["port"] = t.PortNumber
		}
		s.Port = n
	}
	if f.RatePerSecond != "" {
		n, err := strconv.Atoi(f.RatePerSecond)
		if err != nil {
			f.Errors["rate_per_second"] = t.RateNumber
		}
		s.RatePerSecond = n
	}
	fieldErrors(s.Validate(), f.Errors)
	return f, s, password
}

// devOutboxEnabled: the outbox pages exist only in development, i.e. without an
// operator relay (RUNDBRIEF_SMTP_URL), exactly when /v1/dev/outbox does.
func (p *Portal) devOutboxEnabled() bool { return p.mail != nil && p.mail.DevOutboxEnabled() }

// outboxPerPage is the number of captured mails per page.
const outboxPerPage = 25

func (p *Portal) devOutbox(w http.ResponseWriter, r *http.Request) error {
	if !p.devOutboxEnabled() {
		return store.ErrNotFound
	}
	page := queryPage(r)
	l := views.OutboxList{}
	var err error
	l.Mails, l.Pager.Total, err = p.db.DevOutbox(r.Context(), accountID(r), store.Page{Page: page, PerPage: outboxPerPage})
	if err != nil {
		return err
	}
	l.Pager.Page, l.Pager.PerPage, l.Pager.Target = page, outboxPerPage, "#dev-outbox"
	l.Pager.URL = func(n int) string { return pageURL("/dev/outbox", nil, n) }
	s := p.shell(r, views.TextFor(r.Context()).Outbox.Title, views.NavDevOutbox)
	p.page(w, r, http.StatusOK, views.OutboxPage(s, l), views.OutboxSection(l))
	return nil
}

func (p *Portal) devOutboxMail(w http.ResponseWriter, r *http.Request) error {
	m, msg, readErr, err := p.outboxMail(r)
	if err != nil {
		return err
	}
	s := p.shell(r, views.TextFor(r.Context()).Outbox.Title, views.NavDevOutbox)
	p.render(w, r, http.StatusOK, views.OutboxMailPage(s, m, msg, readErr))
	return nil
}

// devOutboxHTML serves a captured mail's HTML part for the sandboxed frame of its
// page. The CSP sandboxes it even when opened directly: no scripts, no forms, no
// remote images (a mail's open pixel would count an open), framed only by the
// portal itself.
func (p *Portal) devOutboxHTML(w http.ResponseWriter, r *http.Request) error {
	_, msg, _, err := p.outboxMail(r)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; frame-ancestors 'self'")
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(msg.HTML))
	return nil
}

func (p *Portal) outboxMail(r *http.Request) (store.DevOutboxMail, mailer.ReadMessage, bool, error) {
	if !p.devOutboxEnabled() {
		return store.DevOutboxMail{}, mailer.ReadMessage{}, false, store.ErrNotFound
	}
	id, err := pathID(r, "id")
	if err != nil {
		return store.DevOutboxMail{}, mailer.ReadMessage{}, false, err
	}
	m, err := p.db.DevOutboxMail(r.Context(), accountID(r), id)
	if err != nil {
		return store.DevOutboxMail{}, mailer.ReadMessage{}, false, err
	}
	msg, err := mailer.ReadMail(m.Raw)
	if err != nil {
		p.log.Warn("dev outbox: unreadable mail", "id", m.ID, "err", err)
	}
	return m, msg, err != nil, nil
}
