package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/migrations"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
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

// TestContactDaysFollowCreateAndDelete checks the maintained contacts per day
// (migration 00014) that "contacts over time" reads: single and bulk creation
// count on today, an update counts nothing, a deletion takes the contact off
// again, and the migration's backfill counts contacts created before it.
func TestContactDaysFollowCreateAndDelete(t *testing.T) {
	db := dbtest.NewDB(t)
	ctx := context.Background()
	acct := newAccount(t, db, "business")
	now := time.Now()
	period := store.Period{From: store.BerlinMidnight(now).AddDate(0, 0, -6), To: store.BerlinMidnight(now)}
	check := func(wantNew, wantTotal int64) {
		t.Helper()
		o, err := db.AnalyticsOverview(ctx, acct, period)
		if err != nil {
			t.Fatal(err)
		}
		points, err := db.AnalyticsTimeseries(ctx, acct, period, store.IntervalDay)
		if err != nil {
			t.Fatal(err)
		}
		last := points[len(points)-1]
		if o.NewContacts != wantNew || o.Contacts != wantTotal || last.NewContacts != wantNew || last.Contacts != wantTotal ||
			points[len(points)-2].Contacts != wantTotal-wantNew {
			t.Fatalf("overview new %d total %d, today new %d total %d, yesterday total %d; want new %d total %d",
				o.NewContacts, o.Contacts, last.NewContacts, last.Contacts, points[len(points)-2].Contacts, wantNew, wantTotal)
		}
	}

	a := upsert(t, db, acct, store.ContactInput{Email: "a@example.com"}).Contact
	upsert(t, db, acct, store.ContactInput{Email: "a@example.com", FirstName: ptr("Anna")}) // an update is no new contact
	bulk := store.BulkContacts{}
	for i := range 5 {
		bulk.Contacts = append(bulk.Contacts, store.ContactInput{Email: fmt.Sprintf("b%d@example.com", i)})
	}
	if _, err := db.BulkUpsertContacts(ctx, acct, apiActor, bulk); err != nil {
		t.Fatal(err)
	}
	check(6, 6)
	if err := db.DeleteContact(ctx, acct, apiActor, a.ID); err != nil {
		t.Fatal(err)
	}
	check(5, 5)

	// Contacts created before the counter existed: the backfill puts them on
	// their day, three days ago.
	if _, err := db.ExecContext(ctx, `UPDATE contacts SET created_at = now() - interval '3 days' WHERE account_id = $1 AND email LIKE 'b%'`, acct); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM contact_days WHERE account_id = $1`, acct); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, backfillContactDays(t)); err != nil {
		t.Fatal(err)
	}
	points, err := db.AnalyticsTimeseries(ctx, acct, period, store.IntervalDay)
	if err != nil {
		t.Fatal(err)
	}
	if got := points[len(points)-4]; got.NewContacts != 5 || got.Contacts != 5 || points[len(points)-5].Contacts != 0 {
		t.Fatalf("after the backfill, three days ago: %+v, the day before: %+v", got, points[len(points)-5])
	}
}

// backfillContactDays is the Up section's backfill of migration 00014, read from
// the migration itself so that the test runs what deployments ran.
func backfillContactDays(t *testing.T) string {
	t.Helper()
	b, err := migrations.FS.ReadFile("00014_contact_days.sql")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "INSERT INTO contact_days")
	j := strings.Index(s, "-- +goose Down")
	if i < 0 || j < i {
		t.Fatal("migration 00014: backfill not found")
	}
	return s[i:j]
}
