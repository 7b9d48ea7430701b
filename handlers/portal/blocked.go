package portal

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// The blocked-address pages call the same store services as the API's
// /unsubscribes endpoints: BlockedList, BlockAddresses and UnblockAddress.

// blockedPerPage is the number of addresses per page of the table.
const blockedPerPage = 50

// blockedUploadLimit bounds an uploaded address file: 1,000 addresses of at
// most 254 characters each, with room for a CSV's other columns.
const blockedUploadLimit = 1 << 20

func (p *Portal) listBlocked(w http.ResponseWriter, r *http.Request) error {
	p.renderBlocked(w, r, http.StatusOK, views.BlockedForm{})
	return nil
}

func (p *Portal) renderBlocked(w http.ResponseWriter, r *http.Request, status int, f views.BlockedForm) {
	t := views.TextFor(r.Context())
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	page := queryPage(r)
	rows, total, err := p.db.BlockedList(r.Context(), accountID(r), q, store.Page{Page: page, PerPage: blockedPerPage})
	if err != nil {
		p.fail(w, r, err)
		return
	}
	l := views.BlockedTable{Q: q, Addresses: rows, Pager: views.Pager{Page: page, PerPage: blockedPerPage, Total: total, Target: "#blocked",
		URL: func(n int) string { return pageURL("/blocked", url.Values{"q": {q}}, n) }}}
	s := p.shell(r, t.Blocked.Title, views.NavBlocked)
	p.page(w, r, status, views.BlockedPage(s, l, f), views.BlockedSection(l))
}

// blockAddresses puts the addresses typed into the form or found in an
// uploaded file on the blocked list (source manual).
func (p *Portal) blockAddresses(w http.ResponseWriter, r *http.Request) error {
	t := views.TextFor(r.Context())
	r.Body = http.MaxBytesReader(w, r.Body, blockedUploadLimit+64<<10)
	f := views.BlockedForm{Errors: map[string]string{}}
	var emails []string
	if err := r.ParseMultipartForm(blockedUploadLimit); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		f.Errors["emails"] = t.Blocked.FileTooLarge
		p.renderBlocked(w, r, http.StatusRequestEntityTooLarge, f)
		return nil
	}
	f.Emails = r.FormValue("emails")
	emails = splitAddresses(f.Emails)
	if file, _, err := r.FormFile("file"); err == nil {
		fromFile, err := addressesOfFile(file)
		_ = file.Close()
		if err != nil {
			f.Errors["file"] = t.Blocked.FileUnreadable
			p.renderBlocked(w, r, http.StatusUnprocessableEntity, f)
			return nil
		}
		emails = append(emails, fromFile...)
	}
	rows, err := p.db.BlockAddresses(r.Context(), accountID(r), actor(r), emails, store.Unsubscribe{Source: store.UnsubManual})
	if fieldErrors(err, f.Errors) {
		p.renderBlocked(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	if err != nil {
		return err
	}
	msg := t.Blocked.AddedOne
	if len(rows) != 1 {
		msg = sprintf(t.Blocked.Added, len(rows))
	}
	p.flash(r.Context(), "success", msg)
	p.redirect(w, r, "/blocked")
	return nil
}

func (p *Portal) unblockAddress(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	t := views.TextFor(r.Context())
	email := r.PostFormValue("email")
	if err := p.db.UnblockAddress(r.Context(), accountID(r), actor(r), email); err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(t.Blocked.RemovedFlash, email))
	p.redirect(w, r, "/blocked")
	return nil
}

// splitAddresses splits what was pasted: one address per line, or several
// separated by commas, semicolons or spaces.
func splitAddresses(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ';' || r == '\n' || r == '\r' || r == '\t' || r == ' '
	})
}

// addressesOfFile reads the addresses of an uploaded file: a text file with
// one per line, or a CSV whose cells are checked for an @ (a header line and
// other columns are skipped).
func addressesOfFile(f io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		for _, cell := range strings.FieldsFunc(sc.Text(), func(r rune) bool { return r == ',' || r == ';' || r == '\t' }) {
			cell = strings.Trim(strings.TrimSpace(cell), `"`)
			if strings.Contains(cell, "@") {
				out = append(out, cell)
			}
		}
	}
	return out, sc.Err()
}
