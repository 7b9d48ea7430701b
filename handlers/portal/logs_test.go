package portal_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestAPILogPage(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	empty := c.get("/logs/api")
	wantStatus(t, empty, http.StatusOK)
	if got := text(empty.find("log-empty")); !strings.Contains(got, "Noch keine API-Anfragen") {
		t.Errorf("empty state %q", got)
	}

	key, _, err := s.db.CreateKey(context.Background(), acct.ID, store.KeySettings{Name: "Shop"})
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := s.db.CreateKey(context.Background(), acct.ID, store.KeySettings{Name: "CRM"})
	if err != nil {
		t.Fatal(err)
	}
	// A writer of its own, not the server's (whose worker might still hold a row).
	w := store.NewAPILogWriter(s.db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	start := time.Now().Add(-time.Hour)
	for i := range 30 {
		e := store.APILogEntry{AccountID: acct.ID, KeyID: &key.ID, RequestID: fmt.Sprint("req_", i), Method: "GET",
			Path: "/v1/contacts?page=" + fmt.Sprint(i), Status: 200, IP: "203.0.113.7", DurationUS: 1500, CreatedAt: start.Add(time.Duration(i) * time.Second)}
		if i%10 == 0 {
			e.Status, e.Path, e.KeyID = 404, "/v1/lists/99", &other.ID
		}
		w.Add(context.Background(), e)
	}
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	page1 := c.get("/logs/api")
	if n := page1.find("log-row").Length(); n != 25 {
		t.Fatalf("page 1 has %d rows", n)
	}
	if got := text(page1.find("pagination-range")); got != "1–25 von 30 Einträgen · Seite 1 von 2" {
		t.Errorf("range %q", got)
	}
	next := page1.find("page-next")
	if href, _ := next.Attr("href"); href != "/logs/api?page=2" {
		t.Errorf("next href %q", href)
	}
	if hx, _ := next.Attr("hx-get"); hx != "/logs/api?page=2" || next.AttrOr("hx-target", "") != "#api-log" {
		t.Errorf("next link is not htmx-enhanced: %v", next.Nodes)
	}
	if got := text(page1.find("log-row").First().Find(`[data-testid="log-key"]`)); got != "Shop" {
		t.Errorf("newest entry's key %q", got)
	}

	// htmx paging gets the section alone from the same handler.
	page2 := c.get("/logs/api?page=2", "HX-Request", "true")
	wantStatus(t, page2, http.StatusOK)
	if strings.Contains(page2.Body, "<html") || page2.find("sidebar").Length() != 0 || page2.find("api-log").Length() != 1 {
		t.Fatalf("htmx response is not the fragment:\n%.400s", page2.Body)
	}
	if n := page2.find("log-row").Length(); n != 5 {
		t.Errorf("page 2 has %d rows", n)
	}
	if page2.find("page-prev").Length() != 1 || page2.find("page-next").Length() != 0 {
		t.Error("page 2 links")
	}
	if !strings.Contains(page2.Header.Get("Vary"), "HX-Request") {
		t.Errorf("Vary %q", page2.Header.Get("Vary"))
	}
	// A history restore needs the whole page.
	if restore := c.get("/logs/api?page=2", "HX-Request", "true", "HX-History-Restore-Request", "true"); restore.find("sidebar").Length() != 1 {
		t.Error("history restore got a fragment")
	}

	for _, tc := range []struct {
		query string
		rows  int
	}{
		{"status=404", 3},
		{"status=200&path=/v1/contacts", 25},
		{fmt.Sprintf("key_id=%d", other.ID), 3},
		{fmt.Sprintf("key_id=%d&status=200", other.ID), 0},
		{"path=/v1/lists", 3},
	} {
		r := c.get("/logs/api?" + tc.query)
		if n := r.find("log-row").Length(); n != tc.rows {
			t.Errorf("%s: %d rows, want %d", tc.query, n, tc.rows)
		}
		if tc.rows == 0 && !strings.Contains(text(r.find("log-empty")), "Keine passenden Einträge") {
			t.Errorf("%s: no empty state for the filter", tc.query)
		}
	}
	bad := c.get("/logs/api?status=abc")
	wantStatus(t, bad, http.StatusOK)
	if msg := bad.find("field-status").Find(`[data-testid="error-status"]`); !strings.Contains(msg.Text(), "Statuscode") {
		t.Errorf("no error next to status:\n%s", bad.Body)
	}
	if got := bad.Doc.Find(`input[name="status"]`).AttrOr("value", ""); got != "abc" {
		t.Errorf("typed status not kept: %q", got)
	}
	// A page past the end shows the last one.
	if r := c.get("/logs/api?page=9"); r.find("log-row").Length() != 5 {
		t.Error("page past the end")
	}
}

func TestDashboardShowsPlanUsage(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "starter")
	for range 2 {
		if _, _, err := s.db.CreateKey(context.Background(), acct.ID, store.KeySettings{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.ExecContext(context.Background(), `UPDATE account_usage SET contacts = 4500 WHERE account_id = $1`, acct.ID); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	d := c.get("/dashboard")
	wantStatus(t, d, http.StatusOK)
	for id, want := range map[string]string{
		"usage-contacts": "4.500 / 5.000",
		"usage-api_keys": "2 / 25",
		"usage-storage":  "0 B / 500 MB",
		"usage-lists":    "0 / 20",
	} {
		card := d.find(id)
		got := text(card.Find(`[data-testid="used"]`)) + " / " + text(card.Find(`[data-testid="limit"]`))
		if got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
	if !d.find("usage-contacts").HasClass("is-near") {
		t.Error("90 % of the contacts limit is not flagged")
	}
	if d.find("usage-ai_credit").Length() != 0 {
		t.Error("AI credit shown on a plan without AI")
	}
	if got := text(d.find("features")); got != "API-Zugang" {
		t.Errorf("features %q", got)
	}
	if cur, _ := d.find("nav-dashboard").Attr("aria-current"); cur != "page" {
		t.Error("dashboard not marked current")
	}
}

// The API log page counts up to 10,000 entries, like the activity log: a busy
// key's 90 days must not make every page load count millions of rows.
func TestAPILogPageCountIsCapped(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	if _, err := s.db.ExecContext(context.Background(), `INSERT INTO api_log (account_id, request_id, method, path, status, duration_us, created_at)
SELECT $1, 'req_' || i, 'GET', '/v1/me', CASE WHEN i % 1000 = 0 THEN 404 ELSE 200 END, 1, now() FROM generate_series(1, 10005) i`, acct.ID); err != nil {
		t.Fatal(err)
	}
	page := c.get("/logs/api")
	wantStatus(t, page, http.StatusOK)
	if got := text(page.find("pagination-range")); got != "1–25 von 10.000 Einträgen · Seite 1 von 400" {
		t.Errorf("range %q", got)
	}
	if got := text(page.find("log-capped")); !strings.Contains(got, "neuesten 10.000") {
		t.Errorf("capped note %q", got)
	}
	// No page lies beyond the counted entries.
	last := c.get("/logs/api?page=100000")
	if got := text(last.find("pagination-range")); got != "9.976–10.000 von 10.000 Einträgen · Seite 400 von 400" || last.find("log-row").Length() != 25 {
		t.Errorf("deep page: range %q, %d rows", got, last.find("log-row").Length())
	}
	// A filter with fewer matches counts them exactly, without the note.
	filtered := c.get("/logs/api?status=404")
	if got := text(filtered.find("pagination-range")); got != "1–10 von 10 Einträgen · Seite 1 von 1" || filtered.find("log-capped").Length() != 0 {
		t.Errorf("filtered range %q", got)
	}
}
