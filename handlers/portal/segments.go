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

// Segments (saved filters) and bulk actions on contacts call the same store
// methods and bulk service as the API's /segments and /contacts/actions.

// listSegments is the segments page.
func (p *Portal) listSegments(w http.ResponseWriter, r *http.Request) error {
	return p.renderSegments(w, r, http.StatusOK, "")
}

func (p *Portal) renderSegments(w http.ResponseWriter, r *http.Request, status int, msg string) error {
	segs, _, err := p.db.Segments(r.Context(), accountID(r), store.Page{Page: 1, PerPage: 100})
	if err != nil {
		return err
	}
	lists, err := p.accountLists(r)
	if err != nil {
		return err
	}
	t := views.TextFor(r.Context())
	p.render(w, r, status, views.SegmentsPage(p.shell(r, t.Segments.Title, views.NavContacts), views.SegmentList{Segments: segs, Lists: lists, Error: msg}))
	return nil
}

// formFilter reads the contact table's filter from a posted form (the hidden
// fields of the save and bulk forms): the same fields as the table's query.
func formFilter(r *http.Request) (views.ContactFilter, store.ContactFilter) {
	q := url.Values{}
	for _, k := range []string{"q", "list_id", "tag", "status", "segment_id"} {
		if v := r.PostFormValue(k); v != "" {
			q.Set(k, v)
		}
	}
	r2 := r.Clone(r.Context())
	r2.URL = &url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	return readContactFilter(r2)
}

// createSegment saves the table's filter under a name and shows the segments.
func (p *Portal) createSegment(w http.ResponseWriter, r *http.Request) error {
	f, sf := formFilter(r)
	if len(f.Errors) > 0 {
		return store.ErrNotFound
	}
	name := r.PostFormValue("name")
	sf = store.SegmentFilter(sf)
	s, err := p.db.CreateSegment(r.Context(), accountID(r), actor(r), store.SegmentInput{Name: &name, Filter: &sf})
	var ce *store.ConflictError
	switch {
	case fieldErrors(err, f.Errors) || errors.As(err, &ce):
		if ce != nil {
			f.Errors["name"] = ce.Message
		}
		// Back to the table with the message beside the name.
		p.flash(r.Context(), "error", firstError(f.Errors))
		p.redirect(w, r, f.URL("/contacts", 1))
		return nil
	case err != nil:
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Segments.SavedFlash, s.Name))
	p.redirect(w, r, "/segments")
	return nil
}

func firstError(errs map[string]string) string {
	for _, k := range []string{"name", "q", "list_id", "tag", "status"} {
		if errs[k] != "" {
			return errs[k]
		}
	}
	for _, v := range errs {
		return v
	}
	return ""
}

// deleteSegment deletes a segment; one in use by a scheduled newsletter stays
// and the page says why.
func (p *Portal) deleteSegment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	s, err := p.db.Segment(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	err = p.db.DeleteSegment(r.Context(), accountID(r), actor(r), id)
	var ce *store.ConflictError
	if errors.As(err, &ce) {
		return p.renderSegments(w, r, http.StatusConflict, ce.Message)
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Segments.DeletedFlash, s.Name))
	p.redirect(w, r, "/segments")
	return nil
}

// startContactAction starts a bulk action on the ticked rows, or with "all"
// on every match of the table's filter (or its segment), and shows its
// progress.
func (p *Portal) startContactAction(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return err
	}
	f, sf := formFilter(r)
	in := store.BulkInput{Action: r.PostFormValue("action"), Tag: r.PostFormValue("action_tag")}
	if v := r.PostFormValue("list_id_action"); v != "" {
		in.ListID, _ = strconv.ParseInt(v, 10, 64)
	}
	switch {
	case r.PostFormValue("all") == "1":
		if len(f.Errors) > 0 {
			return store.ErrNotFound
		}
		if f.SegmentID != "" {
			in.SegmentID, _ = strconv.ParseInt(f.SegmentID, 10, 64)
		} else {
			sf = store.SegmentFilter(sf)
			in.Filter = &sf
		}
	default:
		in.ContactIDs = []int64{}
		for _, v := range r.PostForm["contact_id"] {
			id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				in.ContactIDs = append(in.ContactIDs, id)
			}
		}
	}
	j, err := p.bulk.Start(r.Context(), accountID(r), actor(r), in)
	if errs := map[string]string{}; fieldErrors(err, errs) {
		p.flash(r.Context(), "error", firstError(errs))
		p.redirect(w, r, f.URL("/contacts", 1))
		return nil
	}
	if err != nil {
		return err
	}
	p.redirect(w, r, "/contacts/actions/"+strconv.FormatInt(j.ID, 10))
	return nil
}

// showContactAction is a bulk action's progress page; htmx polls its
// fragment until the job is done.
func (p *Portal) showContactAction(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	j, err := p.bulk.Job(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	t := views.TextFor(r.Context())
	p.page(w, r, http.StatusOK, views.BulkJobPage(p.shell(r, t.Segments.BulkActions[j.Action], views.NavContacts), j), views.BulkProgress(j))
	return nil
}
