package api_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
)

type engagementJSON struct {
	Sent            int64   `json:"sent"`
	Failed          int64   `json:"failed"`
	Bounces         int64   `json:"bounces"`
	UniqueOpens     int64   `json:"unique_opens"`
	UniqueClicks    int64   `json:"unique_clicks"`
	Clicks          int64   `json:"clicks"`
	Unsubscribes    int64   `json:"unsubscribes"`
	OpenRate        float64 `json:"open_rate"`
	ClickRate       float64 `json:"click_rate"`
	ClickToOpenRate float64 `json:"click_to_open_rate"`
	BounceRate      float64 `json:"bounce_rate"`
	UnsubscribeRate float64 `json:"unsubscribe_rate"`
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// wantEngagement checks the fixture's figures: 10 sent, 1 bounced (failed),
// 4 opened, 2 clicked (one of them twice), 1 unsubscribed.
func wantEngagement(t *testing.T, what string, e engagementJSON) {
	t.Helper()
	if e.Sent != 10 || e.Failed != 1 || e.Bounces != 1 || e.UniqueOpens != 4 || e.UniqueClicks != 2 || e.Clicks != 3 ||
		e.Unsubscribes != 1 {
		t.Errorf("%s counts: %+v", what, e)
	}
	if !near(e.OpenRate, 0.4) || !near(e.ClickRate, 0.2) || !near(e.ClickToOpenRate, 0.5) ||
		!near(e.BounceRate, 1.0/11) || !near(e.UnsubscribeRate, 0.1) {
		t.Errorf("%s rates: %+v", what, e)
	}
}

// campaignFixture sends a newsletter to 11 contacts of which one address is
// rejected permanently (550 5.1.1), then records 4 opens, 3 clicks by 2
// recipients and 1 unsubscribe through the store's tracking services.
func campaignFixture(t *testing.T) (*sendAPIEnv, int64) {
	t.Helper()
	e := newSendAPIEnv(t, smtptest.Options{Reject: map[string]int{"kunden11@example.com": 550}})
	list := e.list(t, "kunden", 11)
	var n newsletterJSON
	e.do(t, "POST", "/v1/newsletters", map[string]any{"name": "Herbst", "subject": "Hallo {{vorname}}",
		"html":     `<p><a href="https://shop.example.com/a">A</a> <a href="https://shop.example.com/b">B</a></p>`,
		"list_ids": []int64{list}}, 201).Data(t, &n)
	path := fmt.Sprintf("/v1/newsletters/%d", n.ID)
	e.do(t, "POST", path+"/send", nil, 202)
	e.waitSent(t, path)

	ctx := context.Background()
	recips, _, err := e.db.CampaignRecipients(ctx, e.acct, n.ID, store.RecipientFilter{Status: store.RecipientSent}, store.Page{Page: 1, PerPage: 100})
	if err != nil || len(recips) != 10 {
		t.Fatalf("sent recipients: %d, %v", len(recips), err)
	}
	links, err := e.db.CampaignLinks(ctx, n.ID)
	if err != nil || len(links) != 2 {
		t.Fatalf("links: %+v, %v", links, err)
	}
	now := time.Now()
	for _, r := range recips[:4] {
		if _, err := e.db.TrackOpen(ctx, r.ID, now); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.TrackOpen(ctx, r.ID, now); err != nil { // a second open counts once
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ r, l int }{{0, 0}, {0, 0}, {1, 1}} {
		if _, err := e.db.TrackClick(ctx, recips[c.r].ID, links[c.l].ID, "", now, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.db.UnsubscribeByLink(ctx, recips[9].ID, store.UnsubLink); err != nil {
		t.Fatal(err)
	}
	return e, n.ID
}

func TestCampaignsAndAnalyticsAPI(t *testing.T) {
	t.Parallel()
	e, id := campaignFixture(t)
	cpath := fmt.Sprintf("/v1/campaigns/%d", id)

	// A single email, so that the list holds both kinds.
	e.do(t, "POST", "/v1/emails/send", map[string]any{"to": "einzel@example.org", "type": "transactional", "subject": "Rechnung", "html": "<p>Hallo</p>"}, 202)

	var all []struct {
		ID    int64  `json:"id"`
		Kind  string `json:"kind"`
		Type  string `json:"type"`
		Label string `json:"status_label"`
		engagementJSON
	}
	e.do(t, "GET", "/v1/campaigns", nil, 200).Data(t, &all)
	if len(all) != 2 || all[0].Kind != "email" || all[0].Type != "transactional" || all[1].ID != id || all[1].Kind != "newsletter" {
		t.Fatalf("campaigns: %+v", all)
	}
	wantEngagement(t, "list", all[1].engagementJSON)
	e.do(t, "GET", "/v1/campaigns?kind=newsletter&status=sent", nil, 200).Data(t, &all)
	if len(all) != 1 || all[0].ID != id || all[0].Label != "Versendet" {
		t.Fatalf("filtered: %+v", all)
	}
	wantFields(t, e.fields(t, e.do(t, "GET", "/v1/campaigns?kind=fax", nil, 422)), "kind")

	var detail struct {
		engagementJSON
		TrackClicks bool `json:"track_clicks"`
		Timeline    []struct {
			Date string `json:"date"`
			engagementJSON
		} `json:"timeline"`
	}
	e.do(t, "GET", cpath, nil, 200).Data(t, &detail)
	wantEngagement(t, "detail", detail.engagementJSON)
	today := time.Now().In(store.Berlin).Format(time.DateOnly)
	if len(detail.Timeline) != 1 || detail.Timeline[0].Date != today || !detail.TrackClicks {
		t.Fatalf("timeline: %+v", detail)
	}
	wantEngagement(t, "timeline", detail.Timeline[0].engagementJSON)

	// Recipients with filters.
	type recipientJSON struct {
		Email    string  `json:"email"`
		Status   string  `json:"status"`
		Error    *string `json:"error"`
		OpenedAt *string `json:"opened_at"`
	}
	var rs []recipientJSON
	r := e.do(t, "GET", cpath+"/recipients?opened=true&per_page=3", nil, 200)
	r.Data(t, &rs)
	if len(rs) != 3 || rs[0].OpenedAt == nil || total(t, r) != 4 {
		t.Fatalf("opened: %+v (total %d)", rs, total(t, r))
	}
	r = e.do(t, "GET", cpath+"/recipients?status=failed", nil, 200)
	r.Data(t, &rs)
	if len(rs) != 1 || rs[0].Email != "kunden11@example.com" || rs[0].Error == nil || !strings.Contains(*rs[0].Error, "550") {
		t.Fatalf("failed: %+v", rs)
	}
	if n := total(t, e.do(t, "GET", cpath+"/recipients?clicked=false", nil, 200)); n != 9 {
		t.Errorf("not clicked: %d", n)
	}
	wantFields(t, e.fields(t, e.do(t, "GET", cpath+"/recipients?status=lost&opened=vielleicht", nil, 422)), "status", "opened")

	// Links in document order with their clicks.
	var ls []struct {
		URL          string  `json:"url"`
		Position     int     `json:"position"`
		UniqueClicks int64   `json:"unique_clicks"`
		Clicks       int64   `json:"clicks"`
		ClickRate    float64 `json:"click_rate"`
	}
	e.do(t, "GET", cpath+"/links", nil, 200).Data(t, &ls)
	if len(ls) != 2 || ls[0].URL != "https://shop.example.com/a" || ls[0].UniqueClicks != 1 || ls[0].Clicks != 2 ||
		!near(ls[0].ClickRate, 0.1) || ls[1].Position != 1 || ls[1].Clicks != 1 {
		t.Fatalf("links: %+v", ls)
	}

	// The newsletter's statistics agree.
	var st struct {
		engagementJSON
		Recipients int64 `json:"recipients"`
		Timeline   []struct {
			Date string `json:"date"`
		} `json:"timeline"`
	}
	e.do(t, "GET", fmt.Sprintf("/v1/newsletters/%d/stats", id), nil, 200).Data(t, &st)
	wantEngagement(t, "newsletter stats", st.engagementJSON)
	if st.Recipients != 11 || len(st.Timeline) != 1 {
		t.Errorf("stats: %+v", st)
	}

	// The account's overview and time series: the newsletter plus the single
	// email (one more sent).
	var ov struct {
		engagementJSON
		From        string `json:"from"`
		To          string `json:"to"`
		Newsletters int64  `json:"newsletters"`
		Contacts    struct {
			Total int64 `json:"total"`
			New   int64 `json:"new"`
		} `json:"contacts"`
	}
	waitFor(t, func() bool {
		e.do(t, "GET", "/v1/analytics/overview", nil, 200).Data(t, &ov)
		return ov.Sent == 11
	})
	if ov.To != today || ov.UniqueOpens != 4 || ov.UniqueClicks != 2 || ov.Bounces != 1 || ov.Newsletters != 1 ||
		ov.Contacts.Total != 11 || ov.Contacts.New != 11 || !near(ov.OpenRate, 4.0/11) {
		t.Errorf("overview: %+v", ov)
	}
	tomorrow := time.Now().In(store.Berlin).AddDate(0, 0, 1).Format(time.DateOnly)
	e.do(t, "GET", "/v1/analytics/overview?from="+tomorrow+"&to="+tomorrow, nil, 200).Data(t, &ov)
	if ov.Sent != 0 || ov.OpenRate != 0 || ov.Contacts.New != 0 || ov.Contacts.Total != 11 {
		t.Errorf("empty period: %+v", ov)
	}
	wantFields(t, e.fields(t, e.do(t, "GET", "/v1/analytics/overview?from=gestern", nil, 422)), "from")
	wantFields(t, e.fields(t, e.do(t, "GET", "/v1/analytics/overview?from=2026-01-10&to=2026-01-01", nil, 422)), "to")

	var ts struct {
		Interval string `json:"interval"`
		Points   []struct {
			Date string `json:"date"`
			engagementJSON
			NewContacts int64 `json:"new_contacts"`
			Contacts    int64 `json:"contacts"`
		} `json:"points"`
	}
	e.do(t, "GET", "/v1/analytics/timeseries", nil, 200).Data(t, &ts)
	if ts.Interval != "day" || len(ts.Points) != 30 {
		t.Fatalf("timeseries: %d points", len(ts.Points))
	}
	last, first := ts.Points[29], ts.Points[0]
	if last.Date != today || last.Sent != 11 || last.UniqueOpens != 4 || last.NewContacts != 11 || last.Contacts != 11 ||
		first.Sent != 0 || first.Contacts != 0 {
		t.Errorf("timeseries: first %+v, last %+v", first, last)
	}
	e.do(t, "GET", "/v1/analytics/timeseries?interval=month", nil, 200).Data(t, &ts)
	if n := len(ts.Points); n < 1 || n > 2 || ts.Points[n-1].Sent != 11 || !strings.HasSuffix(ts.Points[n-1].Date, "-01") {
		t.Errorf("monthly: %+v", ts.Points)
	}
	wantFields(t, e.fields(t, e.do(t, "GET", "/v1/analytics/timeseries?interval=hour", nil, 422)), "interval")
	wantFields(t, e.fields(t, e.do(t, "GET", "/v1/analytics/timeseries?from=2024-01-01&to=2026-01-01", nil, 422)), "to")

	// Another account sees none of it.
	other := otherClient(t, e)
	for _, p := range []string{cpath, cpath + "/recipients", cpath + "/links", fmt.Sprintf("/v1/newsletters/%d/stats", id)} {
		if r := other.Request("GET", p, nil); r.Status != http.StatusNotFound {
			t.Errorf("other account %s: %d", p, r.Status)
		}
	}
	var none []any
	other.Request("GET", "/v1/campaigns", nil).Data(t, &none)
	if len(none) != 0 {
		t.Errorf("other account's campaigns: %v", none)
	}
	other.Request("GET", "/v1/analytics/overview", nil).Data(t, &ov)
	if ov.Sent != 0 || ov.Contacts.Total != 0 {
		t.Errorf("other account's overview: %+v", ov)
	}
}

// TestHardBounceBlocksAddress: a 550 5.1.1 puts the address on the blocked
// list (source bounce) and the next newsletter skips it; a full mailbox
// (552 5.2.2) fails and bounces but does not block.
func TestHardBounceBlocksAddress(t *testing.T) {
	t.Parallel()
	e := newSendAPIEnv(t, smtptest.Options{Reject: map[string]int{"b1@example.com": 550, "b2@example.com": 552}})
	list := e.list(t, "b", 3)
	send := func() int64 {
		var n newsletterJSON
		e.do(t, "POST", "/v1/newsletters", map[string]any{"subject": "Hallo", "html": "<p>Hallo</p>", "list_ids": []int64{list}}, 201).Data(t, &n)
		e.do(t, "POST", fmt.Sprintf("/v1/newsletters/%d/send", n.ID), nil, 202)
		e.waitSent(t, fmt.Sprintf("/v1/newsletters/%d", n.ID))
		return n.ID
	}
	first := send()
	var blocked []struct {
		Email      string  `json:"email"`
		Source     string  `json:"source"`
		CampaignID *int64  `json:"campaign_id"`
		Reason     *string `json:"reason"`
	}
	e.do(t, "GET", "/v1/unsubscribes", nil, 200).Data(t, &blocked)
	if len(blocked) != 1 || blocked[0].Email != "b1@example.com" || blocked[0].Source != "bounce" ||
		blocked[0].CampaignID == nil || *blocked[0].CampaignID != first || blocked[0].Reason == nil {
		t.Fatalf("blocked: %+v", blocked)
	}
	var st engagementJSON
	e.do(t, "GET", fmt.Sprintf("/v1/newsletters/%d/stats", first), nil, 200).Data(t, &st)
	if st.Sent != 1 || st.Failed != 2 || st.Bounces != 2 || st.Unsubscribes != 0 {
		t.Errorf("first stats: %+v", st)
	}
	var events []string
	if err := e.db.SelectContext(context.Background(), &events,
		`SELECT payload->>'email' FROM events WHERE account_id = $1 AND name = 'email.bounced' ORDER BY 1`, e.acct); err != nil {
		t.Fatal(err)
	}
	if strings.Join(events, ",") != "b1@example.com,b2@example.com" {
		t.Errorf("email.bounced: %v", events)
	}

	second := send()
	var rs []struct {
		Email  string  `json:"email"`
		Status string  `json:"status"`
		Error  *string `json:"error"`
	}
	e.do(t, "GET", fmt.Sprintf("/v1/campaigns/%d/recipients", second), nil, 200).Data(t, &rs)
	got := map[string]string{}
	for _, r := range rs {
		got[r.Email] = r.Status
	}
	if len(rs) != 3 || got["b1@example.com"] != "skipped" || got["b2@example.com"] != "failed" || got["b3@example.com"] != "sent" {
		t.Errorf("second send: %+v", rs)
	}
}

// TestContactActivitiesShowMail: a contact's timeline lists the mail it was
// sent, opened and clicked, naming the campaign.
func TestContactActivitiesShowMail(t *testing.T) {
	t.Parallel()
	e, id := campaignFixture(t)
	var contactID int64 // kunden1: opened, and clicked link A twice
	if err := e.db.GetContext(context.Background(), &contactID, `SELECT id FROM contacts WHERE email = 'kunden1@example.com'`); err != nil {
		t.Fatal(err)
	}
	var acts []struct {
		Action  string `json:"action"`
		Label   string `json:"label"`
		Details struct {
			CampaignID int64  `json:"campaign_id"`
			URL        string `json:"url"`
			Campaign   struct {
				ID      int64  `json:"id"`
				Kind    string `json:"kind"`
				Name    string `json:"name"`
				Subject string `json:"subject"`
			} `json:"campaign"`
		} `json:"details"`
	}
	e.do(t, "GET", fmt.Sprintf("/v1/contacts/%d/activities", contactID), nil, 200).Data(t, &acts)
	seen := map[string]int{}
	for _, a := range acts {
		if !strings.HasPrefix(a.Action, "email.") {
			continue
		}
		seen[a.Action]++
		if a.Details.CampaignID != id || a.Details.Campaign.ID != id || a.Details.Campaign.Name != "Herbst" ||
			a.Details.Campaign.Kind != "newsletter" || a.Label == a.Action {
			t.Errorf("activity %+v", a)
		}
		if a.Action == "email.clicked" && a.Details.URL != "https://shop.example.com/a" {
			t.Errorf("clicked url %q", a.Details.URL)
		}
	}
	if seen["email.sent"] != 1 || seen["email.opened"] != 1 || seen["email.clicked"] != 1 {
		t.Errorf("mail activities: %v", seen)
	}
}

func total(t *testing.T, r *apitest.Response) int {
	t.Helper()
	var env struct {
		Meta struct {
			Pagination struct {
				Total int `json:"total"`
			} `json:"pagination"`
		} `json:"meta"`
	}
	r.JSON(t, &env)
	return env.Meta.Pagination.Total
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// otherClient is a client with a key of a second account on the same API.
func otherClient(t *testing.T, e *sendAPIEnv) *apitest.Client {
	t.Helper()
	ctx := context.Background()
	res, err := e.db.CreateAccount(ctx, store.NewAccount{Name: "Other", Email: "owner@other.test", Password: "a long password", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := e.db.CreateKey(ctx, res.Account.ID, store.KeySettings{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	c := apitest.NewClient(t, e.h, e.v)
	c.Header.Set("Authorization", "Bearer "+key)
	return c
}
