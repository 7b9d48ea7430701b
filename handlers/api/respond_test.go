package api

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// A list of items that append their own JSON is written exactly as the
// envelope through json.Marshal, with its length; a shorter list after a
// longer one (whose buffer it may reuse) carries nothing of the longer one.
func TestWriteListOfAppenders(t *testing.T) {
	t.Parallel()
	at := store.EventTime(time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC))
	items := []store.ContactData{
		{ID: 1, Email: "a@example.com", Tags: []string{}, CustomFields: store.CustomFields{}, Lists: []store.ListRef{}, CreatedAt: at, UpdatedAt: at},
		{ID: 2, Email: "b@example.com", FirstName: "<Bea & Co>", Tags: []string{"vip"}, CustomFields: store.CustomFields{"n": json.Number("2")},
			Lists: []store.ListRef{{ID: 4, Name: "Kunden", Color: "#000000"}}, DOIConfirmedAt: &at, CreatedAt: at, UpdatedAt: at},
	}
	page := store.Page{Page: 2, PerPage: 2}
	req := httptest.NewRequest("GET", "/v1/contacts", nil)
	req = req.WithContext(context.WithValue(req.Context(), ctxRequestID, "req_test"))
	for _, n := range []int{2, 1, 0, 2} {
		rec := httptest.NewRecorder()
		if err := writeList(rec, req, items[:n], page, 7); err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(envelope{Data: append([]store.ContactData{}, items[:n]...),
			Meta: meta{RequestID: "req_test", Pagination: newPagination(page, 7)}})
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.Body.String(); got != string(want) {
			t.Errorf("%d items:\n got %s\nwant %s", n, got, want)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" || rec.Code != 200 {
			t.Errorf("%d items: status %d, content type %q", n, rec.Code, ct)
		}
		if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(len(want)) {
			t.Errorf("%d items: Content-Length %q for %d bytes", n, cl, len(want))
		}
	}
}

// One item that appends its own JSON (a contact) is written exactly as the
// envelope through json.Marshal, with its status and length; a request id
// that needs escaping is escaped as json.Marshal escapes it.
func TestWriteDataOfAppender(t *testing.T) {
	t.Parallel()
	at := store.EventTime(time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC))
	item := store.ContactData{ID: 2, Email: "b@example.com", FirstName: "<Bea & Co>", Tags: []string{"vip"},
		CustomFields: store.CustomFields{"n": json.Number("2")}, Lists: []store.ListRef{{ID: 4, Name: "Kunden", Color: "#000000"}},
		DOIConfirmedAt: &at, CreatedAt: at, UpdatedAt: at}
	for _, id := range []string{"req_test", `req_"<odd>"`} {
		req := httptest.NewRequest("GET", "/v1/contacts/2", nil)
		req = req.WithContext(context.WithValue(req.Context(), ctxRequestID, id))
		rec := httptest.NewRecorder()
		if err := writeData(rec, req, 201, item); err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(envelope{Data: item, Meta: meta{RequestID: id}})
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.Body.String(); got != string(want) {
			t.Errorf("request id %q:\n got %s\nwant %s", id, got, want)
		}
		if rec.Code != 201 || rec.Header().Get("Content-Length") != strconv.Itoa(len(want)) ||
			rec.Header().Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("request id %q: status %d, headers %v", id, rec.Code, rec.Header())
		}
	}
}
