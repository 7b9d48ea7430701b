package api_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
)

type segmentJSON struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Filter struct {
		Tag    string `json:"tag"`
		Fields []struct {
			Key, Op, Value string
		} `json:"fields"`
		CreatedFrom *string `json:"created_from"`
	} `json:"filter"`
}

type contactActionJSON struct {
	ID        int64  `json:"id"`
	Action    string `json:"action"`
	Status    string `json:"status"`
	Total     *int64 `json:"total"`
	Processed int64  `json:"processed"`
	Changed   int64  `json:"changed"`
	Percent   int    `json:"percent"`
}

// TestSegmentsAPI: the segment resource end to end, every answer validated
// against openapi.json; a newsletter to a segment is sent (through the SMTP
// sink) to its subscribed contacts only, and the segment it uses while
// scheduled cannot be deleted.
func TestSegmentsAPI(t *testing.T) {
	e := newSendAPIEnv(t)
	list := e.list(t, "kunden", 4) // kunden1..4@example.com
	for i, plan := range []string{"gold", "gold", "silber", "gold"} {
		e.do(t, "POST", "/v1/contacts", map[string]any{"email": fmt.Sprintf("kunden%d@example.com", i+1),
			"custom_fields": map[string]any{"plan": plan, "umsatz": (i + 1) * 100}}, 200)
	}
	e.do(t, "POST", "/v1/contacts", map[string]any{"email": "kunden4@example.com", "status": "unsubscribed"}, 200)

	var s segmentJSON
	e.do(t, "POST", "/v1/segments", map[string]any{"name": "Gold-Kunden", "filter": map[string]any{
		"fields":       []map[string]any{{"key": "plan", "op": "equals", "value": "gold"}, {"key": "umsatz", "op": "gt", "value": 100}},
		"created_from": "2020-01-01 00:00"}}, 201).Data(t, &s)
	if s.ID == 0 || s.Name != "Gold-Kunden" || len(s.Filter.Fields) != 2 || s.Filter.Fields[1].Value != "100" || s.Filter.CreatedFrom == nil {
		t.Fatalf("created %+v", s)
	}
	path := fmt.Sprintf("/v1/segments/%d", s.ID)
	if got := e.reason(t, e.do(t, "POST", "/v1/segments", map[string]any{"name": "Gold-Kunden"}, 409)); got != "conflict:name_taken" {
		t.Errorf("duplicate: %s", got)
	}
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/segments", map[string]any{"name": "", "filter": map[string]any{
		"status": "weg", "fields": []map[string]any{{"key": "x", "op": "gt", "value": "viel"}}}}, 422)),
		"name", "filter.status", "filter.fields.0.value")
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/segments", map[string]any{"name": "x", "filter": map[string]any{"created_to": "gestern"}}, 422)),
		"filter.created_to")
	e.do(t, "GET", "/v1/segments/999999", nil, 404)

	var contacts []struct{ Email string }
	r := e.do(t, "GET", path+"/contacts?sort=email_desc", nil, 200)
	r.Data(t, &contacts)
	var emails []string
	for _, c := range contacts {
		emails = append(emails, c.Email)
	}
	if !slices.Equal(emails, []string{"kunden4@example.com", "kunden2@example.com"}) || !strings.Contains(string(r.Body), `"total":2`) {
		t.Fatalf("segment contacts %v: %s", emails, r.Body)
	}
	var all []segmentJSON
	e.do(t, "GET", "/v1/segments", nil, 200).Data(t, &all)
	if len(all) != 1 {
		t.Fatalf("list %+v", all)
	}

	// A newsletter to the segment: kunden2 only (kunden4 is unsubscribed).
	var n newsletterJSON
	e.do(t, "POST", "/v1/newsletters", map[string]any{"subject": "Für Gold", "html": "<p>Hallo</p>", "segment_id": s.ID,
		"smtp_server_id": e.serverID}, 201).Data(t, &n)
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/newsletters", map[string]any{"subject": "x", "segment_id": 999999}, 422)), "segment_id")
	npath := fmt.Sprintf("/v1/newsletters/%d", n.ID)
	e.do(t, "POST", npath+"/schedule", map[string]any{"scheduled_at": "2099-01-01T10:00:00+01:00"}, 200)
	if got := e.reason(t, e.do(t, "DELETE", path, nil, 409)); got != "conflict:in_use" {
		t.Fatalf("delete in use: %s", got)
	}
	e.do(t, "POST", npath+"/unschedule", nil, 200)
	var res sendResultJSON
	e.do(t, "POST", npath+"/send", nil, 202).Data(t, &res)
	if res.Queued != 1 {
		t.Fatalf("send %+v", res)
	}
	e.waitSent(t, npath)
	var to []string
	for _, m := range e.srv.Messages() {
		to = append(to, m.To...)
	}
	if !slices.Equal(to, []string{"kunden2@example.com"}) {
		t.Fatalf("mailed %v", to)
	}
	// Narrowed by a list the segment's contacts are not in: nobody.
	other := e.list(t, "andere", 1)
	e.do(t, "PATCH", path, map[string]any{"name": "Alle Gold"}, 200)
	var n2 newsletterJSON
	e.do(t, "POST", "/v1/newsletters", map[string]any{"subject": "x", "html": "<p>x</p>", "segment_id": s.ID, "list_ids": []int64{other},
		"smtp_server_id": e.serverID}, 201).Data(t, &n2)
	wantFields(t, e.fields(t, e.do(t, "POST", fmt.Sprintf("/v1/newsletters/%d/send", n2.ID), nil, 422)), "segment_id")
	_ = list
	e.do(t, "DELETE", path, nil, 204)
	e.do(t, "GET", path, nil, 404)
}

// TestContactActionsAPI: a bulk action by filter answers 202 with the job,
// the worker runs it, its progress is read back; chosen rows beyond 1000 are
// 413, a bad selection 422.
func TestContactActionsAPI(t *testing.T) {
	e := newSendAPIEnv(t)
	e.list(t, "leser", 5)
	var j contactActionJSON
	e.do(t, "POST", "/v1/contacts/actions", map[string]any{"action": "add_tag", "tag": "aktiv", "filter": map[string]any{"q": "leser"}}, 202).Data(t, &j)
	if j.Status != "queued" || j.Total != nil || j.Action != "add_tag" {
		t.Fatalf("job %+v", j)
	}
	if _, err := e.db.RunNextBulkJob(context.Background(), store.BulkRun{Chunk: 2}); err != nil {
		t.Fatal(err)
	}
	e.do(t, "GET", fmt.Sprintf("/v1/contacts/actions/%d", j.ID), nil, 200).Data(t, &j)
	if j.Status != "done" || *j.Total != 5 || j.Processed != 5 || j.Changed != 5 || j.Percent != 100 {
		t.Fatalf("done %+v", j)
	}
	var tagged []struct{ Email string }
	e.do(t, "GET", "/v1/contacts?tag=aktiv", nil, 200).Data(t, &tagged)
	if len(tagged) != 5 {
		t.Fatalf("tagged %d", len(tagged))
	}
	ids := make([]int64, 1001)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	e.do(t, "POST", "/v1/contacts/actions", map[string]any{"action": "delete", "contact_ids": ids}, 413)
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/contacts/actions", map[string]any{"action": "add_to_list"}, 422)), "list_id", "contact_ids")
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/contacts/actions", map[string]any{"action": "zap", "segment_id": 5}, 422)), "action")
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/contacts/actions", map[string]any{"action": "delete", "segment_id": 999999}, 422)), "segment_id")
	e.do(t, "GET", "/v1/contacts/actions/999999", nil, 404)
}
