package public_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/handlers/webtest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/appointment"
)

// busyBookingSite is a booking page open every day 08:00–20:00 in 15-minute
// slots for 62 days, with 500 bookings in that span.
func busyBookingSite(tb testing.TB) (*site, string) {
	tb.Helper()
	ctx := context.Background()
	s := newSiteWith(tb, nil)
	if err := s.db.SetPlan(ctx, s.acct, "business"); err != nil {
		tb.Fatal(err)
	}
	wh := store.WeeklyHours{}
	for _, d := range store.Weekdays {
		wh[d] = [][2]string{{"08:00", "20:00"}}
	}
	set, err := s.appointments.SaveSettings(ctx, s.acct, store.Actor{Type: store.ActorSystem}, store.AppointmentSettingsPatch{
		Enabled: ptr(true), WeeklyHours: &wh, DurationMinutes: ptr(15), MaxDaysAhead: ptr(61)})
	if err != nil {
		tb.Fatal(err)
	}
	tomorrow := appointment.DateOf(time.Now()).AddDays(1)
	if _, err := s.db.ExecContext(ctx, `INSERT INTO appointments (account_id, start_at, end_at, name, email, source, uid, cancel_token_hash)
SELECT $1, s, s + interval '15 minutes', 'B', 'b' || n || '@example.com', 'api', 'uid-' || n, sha256(n::text::bytea)
FROM (SELECT n, ($2::timestamptz + (n / 9) * interval '1 day' + (n % 9) * interval '75 minutes') AS s
      FROM generate_series(0, 499) AS n) x`, s.acct, tomorrow.Start().Add(8*time.Hour)); err != nil {
		tb.Fatal(err)
	}
	return s, s.url + store.BookingPathPrefix + set.Token
}

func getOK(client *http.Client, u string) error {
	resp, err := client.Get(u)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// BenchmarkBookingPage renders GET /book/{token} over loopback, one request
// at a time: the settings, the slots of 62 days with 500 bookings, the days
// and the picked day's times, and the page.
func BenchmarkBookingPage(b *testing.B) {
	_, u := busyBookingSite(b)
	client := &http.Client{}
	if err := getOK(client, u); err != nil {
		b.Fatal(err)
	}
	webtest.Load(b, 1, func(int) error { return getOK(client, u) })
}

// TestBookingPageSpeed holds the budget: the booking page renders in under
// 50 ms (the median of 25 requests).
func TestBookingPageSpeed(t *testing.T) {
	t.Parallel()
	_, u := busyBookingSite(t)
	client := &http.Client{}
	var lat []time.Duration
	for range 25 {
		t0 := time.Now()
		if err := getOK(client, u); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	if med := lat[len(lat)/2]; med > 50*time.Millisecond {
		t.Errorf("median %v, budget 50 ms", med)
	}
}
