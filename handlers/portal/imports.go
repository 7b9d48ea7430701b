package portal

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// The CSV import (store/imports): upload (the file goes into PostgreSQL),
// column mapping (Start queues the job), then the job's page, which polls
// its progress with htmx until the summary shows. The work itself is done by
// the import worker in any serve process.

// recentImports is the number of imports listed on the upload page.
const recentImports = 10

// uploadSlack is what a multipart body may carry besides the file itself.
const uploadSlack = 1 << 20

func (p *Portal) importPage(w http.ResponseWriter, r *http.Request) error {
	return p.renderUpload(w, r, http.StatusOK, "")
}

func (p *Portal) renderUpload(w http.ResponseWriter, r *http.Request, status int, msg string) error {
	jobs, err := p.db.ImportJobs(r.Context(), accountID(r), recentImports)
	if err != nil {
		return err
	}
	s := p.shell(r, views.TextFor(r.Context()).Import.Title, views.NavContacts)
	p.render(w, r, status, views.ImportUploadPage(s, views.ImportUpload{Error: msg, Jobs: jobs}))
	return nil
}

// uploadTimeout is how long a CSV upload may take to arrive.
const uploadTimeout = 15 * time.Minute

// uploadImport reads the file part of the multipart body straight into memory
// (never to a temporary file: the upload goes to PostgreSQL) and stores it.
func (p *Portal) uploadImport(w http.ResponseWriter, r *http.Request) error {
	t := views.TextFor(r.Context()).Import
	tooLarge := sprintf(t.FileTooLarge, store.MaxImportBytes>>20)
	if r.ContentLength > store.MaxImportBytes+uploadSlack {
		// Read (and drop) a good part of the body first: a browser that is still
		// sending when the connection closes shows a network error instead of
		// the page that says what is wrong.
		_, _ = io.CopyN(io.Discard, r.Body, 2*store.MaxImportBytes)
		return p.renderUpload(w, r, http.StatusRequestEntityTooLarge, tooLarge)
	}
	// The server's read timeout (60 s) suits requests, not a 50 MB file from a
	// slow line (1 MBit/s takes about 7 minutes): this request may take longer.
	// A server that cannot extend it keeps its own limit.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(uploadTimeout))
	r.Body = http.MaxBytesReader(w, r.Body, store.MaxImportBytes+uploadSlack)
	mr, err := r.MultipartReader()
	if err != nil {
		return p.renderUpload(w, r, http.StatusBadRequest, t.FileMissing)
	}
	var data []byte
	var name string
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return p.renderUpload(w, r, http.StatusRequestEntityTooLarge, tooLarge)
		}
		if err != nil {
			return p.renderUpload(w, r, http.StatusBadRequest, t.FileUnreadable)
		}
		if part.FormName() != "file" || part.FileName() == "" {
			_ = part.Close()
			continue
		}
		name = part.FileName()
		data, err = io.ReadAll(io.LimitReader(part, store.MaxImportBytes+1))
		_ = part.Close()
		if errors.As(err, &mbe) || len(data) > store.MaxImportBytes {
			return p.renderUpload(w, r, http.StatusRequestEntityTooLarge, tooLarge)
		}
		if err != nil {
			return p.renderUpload(w, r, http.StatusBadRequest, t.FileUnreadable)
		}
		break
	}
	if name == "" || len(data) == 0 {
		return p.renderUpload(w, r, http.StatusUnprocessableEntity, t.FileMissing)
	}
	j, err := p.imports.Upload(r.Context(), accountID(r), viewer(r).User.ID, name, data)
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		return p.renderUpload(w, r, http.StatusUnprocessableEntity, ve.Fields["file"])
	}
	if err != nil {
		return err
	}
	p.redirect(w, r, "/contacts/import/"+strconv.FormatInt(j.ID, 10))
	return nil
}

// importJob is the route's job; another account's id is not found.
func (p *Portal) importJob(r *http.Request) (store.ImportJob, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return store.ImportJob{}, err
	}
	return p.db.ImportJob(r.Context(), accountID(r), id)
}

// showImport is a job's page: the mapping form while it waits for one, then its
// progress (htmx polls ImportProgress) and summary.
func (p *Portal) showImport(w http.ResponseWriter, r *http.Request) error {
	j, err := p.importJob(r)
	if err != nil {
		return err
	}
	if j.Status == store.ImportUploaded {
		m, err := p.guessMapping(r, j)
		if err != nil {
			return err
		}
		p.renderMapping(w, r, http.StatusOK, m)
		return nil
	}
	s := p.shell(r, j.Filename, views.NavContacts)
	p.page(w, r, http.StatusOK, views.ImportStatusPage(s, j), views.ImportProgress(j))
	return nil
}

func (p *Portal) renderMapping(w http.ResponseWriter, r *http.Request, status int, m views.ImportMap) {
	s := p.shell(r, views.TextFor(r.Context()).Import.MapTitle, views.NavContacts)
	p.render(w, r, status, views.ImportMapPage(s, m))
}

// guessMapping proposes a target for every column from its name.
func (p *Portal) guessMapping(r *http.Request, j store.ImportJob) (views.ImportMap, error) {
	lists, err := p.accountLists(r)
	m := views.ImportMap{Job: j, Lists: lists, Errors: map[string]string{}}
	used := map[string]bool{}
	for _, h := range j.Header {
		target, key := guessTarget(h)
		if target != "custom" && target != "" {
			if used[target] {
				target = "" // the first column of a name wins
			}
			used[target] = true
		}
		m.Targets = append(m.Targets, target)
		m.CustomKeys = append(m.CustomKeys, key)
	}
	return m, err
}

// headerField maps a column name as commonly written (lower case, without
// spaces, dashes, dots and underscores) to a contact field; "" for none.
func headerField(norm string) string {
	switch norm {
	case "email", "emailadresse", "mail", "emailaddress", "mailadresse":
		return "email"
	case "vorname", "firstname", "givenname":
		return "first_name"
	case "nachname", "lastname", "surname", "familienname":
		return "last_name"
	case "adresse", "address", "strasse", "straße", "anschrift":
		return "address"
	case "plz", "zip", "postleitzahl", "zipcode", "postalcode":
		return "zip"
	case "ort", "stadt", "city", "wohnort":
		return "city"
	case "telefon", "phone", "tel", "telefonnummer", "mobil", "handy":
		return "phone"
	case "notiz", "note", "notes", "bemerkung", "kommentar":
		return "note"
	case "tags", "schlagwörter", "schlagworte", "tag":
		return "tags"
	}
	return ""
}

// guessTarget is the field a column name suggests; any other name becomes a
// custom field of that name (made a valid field name).
func guessTarget(header string) (target, customKey string) {
	norm := strings.NewReplacer(" ", "", "-", "", "_", "", ".", "").Replace(strings.ToLower(strings.TrimSpace(header)))
	if f := headerField(norm); f != "" {
		return f, ""
	}
	key := fieldKey(header)
	if key == "" {
		return "", ""
	}
	return "custom", key
}

// fieldKey makes a custom field name of a column name: lower case, umlauts
// spelled out, other characters as "_".
func fieldKey(s string) string {
	s = strings.NewReplacer("ä", "ae", "ö", "oe", "ü", "ue", "ß", "ss", "Ä", "ae", "Ö", "oe", "Ü", "ue").Replace(strings.TrimSpace(s))
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_', c == '-':
			b.WriteRune(c)
		default:
			b.WriteRune('_')
		}
	}
	key := strings.Trim(b.String(), "_-")
	for strings.Contains(key, "__") {
		key = strings.ReplaceAll(key, "__", "_")
	}
	if len(key) > 50 {
		key = key[:50]
	}
	return key
}

// startImport reads the mapping form and queues the job with StartImport.
func (p *Portal) startImport(w http.ResponseWriter, r *http.Request) error {
	j, err := p.importJob(r)
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	lists, err := p.accountLists(r)
	if err != nil {
		return err
	}
	form := r.PostForm
	m := views.ImportMap{Job: j, Lists: lists, ListIDs: form["list_ids"], Tags: form.Get("tags"), Errors: map[string]string{}}
	settings := store.ImportSettings{ListIDs: formIDs(m.ListIDs), Tags: splitTags(m.Tags)}
	for i := range j.Header {
		n := strconv.Itoa(i)
		target, key := strings.TrimSpace(form.Get("map_"+n)), strings.TrimSpace(form.Get("custom_"+n))
		m.Targets, m.CustomKeys = append(m.Targets, target), append(m.CustomKeys, key)
		if target == "custom" {
			target = "custom:" + key
		}
		settings.Mapping = append(settings.Mapping, target)
	}
	_, err = p.imports.Start(r.Context(), accountID(r), j.ID, settings)
	var ce *store.ConflictError
	switch {
	case fieldErrors(err, m.Errors):
		p.renderMapping(w, r, http.StatusUnprocessableEntity, m)
		return nil
	case errors.As(err, &ce): // started already (a second tab): show it
	case err != nil:
		return err
	}
	p.redirect(w, r, "/contacts/import/"+strconv.FormatInt(j.ID, 10))
	return nil
}
