package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/appointment"
)

// appointmentSettingsResponse is GET/PUT /appointments/settings.
type appointmentSettingsResponse struct {
	Enabled         bool                  `json:"enabled"`
	Title           string                `json:"title"`
	Description     string                `json:"description"`
	DurationMinutes int                   `json:"duration_minutes"`
	BufferMinutes   int                   `json:"buffer_minutes"`
	MinNoticeHours  int                   `json:"min_notice_hours"`
	MaxDaysAhead    int                   `json:"max_days_ahead"`
	ReminderHours   int                   `json:"reminder_hours"`
	WeeklyHours     map[string][][]string `json:"weekly_hours"`
	BlockedDates    []store.BlockedRange  `json:"blocked_dates"`
	ListID          *int64                `json:"list_id"`
	MinFillSeconds  int                   `json:"min_fill_seconds"`
	PrivacyText     string                `json:"privacy_text"`
	BookingURL      string                `json:"booking_url"`
	CreatedAt       Time                  `json:"created_at"`
	UpdatedAt       Time                  `json:"updated_at"`
}

func newAppointmentSettingsResponse(s store.AppointmentSettings, bookingURL string) appointmentSettingsResponse {
	wh := make(map[string][][]string, 7)
	for _, d := range store.Weekdays {
		ranges := [][]string{}
		for _, r := range s.WeeklyHours[d] {
			ranges = append(ranges, []string{r[0], r[1]})
		}
		wh[d] = ranges
	}
	blocked := []store.BlockedRange(s.BlockedDates)
	if blocked == nil {
		blocked = []store.BlockedRange{}
	}
	return appointmentSettingsResponse{
		Enabled: s.Enabled, Title: s.Title, Description: s.Description, DurationMinutes: s.DurationMinutes,
		BufferMinutes: s.BufferMinutes, MinNoticeHours: s.MinNoticeHours, MaxDaysAhead: s.MaxDaysAhead,
		ReminderHours: s.ReminderHours, WeeklyHours: wh, BlockedDates: blocked, ListID: s.ListID,
		MinFillSeconds: s.MinFillSeconds, PrivacyText: s.PrivacyText, BookingURL: bookingURL,
		CreatedAt: Time(s.CreatedAt), UpdatedAt: Time(s.UpdatedAt),
	}
}

// appointmentSettingsRequest is the body of PUT /appointments/settings: the
// fields given change, the others stay. booking_url is read-only.
type appointmentSettingsRequest struct {
	Enabled         *bool                  `json:"enabled"`
	Title           *string                `json:"title"`
	Description     *string                `json:"description"`
	DurationMinutes *int                   `json:"duration_minutes"`
	BufferMinutes   *int                   `json:"buffer_minutes"`
	MinNoticeHours  *int                   `json:"min_notice_hours"`
	MaxDaysAhead    *int                   `json:"max_days_ahead"`
	ReminderHours   *int                   `json:"reminder_hours"`
	WeeklyHours     *map[string][][]string `json:"weekly_hours"`
	BlockedDates    *[]store.BlockedRange  `json:"blocked_dates"`
	ListID          json.RawMessage        `json:"list_id"`
	MinFillSeconds  *int                   `json:"min_fill_seconds"`
	PrivacyText     *string                `json:"privacy_text"`
	BookingURL      json.RawMessage        `json:"booking_url"`
}

// patch turns the request into the store's patch, or a validation error for
// shapes the store types cannot hold.
func (req appointmentSettingsRequest) patch() (store.AppointmentSettingsPatch, error) {
	p := store.AppointmentSettingsPatch{
		Enabled: req.Enabled, Title: req.Title, Description: req.Description, DurationMinutes: req.DurationMinutes,
		BufferMinutes: req.BufferMinutes, MinNoticeHours: req.MinNoticeHours, MaxDaysAhead: req.MaxDaysAhead,
		ReminderHours: req.ReminderHours, MinFillSeconds: req.MinFillSeconds, PrivacyText: req.PrivacyText,
	}
	errs := store.Errs{}
	if req.WeeklyHours != nil {
		wh := store.WeeklyHours{}
		for day, ranges := range *req.WeeklyHours {
			out := make([][2]string, 0, len(ranges))
			for _, r := range ranges {
				if len(r) != 2 {
					errs.Add("weekly_hours."+day, `Jeder Zeitraum ist ein Paar ["HH:MM","HH:MM"].`)
					continue
				}
				out = append(out, [2]string{r[0], r[1]})
			}
			wh[day] = out
		}
		p.WeeklyHours = &wh
	}
	if req.BlockedDates != nil {
		b := store.BlockedRanges(*req.BlockedDates)
		p.BlockedDates = &b
	}
	if len(req.ListID) > 0 {
		var id int64
		if !bytes.Equal(bytes.TrimSpace(req.ListID), []byte("null")) {
			if err := json.Unmarshal(req.ListID, &id); err != nil || id < 1 {
				errs.Add("list_id", "Bitte die id einer Liste angeben oder null.")
			}
		}
		p.ListID = &id
	}
	if len(req.BookingURL) > 0 {
		errs.Add("booking_url", "Die Buchungs-URL wird vergeben und lässt sich nicht ändern.")
	}
	return p, errs.Err()
}

func (a *API) appointmentService() (*appointment.Service, error) {
	if a.appointments == nil {
		return nil, errUnavailable
	}
	return a.appointments, nil
}

func (a *API) getAppointmentSettings(w http.ResponseWriter, r *http.Request) error {
	svc, err := a.appointmentService()
	if err != nil {
		return err
	}
	s, err := svc.Settings(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newAppointmentSettingsResponse(s, svc.BookingURL(s.Token)))
}

func (a *API) putAppointmentSettings(w http.ResponseWriter, r *http.Request) error {
	var req appointmentSettingsRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	p, err := req.patch()
	if err != nil {
		return err
	}
	svc, err := a.appointmentService()
	if err != nil {
		return err
	}
	s, err := svc.SaveSettings(r.Context(), accountID(r), actor(r), p)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newAppointmentSettingsResponse(s, svc.BookingURL(s.Token)))
}

// slotResponse is one free slot.
type slotResponse struct {
	Start Time `json:"start"`
	End   Time `json:"end"`
}

// queryDate reads an optional YYYY-MM-DD query parameter into errs.
func queryDate(r *http.Request, name string, errs store.Errs) (appointment.Date, bool) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return appointment.Date{}, false
	}
	d, ok := appointment.ParseDate(s)
	if !ok {
		errs.Add(name, "Bitte ein Datum als JJJJ-MM-TT angeben, z. B. 2026-12-01.")
	}
	return d, ok
}

// listAppointmentSlots is GET /appointments/slots?from=&to=: from defaults to
// today (Berlin), to to six days after from.
func (a *API) listAppointmentSlots(w http.ResponseWriter, r *http.Request) error {
	svc, err := a.appointmentService()
	if err != nil {
		return err
	}
	errs := store.Errs{}
	from, okFrom := queryDate(r, "from", errs)
	to, okTo := queryDate(r, "to", errs)
	if err := errs.Err(); err != nil {
		return err
	}
	if !okFrom {
		from = appointment.DateOf(svc.Now())
	}
	if !okTo {
		to = from.AddDays(6)
	}
	slots, err := svc.Slots(r.Context(), accountID(r), from, to)
	if err != nil {
		return err
	}
	out := make([]slotResponse, len(slots))
	for i, s := range slots {
		out[i] = slotResponse{Start: Time(s.Start), End: Time(s.End)}
	}
	return writeData(w, r, http.StatusOK, out)
}

// appointmentResponse is an appointment as the API shows it.
type appointmentResponse struct {
	ID          int64  `json:"id"`
	Start       Time   `json:"start"`
	End         Time   `json:"end"`
	Name        string `json:"name"`
	Email       string `json:"email"`
	Phone       string `json:"phone"`
	Note        string `json:"note"`
	Status      string `json:"status"`
	Source      string `json:"source"`
	ContactID   *int64 `json:"contact_id"`
	CancelledAt *Time  `json:"cancelled_at"`
	CreatedAt   Time   `json:"created_at"`
	UpdatedAt   Time   `json:"updated_at"`
}

func newAppointmentResponse(x store.Appointment) appointmentResponse {
	return appointmentResponse{
		ID: x.ID, Start: Time(x.Start), End: Time(x.End), Name: x.Name, Email: x.Email, Phone: x.Phone, Note: x.Note,
		Status: x.Status, Source: x.Source, ContactID: x.ContactID, CancelledAt: timePtr(x.Cancelled),
		CreatedAt: Time(x.CreatedAt), UpdatedAt: Time(x.UpdatedAt),
	}
}

// appointmentRequest is the body of POST /appointments and PATCH
// /appointments/{id}.
type appointmentRequest struct {
	Start  *string `json:"start"`
	Name   *string `json:"name"`
	Email  *string `json:"email"`
	Phone  *string `json:"phone"`
	Note   *string `json:"note"`
	Status *string `json:"status"`
}

func (req appointmentRequest) start(errs store.Errs) *time.Time {
	if req.Start == nil {
		return nil
	}
	t, ok := ParseTime(*req.Start)
	if !ok {
		errs.Add("start", "Bitte den Beginn als Zeitpunkt nach ISO 8601 angeben, z. B. 2026-12-01T09:00:00+01:00.")
		return nil
	}
	return &t
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (a *API) listAppointments(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	errs := store.Errs{}
	if ve, ok := err.(*store.ValidationError); ok {
		errs = ve.Fields
	}
	f := store.AppointmentFilter{Status: r.URL.Query().Get("status")}
	if f.Status != "" && f.Status != store.AppointmentBooked && f.Status != store.AppointmentCancelled {
		errs.Add("status", "Erlaubt sind booked und cancelled.")
	}
	if d, ok := queryDate(r, "from", errs); ok {
		f.From = d.Start()
	}
	if d, ok := queryDate(r, "to", errs); ok {
		f.To = d.AddDays(1).Start()
	}
	if err := errs.Err(); err != nil {
		return err
	}
	list, total, err := a.db.Appointments(r.Context(), accountID(r), f, page)
	if err != nil {
		return err
	}
	out := make([]appointmentResponse, len(list))
	for i, x := range list {
		out[i] = newAppointmentResponse(x)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) createAppointment(w http.ResponseWriter, r *http.Request) error {
	var req appointmentRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	errs := store.Errs{}
	start := req.start(errs)
	if req.Start == nil {
		errs.Add("start", "Bitte den Beginn angeben (ein freier Termin aus GET /v1/appointments/slots).")
	}
	if req.Status != nil {
		errs.Add("status", "Ein neuer Termin ist immer gebucht; absagen lässt er sich mit PATCH.")
	}
	if err := errs.Err(); err != nil {
		return err
	}
	svc, err := a.appointmentService()
	if err != nil {
		return err
	}
	x, err := svc.Book(r.Context(), accountID(r), actor(r), store.AppointmentSourceAPI, appointment.Booking{
		Start: *start, Name: deref(req.Name), Email: deref(req.Email), Phone: deref(req.Phone), Note: deref(req.Note),
	})
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newAppointmentResponse(x))
}

func (a *API) getAppointment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	x, err := a.db.Appointment(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newAppointmentResponse(x))
}

func (a *API) patchAppointment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req appointmentRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	errs := store.Errs{}
	start := req.start(errs)
	if req.Email != nil {
		errs.Add("email", "Die Adresse eines Termins lässt sich nicht ändern; sagen Sie ihn ab und buchen Sie neu.")
	}
	if err := errs.Err(); err != nil {
		return err
	}
	svc, err := a.appointmentService()
	if err != nil {
		return err
	}
	x, err := svc.Update(r.Context(), accountID(r), actor(r), id, appointment.Change{
		Start: start, Name: req.Name, Phone: req.Phone, Note: req.Note, Status: req.Status,
	})
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newAppointmentResponse(x))
}

func (a *API) deleteAppointment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	svc, err := a.appointmentService()
	if err != nil {
		return err
	}
	if err := svc.Delete(r.Context(), accountID(r), actor(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
