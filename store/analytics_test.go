package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

func TestParsePeriod(t *testing.T) {
	now := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC) // 03:30 in Berlin, the day summer time starts
	day := func(s string) time.Time {
		d, err := time.ParseInLocation(time.DateOnly, s, store.Berlin)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	cases := []struct {
		from, to         string
		wantFrom, wantTo string
		wantErr          string
	}{
		{"", "", "2026-02-28", "2026-03-29", ""},
		{"2026-03-01", "", "2026-03-01", "2026-03-29", ""},
		{"", "2026-01-31", "2026-01-02", "2026-01-31", ""},
		{"2026-04-05", "", "2026-04-05", "2026-04-05", ""},
		{"2024-12-31", "2026-01-01", "", "", "to"},                   // 366 days at most
		{"2026-03-10", "2026-03-01", "", "", "to"},                   // ends before it starts
		{"03/01/2026", "", "", "", "from"},                           // not YYYY-MM-DD
		{"2025-01-02", "2026-01-02", "2025-01-02", "2026-01-02", ""}, // exactly 366 days
	}
	for _, c := range cases {
		p, err := store.ParsePeriod(c.from, c.to, now)
		if c.wantErr != "" {
			var ve *store.ValidationError
			if !errors.As(err, &ve) || ve.Fields[c.wantErr] == "" {
				t.Errorf("%q..%q: %v, want an error at %s", c.from, c.to, err, c.wantErr)
			}
			continue
		}
		if err != nil || !p.From.Equal(day(c.wantFrom)) || !p.To.Equal(day(c.wantTo)) {
			t.Errorf("%q..%q: %s..%s (%v), want %s..%s", c.from, c.to, p.From, p.To, err, c.wantFrom, c.wantTo)
		}
	}
	if p, _ := store.ParsePeriod("", "", now); p.Days() != 30 {
		t.Errorf("default period has %d days across the clock change, want 30", p.Days())
	}
}

func TestRates(t *testing.T) {
	e := store.Engagement{Sent: 10, Failed: 2, Bounces: 1, Opens: 4, Clicks: 2, Unsubscribes: 1}
	if e.OpenRate() != 0.4 || e.ClickRate() != 0.2 || e.ClickToOpenRate() != 0.5 || e.UnsubscribeRate() != 0.1 || e.BounceRate() != 1.0/12 {
		t.Errorf("rates %v %v %v %v %v", e.OpenRate(), e.ClickRate(), e.ClickToOpenRate(), e.UnsubscribeRate(), e.BounceRate())
	}
	if r := (store.Engagement{}).OpenRate(); r != 0 {
		t.Errorf("rate without sends %v", r)
	}
	// Never above 1, even when counters disagree for a moment.
	if r := store.Ratio(12, 10); r != 1 {
		t.Errorf("ratio above 1: %v", r)
	}
}
