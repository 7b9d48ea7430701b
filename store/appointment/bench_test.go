package appointment_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/appointment"
)

// busyBook is an account open every day 08:00–20:00 in 15-minute slots (2,976
// slots in 62 days) with 500 bookings spread over the 62 days from testNow.
func busyBook(tb testing.TB, e *env) (appointment.Date, appointment.Date) {
	tb.Helper()
	ctx := context.Background()
	wh := store.WeeklyHours{}
	for _, d := range store.Weekdays {
		wh[d] = [][2]string{{"08:00", "20:00"}}
	}
	if _, err := e.svc.SaveSettings(ctx, e.acct, store.Actor{Type: store.ActorSystem}, store.AppointmentSettingsPatch{
		WeeklyHours: &wh, DurationMinutes: ptr(15), MaxDaysAhead: ptr(365)}); err != nil {
		tb.Fatal(err)
	}
	from := appointment.DateOf(testNow)
	// 500 bookings: 9 a day at 08:00, 09:15, 10:30 … 18:00, on 56 of the 62 days.
	if _, err := e.db.ExecContext(ctx, `INSERT INTO appointments (account_id, start_at, end_at, name, email, source, uid, cancel_token_hash)
SELECT $1, s, s + interval '15 minutes', 'B', 'b' || n || '@example.com', 'api', 'uid-' || n, sha256(n::text::bytea)
FROM (SELECT n, ($2::timestamptz + (n / 9) * interval '1 day' + (n % 9) * interval '75 minutes') AS s
      FROM generate_series(0, 499) AS n) x`, e.acct, from.Start().Add(8*time.Hour)); err != nil {
		tb.Fatal(err)
	}
	return from, from.AddDays(61)
}

// BenchmarkSlots62Days500Bookings is GET /appointments/slots's work for the
// longest span: the settings, the 500 booked ranges from PostgreSQL and the
// computation of 62 days.
func BenchmarkSlots62Days500Bookings(b *testing.B) {
	e := newEnv(b)
	from, to := busyBook(b, e)
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		slots, err := e.svc.Slots(ctx, e.acct, from, to)
		if err != nil || len(slots) == 0 {
			b.Fatal(len(slots), err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
}

// BenchmarkComputeSlots62Days is the computation alone (no database).
func BenchmarkComputeSlots62Days(b *testing.B) {
	wh := store.WeeklyHours{}
	for _, d := range store.Weekdays {
		wh[d] = [][2]string{{"08:00", "20:00"}}
	}
	set := store.AppointmentSettings{DurationMinutes: 15, MaxDaysAhead: 365, WeeklyHours: wh}
	from := appointment.DateOf(testNow)
	var booked []store.TimeRange
	for n := range 500 {
		s := from.Start().Add(8*time.Hour).AddDate(0, 0, n/9).Add(time.Duration(n%9) * 75 * time.Minute)
		booked = append(booked, store.TimeRange{Start: s, End: s.Add(15 * time.Minute)})
	}
	for b.Loop() {
		if len(appointment.ComputeSlots(set, booked, testNow, from, from.AddDays(61))) == 0 {
			b.Fatal("no slots")
		}
	}
}

// TestSlotsSpeed holds the budget: slots for 62 days with 500 bookings in
// under 20 ms (the median of 25 runs, so that one hiccup of a shared machine
// does not decide).
func TestSlotsSpeed(t *testing.T) {
	e := newEnv(t)
	from, to := busyBook(t, e)
	ctx := context.Background()
	var lat []time.Duration
	var n int
	for range 25 {
		t0 := time.Now()
		slots, err := e.svc.Slots(ctx, e.acct, from, to)
		if err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		n = len(slots)
	}
	// 62 days × 48 slots less the 500 booked.
	if n != 62*48-500 {
		t.Errorf("%d slots, want %d", n, 62*48-500)
	}
	slices.Sort(lat)
	if med := lat[len(lat)/2]; med > 20*time.Millisecond {
		t.Errorf("median %v for 62 days with 500 bookings, budget 20 ms", med)
	}
}
