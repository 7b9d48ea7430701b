package portal

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// logPerPage is the number of API log entries per page.
const logPerPage = 25

// apiLog lists the account's API requests, newest first, filtered by key, status and
// path prefix. Filtering and paging with htmx swap views.LogSection alone.
func (p *Portal) apiLog(w http.ResponseWriter, r *http.Request) error {
	t := views.TextFor(r.Context())
	q := r.URL.Query()
	f := views.LogFilter{
		KeyID:  strings.TrimSpace(q.Get("key_id")),
		Status: strings.TrimSpace(q.Get("status")),
		Path:   strings.TrimSpace(q.Get("path")),
		Errors: map[string]string{},
	}
	var filter store.APILogFilter
	if f.KeyID != "" {
		id, err := strconv.ParseInt(f.KeyID, 10, 64)
		if err != nil || id < 1 {
			f.Errors["key_id"] = t.Common.FormInvalid
		}
		filter.KeyID = id
	}
	if f.Status != "" {
		n, err := strconv.Atoi(f.Status)
		if err != nil || n < 100 || n > 599 {
			f.Errors["status"] = t.Logs.StatusInvalid
		}
		filter.Status = n
	}
	if !store.ValidText(f.Path) {
		// PostgreSQL refuses NUL and invalid UTF-8 with an error; say so at the field.
		f.Errors["path"] = t.Common.FormInvalid
	}
	filter.PathPrefix = f.Path
	// No page lies beyond the counted entries; a deeper offset would only cost.
	page := min(queryPage(r), (store.APILogMaxCount+logPerPage-1)/logPerPage)

	keys, err := p.db.Keys(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	l := views.LogList{Keys: keys, Filter: f}
	if len(f.Errors) == 0 {
		l.Entries, l.Pager.Total, l.Capped, err = p.db.APILog(r.Context(), accountID(r), filter, store.Page{Page: page, PerPage: logPerPage}, store.APILogMaxCount)
		if err != nil {
			return err
		}
		if last := max(1, (l.Pager.Total+logPerPage-1)/logPerPage); page > last {
			// A page past the end (the log was purged, or a hand-edited URL): show the last.
			page = last
			l.Entries, l.Pager.Total, l.Capped, err = p.db.APILog(r.Context(), accountID(r), filter, store.Page{Page: page, PerPage: logPerPage}, store.APILogMaxCount)
			if err != nil {
				return err
			}
		}
	}
	l.Pager.Page, l.Pager.PerPage, l.Pager.Target = page, logPerPage, "#api-log"
	l.Pager.URL = func(n int) string { return logURL(f, n) }
	s := p.shell(r, t.Logs.Title, views.NavAPILog)
	p.page(w, r, http.StatusOK, views.LogsPage(s, l), views.LogSection(l))
	return nil
}

// logURL is the address of one page of the log under the same filter.
func logURL(f views.LogFilter, page int) string {
	q := url.Values{}
	for k, v := range map[string]string{"key_id": f.KeyID, "status": f.Status, "path": f.Path} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if page > 1 {
		q.Set("page", strconv.Itoa(page))
	}
	if len(q) == 0 {
		return "/logs/api"
	}
	return "/logs/api?" + q.Encode()
}
