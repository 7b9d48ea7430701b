package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/appointment"
	"github.com/rundbrief/rundbrief/store/botguard"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/services"
)

// apptEnv is one account with a key, served by an API process that has the
// appointment service, with a fixed clock: Tuesday, 1 December 2026, 08:00.
type apptEnv struct {
	db   *store.DB
	acct int64
	svc  *appointment.Service
	c    *apitest.Client
	now  time.Time
}

func newApptEnv(t *testing.T, plan string) *apptEnv {
	t.Helper()
	ctx := context.Background()
	db := dbtest.Open(t, dbtest.URL(t))
	res, err := db.CreateAccount(ctx, store.NewAccount{Name: "Praxis Sonnenschein", Email: "owner@praxis.test", Password: "a long password", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := db.CreateKey(ctx, res.Account.ID, store.KeySettings{Name: "appointments"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, store.Berlin)
	clock := func() time.Time { return now }
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := appointment.New(db, appointment.Config{Guard: botguard.New("appointment-tests-0123456789abcdef", clock), BaseURL: "https://rundbrief.test", Now: clock})
	a := api.New(&services.Set{DB: db, APILog: store.NewAPILogWriter(db, log), Log: log, Appointments: svc},
		api.Config{BaseURL: "https://rundbrief.test", Now: clock})
	r := chi.NewRouter()
	r.Mount("/v1", a.Handler())
	c := apitest.NewClient(t, r, apitest.NewValidator(t, api.OpenAPIDocument()))
	c.Header.Set("Authorization", "Bearer "+key)
	return &apptEnv{db: db, acct: res.Account.ID, svc: svc, c: c, now: now}
}

type apptData struct {
	ID        int64  `json:"id"`
	Start     string `json:"start"`
	End       string `json:"end"`
	Name      string `json:"name"`
	Email     string `json:"email"`
	Status    string `json:"status"`
	Source    string `json:"source"`
	ContactID *int64 `json:"contact_id"`
}

type slotData struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

type settingsData struct {
	Enabled         bool                  `json:"enabled"`
	DurationMinutes int                   `json:"duration_minutes"`
	MaxDaysAhead    int                   `json:"max_days_ahead"`
	ReminderHours   int                   `json:"reminder_hours"`
	WeeklyHours     map[string][][]string `json:"weekly_hours"`
	BlockedDates    []store.BlockedRange  `json:"blocked_dates"`
	ListID          *int64                `json:"list_id"`
	BookingURL      string                `json:"booking_url"`
}

func TestAppointmentsNeedThePlanFeature(t *testing.T) {
	t.Parallel()
	e := newApptEnv(t, "pro")
	for _, p := range []string{"/v1/appointments/settings", "/v1/appointments/slots", "/v1/appointments"} {
		res := e.c.Request("GET", p, nil)
		if res.Status != http.StatusPaymentRequired || res.ErrorCode(t) != "plan_required" {
			t.Errorf("GET %s: %d %s, want 402 plan_required", p, res.Status, res.Body)
		}
	}
}

func TestAppointmentSettings(t *testing.T) {
	t.Parallel()
	e := newApptEnv(t, "business")
	var s settingsData
	res := e.c.Request("GET", "/v1/appointments/settings", nil)
	res.Data(t, &s)
	if res.Status != 200 || s.DurationMinutes != 30 || s.MaxDaysAhead != 30 || s.ReminderHours != 24 || s.Enabled {
		t.Fatalf("defaults: %d %+v", res.Status, s)
	}
	if len(s.WeeklyHours["mon"]) != 1 || s.WeeklyHours["mon"][0][0] != "09:00" || len(s.WeeklyHours["sun"]) != 0 {
		t.Errorf("default weekly hours: %v", s.WeeklyHours)
	}
	if len(s.BookingURL) < len("https://rundbrief.test/book/")+10 || s.BookingURL[:len("https://rundbrief.test/book/")] != "https://rundbrief.test/book/" {
		t.Errorf("booking_url %q", s.BookingURL)
	}
	list, err := e.db.CreateList(context.Background(), e.acct, store.Actor{Type: store.ActorSystem}, store.ListInput{Name: ptr("Patienten")})
	if err != nil {
		t.Fatal(err)
	}
	res = e.c.Request("PUT", "/v1/appointments/settings", map[string]any{
		"enabled": true, "duration_minutes": 45, "reminder_hours": 0, "list_id": list.ID,
		"weekly_hours":  map[string]any{"sat": [][]string{{"13:00", "15:00"}, {"09:00", "12:00"}}, "mon": [][]string{}},
		"blocked_dates": []map[string]string{{"from": "2026-12-24", "to": "2026-12-26", "note": "Weihnachten"}},
	})
	var put settingsData
	res.Data(t, &put)
	if res.Status != 200 || !put.Enabled || put.DurationMinutes != 45 || put.ReminderHours != 0 || put.ListID == nil || *put.ListID != list.ID ||
		put.BookingURL != s.BookingURL || len(put.BlockedDates) != 1 || put.BlockedDates[0].Note != "Weihnachten" {
		t.Fatalf("put: %d %+v", res.Status, put)
	}
	if got := put.WeeklyHours["sat"]; len(got) != 2 || got[0][0] != "09:00" || len(put.WeeklyHours["mon"]) != 0 || len(put.WeeklyHours["tue"]) != 0 {
		t.Errorf("weekly hours after put: %v", put.WeeklyHours)
	}
	for name, body := range map[string]map[string]any{
		"booking_url":      {"booking_url": "https://evil.test/book/x"},
		"weekly_hours.tue": {"weekly_hours": map[string]any{"tue": [][]string{{"17:00", "09:00"}}}},
		"weekly_hours":     {"weekly_hours": map[string]any{"xyz": [][]string{{"09:00", "10:00"}}}},
		"blocked_dates":    {"blocked_dates": []map[string]string{{"from": "24.12.2026"}}},
		"max_days_ahead":   {"max_days_ahead": 366},
		"list_id":          {"list_id": 999999},
		"duration_minutes": {"duration_minutes": 0},
	} {
		res := e.c.Request("PUT", "/v1/appointments/settings", body)
		var env struct {
			Error struct {
				Fields map[string]string `json:"fields"`
			} `json:"error"`
		}
		res.JSON(t, &env)
		if res.Status != 422 || env.Error.Fields[name] == "" {
			t.Errorf("PUT %v: %d %s, want 422 on %s", body, res.Status, res.Body, name)
		}
	}
	res = e.c.Request("PUT", "/v1/appointments/settings", map[string]any{"list_id": nil})
	res.Data(t, &put)
	if res.Status != 200 || put.ListID != nil {
		t.Errorf("clearing list_id: %d %+v", res.Status, put)
	}
}

func ptr[T any](v T) *T { return &v }

func (e *apptEnv) setHours(t *testing.T, body map[string]any) {
	t.Helper()
	if res := e.c.Request("PUT", "/v1/appointments/settings", body); res.Status != 200 {
		t.Fatalf("settings: %d %s", res.Status, res.Body)
	}
}

func TestAppointmentSlotsAcrossDaylightSaving(t *testing.T) {
	t.Parallel()
	e := newApptEnv(t, "business")
	e.setHours(t, map[string]any{"max_days_ahead": 365, "weekly_hours": map[string]any{
		"sat": [][]string{{"09:00", "09:30"}}, "sun": [][]string{{"09:00", "09:30"}}, "fri": [][]string{}, "mon": [][]string{},
		"tue": [][]string{}, "wed": [][]string{}, "thu": [][]string{}}})
	// 2027: clocks go forward on 28 March.
	var slots []slotData
	res := e.c.Request("GET", "/v1/appointments/slots?from=2027-03-27&to=2027-03-28", nil)
	res.Data(t, &slots)
	if res.Status != 200 || len(slots) != 2 || slots[0].Start != "2027-03-27T09:00:00+01:00" || slots[1].Start != "2027-03-28T09:00:00+02:00" ||
		slots[1].End != "2027-03-28T09:30:00+02:00" {
		t.Errorf("slots: %d %+v", res.Status, slots)
	}
	for _, q := range []string{"from=2027-01-01&to=2027-03-05", "from=2027-01-02&to=2027-01-01", "from=morgen"} {
		if res := e.c.Request("GET", "/v1/appointments/slots?"+q, nil); res.Status != 422 {
			t.Errorf("%s: %d, want 422", q, res.Status)
		}
	}
}

func TestAppointmentBookingLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newApptEnv(t, "business")
	list, err := e.db.CreateList(ctx, e.acct, store.Actor{Type: store.ActorSystem}, store.ListInput{Name: ptr("Kunden")})
	if err != nil {
		t.Fatal(err)
	}
	e.setHours(t, map[string]any{"list_id": list.ID, "buffer_minutes": 0})
	var slots []slotData
	e.c.Request("GET", "/v1/appointments/slots?from=2026-12-02&to=2026-12-02", nil).Data(t, &slots)
	if len(slots) != 16 || slots[0].Start != "2026-12-02T09:00:00+01:00" {
		t.Fatalf("slots of 2 December: %+v", slots)
	}

	body := map[string]any{"start": slots[0].Start, "name": "Erika Mustermann", "email": " Erika@Beispiel.DE ", "phone": "+49 30 1234567", "note": "Erstgespräch"}
	res := e.c.Request("POST", "/v1/appointments", body)
	var a apptData
	res.Data(t, &a)
	if res.Status != 201 || a.End != "2026-12-02T09:30:00+01:00" || a.Status != "booked" || a.Source != "api" || a.Email != "erika@beispiel.de" || a.ContactID == nil {
		t.Fatalf("book: %d %s", res.Status, res.Body)
	}
	c, err := e.db.Contact(ctx, e.acct, *a.ContactID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != store.SourceBooking || c.FirstName != "Erika" || c.LastName != "Mustermann" || len(c.Lists) != 1 || c.Lists[0].ID != list.ID {
		t.Errorf("contact: %+v", c)
	}
	// The same slot again, and a start that is no slot: 409 slot_taken.
	for _, start := range []string{slots[0].Start, "2026-12-02T09:10:00+01:00", "2026-12-06T09:00:00+01:00"} {
		body["start"] = start
		res := e.c.Request("POST", "/v1/appointments", body)
		var env struct {
			Error struct {
				Reason string `json:"reason"`
			} `json:"error"`
		}
		res.JSON(t, &env)
		if res.Status != 409 || env.Error.Reason != "slot_taken" {
			t.Errorf("book %s: %d %s, want 409 slot_taken", start, res.Status, res.Body)
		}
	}
	var free []slotData
	e.c.Request("GET", "/v1/appointments/slots?from=2026-12-02&to=2026-12-02", nil).Data(t, &free)
	if len(free) != 15 || free[0].Start != "2026-12-02T09:30:00+01:00" {
		t.Errorf("slots after booking: %+v", free)
	}
	var events int
	if err := e.db.GetContext(ctx, &events, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'appointment.booked' AND payload->'appointment'->>'id' = $2`, e.acct, a.ID); err != nil || events != 1 {
		t.Errorf("appointment.booked events: %d %v", events, err)
	}
	var mails []string
	if err := e.db.SelectContext(ctx, &mails, `SELECT kind FROM system_mails WHERE account_id = $1 ORDER BY id`, e.acct); err != nil {
		t.Fatal(err)
	}
	if len(mails) != 2 || mails[0] != store.SystemMailAppointmentConfirmation || mails[1] != store.SystemMailAppointmentOwner {
		t.Errorf("mails: %v", mails)
	}

	// Reschedule onto 10:00, then cancel: the slot is free again.
	res = e.c.Request("PATCH", "/v1/appointments/"+strconv.FormatInt(a.ID, 10), map[string]any{"start": "2026-12-02T10:00:00+01:00", "note": "verschoben"})
	res.Data(t, &a)
	if res.Status != 200 || a.Start != "2026-12-02T10:00:00+01:00" || a.End != "2026-12-02T10:30:00+01:00" {
		t.Fatalf("reschedule: %d %s", res.Status, res.Body)
	}
	res = e.c.Request("PATCH", "/v1/appointments/"+strconv.FormatInt(a.ID, 10), map[string]any{"status": "cancelled"})
	res.Data(t, &a)
	if res.Status != 200 || a.Status != "cancelled" {
		t.Fatalf("cancel: %d %s", res.Status, res.Body)
	}
	if res := e.c.Request("PATCH", "/v1/appointments/"+strconv.FormatInt(a.ID, 10), map[string]any{"start": "2026-12-02T11:00:00+01:00"}); res.Status != 409 {
		t.Errorf("changing a cancelled appointment: %d", res.Status)
	}
	e.c.Request("GET", "/v1/appointments/slots?from=2026-12-02&to=2026-12-02", nil).Data(t, &free)
	if len(free) != 16 {
		t.Errorf("slots after cancelling: %d", len(free))
	}
	body["start"] = "2026-12-02T10:00:00+01:00"
	var b apptData
	res = e.c.Request("POST", "/v1/appointments", body)
	res.Data(t, &b)
	if res.Status != 201 {
		t.Fatalf("booking the freed slot: %d %s", res.Status, res.Body)
	}
	var page []apptData
	res = e.c.Request("GET", "/v1/appointments?from=2026-12-02&to=2026-12-02&status=booked", nil)
	res.Data(t, &page)
	if res.Status != 200 || len(page) != 1 || page[0].ID != b.ID {
		t.Errorf("list: %d %s", res.Status, res.Body)
	}
	if res := e.c.Request("GET", "/v1/appointments/"+strconv.FormatInt(b.ID, 10), nil); res.Status != 200 {
		t.Errorf("get: %d", res.Status)
	}
	if res := e.c.Request("DELETE", "/v1/appointments/"+strconv.FormatInt(b.ID, 10), nil); res.Status != 204 {
		t.Errorf("delete: %d", res.Status)
	}
	if res := e.c.Request("GET", "/v1/appointments/"+strconv.FormatInt(b.ID, 10), nil); res.Status != 404 {
		t.Errorf("get after delete: %d", res.Status)
	}
	for _, bad := range []map[string]any{{"name": "X", "email": "x@example.com"}, {"start": "bald", "name": "X", "email": "x@example.com"},
		{"start": "2026-12-02T11:00:00+01:00", "name": "", "email": "kein-at"}} {
		if res := e.c.Request("POST", "/v1/appointments", bad); res.Status != 422 {
			t.Errorf("POST %v: %d %s", bad, res.Status, res.Body)
		}
	}
}

func TestAppointmentsOfOtherAccountsAreNotFound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newApptEnv(t, "business")
	other, err := e.db.CreateAccount(ctx, store.NewAccount{Name: "Andere", Email: "o@other.test", Password: "a long password", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.svc.Book(ctx, other.Account.ID, store.Actor{Type: store.ActorSystem}, store.AppointmentSourcePortal, appointment.Booking{
		Start: time.Date(2026, 12, 2, 9, 0, 0, 0, store.Berlin), Name: "Max", Email: "max@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"GET", "PATCH", "DELETE"} {
		if res := e.c.Request(m, "/v1/appointments/"+strconv.FormatInt(x.ID, 10), map[string]any{}); res.Status != 404 {
			t.Errorf("%s other account's appointment: %d", m, res.Status)
		}
	}
	// The other account's booking does not take this account's slot.
	res := e.c.Request("POST", "/v1/appointments", map[string]any{"start": "2026-12-02T09:00:00+01:00", "name": "Max", "email": "max@example.com"})
	if res.Status != 201 {
		t.Errorf("same time in another account: %d %s", res.Status, res.Body)
	}
}
