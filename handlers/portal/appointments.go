package portal

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/appointment"
	"github.com/rundbrief/rundbrief/views"
)

// The appointment pages (issue 22) use the same service as /v1/appointments:
// a week or month calendar of the bookings, the booking link, manual booking
// and cancelling, and the settings with the weekly hours and blocked dates.

// errNoAppointments means the process was started without the appointment service.
var errNoAppointments = errors.New("portal: no appointment service")

// maxCalendarItems bounds the appointments a calendar page reads (a month).
const maxCalendarItems = 100

// blankBlockedRows is how many empty rows the blocked dates editor offers.
const blankBlockedRows = 3

func (p *Portal) needAppointments(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return p.needPlan(appointment.Feature, func(t views.Text) (string, string) { return t.Appointments.PlanTitle, t.Appointments.PlanBody },
		func(w http.ResponseWriter, r *http.Request) error {
			if p.appointments == nil {
				return errNoAppointments
			}
			return h(w, r)
		})
}

var calendarWeekdays = []string{"Mo", "Di", "Mi", "Do", "Fr", "Sa", "So"}

var monthNames = [...]string{"Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September",
	"Oktober", "November", "Dezember"}

// calendarRange is the shown period: a week (Monday to Sunday) or a month
// padded to whole weeks; mode is "woche" or "monat", day the day it is about.
func calendarRange(mode string, day appointment.Date) (from, to appointment.Date, prev, next appointment.Date) {
	monday := func(d appointment.Date) appointment.Date { return d.AddDays(-((int(d.Weekday()) + 6) % 7)) }
	if mode == "monat" {
		first, _ := appointment.ParseDate(day.String()[:8] + "01")
		last := first.AddDays(31)
		for last.String()[:7] != first.String()[:7] {
			last = last.AddDays(-1)
		}
		return monday(first), monday(last).AddDays(6), first.AddDays(-1), last.AddDays(1)
	}
	from = monday(day)
	return from, from.AddDays(6), from.AddDays(-7), from.AddDays(7)
}

func (p *Portal) appointmentsPage(w http.ResponseWriter, r *http.Request) error {
	v, err := p.appointmentsView(r)
	if err != nil {
		return err
	}
	p.render(w, r, http.StatusOK, views.AppointmentsPage(p.shell(r, v.Heading, views.NavAppointments), v))
	return nil
}

func (p *Portal) appointmentsView(r *http.Request) (views.AppointmentsView, error) {
	ctx := r.Context()
	acct := accountID(r)
	q := r.URL.Query()
	mode := q.Get("ansicht")
	if mode != "monat" {
		mode = "woche"
	}
	now := p.appointments.Now()
	today := appointment.DateOf(now)
	day, ok := appointment.ParseDate(q.Get("datum"))
	if !ok {
		day = today
	}
	from, to, prev, next := calendarRange(mode, day)
	set, err := p.appointments.Settings(ctx, acct)
	if err != nil {
		return views.AppointmentsView{}, err
	}
	list, _, err := p.db.Appointments(ctx, acct, store.AppointmentFilter{From: from.Start(), To: to.AddDays(1).Start()},
		store.Page{Page: 1, PerPage: maxCalendarItems})
	if err != nil {
		return views.AppointmentsView{}, err
	}
	url := func(mode string, d appointment.Date) string {
		return "/appointments?ansicht=" + mode + "&datum=" + d.String()
	}
	v := views.AppointmentsView{
		Mode: mode, PrevURL: url(mode, prev), NextURL: url(mode, next), TodayURL: url(mode, today),
		WeekURL: url("woche", day), MonthURL: url("monat", day), Weekdays: calendarWeekdays,
		BookingURL: p.appointments.BookingURL(set.Token), Enabled: set.Enabled,
		Values: map[string]string{}, Errors: map[string]string{},
	}
	dl := day.Start()
	if mode == "monat" {
		v.Heading = monthNames[dl.Month()-1] + " " + strconv.Itoa(dl.Year())
	} else {
		a, b := from.Start(), to.Start()
		v.Heading = fmt.Sprintf("%d. %s – %d. %s %d", a.Day(), monthNames[a.Month()-1], b.Day(), monthNames[b.Month()-1], b.Year())
	}
	byDay := map[string][]views.CalendarItem{}
	for _, x := range list {
		d := appointment.DateOf(x.Start).String()
		it := views.CalendarItem{ID: x.ID, Name: x.Name, Email: x.Email, Status: x.Status, Source: x.Source,
			Time: x.Start.In(store.Berlin).Format("15:04") + "–" + x.End.In(store.Berlin).Format("15:04")}
		if x.Status == store.AppointmentBooked && x.End.After(now) {
			it.CancelURL = "/appointments/" + strconv.FormatInt(x.ID, 10) + "/cancel"
		}
		byDay[d] = append(byDay[d], it)
	}
	for d := from; !to.Before(d); d = d.AddDays(1) {
		s := d.Start()
		label := calendarWeekdays[(int(d.Weekday())+6)%7] + " " + strconv.Itoa(s.Day()) + "." + strconv.Itoa(int(s.Month())) + "."
		v.Days = append(v.Days, views.CalendarDay{Date: d.String(), Label: label, Today: d == today, Items: byDay[d.String()],
			InRange: mode == "woche" || s.Month() == dl.Month()})
	}
	// The manual booking offers the free slots of the shown period (from today on).
	slotFrom := from
	if slotFrom.Before(today) {
		slotFrom = today
	}
	if !to.Before(slotFrom) {
		slots, err := p.appointments.Slots(ctx, acct, slotFrom, to)
		if err != nil {
			return views.AppointmentsView{}, err
		}
		for _, s := range slots {
			l := s.Start.In(store.Berlin)
			v.Slots = append(v.Slots, views.Option{Value: l.Format(time.RFC3339),
				Label: calendarWeekdays[(int(l.Weekday())+6)%7] + " " + l.Format("2.1. 15:04")})
		}
	}
	return v, nil
}

func (p *Portal) bookAppointment(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	f := r.PostForm
	start, err := time.Parse(time.RFC3339, f.Get("start"))
	t := views.TextFor(r.Context()).Appointments
	errs := map[string]string{}
	if err != nil {
		errs["start"] = t.ErrStart
	} else {
		_, err = p.appointments.Book(r.Context(), accountID(r), actor(r), store.AppointmentSourcePortal, appointment.Booking{
			Start: start, Name: f.Get("name"), Email: f.Get("email"), Phone: f.Get("phone"), Note: f.Get("note")})
		if err == nil {
			p.flash(r.Context(), "success", t.Booked)
			p.redirect(w, r, "/appointments?ansicht=woche&datum="+appointment.DateOf(start).String())
			return nil
		}
	}
	alert := ""
	status := http.StatusUnprocessableEntity
	switch {
	case errors.Is(err, store.ErrSlotTaken):
		alert, status = t.ErrTaken, http.StatusConflict
	case err != nil && !fieldErrors(err, errs):
		return err
	}
	v, verr := p.appointmentsView(r)
	if verr != nil {
		return verr
	}
	v.Alert, v.Errors = alert, errs
	v.Values = map[string]string{"name": f.Get("name"), "email": f.Get("email"), "phone": f.Get("phone"), "note": f.Get("note")}
	p.render(w, r, status, views.AppointmentsPage(p.shell(r, v.Heading, views.NavAppointments), v))
	return nil
}

func (p *Portal) cancelAppointment(w http.ResponseWriter, r *http.Request) error {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		return store.ErrNotFound
	}
	st := store.AppointmentCancelled
	a, err := p.appointments.Update(r.Context(), accountID(r), actor(r), id, appointment.Change{Status: &st})
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", views.TextFor(r.Context()).Appointments.Cancelled)
	p.redirect(w, r, "/appointments?ansicht=woche&datum="+appointment.DateOf(a.Start).String())
	return nil
}

func (p *Portal) appointmentSettings(w http.ResponseWriter, r *http.Request) error {
	set, err := p.appointments.Settings(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	f, err := p.settingsForm(r, set)
	if err != nil {
		return err
	}
	p.renderAppointmentSettings(w, r, http.StatusOK, f)
	return nil
}

func (p *Portal) renderAppointmentSettings(w http.ResponseWriter, r *http.Request, status int, f views.AppointmentSettingsForm) {
	p.render(w, r, status, views.AppointmentSettingsPage(p.shell(r, views.TextFor(r.Context()).Appointments.SettingsTitle, views.NavAppointments), f))
}

// settingsForm fills the form from the stored settings.
func (p *Portal) settingsForm(r *http.Request, s store.AppointmentSettings) (views.AppointmentSettingsForm, error) {
	f := views.AppointmentSettingsForm{
		Enabled: s.Enabled, Title: s.Title, Description: s.Description, Duration: strconv.Itoa(s.DurationMinutes),
		Buffer: strconv.Itoa(s.BufferMinutes), Notice: strconv.Itoa(s.MinNoticeHours), DaysAhead: strconv.Itoa(s.MaxDaysAhead),
		Reminder: strconv.Itoa(s.ReminderHours), MinFill: strconv.Itoa(s.MinFillSeconds), Privacy: s.PrivacyText,
		Weekly: map[string]string{}, Errors: map[string]string{}, BookingURL: p.appointments.BookingURL(s.Token),
	}
	if s.ListID != nil {
		f.ListID = strconv.FormatInt(*s.ListID, 10)
	}
	for _, d := range store.Weekdays {
		parts := make([]string, 0, len(s.WeeklyHours[d]))
		for _, rg := range s.WeeklyHours[d] {
			parts = append(parts, rg[0]+"-"+rg[1])
		}
		f.Weekly[d] = strings.Join(parts, ", ")
	}
	for _, b := range s.BlockedDates {
		f.Blocked = append(f.Blocked, views.BlockedRow{From: b.From, To: b.To, Note: b.Note})
	}
	for range blankBlockedRows {
		f.Blocked = append(f.Blocked, views.BlockedRow{})
	}
	return f, p.listOptions(r, &f)
}

func (p *Portal) listOptions(r *http.Request, f *views.AppointmentSettingsForm) error {
	lists, _, err := p.db.Lists(r.Context(), accountID(r), store.Page{Page: 1, PerPage: 100})
	if err != nil {
		return err
	}
	f.Lists = []views.Option{{Value: "", Label: views.TextFor(r.Context()).Appointments.NoList, Selected: f.ListID == ""}}
	for _, l := range lists {
		id := strconv.FormatInt(l.ID, 10)
		f.Lists = append(f.Lists, views.Option{Value: id, Label: l.Name, Selected: id == f.ListID})
	}
	return nil
}

// parseHours reads "09:00-12:00, 13:00-17:00" into ranges; ok is false for
// text that is not of that shape (the store checks the times themselves).
func parseHours(s string) ([][2]string, bool) {
	out := [][2]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		a, b, ok := strings.Cut(strings.ReplaceAll(part, "–", "-"), "-")
		if !ok {
			return nil, false
		}
		out = append(out, [2]string{strings.TrimSpace(a), strings.TrimSpace(b)})
	}
	return out, true
}

func (p *Portal) saveAppointmentSettings(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	pf := r.PostForm
	t := views.TextFor(r.Context())
	f := views.AppointmentSettingsForm{
		Enabled: pf.Get("enabled") != "", Title: pf.Get("title"), Description: pf.Get("description"),
		Duration: pf.Get("duration_minutes"), Buffer: pf.Get("buffer_minutes"), Notice: pf.Get("min_notice_hours"),
		DaysAhead: pf.Get("max_days_ahead"), Reminder: pf.Get("reminder_hours"), MinFill: pf.Get("min_fill_seconds"),
		Privacy: pf.Get("privacy_text"), ListID: pf.Get("list_id"), Weekly: map[string]string{}, Errors: map[string]string{},
	}
	patch := store.AppointmentSettingsPatch{Enabled: &f.Enabled, Title: &f.Title, Description: &f.Description, PrivacyText: &f.Privacy}
	for _, x := range []struct {
		field string
		raw   string
		dst   **int
	}{
		{"duration_minutes", f.Duration, &patch.DurationMinutes}, {"buffer_minutes", f.Buffer, &patch.BufferMinutes},
		{"min_notice_hours", f.Notice, &patch.MinNoticeHours}, {"max_days_ahead", f.DaysAhead, &patch.MaxDaysAhead},
		{"reminder_hours", f.Reminder, &patch.ReminderHours}, {"min_fill_seconds", f.MinFill, &patch.MinFillSeconds},
	} {
		n, err := strconv.Atoi(strings.TrimSpace(x.raw))
		if err != nil {
			f.Errors[x.field] = t.Common.FormInvalid
			continue
		}
		*x.dst = &n
	}
	var listID int64
	if f.ListID != "" {
		listID, _ = strconv.ParseInt(f.ListID, 10, 64)
	}
	patch.ListID = &listID
	wh := store.WeeklyHours{}
	for _, d := range store.Weekdays {
		raw := pf.Get("hours_" + d)
		f.Weekly[d] = raw
		ranges, ok := parseHours(raw)
		if !ok {
			f.Errors["weekly_hours."+d] = t.Appointments.WeeklyHint
			continue
		}
		wh[d] = ranges
	}
	patch.WeeklyHours = &wh
	froms, tos, notes := pf["blocked_from"], pf["blocked_to"], pf["blocked_note"]
	blocked := store.BlockedRanges{}
	for i, from := range froms {
		row := views.BlockedRow{From: strings.TrimSpace(from)}
		if i < len(tos) {
			row.To = strings.TrimSpace(tos[i])
		}
		if i < len(notes) {
			row.Note = notes[i]
		}
		if row.From == "" && row.To == "" {
			continue
		}
		f.Blocked = append(f.Blocked, row)
		blocked = append(blocked, store.BlockedRange{From: row.From, To: row.To, Note: row.Note})
	}
	patch.BlockedDates = &blocked
	for range blankBlockedRows {
		f.Blocked = append(f.Blocked, views.BlockedRow{})
	}
	if len(f.Errors) == 0 {
		_, err := p.appointments.SaveSettings(r.Context(), accountID(r), actor(r), patch)
		if err == nil {
			p.flash(r.Context(), "success", t.Appointments.Saved)
			p.redirect(w, r, "/appointments/settings")
			return nil
		}
		if !fieldErrors(err, f.Errors) {
			return err
		}
	}
	if err := p.listOptions(r, &f); err != nil {
		return err
	}
	p.renderAppointmentSettings(w, r, http.StatusUnprocessableEntity, f)
	return nil
}
