// Package api serves Rundbrief's JSON API under /v1: the envelope, authentication,
// scopes, plan features, rate limits, idempotency and the API log that every
// endpoint gets, and one file per resource.
package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// envelope is the success body: {"data": …, "meta": {"request_id": …}}.
type envelope struct {
	Data any  `json:"data"`
	Meta meta `json:"meta"`
}

type meta struct {
	RequestID  string      `json:"request_id"`
	Pagination *pagination `json:"pagination,omitempty"`
}

type pagination struct {
	Page    int `json:"page"`
	PerPage int `json:"per_page"`
	Total   int `json:"total"`
	Pages   int `json:"pages"`
}

func newPagination(p store.Page, total int) *pagination {
	return &pagination{Page: p.Page, PerPage: p.PerPage, Total: total, Pages: (total + p.PerPage - 1) / p.PerPage}
}

// writeData answers status with data in the success envelope.
func writeData(w http.ResponseWriter, r *http.Request, status int, data any) error {
	if d, ok := data.(jsonAppender); ok {
		return writeAppendedOne(w, r, status, d)
	}
	return writeEnvelope(w, status, envelope{Data: data, Meta: meta{RequestID: requestID(r.Context())}})
}

// writeAppendedOne writes the envelope of one item that appends its own JSON
// (a contact by GET, POST or PATCH) by hand: through json.Marshal, the item's
// MarshalJSON output was scanned and copied once more and the envelope
// marshalled by reflection, some tenth of the server's CPU per GET of a
// contact. The request id is appended as a JSON string; it is ours (req_ and
// base32), but appendJSONString escapes it as json.Marshal would anyway.
func writeAppendedOne(w http.ResponseWriter, r *http.Request, status int, d jsonAppender) error {
	b := make([]byte, 0, 1024)
	b = append(b, `{"data":`...)
	b, err := d.AppendJSON(b)
	if err != nil {
		return err
	}
	b = append(b, `,"meta":{"request_id":`...)
	b = store.AppendJSONString(b, requestID(r.Context()))
	b = append(b, "}}"...)
	writeBody(w, status, b)
	return nil
}

// writeList answers 200 with one page of items and its pagination.
func writeList[T any](w http.ResponseWriter, r *http.Request, items []T, p store.Page, total int) error {
	if items == nil {
		items = []T{}
	}
	m := meta{RequestID: requestID(r.Context()), Pagination: newPagination(p, total)}
	if len(items) > 0 {
		if _, ok := any(&items[0]).(jsonAppender); ok {
			return writeAppended(w, items, m)
		}
	}
	return writeEnvelope(w, http.StatusOK, envelope{Data: items, Meta: m})
}

// writeAppended writes the envelope of a list by hand around items that
// append their own JSON: through json.Marshal, each item's JSON would be
// validated and copied once more.
func writeAppended[T any](w http.ResponseWriter, items []T, m meta) error {
	buf := listBuffers.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxPooledList {
			listBuffers.Put(buf)
		}
	}()
	b := append((*buf)[:0], `{"data":[`...)
	defer func() { *buf = b }()
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		// Through a pointer, which an interface holds without copying the item.
		if b, err = any(&items[i]).(jsonAppender).AppendJSON(b); err != nil {
			return err
		}
	}
	mj, err := json.Marshal(m)
	if err != nil {
		return err
	}
	b = append(b, `],"meta":`...)
	b = append(b, mj...)
	b = append(b, '}')
	writeBody(w, http.StatusOK, b)
	return nil
}

// listBuffers are writeAppended's scratch buffers. A page of 100 contacts is
// some 50 KB, which Go allocates as a large object: zeroed, and handed back to
// the operating system soon after (madvise). In the listing benchmark's CPU
// profile, zeroing and releasing such buffers (these and the load
// generator's) came to some 9%. The pool is a cache of buffers only: each use
// starts empty, and what is written is copied out before the buffer returns.
var listBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledList bounds the buffers kept: a rare huge page is not held on to.
const maxPooledList = 1 << 20

// jsonAppender is an item that appends its own JSON, exactly as json.Marshal
// would write it (store.ContactData).
type jsonAppender interface {
	AppendJSON(b []byte) ([]byte, error)
}

func writeEnvelope(w http.ResponseWriter, status int, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	writeBody(w, status, b)
	return nil
}

// writeBody sends a JSON body with its length: without it, net/http sends any
// body over 2 KB chunked, and a client cannot size its buffer for it.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// Time is a timestamp as the API shows it: ISO 8601 in Europe/Berlin with offset.
type Time time.Time

// MarshalJSON writes e.g. "2026-11-22T05:02:04+01:00".
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).In(store.Berlin).Format(time.RFC3339) + `"`), nil
}

// timePtr converts an optional timestamp; nil stays null.
func timePtr(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	v := Time(*t)
	return &v
}

// inputLayouts are the date-time forms the API accepts besides RFC 3339; without an
// offset they are read as Europe/Berlin wall-clock time.
var inputLayouts = []string{"2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02T15:04:05"}

// ParseTime reads a date-time input: RFC 3339, or YYYY-MM-DD HH:MM / YYYY-MM-DDTHH:MM
// (with optional seconds) in Europe/Berlin.
// A time outside the years 1 to 9999 (store.ValidTime) is no valid input.
func ParseTime(s string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, store.ValidTime(t)
	}
	for _, l := range inputLayouts {
		if t, err := time.ParseInLocation(l, s, store.Berlin); err == nil {
			return t, store.ValidTime(t)
		}
	}
	return time.Time{}, false
}
