package api

import (
	"net/http"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// filterBody is a contact filter in an answer: the conditions of a segment.
type filterBody struct {
	ListID      int64                  `json:"list_id,omitempty"`
	Status      string                 `json:"status,omitempty"`
	Tag         string                 `json:"tag,omitempty"`
	Query       string                 `json:"q,omitempty"`
	Fields      []store.FieldCondition `json:"fields,omitempty"`
	CreatedFrom *Time                  `json:"created_from,omitempty"`
	CreatedTo   *Time                  `json:"created_to,omitempty"`
	UpdatedFrom *Time                  `json:"updated_from,omitempty"`
	UpdatedTo   *Time                  `json:"updated_to,omitempty"`
}

// filterRequest is a filter in a request body; its times are read by
// ParseTime (RFC 3339, or a Berlin wall-clock time).
type filterRequest struct {
	ListID      int64                  `json:"list_id"`
	Status      string                 `json:"status"`
	Tag         string                 `json:"tag"`
	Query       string                 `json:"q"`
	Fields      []store.FieldCondition `json:"fields"`
	CreatedFrom *string                `json:"created_from"`
	CreatedTo   *string                `json:"created_to"`
	UpdatedFrom *string                `json:"updated_from"`
	UpdatedTo   *string                `json:"updated_to"`
}

// filter converts the request; unreadable times are field errors named
// prefix + the field.
func (b filterRequest) filter(prefix string) (store.ContactFilter, error) {
	errs := store.Errs{}
	t := func(name string, v *string) *time.Time {
		if v == nil {
			return nil
		}
		x, ok := ParseTime(*v)
		if !ok {
			errs.Add(prefix+name, "Bitte einen Zeitpunkt wie 2026-11-22T05:02:04+01:00 oder 2026-11-22 05:02 angeben.")
			return nil
		}
		return &x
	}
	f := store.ContactFilter{ListID: b.ListID, Status: b.Status, Tag: b.Tag, Query: b.Query, Fields: b.Fields,
		CreatedFrom: t("created_from", b.CreatedFrom), CreatedTo: t("created_to", b.CreatedTo),
		UpdatedFrom: t("updated_from", b.UpdatedFrom), UpdatedTo: t("updated_to", b.UpdatedTo)}
	return f, errs.Err()
}

func newFilterBody(f store.ContactFilter) filterBody {
	t := func(v *time.Time) *Time {
		if v == nil {
			return nil
		}
		x := Time(*v)
		return &x
	}
	fields := f.Fields
	if fields == nil {
		fields = []store.FieldCondition{}
	}
	return filterBody{ListID: f.ListID, Status: f.Status, Tag: f.Tag, Query: f.Query, Fields: fields,
		CreatedFrom: t(f.CreatedFrom), CreatedTo: t(f.CreatedTo), UpdatedFrom: t(f.UpdatedFrom), UpdatedTo: t(f.UpdatedTo)}
}

// segmentResponse is a segment record.
type segmentResponse struct {
	ID        int64      `json:"id"`
	Name      string     `json:"name"`
	Filter    filterBody `json:"filter"`
	CreatedAt Time       `json:"created_at"`
	UpdatedAt Time       `json:"updated_at"`
}

func newSegmentResponse(s store.Segment) segmentResponse {
	return segmentResponse{ID: s.ID, Name: s.Name, Filter: newFilterBody(s.Filter), CreatedAt: Time(s.CreatedAt), UpdatedAt: Time(s.UpdatedAt)}
}

// segmentRequest is the body of POST /segments and PATCH /segments/{id}.
type segmentRequest struct {
	Name   *string        `json:"name"`
	Filter *filterRequest `json:"filter"`
}

func (q segmentRequest) input() (store.SegmentInput, error) {
	in := store.SegmentInput{Name: q.Name}
	if q.Filter != nil {
		f, err := q.Filter.filter("filter.")
		if err != nil {
			return in, err
		}
		in.Filter = &f
	}
	return in, nil
}

func (a *API) listSegments(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	segs, total, err := a.db.Segments(r.Context(), accountID(r), page)
	if err != nil {
		return err
	}
	out := make([]segmentResponse, len(segs))
	for i, s := range segs {
		out[i] = newSegmentResponse(s)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) createSegment(w http.ResponseWriter, r *http.Request) error {
	var req segmentRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	s, err := a.db.CreateSegment(r.Context(), accountID(r), actor(r), in)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newSegmentResponse(s))
}

func (a *API) getSegment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	s, err := a.db.Segment(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newSegmentResponse(s))
}

func (a *API) patchSegment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req segmentRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	s, err := a.db.UpdateSegment(r.Context(), accountID(r), actor(r), id, in)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newSegmentResponse(s))
}

func (a *API) deleteSegment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := a.db.DeleteSegment(r.Context(), accountID(r), actor(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listSegmentContacts lists the contacts a segment matches now, paged and
// sorted like GET /contacts.
func (a *API) listSegmentContacts(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	contacts, total, err := a.db.SegmentContacts(r.Context(), accountID(r), id, r.URL.Query().Get("sort"), page)
	if err != nil {
		return err
	}
	return writeContacts(w, r, contacts, page, total)
}

// contactActionRequest is the body of POST /contacts/actions.
type contactActionRequest struct {
	Action     string         `json:"action"`
	Tag        string         `json:"tag"`
	ListID     int64          `json:"list_id"`
	ContactIDs []int64        `json:"contact_ids"`
	Filter     *filterRequest `json:"filter"`
	SegmentID  int64          `json:"segment_id"`
}

// bulkJobResponse is a bulk action job with its progress.
type bulkJobResponse struct {
	ID         int64   `json:"id"`
	Action     string  `json:"action"`
	Tag        *string `json:"tag"`
	ListID     *int64  `json:"list_id"`
	SegmentID  *int64  `json:"segment_id"`
	Status     string  `json:"status"`
	Total      *int64  `json:"total"`
	Processed  int64   `json:"processed"`
	Changed    int64   `json:"changed"`
	Percent    int     `json:"percent"`
	Error      *string `json:"error"`
	CreatedAt  Time    `json:"created_at"`
	StartedAt  *Time   `json:"started_at"`
	FinishedAt *Time   `json:"finished_at"`
}

func newBulkJobResponse(j store.BulkJob) bulkJobResponse {
	return bulkJobResponse{ID: j.ID, Action: j.Action, Tag: optString(j.Tag), ListID: j.ListID, SegmentID: j.SegmentID,
		Status: j.Status, Total: j.Total, Processed: j.Processed, Changed: j.Changed, Percent: j.Percent(),
		Error: optString(j.Error), CreatedAt: Time(j.CreatedAt), StartedAt: timePtr(j.StartedAt), FinishedAt: timePtr(j.FinishedAt)}
}

func (a *API) startContactAction(w http.ResponseWriter, r *http.Request) error {
	var req contactActionRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if len(req.ContactIDs) > store.MaxBatch {
		return errTooLarge
	}
	in := store.BulkInput{Action: req.Action, Tag: req.Tag, ListID: req.ListID, ContactIDs: req.ContactIDs, SegmentID: req.SegmentID}
	if req.Filter != nil {
		f, err := req.Filter.filter("filter.")
		if err != nil {
			return err
		}
		in.Filter = &f
	}
	j, err := a.bulk.Start(r.Context(), accountID(r), actor(r), in)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusAccepted, newBulkJobResponse(j))
}

func (a *API) getContactAction(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	j, err := a.bulk.Job(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newBulkJobResponse(j))
}
