package public

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/appointment"
	"github.com/rundbrief/rundbrief/views"
)

// maxBookingForm bounds a booking post: a handful of short fields.
const maxBookingForm = 32 << 10

var shortWeekdays = [...]string{"So", "Mo", "Di", "Mi", "Do", "Fr", "Sa"}
var shortMonths = [...]string{"Jan.", "Feb.", "März", "Apr.", "Mai", "Juni", "Juli", "Aug.", "Sep.", "Okt.", "Nov.", "Dez."}

// bookingPage is GET /book/{token}: the days with free slots (from today to
// the book's horizon), the times of the picked day (?tag=YYYY-MM-DD, else the
// first free day) and the form. An unknown token or a book that is switched
// off is 404.
func (p *Public) bookingPage(w http.ResponseWriter, r *http.Request) error {
	if p.appointments == nil {
		return store.ErrNotFound
	}
	page, err := p.appointments.BookingPage(r.Context(), chi.URLParam(r, "token"))
	if err != nil {
		return err
	}
	v, err := p.bookingView(r, page, r.URL.Query().Get("tag"), "")
	if err != nil {
		return err
	}
	p.render(w, r, http.StatusOK, views.BookingPage(v))
	return nil
}

// bookingView builds the page: day is the picked day, start the picked time.
func (p *Public) bookingView(r *http.Request, page store.BookingPage, day, start string) (views.BookingView, error) {
	slots, err := p.appointments.PageSlots(r.Context(), page.AppointmentSettings)
	if err != nil {
		return views.BookingView{}, err
	}
	base := store.BookingPathPrefix + page.Token
	v := views.BookingView{
		AccountName: page.AccountName, Title: page.Title, Description: page.Description,
		DurationMinutes: page.DurationMinutes, Action: base, Stamp: p.appointments.Stamp(page.Token),
		PrivacyText: page.PrivacyOrDefault(), PrivacyURL: page.PrivacyURL, Values: map[string]string{}, Errors: map[string]string{},
	}
	if v.Title == "" {
		v.Title = "Termin mit " + page.AccountName
	}
	if start != "" {
		if t, err := time.Parse(time.RFC3339, start); err == nil {
			day = appointment.DateOf(t).String()
		}
	}
	// Group the slots by day; the picked day must be one with free slots.
	var picked []appointment.Slot
	for i := 0; i < len(slots); {
		d := appointment.DateOf(slots[i].Start)
		j := i
		for j < len(slots) && appointment.DateOf(slots[j].Start) == d {
			j++
		}
		ds := d.String()
		l := slots[i].Start.In(store.Berlin)
		v.Days = append(v.Days, views.BookingDay{Date: ds, Weekday: shortWeekdays[l.Weekday()],
			Label: strconv.Itoa(l.Day()) + ". " + shortMonths[l.Month()-1], Count: j - i, URL: base + "?tag=" + ds})
		if ds == day || (picked == nil && day == "" && i == 0) {
			picked = slots[i:j]
			v.Days[len(v.Days)-1].Selected = true
		}
		i = j
	}
	if picked == nil && len(slots) > 0 {
		// An unknown or full day: the first free day instead.
		d := appointment.DateOf(slots[0].Start)
		for _, s := range slots {
			if appointment.DateOf(s.Start) != d {
				break
			}
			picked = append(picked, s)
		}
		v.Days[0].Selected = true
	}
	if len(picked) > 0 {
		v.DayLabel = appointment.FormatDay(picked[0].Start)
	}
	for _, s := range picked {
		val := s.Start.In(store.Berlin).Format(time.RFC3339)
		v.Slots = append(v.Slots, views.BookingSlot{Value: val, Label: s.Start.In(store.Berlin).Format("15:04"), Checked: val == start})
	}
	return v, nil
}

// book is POST /book/{token}, a browser's form post: the confirmation (200),
// or the page again with the typed values and the errors: 422 for fields and
// bot checks, 409 when the time was taken meanwhile, 429 beyond the rate
// limits (with Retry-After).
func (p *Public) book(w http.ResponseWriter, r *http.Request) error {
	if p.appointments == nil {
		return store.ErrNotFound
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBookingForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "Das Formular konnte nicht gelesen werden.", http.StatusBadRequest)
		return nil
	}
	f := r.PostForm
	token := chi.URLParam(r, "token")
	in := appointment.PublicBooking{
		Booking: appointment.Booking{Name: f.Get("name"), Email: f.Get("email"), Phone: f.Get("phone"), Note: f.Get("note")},
		Consent: f.Get("consent") != "", Honeypot: f.Get(store.FieldHoneypot), Stamp: f.Get(store.FieldStamp),
		IP: remoteIP(r).String(),
	}
	startRaw := strings.TrimSpace(f.Get("start"))
	t := views.TextFor(r.Context()).Appointments
	errs := map[string]string{}
	if st, err := time.Parse(time.RFC3339, startRaw); err == nil {
		in.Start = st
	} else {
		errs["start"] = t.ErrStart
	}
	var res appointment.PublicResult
	var err error
	if len(errs) == 0 {
		res, err = p.appointments.BookPublic(r.Context(), token, in)
	} else {
		res.Page, err = p.appointments.BookingPage(r.Context(), token)
		if err == nil {
			err = &store.ValidationError{Fields: errs}
		}
	}
	if err == nil {
		v := views.BookingView{AccountName: res.Page.AccountName, Title: res.Page.Title, Done: true,
			When: appointment.FormatWhen(res.Appointment.Start, res.Appointment.End), Mail: res.Appointment.Email}
		if v.Title == "" {
			v.Title = "Termin mit " + res.Page.AccountName
		}
		p.render(w, r, http.StatusOK, views.BookingPage(v))
		return nil
	}
	var (
		ve     *store.ValidationError
		rl     *store.RateLimitError
		status int
		alert  string
	)
	switch {
	case errors.Is(err, store.ErrSlotTaken):
		status, alert = http.StatusConflict, t.ErrTaken
		startRaw = ""
	case errors.As(err, &rl):
		status, alert = http.StatusTooManyRequests, t.ErrLimit
		w.Header().Set("Retry-After", strconv.Itoa(rl.RetryAfter))
	case errors.As(err, &ve):
		status = http.StatusUnprocessableEntity
		for k, m := range ve.Fields {
			if k == store.FieldStamp {
				alert = m
				continue
			}
			errs[k] = m
		}
	default:
		return err // 404 for an unknown token, 500 otherwise
	}
	v, verr := p.bookingView(r, res.Page, "", startRaw)
	if verr != nil {
		return verr
	}
	v.Alert, v.Errors, v.Consent = alert, errs, in.Consent
	v.Values = map[string]string{"name": in.Name, "email": in.Email, "phone": in.Phone, "note": in.Note}
	p.render(w, r, status, views.BookingPage(v))
	return nil
}

// cancelBookingPage is GET /book/cancel/{token}, the link in the
// confirmation: it asks; only the button's POST cancels (mail providers'
// link scanners fetch every link).
func (p *Public) cancelBookingPage(w http.ResponseWriter, r *http.Request) error {
	return p.cancelBooking(w, r, false)
}

// cancelBookingPost is POST /book/cancel/{token}: cancels (METHOD:CANCEL to
// the booker, a notice to the owner).
func (p *Public) cancelBookingPost(w http.ResponseWriter, r *http.Request) error {
	return p.cancelBooking(w, r, true)
}

func (p *Public) cancelBooking(w http.ResponseWriter, r *http.Request, do bool) error {
	if p.appointments == nil {
		return store.ErrNotFound
	}
	token := chi.URLParam(r, "token")
	a, err := p.appointments.AppointmentByCancelToken(r.Context(), token)
	if err != nil {
		return err
	}
	outcome := "ask"
	switch {
	case a.Status == store.AppointmentCancelled:
		outcome = "already"
	case do:
		if _, already, err := p.appointments.CancelByToken(r.Context(), token); err != nil {
			return err
		} else if already {
			outcome = "already"
		} else {
			outcome = "cancelled"
		}
	}
	set, err := p.appointments.Settings(r.Context(), a.AccountID)
	if err != nil {
		return err
	}
	title := set.Title
	if title == "" {
		title = "Termin"
	}
	p.render(w, r, http.StatusOK, views.BookingCancelPage(views.BookingCancelView{
		Outcome: outcome, Title: title, When: appointment.FormatWhen(a.Start, a.End),
		Action: store.CancelPathPrefix + url.PathEscape(token),
	}))
	return nil
}
