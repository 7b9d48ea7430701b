package portal_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestAppointmentPagesNeedThePlan(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, "https://rundbrief.test")
	acct := newAccount(t, s.db, "pro")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	for _, p := range []string{"/appointments", "/appointments/settings"} {
		wantStatus(t, c.get(p), http.StatusPaymentRequired)
	}
}

func TestAppointmentCalendarAndManualBooking(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, "https://rundbrief.test")
	acct := newAccount(t, s.db, "business")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	// Next week: Monday to Friday 09:00–17:00 by default.
	next := time.Now().In(store.Berlin).AddDate(0, 0, 7).Format(time.DateOnly)
	week := "/appointments?ansicht=woche&datum=" + next
	r := c.get(week)
	wantStatus(t, r, http.StatusOK)
	if u, _ := r.find("booking-url").Attr("value"); !strings.HasPrefix(u, "https://rundbrief.test/book/") {
		t.Errorf("booking url %q", u)
	}
	if v, _ := r.find("copy-booking-url").Attr("data-copy"); v != "booking-url" {
		t.Error("no copy button for the booking link")
	}
	// The booking page is no sign-up page: the link says what it opens.
	if open := r.find("open-booking-page"); strings.TrimSpace(open.Text()) != "Buchungsseite öffnen" || open.AttrOr("href", "") != r.find("booking-url").AttrOr("value", "-") {
		t.Errorf("link to the booking page: %q → %q", open.Text(), open.AttrOr("href", ""))
	}
	if r.find("booking-off").Length() != 1 || r.Doc.Find(`.appt-cal-day`).Length() != 7 || r.Doc.Find(".table-wrap .appt-cal").Length() != 1 {
		t.Fatalf("week page: %d days", r.Doc.Find(`.appt-cal-day`).Length())
	}
	opts := r.Doc.Find(`select[name=start] option`)
	if opts.Length() != 5*16 {
		t.Fatalf("%d free slots offered, want 80", opts.Length())
	}
	start, _ := opts.First().Attr("value")
	form := url.Values{"start": {start}, "name": {"Jana Telefon"}, "email": {"jana@example.com"}, "phone": {"0301234"}}
	r = c.post("/appointments", form)
	wantStatus(t, r, http.StatusSeeOther)
	var a store.Appointment
	if err := s.db.GetContext(ctx, &a, `SELECT id, source, status FROM appointments WHERE account_id = $1`, acct.ID); err != nil {
		t.Fatal(err)
	}
	if a.Source != store.AppointmentSourcePortal {
		t.Errorf("source %q", a.Source)
	}
	r = c.get(r.Header.Get("Location"))
	item := r.find("appt-" + strconv.FormatInt(a.ID, 10))
	if item.Length() != 1 || !strings.Contains(text(item), "Jana Telefon") || r.find("flash").Length() != 1 {
		t.Fatalf("calendar after booking: %s", text(r.find("calendar")))
	}
	// The same time again: 409 with the message, values kept.
	r = c.post("/appointments", form)
	wantStatus(t, r, http.StatusConflict)
	if r.find("form-alert").Length() != 1 || r.Doc.Find("#field-name").AttrOr("value", "") != "Jana Telefon" {
		t.Error("no alert or lost values after a taken slot")
	}
	// Cancel from the calendar.
	r = c.post("/appointments/"+strconv.FormatInt(a.ID, 10)+"/cancel", nil)
	wantStatus(t, r, http.StatusSeeOther)
	r = c.get(week)
	if it := r.find("appt-" + strconv.FormatInt(a.ID, 10)); !it.HasClass("is-cancelled") || r.find("cancel-"+strconv.FormatInt(a.ID, 10)).Length() != 0 {
		t.Error("cancelled appointment not shown as such")
	}
	// Month view.
	r = c.get("/appointments?ansicht=monat&datum=" + next)
	wantStatus(t, r, http.StatusOK)
	if n := r.Doc.Find(".appt-cal-day").Length(); n < 28 || n%7 != 0 || r.find("calendar").AttrOr("data-mode", "") != "monat" {
		t.Errorf("month view: %d cells", n)
	}
}

func TestAppointmentSettingsPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, "https://rundbrief.test")
	acct := newAccount(t, s.db, "business")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	r := c.get("/appointments/settings")
	wantStatus(t, r, http.StatusOK)
	if v := r.Doc.Find("#field-hours_mon").AttrOr("value", ""); v != "09:00-17:00" {
		t.Errorf("monday hours %q", v)
	}
	form := url.Values{"enabled": {"1"}, "title": {"Sprechstunde"}, "duration_minutes": {"20"}, "buffer_minutes": {"10"},
		"min_notice_hours": {"2"}, "max_days_ahead": {"60"}, "reminder_hours": {"0"}, "min_fill_seconds": {"3"},
		"hours_mon": {"08:00-12:00, 13:00-16:00"}, "hours_sat": {"10:00-12:00"},
		"blocked_from": {"2026-12-24", ""}, "blocked_to": {"2026-12-26", ""}, "blocked_note": {"Weihnachten", ""}}
	r = c.post("/appointments/settings", form)
	wantStatus(t, r, http.StatusSeeOther)
	var set store.AppointmentSettings
	if err := s.db.GetContext(ctx, &set, `SELECT enabled, title, duration_minutes, buffer_minutes, reminder_hours, weekly_hours, blocked_dates
		FROM appointment_settings WHERE account_id = $1`, acct.ID); err != nil {
		t.Fatal(err)
	}
	if !set.Enabled || set.Title != "Sprechstunde" || set.DurationMinutes != 20 || set.ReminderHours != 0 ||
		len(set.WeeklyHours["mon"]) != 2 || len(set.WeeklyHours["tue"]) != 0 || len(set.BlockedDates) != 1 || set.BlockedDates[0].Note != "Weihnachten" {
		t.Fatalf("saved: %+v", set)
	}
	form.Set("hours_tue", "9 bis 12")
	form.Set("hours_wed", "18:00-09:00")
	r = c.post("/appointments/settings", form)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if r.find("error-hours_tue").Length() != 1 || r.find("error-hours_wed").Length() != 0 && r.Doc.Find(".has-error").Length() < 1 {
		t.Errorf("errors: %s", text(r.Doc.Find(".field-error")))
	}
}
