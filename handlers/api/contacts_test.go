package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/services"
)

// newContactsEnv is newEnv with a rate limit these tests never reach.
func newContactsEnv(t *testing.T, plan string) *env {
	t.Helper()
	e := newEnv(t, plan)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := api.New(&services.Set{DB: e.db, APILog: store.NewAPILogWriter(e.db, log), Log: log},
		api.Config{BaseURL: "https://rundbrief.test", RateLimit: 1_000_000, Now: func() time.Time { return now }})
	r := chi.NewRouter()
	r.Mount("/v1", a.Handler())
	e.h = r
	e.c = e.client(t, e.h, e.key)
	return e
}

type contactJSON struct {
	ID             int64          `json:"id"`
	Email          string         `json:"email"`
	FirstName      string         `json:"first_name"`
	LastName       string         `json:"last_name"`
	City           string         `json:"city"`
	Tags           []string       `json:"tags"`
	Status         string         `json:"status"`
	Source         string         `json:"source"`
	CustomFields   map[string]any `json:"custom_fields"`
	DOIConfirmedAt *string        `json:"doi_confirmed_at"`
	UpdatedAt      string         `json:"updated_at"`
	Lists          []struct {
		ID    int64  `json:"id"`
		Name  string `json:"name"`
		Color string `json:"color"`
	} `json:"lists"`
}

type listJSON struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Color       string `json:"color"`
	DoubleOptIn bool   `json:"double_opt_in"`
	MemberCount int64  `json:"member_count"`
}

type pageJSON struct {
	Meta struct {
		Pagination struct {
			Page, PerPage, Total, Pages int
		} `json:"pagination"`
	} `json:"meta"`
}

func (e *env) do(t *testing.T, method, path string, body any, wantStatus int) []byte {
	t.Helper()
	r := e.c.Request(method, path, body)
	if r.Status != wantStatus {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, r.Status, wantStatus, r.Body)
	}
	return r.Body
}

func (e *env) contact(t *testing.T, method, path string, body any, wantStatus int) contactJSON {
	t.Helper()
	var c struct {
		Data contactJSON `json:"data"`
	}
	if err := json.Unmarshal(e.do(t, method, path, body, wantStatus), &c); err != nil {
		t.Fatal(err)
	}
	return c.Data
}

func (e *env) list(t *testing.T, name string, doi bool) listJSON {
	t.Helper()
	var l struct {
		Data listJSON `json:"data"`
	}
	if err := json.Unmarshal(e.do(t, "POST", "/v1/lists", map[string]any{"name": name, "double_opt_in": doi}, 201), &l); err != nil {
		t.Fatal(err)
	}
	return l.Data
}

func (e *env) eventNames(t *testing.T) []string {
	t.Helper()
	ev, err := e.db.EventsAfter(context.Background(), e.acct, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(ev))
	for i, x := range ev {
		out[i] = x.Name
	}
	return out
}

func TestContactUpsertAPI(t *testing.T) {
	t.Parallel()
	e := newContactsEnv(t, "business")
	l := e.list(t, "Newsletter", false)
	c := e.contact(t, "POST", "/v1/contacts", map[string]any{
		"email": " Max.Muster@Example.COM ", "first_name": "Max", "last_name": "Muster", "address": "Hauptstr. 1", "zip": "10115",
		"city": "Berlin", "phone": "+49 30 123", "note": "VIP", "tags": []string{"kunde"}, "list_ids": []int64{l.ID},
		"custom_fields": map[string]any{"firma": "ACME", "umsatz": 12.5, "aktiv": true}, "source": "import",
	}, 201)
	if c.Email != "max.muster@example.com" || c.Status != "subscribed" || c.Source != "import" || len(c.Lists) != 1 ||
		c.Lists[0].Name != "Newsletter" || c.Lists[0].Color != "#4f46e5" || c.CustomFields["umsatz"] != 12.5 {
		t.Errorf("created = %+v", c)
	}
	if !strings.HasSuffix(c.UpdatedAt, "+01:00") && !strings.HasSuffix(c.UpdatedAt, "+02:00") {
		t.Errorf("updated_at %q is not Europe/Berlin", c.UpdatedAt)
	}
	c2 := e.contact(t, "POST", "/v1/contacts", map[string]any{"email": "max.muster@example.com", "tags": []string{"vip"}, "city": "Potsdam"}, 200)
	if c2.ID != c.ID || c2.City != "Potsdam" || strings.Join(c2.Tags, ",") != "kunde,vip" || len(c2.Lists) != 1 {
		t.Errorf("updated = %+v", c2)
	}
	for _, tc := range []struct {
		body  any
		field string
	}{
		{map[string]any{"email": "kein-at"}, "email"},
		{map[string]any{"first_name": "ohne Adresse"}, "email"},
		{map[string]any{"email": "a@b.de", "first_name": 7}, "first_name"},
		{map[string]any{"email": "a@b.de", "status": "aktiv"}, "status"},
		{map[string]any{"email": "a@b.de", "list_ids": []int64{999}}, "list_ids"},
		{map[string]any{"email": "a@b.de", "custom_fields": map[string]any{"x": map[string]any{"y": 1}}}, "custom_fields.x"},
	} {
		r := e.c.Request("POST", "/v1/contacts", tc.body)
		errBody := wantError(t, r, 422, "validation_error")
		if fields, _ := errBody["fields"].(map[string]any); fields[tc.field] == nil {
			t.Errorf("%v: fields %v lack %s", tc.body, errBody["fields"], tc.field)
		}
	}
	wantError(t, e.c.Request("POST", "/v1/contacts", "{kaputt", hdr("Content-Type", "application/json")), 400, "bad_request")

	// The same request twice changes nothing the second time and emits nothing.
	before := len(e.eventNames(t))
	e.contact(t, "POST", "/v1/contacts", map[string]any{"email": "max.muster@example.com", "city": "Potsdam", "tags": []string{"vip"}}, 200)
	if after := e.eventNames(t); len(after) != before {
		t.Errorf("a no-op upsert emitted %v", after[before:])
	}
}

func TestContactEndpointsAPI(t *testing.T) {
	t.Parallel()
	e := newContactsEnv(t, "business")
	a := e.list(t, "A", false)
	b := e.list(t, "B", false)
	c := e.contact(t, "POST", "/v1/contacts", map[string]any{"email": "anna@example.com", "first_name": "Anna", "tags": []string{"x"}, "list_ids": []int64{a.ID}}, 201)
	e.contact(t, "POST", "/v1/contacts", map[string]any{"email": "bert@example.com", "first_name": "Bert"}, 201)
	path := fmt.Sprintf("/v1/contacts/%d", c.ID)

	if got := e.contact(t, "GET", path, nil, 200); got.Email != "anna@example.com" {
		t.Errorf("GET = %+v", got)
	}
	p := e.contact(t, "PATCH", path, map[string]any{"last_name": "Alt", "tags": []string{"y"}, "list_ids": []int64{b.ID}, "custom_fields": map[string]any{"plz2": "12345"}}, 200)
	if p.LastName != "Alt" || strings.Join(p.Tags, ",") != "y" || len(p.Lists) != 1 || p.Lists[0].ID != b.ID || p.CustomFields["plz2"] != "12345" {
		t.Errorf("PATCH = %+v", p)
	}
	if got := e.contact(t, "POST", path+"/tags", map[string]any{"tags": []string{"z", "y"}}, 200); strings.Join(got.Tags, ",") != "y,z" {
		t.Errorf("POST tags = %v", got.Tags)
	}
	e.do(t, "DELETE", path+"/tags/z", nil, 204)
	wantError(t, e.c.Request("DELETE", path+"/tags/z", nil), 404, "not_found")
	e.contact(t, "POST", path+"/tags", map[string]any{"tags": []string{"für alle"}}, 200)
	e.do(t, "DELETE", path+"/tags/"+url.PathEscape("für alle"), nil, 204)

	var tags struct {
		Data []struct {
			Name  string `json:"name"`
			Count int    `json:"count"`
		} `json:"data"`
	}
	if err := json.Unmarshal(e.do(t, "GET", "/v1/tags", nil, 200), &tags); err != nil || len(tags.Data) != 1 || tags.Data[0].Name != "y" || tags.Data[0].Count != 1 {
		t.Errorf("GET /tags = %+v %v", tags, err)
	}

	var page struct {
		Data []contactJSON `json:"data"`
		pageJSON
	}
	for q, want := range map[string]int{
		"":                               2,
		"?sort=email_asc&per_page=1":     2,
		"?q=ANN":                         1,
		"?tag=y":                         1,
		"?status=subscribed":             2,
		fmt.Sprintf("?list_id=%d", b.ID): 1,
		"?updated_after=2000-01-01T00:00:00%2B01:00&sort=updated_asc": 2,
		"?updated_after=2000-01-01 00:00":                             2,
		"?updated_after=2000-01-01T00:00:00+01:00":                    2,
	} {
		page.Data = nil
		if err := json.Unmarshal(e.do(t, "GET", "/v1/contacts"+strings.ReplaceAll(q, " ", "%20"), nil, 200), &page); err != nil {
			t.Fatal(err)
		}
		if page.Meta.Pagination.Total != want {
			t.Errorf("GET /contacts%s: total %d, want %d", q, page.Meta.Pagination.Total, want)
		}
	}
	for _, q := range []string{"?sort=name", "?status=x", "?list_id=abc", "?updated_after=gestern", "?after_id=5", "?list_id=999999", "?per_page=101"} {
		wantError(t, e.c.Request("GET", "/v1/contacts"+q, nil), 422, "validation_error")
	}
	// Keyset continuation with after_id.
	var first struct {
		Data []contactJSON `json:"data"`
	}
	_ = json.Unmarshal(e.do(t, "GET", "/v1/contacts?updated_after=2000-01-01T00:00:00Z&per_page=1", nil, 200), &first)
	var next struct {
		Data []contactJSON `json:"data"`
		pageJSON
	}
	_ = json.Unmarshal(e.do(t, "GET", fmt.Sprintf("/v1/contacts?updated_after=%s&after_id=%d&per_page=1", url.QueryEscape(first.Data[0].UpdatedAt), first.Data[0].ID), nil, 200), &next)
	if len(next.Data) != 1 || next.Data[0].ID == first.Data[0].ID || next.Meta.Pagination.Total != 1 {
		t.Errorf("keyset: first %d, next %+v", first.Data[0].ID, next)
	}

	var acts struct {
		Data []struct {
			Action string `json:"action"`
			Label  string `json:"label"`
			Actor  struct {
				Type string `json:"type"`
				ID   *int64 `json:"id"`
			} `json:"actor"`
		} `json:"data"`
	}
	if err := json.Unmarshal(e.do(t, "GET", path+"/activities", nil, 200), &acts); err != nil {
		t.Fatal(err)
	}
	if len(acts.Data) < 3 || acts.Data[len(acts.Data)-1].Action != "contact.created" || acts.Data[0].Actor.Type != "key" ||
		acts.Data[0].Actor.ID == nil || *acts.Data[0].Actor.ID != e.keyID || acts.Data[len(acts.Data)-1].Label != "Kontakt angelegt" {
		t.Errorf("activities = %+v", acts.Data)
	}
	u := e.contact(t, "POST", path+"/unsubscribe", map[string]any{"reason": "kein Interesse"}, 200)
	if u.Status != "unsubscribed" {
		t.Errorf("unsubscribe = %+v", u)
	}
	if e.contact(t, "POST", path+"/unsubscribe", nil, 200).Status != "unsubscribed" {
		t.Error("second unsubscribe")
	}
	var log struct {
		Data []struct {
			Object struct {
				Type string `json:"type"`
			} `json:"object"`
		} `json:"data"`
		pageJSON
	}
	if err := json.Unmarshal(e.do(t, "GET", "/v1/logs/activity?object_type=list", nil, 200), &log); err != nil || log.Meta.Pagination.Total != 2 {
		t.Errorf("activity log of lists: %+v %v", log, err)
	}
	// A change made in the portal is logged with the user as its actor.
	var owner int64
	if err := e.db.GetContext(context.Background(), &owner, `SELECT id FROM users WHERE account_id = $1`, e.acct); err != nil {
		t.Fatal(err)
	}
	name := "Aus dem Portal"
	if _, err := e.db.CreateList(context.Background(), e.acct, store.Actor{Type: store.ActorUser, ID: owner}, store.ListInput{Name: &name}); err != nil {
		t.Fatal(err)
	}
	var actors struct {
		Data []struct {
			Action string `json:"action"`
			Actor  struct {
				Type string `json:"type"`
				ID   *int64 `json:"id"`
			} `json:"actor"`
		} `json:"data"`
	}
	if err := json.Unmarshal(e.do(t, "GET", "/v1/logs/activity?object_type=list", nil, 200), &actors); err != nil || len(actors.Data) != 3 {
		t.Fatalf("activity log of lists: %+v %v", actors, err)
	}
	for i, a := range actors.Data {
		wantType, wantID := "key", e.keyID
		if i == 0 { // newest first
			wantType, wantID = "user", owner
		}
		if a.Actor.Type != wantType || a.Actor.ID == nil || *a.Actor.ID != wantID {
			t.Errorf("activity %d (%s): actor %s %v, want %s %d", i, a.Action, a.Actor.Type, a.Actor.ID, wantType, wantID)
		}
	}
	e.do(t, "DELETE", path, nil, 204)
	wantError(t, e.c.Request("GET", path, nil), 404, "not_found")
	wantError(t, e.c.Request("GET", "/v1/contacts/abc", nil), 404, "not_found")
	wantError(t, e.c.Request("DELETE", path, nil), 404, "not_found")
	wantError(t, e.c.Request("GET", path+"/activities", nil), 404, "not_found")
}

func TestListEndpointsAPI(t *testing.T) {
	t.Parallel()
	e := newContactsEnv(t, "business")
	l := e.list(t, "Kunden", false)
	if l.Color != "#4f46e5" || l.MemberCount != 0 {
		t.Errorf("created list = %+v", l)
	}
	wantError(t, e.c.Request("POST", "/v1/lists", map[string]any{"name": "kunden"}), 422, "validation_error")
	wantError(t, e.c.Request("POST", "/v1/lists", map[string]any{"name": "X", "color": "blau"}), 422, "validation_error")
	wantError(t, e.c.Request("POST", "/v1/lists", map[string]any{}), 422, "validation_error")
	lp := fmt.Sprintf("/v1/lists/%d", l.ID)
	var got struct {
		Data listJSON `json:"data"`
	}
	_ = json.Unmarshal(e.do(t, "PATCH", lp, map[string]any{"color": "#FF0000", "double_opt_in": true}, 200), &got)
	if got.Data.Color != "#ff0000" || !got.Data.DoubleOptIn {
		t.Errorf("PATCH list = %+v", got.Data)
	}
	_ = json.Unmarshal(e.do(t, "PATCH", lp, map[string]any{"double_opt_in": false}, 200), &got)

	existing := e.contact(t, "POST", "/v1/contacts", map[string]any{"email": "alt@example.com"}, 201)
	var res struct {
		Data struct {
			Added          int `json:"added"`
			AlreadyMembers int `json:"already_members"`
			Created        int `json:"created"`
			Failed         int `json:"failed"`
			Results        []struct {
				Result string `json:"result"`
				Error  *struct {
					Code string `json:"code"`
				} `json:"error"`
			} `json:"results"`
		} `json:"data"`
	}
	body := map[string]any{"contact_ids": []int64{existing.ID, 987654}, "emails": []string{"neu@example.com", "kaputt"}}
	if err := json.Unmarshal(e.do(t, "POST", lp+"/members", body, 200), &res); err != nil {
		t.Fatal(err)
	}
	if res.Data.Added != 1 || res.Data.Created != 1 || res.Data.Failed != 2 || res.Data.Results[1].Error.Code != "not_found" ||
		res.Data.Results[3].Error.Code != "validation_error" {
		t.Errorf("add members = %+v", res.Data)
	}
	var members struct {
		Data []contactJSON `json:"data"`
		pageJSON
	}
	_ = json.Unmarshal(e.do(t, "GET", lp+"/members?sort=email_asc", nil, 200), &members)
	if members.Meta.Pagination.Total != 2 || members.Data[0].Email != "alt@example.com" {
		t.Errorf("members = %+v", members)
	}
	var lists struct {
		Data []listJSON `json:"data"`
		pageJSON
	}
	_ = json.Unmarshal(e.do(t, "GET", "/v1/lists", nil, 200), &lists)
	if lists.Meta.Pagination.Total != 1 || lists.Data[0].MemberCount != 2 {
		t.Errorf("lists = %+v", lists)
	}
	var one struct {
		Data listJSON `json:"data"`
	}
	if err := json.Unmarshal(e.do(t, "GET", lp, nil, 200), &one); err != nil {
		t.Fatal(err)
	}
	if one.Data != (listJSON{ID: l.ID, Name: "Kunden", Color: "#ff0000", MemberCount: 2}) {
		t.Errorf("GET list = %+v", one.Data)
	}
	e.do(t, "DELETE", fmt.Sprintf("%s/members/%d", lp, existing.ID), nil, 204)
	wantError(t, e.c.Request("DELETE", fmt.Sprintf("%s/members/%d", lp, existing.ID), nil), 404, "not_found")
	names := e.eventNames(t)
	if names[len(names)-1] != "list.left" && names[len(names)-2] != "list.left" {
		t.Errorf("removal events = %v", names)
	}
	ids := make([]int64, 1001)
	r := e.c.Request("POST", lp+"/members", map[string]any{"contact_ids": ids})
	wantError(t, r, 413, "payload_too_large")
	e.do(t, "DELETE", lp, nil, 204)
	wantError(t, e.c.Request("GET", lp, nil), 404, "not_found")
	wantError(t, e.c.Request("GET", lp+"/members", nil), 404, "not_found")
	wantError(t, e.c.Request("POST", lp+"/members", body), 404, "not_found")
}

func TestBulkAPI(t *testing.T) {
	t.Parallel()
	e := newContactsEnv(t, "business")
	l := e.list(t, "Import", false)
	e.contact(t, "POST", "/v1/contacts", map[string]any{"email": "da@example.com"}, 201)
	body := json.RawMessage(fmt.Sprintf(`{"list_ids": [%d], "tags": ["import"], "contacts": [
		{"email": "eins@example.com", "first_name": "Eins"},
		{"email": "kaputt"},
		{"email": "da@example.com", "city": "Bonn"},
		{"email": "zwei@example.com", "first_name": 42},
		"kein Objekt",
		{"first_name": "ohne Adresse"},
		{"email": "drei@example.com", "custom_fields": {"firma": "X"}}
	]}`, l.ID))
	var res struct {
		Data struct {
			Created, Updated, Failed int
			Results                  []struct {
				Index  int    `json:"index"`
				Email  string `json:"email"`
				Result string `json:"result"`
				ID     *int64 `json:"id"`
				Error  *struct {
					Code   string            `json:"code"`
					Fields map[string]string `json:"fields"`
				} `json:"error"`
			} `json:"results"`
		} `json:"data"`
	}
	if err := json.Unmarshal(e.do(t, "POST", "/v1/contacts/bulk", body, 200), &res); err != nil {
		t.Fatal(err)
	}
	want := []string{"created", "error", "updated", "error", "error", "error", "created"}
	for i, r := range res.Data.Results {
		if r.Index != i || r.Result != want[i] || (r.Result == "error") != (r.ID == nil) {
			t.Errorf("entry %d: %+v, want %s", i, r, want[i])
		}
	}
	if res.Data.Created != 2 || res.Data.Updated != 1 || res.Data.Failed != 4 {
		t.Errorf("totals = %d/%d/%d", res.Data.Created, res.Data.Updated, res.Data.Failed)
	}
	if f := res.Data.Results[3].Error.Fields; f["first_name"] == "" {
		t.Errorf("type error of entry 3: %+v", res.Data.Results[3].Error)
	}
	if f := res.Data.Results[5].Error.Fields; f["email"] == "" {
		t.Errorf("missing email of entry 5: %+v", res.Data.Results[5].Error)
	}
	c, err := e.db.ContactByEmail(context.Background(), e.acct, "drei@example.com")
	if err != nil || len(c.Lists) != 1 || c.Tags[0] != "import" || c.CustomFields["firma"] != "X" {
		t.Errorf("drei = %+v, %v", c, err)
	}
	big := make([]map[string]string, 1001)
	for i := range big {
		big[i] = map[string]string{"email": fmt.Sprintf("b%d@example.com", i)}
	}
	wantError(t, e.c.Request("POST", "/v1/contacts/bulk", map[string]any{"contacts": big}), 413, "payload_too_large")
	wantError(t, e.c.Request("POST", "/v1/contacts/bulk", map[string]any{"contacts": big[:1], "list_ids": []int64{999999}}), 422, "validation_error")
}

func TestBlockedAddressAPI(t *testing.T) {
	t.Parallel()
	e := newContactsEnv(t, "business")
	c := e.contact(t, "POST", "/v1/contacts", map[string]any{"email": "weg@example.com"}, 201)
	var blocked struct {
		Data []struct {
			Email  string  `json:"email"`
			Source string  `json:"source"`
			Reason *string `json:"reason"`
		} `json:"data"`
	}
	if err := json.Unmarshal(e.do(t, "POST", "/v1/unsubscribes", map[string]any{"email": "Weg@Example.com", "emails": []string{"nie@example.com"}, "reason": "Beschwerde"}, 201), &blocked); err != nil {
		t.Fatal(err)
	}
	if len(blocked.Data) != 2 || blocked.Data[1].Email != "weg@example.com" || blocked.Data[1].Source != "api" || *blocked.Data[1].Reason != "Beschwerde" {
		t.Errorf("blocked = %+v", blocked.Data)
	}
	// The API cannot subscribe a blocked address again.
	if got := e.contact(t, "POST", "/v1/contacts", map[string]any{"email": "weg@example.com", "status": "subscribed"}, 200); got.Status != "unsubscribed" {
		t.Errorf("POST subscribed of a blocked address: %s", got.Status)
	}
	if got := e.contact(t, "POST", "/v1/contacts", map[string]any{"email": "nie@example.com", "status": "subscribed"}, 201); got.Status != "unsubscribed" {
		t.Errorf("new contact of a blocked address: %s", got.Status)
	}
	errBody := wantError(t, e.c.Request("PATCH", fmt.Sprintf("/v1/contacts/%d", c.ID), map[string]any{"status": "subscribed"}), 409, "conflict")
	if errBody["reason"] != "address_blocked" {
		t.Errorf("reason = %v", errBody["reason"])
	}
	var list struct {
		pageJSON
	}
	_ = json.Unmarshal(e.do(t, "GET", "/v1/unsubscribes?q=weg", nil, 200), &list)
	if list.Meta.Pagination.Total != 1 {
		t.Errorf("GET /unsubscribes?q=weg total %d", list.Meta.Pagination.Total)
	}
	wantError(t, e.c.Request("POST", "/v1/unsubscribes", map[string]any{"emails": []string{"kaputt"}}), 422, "validation_error")
	e.do(t, "DELETE", "/v1/unsubscribes/"+url.PathEscape("WEG@example.com"), nil, 204)
	wantError(t, e.c.Request("DELETE", "/v1/unsubscribes/weg@example.com", nil), 404, "not_found")
	if got := e.contact(t, "PATCH", fmt.Sprintf("/v1/contacts/%d", c.ID), map[string]any{"status": "subscribed"}, 200); got.Status != "subscribed" {
		t.Errorf("after unblocking: %s", got.Status)
	}
}

func TestOtherAccountsIDsAPI(t *testing.T) {
	t.Parallel()
	e := newContactsEnv(t, "business")
	c := e.contact(t, "POST", "/v1/contacts", map[string]any{"email": "mein@example.com", "tags": []string{"vip"}}, 201)
	l := e.list(t, "Meins", false)
	other, err := e.db.CreateAccount(context.Background(), store.NewAccount{Name: "Other", Email: "other@acme.test", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := e.db.CreateKey(context.Background(), other.Account.ID, store.KeySettings{})
	if err != nil {
		t.Fatal(err)
	}
	them := e.client(t, e.h, key)
	cp, lp := fmt.Sprintf("/v1/contacts/%d", c.ID), fmt.Sprintf("/v1/lists/%d", l.ID)
	for _, rq := range []struct {
		method, path string
		body         any
	}{
		{"GET", cp, nil}, {"PATCH", cp, map[string]any{"city": "x"}}, {"DELETE", cp, nil},
		{"POST", cp + "/unsubscribe", nil}, {"GET", cp + "/activities", nil}, {"POST", cp + "/tags", map[string]any{"tags": []string{"x"}}},
		{"DELETE", cp + "/tags/vip", nil},
		{"GET", lp, nil}, {"PATCH", lp, map[string]any{"name": "x"}}, {"DELETE", lp, nil}, {"GET", lp + "/members", nil},
		{"POST", lp + "/members", map[string]any{"emails": []string{"x@example.com"}}}, {"DELETE", fmt.Sprintf("%s/members/%d", lp, c.ID), nil},
		{"DELETE", "/v1/unsubscribes/mein@example.com", nil},
	} {
		wantError(t, them.Request(rq.method, rq.path, rq.body), 404, "not_found")
	}
	var page struct {
		pageJSON
	}
	_ = json.Unmarshal(them.Request("GET", "/v1/contacts", nil).Body, &page)
	if page.Meta.Pagination.Total != 0 {
		t.Errorf("the other account sees %d contacts", page.Meta.Pagination.Total)
	}
	wantError(t, them.Request("POST", "/v1/contacts", map[string]any{"email": "x@example.com", "list_ids": []int64{l.ID}}), 422, "validation_error")
	if got := e.contact(t, "GET", cp, nil, 200); got.Status != "subscribed" || len(got.Tags) != 1 || got.Tags[0] != "vip" {
		t.Errorf("my contact changed: %+v", got)
	}
}

func TestContactLimitsAPI(t *testing.T) {
	t.Parallel()
	e := newContactsEnv(t, "starter")
	if _, err := e.db.ExecContext(context.Background(), `UPDATE plans SET max_contacts = 2, max_lists = 1 WHERE name = 'starter'`); err != nil {
		t.Fatal(err)
	}
	e.contact(t, "POST", "/v1/contacts", map[string]any{"email": "a@example.com"}, 201)
	e.contact(t, "POST", "/v1/contacts", map[string]any{"email": "b@example.com"}, 201)
	r := e.c.Request("POST", "/v1/contacts", map[string]any{"email": "c@example.com"})
	if body := wantError(t, r, 402, "limit_reached"); body["upgrade_url"] == "" {
		t.Errorf("402 without upgrade_url: %v", body)
	}
	e.contact(t, "POST", "/v1/contacts", map[string]any{"email": "a@example.com", "city": "Ulm"}, 200)
	e.list(t, "Eins", false)
	wantError(t, e.c.Request("POST", "/v1/lists", map[string]any{"name": "Zwei"}), 402, "limit_reached")
	var limits struct {
		Data struct {
			Contacts struct{ Limit, Used int64 } `json:"contacts"`
			Lists    struct{ Limit, Used int64 } `json:"lists"`
		} `json:"data"`
	}
	if err := json.Unmarshal(e.do(t, "GET", "/v1/plan/limits", nil, 200), &limits); err != nil {
		t.Fatal(err)
	}
	if limits.Data.Contacts.Used != 2 || limits.Data.Contacts.Limit != 2 || limits.Data.Lists.Used != 1 {
		t.Errorf("plan limits = %+v", limits.Data)
	}
	var bulk struct {
		Data struct {
			Failed  int `json:"failed"`
			Results []struct {
				Error *struct {
					Code string `json:"code"`
				} `json:"error"`
			} `json:"results"`
		} `json:"data"`
	}
	_ = json.Unmarshal(e.do(t, "POST", "/v1/contacts/bulk", map[string]any{"contacts": []map[string]string{{"email": "d@example.com"}}}, 200), &bulk)
	if bulk.Data.Failed != 1 || bulk.Data.Results[0].Error.Code != "limit_reached" {
		t.Errorf("bulk over the limit: %+v", bulk.Data)
	}
}

func TestConcurrentUpsertsAPI(t *testing.T) {
	t.Parallel()
	e := newContactsEnv(t, "business")
	var wg sync.WaitGroup
	statuses := make(chan int, 50)
	for range 50 {
		wg.Go(func() {
			statuses <- e.c.Request("POST", "/v1/contacts", map[string]any{"email": "same@example.com", "first_name": "Sam"}).Status
		})
	}
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	if counts[http.StatusCreated] != 1 || counts[http.StatusOK] != 49 {
		t.Errorf("statuses = %v, want one 201 and 49 × 200", counts)
	}
	created := 0
	for _, n := range e.eventNames(t) {
		if n == "contact.created" {
			created++
		}
	}
	if created != 1 {
		t.Errorf("contact.created emitted %d times", created)
	}
}
