package portal

import (
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// The shared mail editor (views.ContentEditor) has endpoints of its own, the
// same for newsletters, single emails, story emails, sequence days and
// templates: the image upload of its rich-text mode here, and the AI
// assistant (editor_ai.go).

// editorImage is the answer of an image upload: the image's public URL and a
// first alt text (its file name without the extension), or the German reason
// it was refused.
type editorImage struct {
	URL   string `json:"url,omitempty"`
	Alt   string `json:"alt,omitempty"`
	ID    int64  `json:"id,omitempty"`
	Error string `json:"error,omitempty"`
}

// uploadEditorImage stores the multipart part "file" as an image attachment
// (streamed, deduplicated, counted against the plan's storage) and answers
// its signed public URL as JSON for the editor to insert.
func (p *Portal) uploadEditorImage(w http.ResponseWriter, r *http.Request) error {
	if p.tokens == nil { // a portal built without the link tokens (some tests)
		return errSendingOff
	}
	r.Body = http.MaxBytesReader(w, r.Body, store.MaxAttachmentBytes+64<<10)
	t := views.TextFor(r.Context())
	status, out := http.StatusCreated, editorImage{}
	att, err := p.readEditorImage(r)
	var (
		tooLarge *http.MaxBytesError
		ve       *store.ValidationError
		le       *store.LimitError
		ce       *store.ConflictError
	)
	switch {
	case errors.Is(err, errNoFile):
		status, out.Error = http.StatusUnprocessableEntity, t.Templates.AttNoFile
	case errors.As(err, &tooLarge), errors.Is(err, store.ErrAttachmentTooLarge):
		status, out.Error = http.StatusRequestEntityTooLarge, t.Templates.AttTooLarge
	case errors.As(err, &ve):
		status, out.Error = http.StatusUnprocessableEntity, strings.Join(slices.Sorted(maps.Values(ve.Fields)), " ")
	case errors.As(err, &le):
		status, out.Error = http.StatusConflict, sprintf(t.Templates.AttStorageFull, formatStorage(r.Context(), le.Max))
	case errors.As(err, &ce):
		status, out.Error = http.StatusConflict, ce.Message
	case err != nil:
		return err
	default:
		links := mailer.LinkBuilder{BaseURL: p.baseURL, Tokens: p.tokens}
		out = editorImage{ID: att.ID, URL: links.ImageURL(att.AccountID, att.ID, att.Filename), Alt: altFromFilename(att.Filename)}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(out)
}

// errNoFile: the upload had no part "file" with a file name.
var errNoFile = errors.New("portal: no file in the upload")

// readEditorImage streams the part "file" into the store.
func (p *Portal) readEditorImage(r *http.Request) (store.Attachment, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return store.Attachment{}, errNoFile
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return store.Attachment{}, errNoFile
		}
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return store.Attachment{}, err
			}
			return store.Attachment{}, errBadForm
		}
		if part.FormName() != "file" {
			continue
		}
		if part.FileName() == "" {
			return store.Attachment{}, errNoFile
		}
		att, _, err := p.db.UploadImage(r.Context(), accountID(r), actor(r), part.FileName(), part)
		return att, err
	}
}

// altFromFilename is a first alt text for an image: its file name without
// the extension, with dashes and underscores as spaces.
func altFromFilename(name string) string {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	return strings.TrimSpace(strings.NewReplacer("-", " ", "_", " ").Replace(name))
}

// readEditorContent reads a views.ContentEditor from a posted form: the
// format, the Markdown or HTML source, and the rich-text HTML.
func readEditorContent(form url.Values, name, formatName string) (format, content, rich string) {
	format = views.FormatMarkdown
	switch form.Get(formatName) {
	case views.FormatHTML:
		format = views.FormatHTML
	case views.FormatRichText:
		format = views.FormatRichText
	}
	return format, strings.ReplaceAll(form.Get(name), "\r\n", "\n"), form.Get(name + "_rich")
}

// editorFormatName is the name of the format choice of the editor with prefix.
func editorFormatName(prefix string) string { return views.EditorFormatName(prefix) }

// readMailEditor reads the editor of the mail forms that had a plain HTML
// textarea before (single emails, story emails, sequence days, templates):
// as readEditorContent, but a post without a format choice (an older form,
// a script) is HTML, as it always was.
func readMailEditor(form url.Values, name, prefix string) (format, content, rich string) {
	if _, ok := form[editorFormatName(prefix)]; !ok {
		return views.FormatHTML, strings.ReplaceAll(form.Get(name), "\r\n", "\n"), ""
	}
	return readEditorContent(form, name, editorFormatName(prefix))
}

// editorInput is the content of the mail input for what the editor holds:
// html, markdown and text, each set (an empty string clears it). Rich text is
// stored as HTML with its marker, which the store sanitises.
func editorInput(format, content, rich string) (html, markdown, text *string) {
	empty := ""
	switch format {
	case views.FormatRichText:
		h := ""
		if strings.TrimSpace(rich) != "" {
			h = store.RichTextOpen + rich + store.RichTextClose
		}
		return &h, &empty, &empty
	case views.FormatHTML:
		return &content, &empty, &empty
	}
	return &empty, &content, &empty
}

// editorRich is views.EditorRich: the HTML the rich-text mode opens with.
func editorRich(format, content, html string) string { return views.EditorRich(format, content, html) }

// postedMailEditor reads the editor (field "html") of a mail form posted
// with prefix: the editor as typed, for showing the form again, and the
// content for the store: html (rich text with its marker, which the store
// sanitises in resolveContentTx) and markdown, one of them empty.
func postedMailEditor(form url.Values, prefix string) (e views.ContentEditor, html, markdown string) {
	format, content, rich := readMailEditor(form, "html", prefix)
	h, md, _ := editorInput(format, content, rich)
	if rich == "" {
		rich = editorRich(format, content, "")
	}
	return views.ContentEditor{Name: "html", Prefix: prefix, Format: format, Content: content, Rich: rich}, *h, *md
}

// storedMailEditor is the editor (field "html") of a stored mail's html and
// markdown: rich text opens in the rich-text mode again.
func storedMailEditor(prefix, html, markdown string) views.ContentEditor {
	return views.StoredMailEditor(prefix, html, markdown)
}

// previewHTML is what the live preview shows of a posted html: rich text
// sanitised as the store will keep it.
func previewHTML(html string) string {
	if store.IsRichText(html) {
		return store.SanitizeRichText(html)
	}
	return html
}

// editorExtras are what a mail form's editor offers besides the content: the
// account's custom fields for the placeholder picker, and the AI assistant
// (disabled on plans without ai) posting the editor's field and prefix.
func (p *Portal) editorExtras(r *http.Request, e views.ContentEditor) ([]store.ContactField, views.AIAssistantView, error) {
	fields, err := p.db.ContactFields(r.Context(), accountID(r))
	if err != nil {
		return nil, views.AIAssistantView{}, err
	}
	a, err := p.aiAssistant(r)
	a.Name, a.Prefix = e.Name, e.Prefix
	return fields, a, err
}

// editorExtrasOf is editorExtras for a page with several editors, each of
// which sets its own field name and prefix on the assistant.
func (p *Portal) editorExtrasOf(r *http.Request) (views.EditorExtras, error) {
	fields, a, err := p.editorExtras(r, views.ContentEditor{})
	return views.EditorExtras{Fields: fields, AI: a}, err
}
