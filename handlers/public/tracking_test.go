package public_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/rundbrief/rundbrief/store"
)

// link adds a tracked link to a campaign and returns its id.
func (s *site) link(t *testing.T, campaignID int64, position int, target string, personalized bool) int64 {
	t.Helper()
	var id int64
	if err := s.db.GetContext(context.Background(), &id, `INSERT INTO campaign_links (account_id, campaign_id, position, url, personalized)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`, s.acct, campaignID, position, target, personalized); err != nil {
		t.Fatal(err)
	}
	return id
}

func (s *site) hit(t *testing.T, path, userAgent string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+path, nil)
	req.Header.Set("User-Agent", userAgent)
	res, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(res.Body)
	res.Body.Close()
	return res
}

const person = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15"

func TestOpenPixelAndClickRedirect(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ctx := context.Background()
	res, err := s.db.UpsertContact(ctx, s.acct, store.Actor{Type: store.ActorKey, ID: 1}, store.ContactInput{Email: "leserin@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	rid, campaignID := s.recipient(t, "leserin@example.com", res.Contact.ID)
	events := func(name string) []map[string]any {
		var raw [][]byte
		if err := s.db.SelectContext(ctx, &raw, `SELECT payload FROM events WHERE account_id = $1 AND name = $2 ORDER BY id`, s.acct, name); err != nil {
			t.Fatal(err)
		}
		out := make([]map[string]any, len(raw))
		for i, b := range raw {
			_ = json.Unmarshal(b, &out[i])
		}
		return out
	}

	// Opens: scanners are served but not counted; the first open by a person
	// emits email.opened, later ones do not.
	open := "/o/" + s.tokens.Open(rid)
	for _, ua := range []string{"", "Barracuda Sentinel (EE)", "Mozilla/5.0 (compatible; Googlebot/2.1)"} {
		if r := s.hit(t, open, ua); r.StatusCode != 200 || r.Header.Get("Content-Type") != "image/gif" {
			t.Fatalf("pixel for %q: %d %s", ua, r.StatusCode, r.Header.Get("Content-Type"))
		}
	}
	if n := len(events(store.EventEmailOpened)); n != 0 {
		t.Fatalf("scanners produced %d opens", n)
	}
	s.hit(t, open, person)
	s.hit(t, open, person)
	opened := events(store.EventEmailOpened)
	if len(opened) != 1 || opened[0]["email"] != "leserin@example.com" || opened[0]["campaign_id"] != float64(campaignID) ||
		opened[0]["contact_id"] != float64(res.Contact.ID) || opened[0]["opened_at"] == nil {
		t.Errorf("email.opened events %v", opened)
	}
	if r := s.hit(t, "/o/forged", person); r.StatusCode != 200 || r.Header.Get("Content-Type") != "image/gif" {
		t.Errorf("a forged open token still gets the pixel: %d", r.StatusCode)
	}

	// Clicks: a redirect to the campaign's own link; the first click per link emits
	// email.clicked.
	shop := s.link(t, campaignID, 0, "https://shop.example.com/angebot", false)
	blog := s.link(t, campaignID, 1, "https://blog.example.com/", false)
	clickShop := "/c/" + s.tokens.Click(rid, shop, "")
	for range 2 {
		r := s.hit(t, clickShop, person)
		if r.StatusCode != http.StatusFound || r.Header.Get("Location") != "https://shop.example.com/angebot" {
			t.Fatalf("click: %d %q", r.StatusCode, r.Header.Get("Location"))
		}
	}
	s.hit(t, "/c/"+s.tokens.Click(rid, blog, ""), "Proofpoint URL Defense")
	clicked := events(store.EventEmailClicked)
	if len(clicked) != 1 || clicked[0]["url"] != "https://shop.example.com/angebot" || clicked[0]["clicked_at"] == nil {
		t.Errorf("email.clicked events %v", clicked)
	}
	if n := s.count(t, `SELECT clicks FROM link_clicks WHERE link_id = $1`, shop); n != 2 {
		t.Errorf("shop link counted %d clicks, want 2", n)
	}
	s.hit(t, "/c/"+s.tokens.Click(rid, blog, ""), person)
	if n := len(events(store.EventEmailClicked)); n != 2 {
		t.Errorf("first click on a second link: %d events, want 2", n)
	}

	// No open redirect: a link of another campaign, or a changed ?u=, is 404.
	_, otherCampaign := s.recipient(t, "x@example.com", 0)
	foreign := s.link(t, otherCampaign, 0, "https://evil.example.net/", false)
	if r := s.hit(t, "/c/"+s.tokens.Click(rid, foreign, ""), person); r.StatusCode != 404 {
		t.Errorf("another campaign's link: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	personal := s.link(t, campaignID, 2, "https://shop.example.com/?kunde={{email}}", true)
	rendered := "https://shop.example.com/?kunde=leserin%40example.com"
	tok := s.tokens.Click(rid, personal, rendered)
	if r := s.hit(t, "/c/"+tok+"?u="+url.QueryEscape(rendered), person); r.StatusCode != 302 || r.Header.Get("Location") != rendered {
		t.Errorf("personalised link: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	if r := s.hit(t, "/c/"+tok+"?u="+url.QueryEscape("https://evil.example.net/"), person); r.StatusCode != 404 {
		t.Errorf("changed ?u=: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
}
