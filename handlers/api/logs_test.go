package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// Requests whose path, User-Agent or Origin PostgreSQL cannot store as text
// (NUL, invalid UTF-8, a 300-byte cut inside a character) used to fail the
// batch COPY and lose every row of it, other accounts' included.
func TestAPILogKeepsHostileRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	e.c.Request(http.MethodGet, "/v1/me", nil, hdr("User-Agent", "before"))
	e.c.Request(http.MethodGet, "/v1/contacts/%00", nil, hdr("User-Agent", "nul-path"))
	e.c.Request(http.MethodGet, "/v1/me", nil, hdr("User-Agent", "bad \xff agent"))
	e.c.Request(http.MethodGet, "/v1/me", nil, hdr("User-Agent", "bad-origin", "Origin", "https://\xff.example"))
	e.c.Request(http.MethodGet, "/v1/me", nil, hdr("User-Agent", strings.Repeat("a", 299)+"ä"))
	e.c.Request(http.MethodGet, "/v1/me", nil, hdr("User-Agent", "after"))
	if err := e.apiLog.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Path      string `json:"path"`
		Origin    string `json:"origin"`
		UserAgent string `json:"user_agent"`
	}
	e.c.Request(http.MethodGet, "/v1/logs/api", nil).Data(t, &rows)
	got := map[string]bool{}
	for _, r := range rows {
		for _, s := range []string{r.Path, r.Origin, r.UserAgent} {
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
				t.Errorf("logged %q", s)
			}
		}
		got[r.UserAgent] = true
		switch {
		case r.UserAgent == "nul-path" && r.Path != "/v1/contacts/\uFFFD":
			t.Errorf("NUL path logged as %q", r.Path)
		case r.UserAgent == "bad-origin" && r.Origin != "https://\uFFFD.example":
			t.Errorf("origin logged as %q", r.Origin)
		}
	}
	for _, ua := range []string{"before", "nul-path", "bad \uFFFD agent", "bad-origin", strings.Repeat("a", 299), "after"} {
		if !got[ua] {
			t.Errorf("no log row with User-Agent %.20q", ua)
		}
	}
}

// The total of GET /logs/api counts up to 10,000 entries: a busy key's 90
// days must not make every page count millions of rows.
func TestAPILogTotalIsCapped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "business")
	if _, err := e.db.ExecContext(context.Background(), `INSERT INTO api_log (account_id, key_id, request_id, method, path, status, duration_us, created_at)
SELECT $1, $2, 'req_' || i, 'GET', '/v1/me', CASE WHEN i % 1000 = 0 THEN 404 ELSE 200 END, 1, now() FROM generate_series(1, 10005) i`, e.acct, e.keyID); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Data []map[string]any `json:"data"`
		Meta struct {
			Pagination struct {
				Total int `json:"total"`
				Pages int `json:"pages"`
			} `json:"pagination"`
		} `json:"meta"`
	}
	e.c.Request(http.MethodGet, "/v1/logs/api?per_page=100", nil).JSON(t, &body)
	if p := body.Meta.Pagination; p.Total != 10_000 || p.Pages != 100 || len(body.Data) != 100 {
		t.Errorf("pagination %+v with %d rows, want a total of 10000 in 100 pages", p, len(body.Data))
	}
	// Entries beyond the counted ones stay reachable.
	e.c.Request(http.MethodGet, "/v1/logs/api?per_page=100&page=101", nil).JSON(t, &body)
	if len(body.Data) != 5 {
		t.Errorf("page 101 has %d rows, want 5", len(body.Data))
	}
	// A narrower filter counts exactly.
	e.c.Request(http.MethodGet, "/v1/logs/api?status=404", nil).JSON(t, &body)
	if p := body.Meta.Pagination; p.Total != 10 || p.Pages != 1 {
		t.Errorf("filtered pagination %+v, want a total of 10", p)
	}
}
