package public_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/handlers/webtest"
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

	webtest.Load(b, conns, func(int) error {
		st, err := post()
		if err == nil && st != http.StatusCreated {
			err = fmt.Errorf("status %d", st)
		}
		return err
	})
}
