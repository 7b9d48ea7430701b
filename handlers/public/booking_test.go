package public_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/store"
)

// bookingSite is a site whose account has the appointment book switched on:
// every day 09:00–12:00, 30 minutes, bookers join a list.
func bookingSite(t *testing.T) (*site, store.AppointmentSettings, store.List) {
	t.Helper()
	ctx := context.Background()
	s := newSite(t)
	if err := s.db.SetPlan(ctx, s.acct, "business"); err != nil {
		t.Fatal(err)
	}
	list, err := s.db.CreateList(ctx, s.acct, store.Actor{Type: store.ActorSystem}, store.ListInput{Name: ptr("Kundschaft")})
	if err != nil {
		t.Fatal(err)
	}
	wh := store.WeeklyHours{}
	for _, d := range store.Weekdays {
		wh[d] = [][2]string{{"09:00", "12:00"}}
	}
	set, err := s.appointments.SaveSettings(ctx, s.acct, store.Actor{Type: store.ActorSystem}, store.AppointmentSettingsPatch{
		Enabled: ptr(true), Title: ptr("Beratungsgespräch"), WeeklyHours: &wh, ListID: &list.ID, MinFillSeconds: ptr(2),
		MinNoticeHours: ptr(24)})
	if err != nil {
		t.Fatal(err)
	}
	// The page offers times from MinNoticeHours on, so what the first day
	// offered shows depends on the hour: between 09:00 and 12:00 Berlin time
	// it had only the rest of its six times. The tests start at 06:00 of the
	// next day, whatever the hour they run at.
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := s.clock.Now().In(berlin)
	s.clock.Add(time.Date(now.Year(), now.Month(), now.Day()+1, 6, 0, 0, 0, berlin).Sub(now))
	return s, set, list
}

// postBooking posts the booking form as a browser does and returns the page.
func (s *site) postBooking(t *testing.T, path string, form url.Values) page {
	t.Helper()
	res, err := s.http.Post(s.url+path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	doc, err := goquery.NewDocumentFromReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{status: res.StatusCode, header: res.Header, doc: doc}
}

// formOf reads the booking form of a page as a browser would submit it, with
// the first offered time picked and the given fields typed.
func formOf(t *testing.T, p page, typed map[string]string) url.Values {
	t.Helper()
	f := url.Values{}
	form := p.doc.Find(tid("booking-form"))
	if form.Length() != 1 {
		t.Fatalf("no booking form (status %d)", p.status)
	}
	form.Find("input[type=hidden], input[name=website]").Each(func(_ int, in *goquery.Selection) {
		f.Set(attr(in, "name"), attr(in, "value"))
	})
	if first := form.Find("input[name=start]").First(); first.Length() == 1 {
		f.Set("start", attr(first, "value"))
	}
	for k, v := range typed {
		f.Set(k, v)
	}
	return f
}

func TestBookingPagePostedAsABrowser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, set, list := bookingSite(t)
	path := store.BookingPathPrefix + set.Token

	p := s.get(t, path)
	if p.status != 200 || p.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET %s: %d %v", path, p.status, p.header)
	}
	days := p.doc.Find(`[data-testid^="day-"]`)
	if days.Length() < 25 || p.doc.Find("input[name=start]").Length() != 6 || p.doc.Find(`input[name=consent][required]`).Length() != 1 ||
		p.doc.Find(tid("honeypot")+" input[name=website]").Length() != 1 {
		t.Fatalf("page: %d days, %d times", days.Length(), p.doc.Find("input[name=start]").Length())
	}
	if lang, _ := p.doc.Find("html").Attr("lang"); lang != "de" || !strings.Contains(p.doc.Find("[data-testid=field-consent]").Text(), "einverstanden") {
		t.Errorf("language %q or consent text missing", lang)
	}
	// Picking another day (a plain link without JavaScript, hx-get with htmx).
	second := days.Eq(1)
	secondDate := strings.TrimPrefix(attr(second, "data-testid"), "day-")
	if attr(second, "href") != path+"?tag="+secondDate || attr(second, "hx-get") != attr(second, "href") || attr(second, "hx-select") != "#slot-picker" {
		t.Errorf("day link: %v", second.Nodes[0].Attr)
	}
	p2 := s.get(t, path+"?tag="+secondDate)
	if sel := p2.doc.Find(`[aria-current="date"]`); attr(sel, "data-testid") != "day-"+secondDate {
		t.Errorf("picked day: %q", attr(sel, "data-testid"))
	}
	firstStart := attr(p2.doc.Find("input[name=start]").First(), "value")
	if !strings.HasPrefix(firstStart, secondDate+"T09:00:00+0") {
		t.Errorf("first time of %s: %q", secondDate, firstStart)
	}

	typed := map[string]string{"name": "Erika Mustermann", "email": "Erika@Example.com", "phone": "0170 1234567", "consent": "1"}
	// Too fast for the stamp: 422, the values stay in the form.
	res := s.postBooking(t, path, formOf(t, p2, typed))
	if res.status != 422 || res.doc.Find(tid("form-alert")).Length() != 1 || attr(res.doc.Find("#field-name"), "value") != "Erika Mustermann" {
		t.Fatalf("too fast: %d %q", res.status, res.doc.Find(tid("form-alert")).Text())
	}
	s.clock.Add(5 * time.Second)
	// Without consent: 422 on the checkbox.
	noConsent := formOf(t, p2, typed)
	noConsent.Del("consent")
	if res := s.postBooking(t, path, noConsent); res.status != 422 || res.doc.Find(tid("error-consent")).Length() != 1 {
		t.Fatalf("no consent: %d", res.status)
	}
	res = s.postBooking(t, path, formOf(t, p2, typed))
	if res.status != 200 || res.doc.Find(tid("booking-done")).Length() != 1 || !strings.Contains(res.doc.Find(tid("booking-when")).Text(), "09:00–09:30 Uhr") {
		t.Fatalf("booking: %d %s", res.status, res.doc.Find("main").Text())
	}
	var a store.Appointment
	if err := s.db.GetContext(ctx, &a, `SELECT id, source, email, contact_id, start_at FROM appointments WHERE account_id = $1`, s.acct); err != nil {
		t.Fatal(err)
	}
	if a.Source != store.AppointmentSourceBookingPage || a.Email != "erika@example.com" || a.Start.In(store.Berlin).Format(time.RFC3339) != firstStart {
		t.Errorf("appointment: %+v", a)
	}
	c, err := s.db.ContactByEmail(ctx, s.acct, "erika@example.com")
	if err != nil || c.Source != store.SourceBooking || c.Phone != "0170 1234567" || len(c.Lists) != 1 || c.Lists[0].ID != list.ID {
		t.Errorf("contact: %+v %v", c, err)
	}
	// The same time again: 409, the time is no longer offered.
	again := formOf(t, p2, map[string]string{"name": "Max", "email": "max@example.com", "consent": "1"})
	again.Set("start", firstStart)
	res = s.postBooking(t, path, again)
	if res.status != 409 || !strings.Contains(res.doc.Find(tid("form-alert")).Text(), "vergeben") {
		t.Fatalf("same time: %d", res.status)
	}
	if res.doc.Find(`input[name=start][value="`+firstStart+`"]`).Length() != 0 {
		t.Error("the taken time is still offered")
	}

	// The cancellation link of the confirmation: GET asks, POST cancels.
	var body string
	if err := s.db.GetContext(ctx, &body, `SELECT body_text FROM system_mails WHERE account_id = $1 AND kind = $2`, s.acct, store.SystemMailAppointmentConfirmation); err != nil {
		t.Fatal(err)
	}
	i := strings.Index(body, s.url+store.CancelPathPrefix)
	if i < 0 {
		t.Fatalf("no cancellation link in %q", body)
	}
	cancelPath := strings.TrimPrefix(strings.Fields(body[i:])[0], s.url)
	if p := s.get(t, cancelPath); p.status != 200 || p.doc.Find(tid("cancel-button")).Length() != 1 {
		t.Fatalf("cancel page: %d", p.status)
	}
	if n := s.count(t, `SELECT count(*) FROM appointments WHERE status = 'booked'`); n != 1 {
		t.Fatal("GET cancelled")
	}
	res = s.postBooking(t, cancelPath, url.Values{})
	if res.status != 200 || res.doc.Find(tid("cancel-done")).Length() != 1 || s.count(t, `SELECT count(*) FROM appointments WHERE status = 'booked'`) != 0 {
		t.Fatalf("cancel: %d", res.status)
	}
	if n := s.count(t, `SELECT count(*) FROM system_mails WHERE account_id = $1 AND kind = $2 AND calendar LIKE '%METHOD:CANCEL%'`, s.acct, store.SystemMailAppointmentCancellation); n != 1 {
		t.Errorf("%d cancellation mails", n)
	}
	if p := s.get(t, path+"?tag="+secondDate); p.doc.Find(`input[name=start][value="`+firstStart+`"]`).Length() != 1 {
		t.Error("the cancelled time is not offered again")
	}

	// Unknown tokens, a switched-off book and a plan without the feature: 404.
	if p := s.get(t, store.BookingPathPrefix+"unknown"); p.status != 404 {
		t.Errorf("unknown token: %d", p.status)
	}
	if p := s.get(t, store.CancelPathPrefix+"unknown"); p.status != 404 {
		t.Errorf("unknown cancellation token: %d", p.status)
	}
	if err := s.db.SetPlan(ctx, s.acct, "pro"); err != nil {
		t.Fatal(err)
	}
	if p := s.get(t, path); p.status != 404 {
		t.Errorf("plan without appointments: %d", p.status)
	}
	if err := s.db.SetPlan(ctx, s.acct, "business"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.appointments.SaveSettings(ctx, s.acct, store.Actor{Type: store.ActorSystem}, store.AppointmentSettingsPatch{Enabled: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if p := s.get(t, path); p.status != 404 {
		t.Errorf("switched off: %d", p.status)
	}
	if res := s.postBooking(t, path, formOf(t, p2, typed)); res.status != 404 {
		t.Errorf("post to a switched-off book: %d", res.status)
	}
}

// TestBookingPageRateLimit: 10 bookings per minute and address, in a budget
// of their own; the 11th gets 429 with Retry-After.
func TestBookingPageRateLimit(t *testing.T) {
	t.Parallel()
	s, set, _ := bookingSite(t)
	path := store.BookingPathPrefix + set.Token
	p := s.get(t, path)
	days := p.doc.Find(`[data-testid^="day-"]`)
	next := s.get(t, path+"?tag="+strings.TrimPrefix(attr(days.Eq(1), "data-testid"), "day-"))
	s.clock.Add(5 * time.Second)
	// The budget is a fixed one-minute window: start one second into a fresh
	// window, so that the 11 bookings never straddle two (they did now and
	// then, and all 11 passed).
	now := s.clock.Now()
	s.clock.Add(now.Truncate(store.RateWindow).Add(store.RateWindow + time.Second).Sub(now))
	var codes []int
	for i := range 11 {
		// Different times: the 6 of the first day, then the next day's.
		pp := p
		if i >= 6 {
			pp = next
		}
		f := formOf(t, pp, map[string]string{"name": "B", "email": "b" + string(rune('a'+i)) + "@example.com", "consent": "1"})
		f.Set("start", attr(pp.doc.Find("input[name=start]").Eq(i%6), "value"))
		res := s.postBooking(t, path, f)
		codes = append(codes, res.status)
		if res.status == http.StatusTooManyRequests && res.header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	for i, c := range codes {
		want := 200
		if i == 10 {
			want = 429
		}
		if c != want {
			t.Fatalf("statuses %v", codes)
		}
	}
}
