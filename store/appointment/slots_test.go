package appointment_test

import (
	"slices"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/appointment"
)

func day(t *testing.T, s string) appointment.Date {
	t.Helper()
	d, ok := appointment.ParseDate(s)
	if !ok {
		t.Fatalf("bad date %q", s)
	}
	return d
}

func berlin(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.ParseInLocation("2006-01-02 15:04", s, store.Berlin)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func format(slots []appointment.Slot) []string {
	out := make([]string, len(slots))
	for i, s := range slots {
		out[i] = s.Start.In(store.Berlin).Format("2006-01-02T15:04Z07:00") + "/" + s.End.In(store.Berlin).Format("15:04Z07:00")
	}
	return out
}

// TestComputeSlots covers both daylight-saving changes of 2026 (29 March and
// 25 October, both Sundays), blocked dates, buffers, bookings, notice and the
// horizon.
func TestComputeSlots(t *testing.T) {
	base := store.AppointmentSettings{DurationMinutes: 30, MaxDaysAhead: 365}
	with := func(f func(*store.AppointmentSettings)) store.AppointmentSettings {
		s := base
		s.WeeklyHours = store.WeeklyHours{}
		f(&s)
		return s
	}
	now := berlin(t, "2026-03-01 00:00")
	cases := []struct {
		name     string
		set      store.AppointmentSettings
		booked   []store.TimeRange
		now      time.Time
		from, to string
		want     []string
	}{
		{
			name: "09:00 stays 09:00 across the spring change",
			set: with(func(s *store.AppointmentSettings) {
				s.WeeklyHours["fri"] = [][2]string{{"09:00", "10:00"}}
				s.WeeklyHours["mon"] = s.WeeklyHours["fri"]
			}),
			from: "2026-03-27", to: "2026-03-30",
			want: []string{"2026-03-27T09:00+01:00/09:30+01:00", "2026-03-27T09:30+01:00/10:00+01:00",
				"2026-03-30T09:00+02:00/09:30+02:00", "2026-03-30T09:30+02:00/10:00+02:00"},
		},
		{
			name: "09:00 stays 09:00 across the autumn change",
			set: with(func(s *store.AppointmentSettings) {
				s.WeeklyHours["sat"] = [][2]string{{"09:00", "09:30"}}
				s.WeeklyHours["sun"] = s.WeeklyHours["sat"]
			}),
			from: "2026-10-24", to: "2026-10-25",
			want: []string{"2026-10-24T09:00+02:00/09:30+02:00", "2026-10-25T09:00+01:00/09:30+01:00"},
		},
		{
			name: "spring: the skipped hour has no slots",
			set:  with(func(s *store.AppointmentSettings) { s.WeeklyHours["sun"] = [][2]string{{"01:00", "04:00"}} }),
			from: "2026-03-29", to: "2026-03-29",
			want: []string{"2026-03-29T01:00+01:00/01:30+01:00", "2026-03-29T01:30+01:00/03:00+02:00",
				"2026-03-29T03:00+02:00/03:30+02:00", "2026-03-29T03:30+02:00/04:00+02:00"},
		},
		{
			name: "spring: long slots never overlap in real time",
			set: with(func(s *store.AppointmentSettings) {
				s.DurationMinutes = 90
				s.WeeklyHours["sun"] = [][2]string{{"00:30", "05:00"}}
			}),
			from: "2026-03-29", to: "2026-03-29",
			want: []string{"2026-03-29T00:30+01:00/03:00+02:00", "2026-03-29T03:30+02:00/05:00+02:00"},
		},
		{
			name: "spring: a range ending in the skipped hour ends when the clocks jump",
			set:  with(func(s *store.AppointmentSettings) { s.WeeklyHours["sun"] = [][2]string{{"01:00", "02:30"}} }),
			from: "2026-03-29", to: "2026-03-29",
			want: []string{"2026-03-29T01:00+01:00/01:30+01:00", "2026-03-29T01:30+01:00/03:00+02:00"},
		},
		{
			name: "autumn: a doubled time is offered once, in summer time",
			set:  with(func(s *store.AppointmentSettings) { s.WeeklyHours["sun"] = [][2]string{{"01:00", "04:00"}} }),
			from: "2026-10-25", to: "2026-10-25",
			want: []string{"2026-10-25T01:00+02:00/01:30+02:00", "2026-10-25T01:30+02:00/02:00+02:00",
				"2026-10-25T02:00+02:00/02:30+02:00", "2026-10-25T02:30+02:00/02:00+01:00",
				"2026-10-25T03:00+01:00/03:30+01:00", "2026-10-25T03:30+01:00/04:00+01:00"},
		},
		{
			name: "blocked dates, both days included",
			set: with(func(s *store.AppointmentSettings) {
				for _, d := range store.Weekdays {
					s.WeeklyHours[d] = [][2]string{{"10:00", "10:30"}}
				}
				s.BlockedDates = store.BlockedRanges{{From: "2026-12-24", To: "2026-12-26", Note: "Weihnachten"}}
			}),
			from: "2026-12-23", to: "2026-12-27",
			want: []string{"2026-12-23T10:00+01:00/10:30+01:00", "2026-12-27T10:00+01:00/10:30+01:00"},
		},
		{
			name: "blocked day on the autumn change",
			set: with(func(s *store.AppointmentSettings) {
				s.WeeklyHours["sun"] = [][2]string{{"01:00", "04:00"}}
				s.BlockedDates = store.BlockedRanges{{From: "2026-10-25", To: "2026-10-25"}}
			}),
			from: "2026-10-25", to: "2026-10-25",
			want: []string{},
		},
		{
			name: "buffer spaces the slots",
			set: with(func(s *store.AppointmentSettings) {
				s.BufferMinutes = 15
				s.WeeklyHours["tue"] = [][2]string{{"09:00", "11:00"}}
			}),
			from: "2026-03-03", to: "2026-03-03",
			want: []string{"2026-03-03T09:00+01:00/09:30+01:00", "2026-03-03T09:45+01:00/10:15+01:00", "2026-03-03T10:30+01:00/11:00+01:00"},
		},
		{
			name:   "a booking takes its slot",
			set:    with(func(s *store.AppointmentSettings) { s.WeeklyHours["tue"] = [][2]string{{"09:00", "11:00"}} }),
			booked: []store.TimeRange{{Start: at(t, "2026-03-03T09:30:00+01:00"), End: at(t, "2026-03-03T10:00:00+01:00")}},
			from:   "2026-03-03", to: "2026-03-03",
			want: []string{"2026-03-03T09:00+01:00/09:30+01:00", "2026-03-03T10:00+01:00/10:30+01:00", "2026-03-03T10:30+01:00/11:00+01:00"},
		},
		{
			name: "a booking blocks its buffer on both sides",
			set: with(func(s *store.AppointmentSettings) {
				s.BufferMinutes = 10
				s.WeeklyHours["tue"] = [][2]string{{"09:00", "11:00"}}
			}),
			booked: []store.TimeRange{{Start: at(t, "2026-03-03T09:50:00+01:00"), End: at(t, "2026-03-03T10:10:00+01:00")}},
			from:   "2026-03-03", to: "2026-03-03",
			want: []string{"2026-03-03T09:00+01:00/09:30+01:00", "2026-03-03T10:20+01:00/10:50+01:00"},
		},
		{
			name: "minimum notice",
			set: with(func(s *store.AppointmentSettings) {
				s.MinNoticeHours = 1
				s.WeeklyHours["tue"] = [][2]string{{"09:00", "11:00"}}
			}),
			now:  berlin(t, "2026-03-03 09:10"),
			from: "2026-03-03", to: "2026-03-03",
			want: []string{"2026-03-03T10:30+01:00/11:00+01:00"},
		},
		{
			name: "horizon and the past",
			set: with(func(s *store.AppointmentSettings) {
				s.MaxDaysAhead = 1
				for _, d := range store.Weekdays {
					s.WeeklyHours[d] = [][2]string{{"12:00", "12:30"}}
				}
			}),
			now:  berlin(t, "2026-03-03 08:00"),
			from: "2026-03-01", to: "2026-03-10",
			want: []string{"2026-03-03T12:00+01:00/12:30+01:00", "2026-03-04T12:00+01:00/12:30+01:00"},
		},
		{
			name: "a range to midnight",
			set:  with(func(s *store.AppointmentSettings) { s.WeeklyHours["sat"] = [][2]string{{"23:00", "24:00"}} }),
			from: "2026-10-24", to: "2026-10-24",
			want: []string{"2026-10-24T23:00+02:00/23:30+02:00", "2026-10-24T23:30+02:00/00:00+02:00"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := c.now
			if n.IsZero() {
				n = now
			}
			got := format(appointment.ComputeSlots(c.set, c.booked, n, day(t, c.from), day(t, c.to)))
			if !slices.Equal(got, c.want) {
				t.Errorf("slots\n got %q\nwant %q", got, c.want)
			}
		})
	}
}
