package store_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// Two DBs on one database, each with its own key cache and listener, stand for
// two `serve` processes. While both authenticate a key as fast as they can,
// the key is renewed or revoked in one of them; no lookup that starts after
// the change returned may still accept the old key, in either process.
func TestKeyChangeHoldsInEveryProcessWhenItReturns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := dbtest.URL(t)
	procs := []*store.DB{dbtest.Open(t, url), dbtest.Open(t, url)}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, db := range procs {
		wg.Go(func() { _ = db.ListenNotifications(ctx, url, nil) })
	}
	for _, db := range procs {
		for !db.KeyCacheServing() {
			time.Sleep(time.Millisecond)
		}
	}
	acct := newAccount(t, procs[0], "business")
	k, full, err := procs[0].CreateKey(ctx, acct, store.KeySettings{})
	if err != nil {
		t.Fatal(err)
	}
	const rounds, workers = 20, 4
	var accepted, lookups atomic.Int64
	var slowest time.Duration
	for round := range rounds {
		old := full
		var changed atomic.Bool
		stop := make(chan struct{})
		var load sync.WaitGroup
		for w := range workers {
			db := procs[w%len(procs)]
			load.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					after := changed.Load()
					_, err := db.Authenticate(ctx, old)
					switch {
					case err == nil && after:
						accepted.Add(1)
					case err != nil && !errors.Is(err, store.ErrNotFound):
						t.Error(err)
						return
					}
					if after {
						lookups.Add(1)
					}
				}
			})
		}
		// Every process has the key cached and serves it under load.
		for _, db := range procs {
			if _, err := db.Authenticate(ctx, old); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(20 * time.Millisecond)
		changer := procs[round%len(procs)]
		began := time.Now()
		if round%2 == 0 {
			var next store.APIKey
			next, full, err = changer.RenewKey(ctx, acct, k.ID)
			k = next
		} else {
			err = changer.RevokeKey(ctx, acct, k.ID)
		}
		if err != nil {
			t.Fatal(err)
		}
		changed.Store(true)
		slowest = max(slowest, time.Since(began))
		time.Sleep(20 * time.Millisecond)
		close(stop)
		load.Wait()
		if round%2 == 1 {
			k, full, err = procs[0].CreateKey(ctx, acct, store.KeySettings{})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := accepted.Load(); n > 0 {
		t.Errorf("%d of %d lookups that started after the change returned still accepted the old key", n, lookups.Load())
	}
	t.Logf("slowest key change under load: %v", slowest)
	if lookups.Load() == 0 {
		t.Error("no lookup ran after the changes")
	}
}
