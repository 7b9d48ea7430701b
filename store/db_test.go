package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestOpenSplitsTheConnectionBound checks that the pools and the listener
// together never exceed the bound, that the request pools keep their share,
// and that a bound too small to run is refused.
func TestOpenSplitsTheConnectionBound(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	for _, c := range []struct {
		opts                          []store.Option
		main, generic, relaxed, queue int
	}{
		{nil, 12, 16, 7, 4}, // store.DefaultMaxConns
		{[]store.Option{store.MaxConns(40)}, 12, 16, 7, 4},
		{[]store.Option{store.MaxConns(25)}, 7, 10, 4, 3},
		{[]store.Option{store.MaxConns(store.MinMaxConns)}, 3, 4, 1, 1},
		{[]store.Option{store.MaxConns(100)}, 28, 40, 19, 12},
	} {
		db, err := store.Open(ctx, url, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		m, g, r, q := db.PoolLimits()
		_ = db.Close()
		if m != c.main || g != c.generic || r != c.relaxed || q != c.queue {
			t.Errorf("%d options: pools %d/%d/%d/%d, want %d/%d/%d/%d", len(c.opts), m, g, r, q, c.main, c.generic, c.relaxed, c.queue)
		}
	}
	for n := store.MinMaxConns; n <= 200; n++ {
		db, err := store.Open(ctx, url, store.MaxConns(n))
		if err != nil {
			t.Fatal(err)
		}
		m, g, r, q := db.PoolLimits()
		_ = db.Close()
		// The main pool and the send queue's share what was the main pool's
		// share, as large as the generic pool's.
		if m+g+r+q+store.ListenerConns != n || r < 1 || q < 1 || g < 4 || m < 3 || m+q < g {
			t.Errorf("bound %d: pools %d/%d/%d/%d and %d listener", n, m, g, r, q, store.ListenerConns)
		}
	}
	for _, n := range []int{store.MinMaxConns - 1, 0, -5} {
		if db, err := store.Open(ctx, url, store.MaxConns(n)); err == nil || !strings.Contains(err.Error(), "too small") {
			if db != nil {
				_ = db.Close()
			}
			t.Errorf("bound %d: %v, want an error", n, err)
		}
	}
}

// TestListenerStaysWithinItsShare checks that a DB runs no more listeners
// than the bound keeps connections for, and frees the share when one ends.
func TestListenerStaysWithinItsShare(t *testing.T) {
	url := dbtest.URL(t)
	db := dbtest.Open(t, url)
	ended, cancelEnded := context.WithCancel(context.Background())
	cancelEnded()
	// With its context ended a listener returns at once, and frees its share.
	for range 2 {
		if err := db.ListenNotifications(ended, url, nil); err != nil {
			t.Fatalf("listener with an ended context: %v", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		// The probes below hold the share for a moment too: retry until this
		// listener has it, and then it keeps it until ctx ends.
		for {
			err := db.ListenNotifications(ctx, url, nil)
			if err == nil || !strings.Contains(err.Error(), "listener connections") {
				first <- err
				return
			}
		}
	}()
	refused := false
	for range 1000 { // until the first listener holds the share
		if err := db.ListenNotifications(ended, url, nil); err != nil {
			if !strings.Contains(err.Error(), "listener connections") {
				t.Fatalf("second listener: %v", err)
			}
			refused = true
			break
		}
	}
	cancel()
	if err := <-first; err != nil {
		t.Fatalf("first listener: %v", err)
	}
	if !refused {
		t.Fatal("a second listener ran beside the first")
	}
	if err := db.ListenNotifications(ended, url, nil); err != nil {
		t.Errorf("listener after the first ended: %v", err)
	}
}
