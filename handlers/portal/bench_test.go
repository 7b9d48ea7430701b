package portal_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// BenchmarkPortalPages renders the dashboard, the API keys and the A/B tests page server-side,
// through the whole stack (session lookup and commit in PostgreSQL, the signed-in
// user, the page's queries, templ rendering), for an account with 25 keys, and
// reports milliseconds per page (target: well under 50 ms).
func BenchmarkPortalPages(b *testing.B) {
	s := newServer(b, dbtest.URL(b), nil, base)
	acct := newAccount(b, s.db, "")
	for i := range 25 {
		limit := 60
		if _, _, err := s.db.CreateKey(context.Background(), acct.ID, store.KeySettings{
			Name: fmt.Sprintf("Integration %02d", i), Scopes: []string{"read", "write"},
			AllowedIPs: []string{"10.0.0.0/8", "203.0.113.7"}, AllowedOrigins: []string{"https://shop.example.com"}, RateLimit: &limit,
		}); err != nil {
			b.Fatal(err)
		}
	}
	c := newClient(b, s)
	c.signIn(acct.Email, acct.Password)

	// get fetches a page as a browser would, without parsing it: the client's work
	// stays out of the figure.
	get := func(path string) (int, int64) {
		req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
		req.AddCookie(c.cookie)
		resp, err := c.http.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		n, _ := io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, n
	}
	for _, path := range []string{"/dashboard", "/api-keys", "/ab-tests"} {
		b.Run(path[1:], func(b *testing.B) {
			if st, n := get(path); st != http.StatusOK || n < 2000 {
				b.Fatalf("GET %s: %d, %d bytes", path, st, n)
			}
			start := time.Now()
			for b.Loop() {
				if st, _ := get(path); st != http.StatusOK {
					b.Fatalf("GET %s: %d", path, st)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
}
