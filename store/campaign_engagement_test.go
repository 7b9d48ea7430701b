package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// TestCampaignHoursCounters: the hourly counters the tracking pages keep equal
// an exact aggregate over the recipients' opened_at and clicked_at; a second
// open or click of a recipient, or a first click on a second link, does not
// count again.
func TestCampaignHoursCounters(t *testing.T) {
	e := newCampaignEnv(t)
	ctx := context.Background()
	var campaign, link1, link2 int64
	if err := e.db.GetContext(ctx, &campaign, `INSERT INTO campaigns (account_id, kind, type, status) VALUES ($1, 'newsletter', 'newsletter', 'sent') RETURNING id`, e.acct); err != nil {
		t.Fatal(err)
	}
	for i, l := range []*int64{&link1, &link2} {
		if err := e.db.GetContext(ctx, l, `INSERT INTO campaign_links (account_id, campaign_id, position, url) VALUES ($1, $2, $3::int, 'https://example.com/' || $3::int) RETURNING id`, e.acct, campaign, i); err != nil {
			t.Fatal(err)
		}
	}
	var rec []int64
	if err := e.db.SelectContext(ctx, &rec, `INSERT INTO campaign_recipients (account_id, campaign_id, email, status, sent_at)
SELECT $1, $2, 'r' || i || '@example.org', 'sent', now() FROM generate_series(1, 20) i RETURNING id`, e.acct, campaign); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC) // a night the Berlin clocks change
	h := func(n int, min int) time.Time {
		return start.Add(time.Duration(n)*time.Hour + time.Duration(min)*time.Minute + 123*time.Microsecond)
	}
	// Hour 0: first opens of recipients 0..7 and first clicks of 0..5 (at 0:59);
	// hour 2 (from 2:00): first opens of 8..11, second opens of 0..3, second
	// clicks of 0..5 and their first clicks on a second link (none count).
	for i := 0; i < 8; i++ {
		trackOpen(t, e.db, rec[i], h(0, i*8))
	}
	for i := 8; i < 12; i++ {
		trackOpen(t, e.db, rec[i], h(2, 0))
	}
	for i := 0; i < 4; i++ {
		trackOpen(t, e.db, rec[i], h(2, 30))
	}
	for i := 0; i < 6; i++ {
		trackClick(t, e.db, rec[i], link1, h(0, 59))
		trackClick(t, e.db, rec[i], link1, h(2, 1))
		trackClick(t, e.db, rec[i], link2, h(2, 2))
	}
	// A recipient who clicks without an open, in an hour of its own.
	trackClick(t, e.db, rec[19], link2, h(5, 0))

	type row struct {
		Hour   time.Time `db:"hour"`
		Opens  int64     `db:"opens"`
		Clicks int64     `db:"clicks"`
	}
	exact := func(from, to time.Time) []store.HourEngagement {
		var out []store.HourEngagement
		if err := e.db.SelectContext(ctx, &out, `SELECT hour, sum(o)::bigint AS opens, sum(c)::bigint AS clicks FROM (
  SELECT date_trunc('hour', opened_at) AS hour, 1 AS o, 0 AS c FROM campaign_recipients WHERE campaign_id = $1 AND opened_at >= $2 AND opened_at < $3
  UNION ALL
  SELECT date_trunc('hour', clicked_at), 0, 1 FROM campaign_recipients WHERE campaign_id = $1 AND clicked_at >= $2 AND clicked_at < $3
) x GROUP BY hour ORDER BY hour`, campaign, from, to); err != nil {
			t.Fatal(err)
		}
		return out
	}
	check := func(from, to time.Time, want []row) {
		t.Helper()
		got, err := e.db.CampaignHours(ctx, e.acct, campaign, from, to)
		if err != nil {
			t.Fatal(err)
		}
		ex := exact(from, to)
		if len(got) != len(want) || len(ex) != len(want) {
			t.Fatalf("hours %+v, exact %+v, want %+v", got, ex, want)
		}
		for i := range want {
			if !got[i].Hour.Equal(want[i].Hour) || got[i].Opens != want[i].Opens || got[i].Clicks != want[i].Clicks {
				t.Errorf("hour %d: %+v, want %+v", i, got[i], want[i])
			}
			if !ex[i].Hour.Equal(got[i].Hour) || ex[i].Opens != got[i].Opens || ex[i].Clicks != got[i].Clicks {
				t.Errorf("hour %d: %+v, exact aggregate %+v", i, got[i], ex[i])
			}
		}
	}
	check(start, start.Add(48*time.Hour), []row{
		{start, 8, 6},
		{start.Add(2 * time.Hour), 4, 0},
		{start.Add(5 * time.Hour), 0, 1},
	})
	// [from, to): the hour at to is left out, the hour at from is in.
	check(start.Add(2*time.Hour), start.Add(5*time.Hour), []row{{start.Add(2 * time.Hour), 4, 0}})
	check(start.Add(time.Hour), start.Add(2*time.Hour), nil)

	// Another account sees none of it.
	other := newAccount(t, e.db, "business")
	if got, err := e.db.CampaignHours(ctx, other, campaign, start, start.Add(48*time.Hour)); err != nil || len(got) != 0 {
		t.Fatalf("other account: %+v %v", got, err)
	}
	// The shards sum up: recipients 0..7 fall in several shards of hour 0.
	var shards int
	if err := e.db.GetContext(ctx, &shards, `SELECT count(*) FROM campaign_hours WHERE campaign_id = $1 AND hour = $2`, campaign, start); err != nil || shards < 2 {
		t.Fatalf("shards of hour 0: %d %v", shards, err)
	}
}

func trackOpen(t *testing.T, db *store.DB, recipient int64, at time.Time) {
	t.Helper()
	if _, err := db.TrackOpen(context.Background(), recipient, at); err != nil {
		t.Fatal(err)
	}
}

func trackClick(t *testing.T, db *store.DB, recipient, link int64, at time.Time) {
	t.Helper()
	if _, err := db.TrackClick(context.Background(), recipient, link, "", at, true); err != nil {
		t.Fatal(err)
	}
}
