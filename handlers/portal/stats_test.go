package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// sentNewsletter sends a newsletter named name to 10 new contacts of the
// account through a real SMTP server and the send pipeline, then records 4
// opens, 3 clicks by 2 recipients (one of them twice on link A) and 1
// unsubscribe through the tracking services: 10 sent, rates 0.4, 0.2, 0.1.
func sentNewsletter(t *testing.T, s *server, acct int64, name string) int64 {
	t.Helper()
	ctx := context.Background()
	actor := store.Actor{Type: store.ActorSystem}
	smtp := smtptest.Start(t, smtptest.Options{})
	if _, err := s.db.CreateSMTPServer(ctx, testBox(t), acct, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "Test", Host: smtp.Host, Port: smtp.Port, Encryption: "none", FromEmail: "news@baeckerei.test"}}); err != nil {
		t.Fatal(err)
	}
	l, err := s.db.CreateList(ctx, acct, actor, store.ListInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 10; i++ {
		if _, err := s.db.UpsertContact(ctx, acct, actor, store.ContactInput{Email: fmt.Sprintf("%s%d@example.com", strings.ToLower(name), i),
			ListIDs: []int64{l.ID}}); err != nil {
			t.Fatal(err)
		}
	}
	subject, html := "Hallo", `<p><a href="https://shop.example.com/a">A</a> <a href="https://shop.example.com/b">B</a></p>`
	nl, err := s.db.CreateNewsletter(ctx, acct, actor, store.NewsletterInput{Name: &name, Subject: &subject, HTML: &html, ListIDs: &[]int64{l.ID}})
	if err != nil {
		t.Fatal(err)
	}
	links := mailer.LinkBuilder{BaseURL: base, Tokens: mustTokens(t)}
	w := mailer.NewWorker(s.db, s.mail, mailer.WorkerOptions{Links: links, PollInterval: 20 * time.Millisecond})
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Run(runCtx) })
	defer func() { cancel(); wg.Wait() }()
	if _, err := campaign.New(s.db, s.mail, w, campaign.Options{Links: links}).SendNewsletter(ctx, acct, actor, nl.ID); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		c, err := s.db.Newsletter(ctx, acct, nl.ID)
		if err != nil {
			t.Fatal(err)
		}
		if c.Status == store.CampaignSent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("newsletter still %s", c.Status)
		}
	}
	recips, _, err := s.db.CampaignRecipients(ctx, acct, nl.ID, store.RecipientFilter{}, store.Page{Page: 1, PerPage: 100})
	if err != nil || len(recips) != 10 {
		t.Fatalf("recipients %d, %v", len(recips), err)
	}
	cl, err := s.db.CampaignLinks(ctx, nl.ID)
	if err != nil || len(cl) != 2 {
		t.Fatalf("links %v, %v", cl, err)
	}
	now := time.Now()
	for _, r := range recips[:4] {
		if _, err := s.db.TrackOpen(ctx, r.ID, now); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ r, l int }{{0, 0}, {0, 0}, {1, 1}} {
		if _, err := s.db.TrackClick(ctx, recips[c.r].ID, cl[c.l].ID, "", now, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.UnsubscribeByLink(ctx, recips[9].ID, store.UnsubLink); err != nil {
		t.Fatal(err)
	}
	return nl.ID
}

func statValue(r *response, id string) string {
	return text(r.find("stat-" + id).Find(`[data-testid="value"]`))
}

func TestNewsletterStatsPageHandler(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	id := sentNewsletter(t, s, acct.ID, "Herbst")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	r := c.get(fmt.Sprintf("/newsletters/%d/stats", id))
	wantStatus(t, r, http.StatusOK)
	if got := text(r.find("page-title")); got != "Statistik: Herbst" {
		t.Errorf("title %q", got)
	}
	for id, want := range map[string]string{"recipients": "10", "sent": "10", "opened": "4", "clicked": "2", "unsubscribed": "1", "bounced": "0"} {
		if got := statValue(r, id); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
	if got := text(r.find("stat-opened").Find(`[data-testid="note"]`)); !strings.HasPrefix(got, "40 %") {
		t.Errorf("open rate note %q", got)
	}
	if got := text(r.find("stat-clicked").Find(`[data-testid="note"]`)); !strings.HasPrefix(got, "20 %") {
		t.Errorf("click rate note %q", got)
	}
	// The chart over time: today's sends, opens and clicks, also in its table.
	chart := r.find("chart-timeline")
	if chart.Find("svg[role=img] title").Length() == 0 || chart.Find(`[data-testid="chart-line"]`).Length() != 3 {
		t.Errorf("timeline chart: %s", text(chart))
	}
	today := time.Now().In(store.Berlin).Format("02.01.")
	row := chart.Find(`[data-testid="chart-table"] tbody tr`)
	if row.Length() != 1 || rowCells(row) != today+"|10|4|2" {
		t.Errorf("timeline table %q", rowCells(row))
	}
	// Links with their clicks, in document order.
	links := r.find("stats-link")
	if links.Length() != 2 || rowCells(links.Eq(0)) != "https://shop.example.com/a|1|2|10 %" || rowCells(links.Eq(1)) != "https://shop.example.com/b|1|1|10 %" {
		t.Errorf("links %q / %q", rowCells(links.Eq(0)), rowCells(links.Eq(1)))
	}

	// Another account's newsletter is not found; so is a single email's id.
	other := newAccount(t, s.db, "")
	oc := newClient(t, s)
	oc.signIn(other.Email, other.Password)
	wantStatus(t, oc.get(fmt.Sprintf("/newsletters/%d/stats", id)), http.StatusNotFound)
	wantStatus(t, c.get("/newsletters/999999/stats"), http.StatusNotFound)
}

func TestDashboardAnalytics(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	// Before anything was sent: empty states, no broken charts.
	r := c.get("/dashboard")
	wantStatus(t, r, http.StatusOK)
	if r.find("campaigns-empty").Length() != 1 || r.find("activity-panel").Length() != 1 || statValue(r, "sent") != "0" {
		t.Fatalf("empty dashboard:\n%s", text(r.find("activity-panel")))
	}

	id := sentNewsletter(t, s, acct.ID, "Herbst")
	// A draft written after it has no rates: the panel leaves it out.
	draftName := "Winterentwurf"
	draft, err := s.db.CreateNewsletter(context.Background(), acct.ID, store.Actor{Type: store.ActorSystem}, store.NewsletterInput{Name: &draftName})
	if err != nil {
		t.Fatal(err)
	}
	r = c.get("/dashboard")
	if r.find(fmt.Sprintf("campaign-%d", draft.ID)).Length() != 0 {
		t.Error("the dashboard's last campaigns show a draft")
	}
	wantStatus(t, r, http.StatusOK)
	for id, want := range map[string]string{"sent": "10", "open-rate": "40 %", "click-rate": "20 %", "new-contacts": "10"} {
		if got := statValue(r, id); got != want {
			t.Errorf("activity %s: %q, want %q", id, got, want)
		}
	}
	// Contacts over time: 30 days, today's point 10, the day before 0.
	rows := r.find("chart-contacts").Find(`[data-testid="chart-table"] tbody tr`)
	if rows.Length() != 30 || !strings.HasSuffix(rowCells(rows.Last()), "|10") || !strings.HasSuffix(rowCells(rows.Eq(28)), "|0") {
		t.Errorf("contacts chart: %d rows, last %q", rows.Length(), rowCells(rows.Last()))
	}
	if r.find("chart-contacts").Find("svg polyline").Length() != 1 {
		t.Error("no contacts line")
	}
	// The last campaigns with their rates, linked to the statistics page.
	row := r.find(fmt.Sprintf("campaign-%d", id))
	if a := row.Find("a"); a.AttrOr("href", "") != fmt.Sprintf("/newsletters/%d/stats", id) {
		t.Errorf("campaign link %q", a.AttrOr("href", ""))
	}
	if got := rowCells(row); !strings.HasSuffix(got, "|10|40 %|20 %") {
		t.Errorf("campaign row %q", got)
	}
	if r.find("chart-campaign-rates").Find(`[data-testid="chart-bar"]`).Length() != 2 {
		t.Error("rates chart lacks its two bars")
	}
	// The usage panel is still there.
	if r.find("usage-panel").Length() != 1 {
		t.Error("usage panel missing")
	}
}

// rowCells is a table row's cells, each with its text normalised, joined by |.
func rowCells(row *goquery.Selection) string {
	return strings.Join(row.First().Children().Map(func(_ int, c *goquery.Selection) string { return text(c) }), "|")
}

// TestDashboardOnboarding: a new account sees its first steps, each ticked
// from its data as it happens, and the checklist goes away once all are done.
func TestDashboardOnboarding(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	ctx := context.Background()
	actor := store.Actor{Type: store.ActorSystem}

	steps := func() map[string]string {
		r := c.get("/dashboard")
		wantStatus(t, r, http.StatusOK)
		out := map[string]string{}
		r.find("onboarding-panel").Find("li").Each(func(_ int, li *goquery.Selection) {
			out[strings.TrimPrefix(li.AttrOr("data-testid", ""), "onboarding-")] = li.AttrOr("data-done", "")
		})
		return out
	}
	got := steps()
	for _, id := range []string{"sender", "smtp", "audience", "newsletter", "test"} {
		if got[id] != "false" {
			t.Errorf("new account: step %s is %q, want open", id, got[id])
		}
	}
	if _, err := s.db.UpsertContact(ctx, acct.ID, actor, store.ContactInput{Email: "erste@example.com"}); err != nil {
		t.Fatal(err)
	}
	name := "Erster Entwurf"
	if _, err := s.db.CreateNewsletter(ctx, acct.ID, actor, store.NewsletterInput{Name: &name}); err != nil {
		t.Fatal(err)
	}
	got = steps()
	if got["audience"] != "true" || got["newsletter"] != "true" || got["smtp"] != "false" || got["test"] != "false" {
		t.Errorf("after a contact and a draft: %v", got)
	}
	// A sent newsletter brings an SMTP server and the first sends; with the
	// postal address every step is done.
	sentNewsletter(t, s, acct.ID, "Herbst")
	if got := steps(); got["sender"] != "false" || got["smtp"] != "true" || got["test"] != "true" {
		t.Errorf("after a send: %v", got)
	}
	if _, err := s.db.PutAccountSettings(ctx, acct.ID, actor, store.AccountSettingsInput{Company: "Bäckerei Müller", PostalAddress: "Hauptstraße 1, 12345 Musterstadt"}); err != nil {
		t.Fatal(err)
	}
	if got := steps(); len(got) != 0 {
		t.Errorf("every step done, the checklist still shows: %v", got)
	}
}

// TestNewsletterStatsWhoOpened: the first 48 hours as an hourly curve, who
// opened and clicked (paged, filtered) and the same lists as CSV; another
// account gets none of it.
func TestNewsletterStatsWhoOpened(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	id := sentNewsletter(t, s, acct.ID, "Sommer")
	path := fmt.Sprintf("/newsletters/%d/stats", id)

	r := c.get(path)
	wantStatus(t, r, http.StatusOK)
	rows := r.find("chart-hours").Find(`[data-testid="chart-table"] tbody tr`)
	if rows.Length() != 48 {
		t.Fatalf("hourly curve: %d rows, want 48", rows.Length())
	}
	opens := 0
	rows.Each(func(_ int, tr *goquery.Selection) {
		cells := strings.Split(rowCells(tr), "|")
		n, _ := strconv.Atoi(cells[1])
		opens += n
	})
	if opens != 4 {
		t.Errorf("the curve counts %d first opens, want 4", opens)
	}
	if n := r.find("recipient-row").Length(); n != 10 {
		t.Errorf("%d recipients listed, want 10", n)
	}
	for outcome, want := range map[string]int{"opened": 4, "clicked": 2} {
		if n := c.get(path + "?outcome=" + outcome).find("recipient-row").Length(); n != want {
			t.Errorf("%s: %d rows, want %d", outcome, n, want)
		}
		csv := c.get(fmt.Sprintf("/newsletters/%d/recipients.csv?outcome=%s", id, outcome))
		wantStatus(t, csv, http.StatusOK)
		lines := strings.Split(strings.TrimSpace(strings.TrimPrefix(csv.Body, "\xef\xbb\xbf")), "\n")
		if csv.Header.Get("Content-Type") != "text/csv; charset=utf-8" || len(lines) != want+1 ||
			lines[0] != "email,status,sent_at,opened_at,clicked_at,error" || !strings.Contains(lines[1], "@example.com,sent,") {
			t.Errorf("%s CSV (%s):\n%s", outcome, csv.Header.Get("Content-Type"), csv.Body)
		}
	}
	other := newAccount(t, s.db, "")
	oc := newClient(t, s)
	oc.signIn(other.Email, other.Password)
	wantStatus(t, oc.get(fmt.Sprintf("/newsletters/%d/recipients.csv", id)), http.StatusNotFound)
}

// TestContactTimelineNamesTheMail: an open and a click in a contact's timeline
// name the newsletter (linked to its statistics) and the link clicked.
func TestContactTimelineNamesTheMail(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	id := sentNewsletter(t, s, acct.ID, "Winter")
	k, err := s.db.ContactByEmail(context.Background(), acct.ID, "winter1@example.com")
	if err != nil {
		t.Fatal(err)
	}
	r := c.get(fmt.Sprintf("/contacts/%d", k.ID))
	wantStatus(t, r, http.StatusOK)
	var opened, clicked *goquery.Selection
	r.find("activity").Each(func(_ int, li *goquery.Selection) {
		switch li.AttrOr("data-action", "") {
		case "email.opened":
			opened = li
		case "email.clicked":
			clicked = li
		}
	})
	if opened == nil || clicked == nil {
		t.Fatalf("timeline lacks the open or the click:\n%s", text(r.find("contact-activity")))
	}
	mail := opened.Find(`[data-testid="activity-mail"] a`)
	if mail.Text() != "Winter" || mail.AttrOr("href", "") != fmt.Sprintf("/newsletters/%d/stats", id) {
		t.Errorf("the open names %q (%s)", mail.Text(), mail.AttrOr("href", ""))
	}
	if got := text(clicked.Find(`[data-testid="activity-url"]`)); !strings.HasPrefix(got, "https://shop.example.com/") {
		t.Errorf("the click names the link %q", got)
	}
}
