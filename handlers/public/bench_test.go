package public_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// BenchmarkPublicSignUp drives POST /v1/subscribe/{token} (JSON, a new address
// each time) over loopback with 16 connections: form lookup by token, the per-IP
// and per-list rate counters, the contact upsert with its events and activities,
// and the submission counter. The form is single opt-in onto one list without a
// stamp (server-to-server), so no confirmation mails pile up. All requests come
// from 127.0.0.1, so the API's clock moves one day every 8 requests: the
// benchmark measures sign-ups, not the refusals of the rate limits.
func BenchmarkPublicSignUp(b *testing.B) {
	const conns = 16
	var calls atomic.Int64
	base := time.Now()
	apiNow := func() time.Time { return base.Add(time.Duration(calls.Add(1)/8) * 24 * time.Hour) }
	s := newSiteWith(b, apiNow)
	l, err := s.db.CreateList(b.Context(), s.acct, store.Actor{Type: store.ActorSystem}, store.ListInput{Name: ptr("News")})
	if err != nil {
		b.Fatal(err)
	}
	f := s.form(b, store.FormInput{ListIDs: &[]int64{l.ID}, DoubleOptIn: ptr(false), MinFillSeconds: ptr(0)})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
	var seq atomic.Int64
	post := func() (int, error) {
		body := fmt.Appendf(nil, `{"email":"leser%d@example.com","first_name":"Leser"}`, seq.Add(1))
		resp, err := client.Post(s.url+"/v1/subscribe/"+f.Token, "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if st, err := post(); err != nil || st != http.StatusCreated {
		b.Fatalf("warm-up: %d %v", st, err)
	}

	latencies := make([][]time.Duration, conns)
	var next, failed atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range conns {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				st, err := post()
				latencies[c] = append(latencies[c], time.Since(t0))
				if err != nil || st != http.StatusCreated {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d sign-ups failed", n, b.N)
	}
	all := slices.Concat(latencies...)
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(float64(len(all)-1)*p)].Microseconds()) / 1000 }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(pct(0.50), "p50_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
}
