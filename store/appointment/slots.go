package appointment

import (
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// Slot is a free time of the appointment book: [Start, End).
type Slot struct {
	Start time.Time
	End   time.Time
}

// MaxSlotDays is the longest span GET /appointments/slots computes at once.
const MaxSlotDays = 62

// Date is a calendar day in Europe/Berlin, held as midnight UTC of that day so
// that AddDate never meets a daylight-saving change.
type Date struct{ t time.Time }

// DateOf is the Berlin day of t.
func DateOf(t time.Time) Date {
	l := t.In(store.Berlin)
	return Date{time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, time.UTC)}
}

// ParseDate reads YYYY-MM-DD.
func ParseDate(s string) (Date, bool) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return Date{}, false
	}
	return Date{t}, true
}

// AddDays is the day n days later.
func (d Date) AddDays(n int) Date { return Date{d.t.AddDate(0, 0, n)} }

// Before reports whether d is an earlier day than e.
func (d Date) Before(e Date) bool { return d.t.Before(e.t) }

// Days is the number of days from d to e (negative when e is earlier).
func (d Date) Days(e Date) int { return int(e.t.Sub(d.t) / (24 * time.Hour)) }

// String is YYYY-MM-DD.
func (d Date) String() string { return d.t.Format(time.DateOnly) }

// Weekday is the day's weekday.
func (d Date) Weekday() time.Weekday { return d.t.Weekday() }

// Start is the first instant of the day in Berlin.
func (d Date) Start() time.Time {
	return time.Date(d.t.Year(), d.t.Month(), d.t.Day(), 0, 0, 0, 0, store.Berlin)
}

// wall resolves the Berlin wall-clock time minutes after the day's midnight.
// ok is false for a time that does not exist (skipped when clocks go forward);
// a time that exists twice (when clocks go back) resolves to its first
// occurrence, the one in summer time, as RFC 5545 reads such local times.
func (d Date) wall(minutes int) (time.Time, bool) {
	h, m := minutes/60, minutes%60
	t := time.Date(d.t.Year(), d.t.Month(), d.t.Day(), h, m, 0, 0, store.Berlin)
	if t.Hour() != h || t.Minute() != m || t.Day() != d.t.Day() {
		return time.Time{}, false
	}
	// Go may pick the second occurrence of a doubled time; an hour earlier
	// with the same wall clock is the first.
	if e := t.Add(-time.Hour); e.Hour() == h && e.Minute() == m && e.Day() == t.Day() {
		return e, true
	}
	return t, true
}

// wallEnd resolves the end of a range: midnight of the next day for 24:00, the
// last occurrence of a doubled time (the range covers all of its wall-clock
// span), and for a skipped time the moment the clocks jumped.
func (d Date) wallEnd(minutes int) time.Time {
	if minutes >= 24*60 {
		return d.AddDays(1).Start()
	}
	for m := minutes; m < 24*60; m++ {
		h, mm := m/60, m%60
		t := time.Date(d.t.Year(), d.t.Month(), d.t.Day(), h, mm, 0, 0, store.Berlin)
		if t.Hour() == h && t.Minute() == mm {
			return t
		}
	}
	return d.AddDays(1).Start()
}

// blockedDays are the blocked ranges as days.
type blockedDays [][2]Date

func parseBlocked(b store.BlockedRanges) blockedDays {
	out := make(blockedDays, 0, len(b))
	for _, r := range b {
		from, ok1 := ParseDate(r.From)
		to, ok2 := ParseDate(r.To)
		if ok1 && ok2 {
			out = append(out, [2]Date{from, to})
		}
	}
	return out
}

func (b blockedDays) has(d Date) bool {
	for _, r := range b {
		if !d.Before(r[0]) && !r[1].Before(d) {
			return true
		}
	}
	return false
}

// ComputeSlots returns the free slots of the days from to to (both included),
// in order: from each day's weekly hours (wall clock in Berlin, so 09:00 stays
// 09:00 across daylight-saving changes), spaced by duration plus buffer,
// without blocked days, days before today or beyond max_days_ahead, starts
// earlier than min_notice_hours after now, and slots within buffer of a booked
// range. booked must be ordered by start and not overlap (the exclusion
// constraint guarantees both).
//
// On the day clocks go forward a wall time that does not exist is skipped;
// on the day they go back a doubled wall time is offered once (its first
// occurrence), and slots never overlap in real time.
func ComputeSlots(s store.AppointmentSettings, booked []store.TimeRange, now time.Time, from, to Date) []Slot {
	dur := s.Duration()
	buf := time.Duration(s.BufferMinutes) * time.Minute
	step := s.DurationMinutes + s.BufferMinutes
	if dur <= 0 || step <= 0 {
		return nil
	}
	today := DateOf(now)
	last := today.AddDays(s.MaxDaysAhead)
	if from.Before(today) {
		from = today
	}
	if last.Before(to) {
		to = last
	}
	earliest := now.Add(time.Duration(s.MinNoticeHours) * time.Hour)
	blocked := parseBlocked(s.BlockedDates)
	out := make([]Slot, 0, 64)
	bi := 0
	var lastEnd time.Time
	for d := from; !to.Before(d); d = d.AddDays(1) {
		if blocked.has(d) {
			continue
		}
		for _, r := range s.WeeklyHours[store.WeekdayKey(d.Weekday())] {
			a, okA := store.ClockMinutes(r[0])
			b, okB := store.ClockMinutes(r[1])
			if !okA || !okB || b <= a {
				continue
			}
			end := d.wallEnd(b)
			for m := a; m < b; m += step {
				st, ok := d.wall(m)
				if !ok {
					continue
				}
				en := st.Add(dur)
				if en.After(end) {
					break
				}
				if st.Before(earliest) || (!lastEnd.IsZero() && st.Before(lastEnd.Add(buf))) {
					continue
				}
				// booked is ordered and disjoint, so its ends are ordered too:
				// skip the ranges that end before this slot's buffer begins.
				lo := st.Add(-buf)
				for bi < len(booked) && !booked[bi].End.After(lo) {
					bi++
				}
				if bi < len(booked) && booked[bi].Start.Before(en.Add(buf)) {
					continue
				}
				out = append(out, Slot{Start: st, End: en})
				lastEnd = en
			}
		}
	}
	return out
}
