package portal

import (
	"context"
	"errors"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// The templates pages (the account's templates and the library gallery, the
// editor with live preview), the attachments manager and the sender settings
// call the same store methods as /v1/templates, /v1/attachments and
// /v1/account/settings; previews render through store/campaign like the
// newsletter editor's.

// maxTemplateForm bounds a template form: 2 MB of HTML and the other fields.
const maxTemplateForm = store.MaxHTMLBytes + 64<<10

// maxPickerTemplates bounds the templates and attachments the editors offer.
const maxPickerTemplates = 100

func (p *Portal) templatesPage(w http.ResponseWriter, r *http.Request) error {
	mine, _, err := p.db.Templates(r.Context(), accountID(r), store.Page{Page: 1, PerPage: maxPickerTemplates})
	if err != nil {
		return err
	}
	v := views.TemplatesView{Mine: mine}
	t := views.TextFor(r.Context()).Templates
	for _, d := range store.LibraryDesigns() {
		pv := p.templatePreview(r, store.Template{Subject: d.Subject, Preheader: d.Preheader, HTML: d.HTML}, t.SampleContent)
		v.Library = append(v.Library, views.LibraryCard{Design: d, Preview: pv.HTML})
	}
	p.render(w, r, http.StatusOK, views.TemplatesPage(p.shell(r, t.Title, views.NavTemplates), v))
	return nil
}

// templatePreview renders a template for the sample contact, a layout with a
// sample content in its slot.
func (p *Portal) templatePreview(r *http.Request, tp store.Template, sample string) views.NewsletterPreview {
	html := tp.HTML
	if start, end := store.LayoutSlot(html); start >= 0 {
		html = html[:start] + "<p>" + sample + "</p>" + html[end:]
	}
	subject := tp.Subject
	if subject == "" {
		subject = tp.Name
	}
	c := store.Campaign{AccountID: accountID(r), Kind: store.KindNewsletter, Type: store.TypeNewsletter,
		Subject: subject, Preheader: tp.Preheader, HTML: html}
	return p.preview(r, c, "")
}

func (p *Portal) newTemplateForm(w http.ResponseWriter, r *http.Request) error {
	t := views.TextFor(r.Context()).Templates
	f := views.TemplateForm{Title: t.NewTitle, Action: "/templates/new", Errors: map[string]string{},
		HTML: "<!DOCTYPE html>\n<html lang=\"de\">\n<body>\n{{inhalt}}\n<p>{{impressum}}</p>\n</body>\n</html>\n"}
	f.Editor = storedMailEditor("", f.HTML, "")
	f.Preview = p.templatePreview(r, store.Template{HTML: f.HTML}, t.SampleContent)
	return p.renderTemplateForm(w, r, http.StatusOK, f)
}

// renderTemplateForm shows the template editor with the account's custom
// fields in the placeholder picker.
func (p *Portal) renderTemplateForm(w http.ResponseWriter, r *http.Request, status int, f views.TemplateForm) error {
	var err error
	if f.Editor.Fields, err = p.db.ContactFields(r.Context(), accountID(r)); err != nil {
		return err
	}
	p.render(w, r, status, views.TemplateEditorPage(p.shell(r, f.Title, views.NavTemplates), f))
	return nil
}

func readTemplateForm(r *http.Request, f *views.TemplateForm) store.TemplateInput {
	form := r.PostForm
	f.Key, f.Name = strings.TrimSpace(form.Get("key")), strings.TrimSpace(form.Get("name"))
	f.Subject, f.Preheader = form.Get("subject"), form.Get("preheader")
	var markdown string
	f.Editor, f.HTML, markdown = postedMailEditor(form, "")
	if markdown != "" {
		// A template has HTML only: Markdown is stored as the HTML it renders
		// to, and opens as HTML again.
		if h, err := mailer.MarkdownToHTML(markdown); err == nil {
			f.HTML = h
		}
	}
	if store.IsRichText(f.HTML) {
		f.HTML = store.SanitizeRichText(f.HTML) // the store sanitises it too; the preview shows what it keeps
	}
	return store.TemplateInput{Key: &f.Key, Name: &f.Name, Subject: &f.Subject, Preheader: &f.Preheader, HTML: &f.HTML}
}

func (p *Portal) createTemplate(w http.ResponseWriter, r *http.Request) error {
	if err := parseFormMax(w, r, maxTemplateForm); err != nil {
		return err
	}
	t := views.TextFor(r.Context()).Templates
	f := views.TemplateForm{Title: t.NewTitle, Action: "/templates/new", Errors: map[string]string{}}
	tp, err := p.db.CreateTemplate(r.Context(), accountID(r), actor(r), readTemplateForm(r, &f))
	if p.templateFormErrors(w, r, err, &f) {
		return nil
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(t.SavedFlash, tp.Name))
	p.redirect(w, r, views.TemplateURL(tp.ID, ""))
	return nil
}

// templateFormErrors shows a refused save next to its fields (or above the
// form for a conflict) and reports whether it did.
func (p *Portal) templateFormErrors(w http.ResponseWriter, r *http.Request, err error, f *views.TemplateForm) bool {
	var ce *store.ConflictError
	switch {
	case fieldErrors(err, f.Errors):
	case errors.As(err, &ce):
		f.Alert = ce.Message
	default:
		return false
	}
	f.Preview = p.templatePreview(r, store.Template{Subject: f.Subject, Preheader: f.Preheader, HTML: f.HTML, Name: f.Name},
		views.TextFor(r.Context()).Templates.SampleContent)
	if err := p.renderTemplateForm(w, r, http.StatusUnprocessableEntity, *f); err != nil {
		p.log.Error("portal: template form", "err", err)
	}
	return true
}

func templateID(r *http.Request) (int64, error) { return pathID(r, "id") }

func (p *Portal) editTemplateForm(w http.ResponseWriter, r *http.Request) error {
	id, err := templateID(r)
	if err != nil {
		return err
	}
	tp, err := p.db.Template(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	t := views.TextFor(r.Context()).Templates
	f := views.TemplateForm{ID: tp.ID, Title: sprintf(t.EditTitle, tp.Name), Action: views.TemplateURL(tp.ID, ""),
		Key: tp.Key, Name: tp.Name, Subject: tp.Subject, Preheader: tp.Preheader, HTML: tp.HTML, Errors: map[string]string{}}
	f.Editor = storedMailEditor("", tp.HTML, "")
	f.Preview = p.templatePreview(r, tp, t.SampleContent)
	return p.renderTemplateForm(w, r, http.StatusOK, f)
}

func (p *Portal) saveTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := templateID(r)
	if err != nil {
		return err
	}
	if err := parseFormMax(w, r, maxTemplateForm); err != nil {
		return err
	}
	t := views.TextFor(r.Context()).Templates
	f := views.TemplateForm{ID: id, Action: views.TemplateURL(id, ""), Errors: map[string]string{}}
	in := readTemplateForm(r, &f)
	f.Title = sprintf(t.EditTitle, f.Name)
	tp, err := p.db.UpdateTemplate(r.Context(), accountID(r), actor(r), id, in)
	if p.templateFormErrors(w, r, err, &f) {
		return nil
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(t.SavedFlash, tp.Name))
	p.redirect(w, r, views.TemplateURL(tp.ID, ""))
	return nil
}

// previewTemplate is the editor's live preview (htmx).
func (p *Portal) previewTemplate(w http.ResponseWriter, r *http.Request) error {
	if err := parseFormMax(w, r, maxTemplateForm); err != nil {
		return err
	}
	var f views.TemplateForm
	readTemplateForm(r, &f)
	pv := p.templatePreview(r, store.Template{Name: f.Name, Subject: f.Subject, Preheader: f.Preheader, HTML: f.HTML},
		views.TextFor(r.Context()).Templates.SampleContent)
	p.render(w, r, http.StatusOK, views.NewsletterPreviewFrame(pv))
	return nil
}

func (p *Portal) deleteTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := templateID(r)
	if err != nil {
		return err
	}
	tp, err := p.db.Template(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	var ce *store.ConflictError
	switch err := p.db.DeleteTemplate(r.Context(), accountID(r), actor(r), id); {
	case errors.As(err, &ce):
		p.flash(r.Context(), "error", ce.Message)
	case err != nil:
		return err
	default:
		p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Templates.DeletedFlash, tp.Name))
	}
	p.redirect(w, r, "/templates")
	return nil
}

func (p *Portal) copyLibraryDesign(w http.ResponseWriter, r *http.Request) error {
	key := chi.URLParam(r, "key")
	d, ok := store.LibraryDesign(key)
	if !ok {
		return store.ErrNotFound
	}
	tp, err := p.db.CopyLibraryTemplate(r.Context(), accountID(r), actor(r), key)
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Templates.CopiedFlash, d.Name, tp.Key))
	p.redirect(w, r, views.TemplateURL(tp.ID, ""))
	return nil
}

// attachmentsPage is the attachments manager.
func (p *Portal) attachmentsPage(w http.ResponseWriter, r *http.Request) error {
	items, _, err := p.db.Attachments(r.Context(), accountID(r), store.Page{Page: 1, PerPage: maxPickerTemplates})
	if err != nil {
		return err
	}
	u, err := p.db.Usage(r.Context(), accountID(r), p.now())
	if err != nil {
		return err
	}
	v := views.AttachmentsView{Items: items, StorageUsed: u.StorageBytes, StorageLimit: viewer(r).Plan.MaxStorageBytes}
	t := views.TextFor(r.Context()).Templates
	p.render(w, r, http.StatusOK, views.AttachmentsPage(p.shell(r, t.AttTitle, views.NavAttachments), v))
	return nil
}

// uploadAttachment streams the posted file into the store, as the API does;
// the outcome is a flash on the attachments page (the progress bar's XHR
// gets 204, a plain form post the redirect).
func (p *Portal) uploadAttachment(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, store.MaxAttachmentBytes+64<<10)
	kind, msg, err := p.storeUpload(r)
	if err != nil {
		return err
	}
	p.flash(r.Context(), kind, msg)
	if r.Header.Get("X-Upload") == "1" {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	p.redirect(w, r, "/attachments")
	return nil
}

// storeUpload reads the multipart part "file" into the store and returns the
// flash to show.
func (p *Portal) storeUpload(r *http.Request) (kind, msg string, err error) {
	t := views.TextFor(r.Context()).Templates
	mr, err := r.MultipartReader()
	if err != nil {
		return "error", t.AttNoFile, nil
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return "error", t.AttNoFile, nil
		}
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return "error", t.AttTooLarge, nil
		}
		if err != nil {
			return "", "", errBadForm
		}
		if part.FormName() != "file" {
			continue
		}
		if part.FileName() == "" {
			return "error", t.AttNoFile, nil
		}
		att, created, err := p.db.UploadAttachment(r.Context(), accountID(r), actor(r), part.FileName(), part.Header.Get("Content-Type"), part)
		var (
			ve *store.ValidationError
			le *store.LimitError
			ce *store.ConflictError
		)
		switch {
		case errors.As(err, &tooLarge), errors.Is(err, store.ErrAttachmentTooLarge):
			return "error", t.AttTooLarge, nil
		case errors.As(err, &ve):
			return "error", strings.Join(slices.Sorted(maps.Values(ve.Fields)), " "), nil
		case errors.As(err, &le):
			return "error", sprintf(t.AttStorageFull, formatStorage(r.Context(), le.Max)), nil
		case errors.As(err, &ce):
			return "error", ce.Message, nil
		case err != nil:
			return "", "", err
		case created:
			return "success", sprintf(t.AttUploadedFlash, att.Filename), nil
		}
		return "info", sprintf(t.AttExistsFlash, att.Filename), nil
	}
}

func formatStorage(ctx context.Context, n int64) string {
	return views.FormatBytes(views.TextFor(ctx), n)
}

func (p *Portal) downloadAttachment(w http.ResponseWriter, r *http.Request) error {
	id, err := templateID(r)
	if err != nil {
		return err
	}
	att, err := p.db.Attachment(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", att.ContentType)
	h.Set("Content-Length", strconv.FormatInt(att.Size, 10))
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": att.Filename}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	w.WriteHeader(http.StatusOK)
	if err := p.db.WriteAttachment(r.Context(), accountID(r), id, w); err != nil {
		p.log.Warn("download attachment", "attachment", id, "err", err)
	}
	return nil
}

func (p *Portal) deleteAttachment(w http.ResponseWriter, r *http.Request) error {
	id, err := templateID(r)
	if err != nil {
		return err
	}
	att, err := p.db.Attachment(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	var ce *store.ConflictError
	switch err := p.db.DeleteAttachment(r.Context(), accountID(r), actor(r), id); {
	case errors.As(err, &ce):
		p.flash(r.Context(), "error", ce.Message)
	case err != nil:
		return err
	default:
		p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Templates.AttDeletedFlash, att.Filename))
	}
	p.redirect(w, r, "/attachments")
	return nil
}

func (p *Portal) senderPage(w http.ResponseWriter, r *http.Request) error {
	s, err := p.db.AccountSettings(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	f := views.SenderForm{In: store.AccountSettingsInput{Company: s.Company, PostalAddress: s.PostalAddress, Imprint: s.Imprint,
		FromName: s.FromName, ReplyTo: s.ReplyTo, PrivacyURL: &s.PrivacyURL}, Errors: map[string]string{}, ReadOnly: !viewer(r).User.CanManageKeys()}
	p.render(w, r, http.StatusOK, views.SenderSettingsPage(p.shell(r, views.TextFor(r.Context()).Templates.SenderTitle, views.NavSender), f))
	return nil
}

func (p *Portal) saveSender(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	form := r.PostForm
	privacyURL := form.Get("privacy_url")
	f := views.SenderForm{In: store.AccountSettingsInput{Company: form.Get("company"), PostalAddress: form.Get("postal_address"),
		Imprint: form.Get("imprint"), FromName: form.Get("from_name"), ReplyTo: form.Get("reply_to"), PrivacyURL: &privacyURL},
		Errors: map[string]string{}}
	_, err := p.db.PutAccountSettings(r.Context(), accountID(r), actor(r), f.In)
	if fieldErrors(err, f.Errors) {
		p.render(w, r, http.StatusUnprocessableEntity, views.SenderSettingsPage(p.shell(r, views.TextFor(r.Context()).Templates.SenderTitle, views.NavSender), f))
		return nil
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", views.TextFor(r.Context()).Templates.SenderSavedFlash)
	p.redirect(w, r, "/settings/sender")
	return nil
}

// senderNoticePanel is the dashboard's warning while the account has no
// postal address (empty otherwise).
func (p *Portal) senderNoticePanel(ctx context.Context, v store.Viewer) (templ.Component, error) {
	warnings, err := p.db.SendWarnings(ctx, v.Account.ID, false)
	if err != nil {
		return nil, err
	}
	if len(warnings) == 0 {
		return templ.NopComponent, nil
	}
	return views.NoPostalAddressNotice(v.User.CanManageKeys()), nil
}

// sendFlash confirms a send or schedule; while the account has no postal
// address the confirmation is a warning that says so.
func (p *Portal) sendFlash(r *http.Request, msg string) {
	warnings, err := p.db.SendWarnings(r.Context(), accountID(r), false)
	if err != nil {
		p.log.Warn("send warnings", "err", err)
	}
	if slices.Contains(warnings, store.WarningNoPostalAddress) {
		t := views.TextFor(r.Context()).Templates
		p.flash(r.Context(), "warning", msg+" "+t.NoPostalTitle+": "+t.NoPostal)
		return
	}
	p.flash(r.Context(), "success", msg)
}
