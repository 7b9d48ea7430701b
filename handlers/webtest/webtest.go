// Package webtest holds what the HTTP benchmarks and browser tests share: a
// concurrent load loop that reports latency percentiles, and headless Chromium.
package webtest

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Load runs b.N calls of do over conns concurrent clients and reports req/s,
// p50_ms, p99_ms and max_ms. do gets the call's number (0 … b.N-1) and returns
// an error when the response was not what it should be; any error fails the
// benchmark.
func Load(b *testing.B, conns int, do func(i int) error) {
	b.Helper()
	latencies := make([][]time.Duration, conns)
	var next, failed atomic.Int64
	var firstErr atomic.Value
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range conns {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				err := do(int(i))
				latencies[c] = append(latencies[c], time.Since(t0))
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d requests failed, first: %v", n, b.N, firstErr.Load())
	}
	all := slices.Concat(latencies...)
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(float64(len(all)-1)*p)].Microseconds()) / 1000 }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(pct(0.50), "p50_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
	b.ReportMetric(pct(1), "max_ms")
}

// ChromiumPath is where Debian's chromium package puts the browser.
const ChromiumPath = "/usr/bin/chromium"

// shared is the one headless Chromium of a test binary. Starting a browser
// costs more CPU than most end-to-end tests spend in it, so every test gets a
// tab in a browser context of its own (its own cookies, storage and
// permissions, as a fresh profile would give) in this one browser. Tests of
// one package run one after another, or in their own tabs when parallel.
type shared struct {
	mu      sync.Mutex
	browser context.Context // the first tab, which keeps the browser alive; nil until started
	cancel  context.CancelFunc
	dir     string // the browser's profile
	// logf is where the browser's log goes: the test that opened the latest
	// tab (tests run in parallel, so a line may land in another running
	// test's log; the browser has one log, not one per tab).
	logf atomic.Pointer[func(string, ...any)]
}

// browser is the shared Chromium. Test helpers may hold process state; this
// one exists because Chromium is a process of the test binary's own.
var browser shared

// start returns the running browser, starting it if there is none or the one
// there was has died.
func (s *shared) start() (context.Context, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.browser != nil && s.browser.Err() == nil {
		if b := chromedp.FromContext(s.browser); b != nil && b.Browser != nil && b.Browser.Process() != nil {
			return s.browser, nil
		}
	}
	s.stopLocked()
	dir, err := os.MkdirTemp("", "rbchromium")
	if err != nil {
		return nil, err
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(ChromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(dir),
	)
	logf := func(format string, args ...any) {
		if f := s.logf.Load(); f != nil {
			(*f)(format, args...)
		}
	}
	ctx, cancelCtx := chromedp.NewContext(alloc, chromedp.WithLogf(logf))
	// The first action starts the browser, which lives as long as ctx.
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.browser, s.dir = ctx, dir
	s.cancel = func() {
		cancelCtx()
		cancelAlloc()
	}
	return ctx, nil
}

func (s *shared) stopLocked() {
	if s.cancel != nil {
		s.cancel()
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
	s.browser, s.cancel, s.dir = nil, nil, ""
}

// Closing returns m for dbtest.Main (or os.Exit(…Run())) with the shared
// browser stopped and its profile removed after the tests ran. Without it the
// browser still dies with the test binary (chromedp sets Pdeathsig), but its
// profile stays in the temporary directory.
func Closing(m interface{ Run() int }) interface{ Run() int } {
	return closing{m}
}

type closing struct{ m interface{ Run() int } }

func (c closing) Run() int {
	defer func() {
		browser.mu.Lock()
		browser.stopLocked()
		browser.mu.Unlock()
	}()
	return c.m.Run()
}

// Browser opens a tab of headless Chromium in a fresh browser context (no
// cookies, storage or permissions of other tests) with a width×height
// viewport; the tab and its context close with the test. A missing browser
// fails the test: end-to-end behaviour must not go unchecked silently.
func Browser(t *testing.T, width, height int64) context.Context {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		t.Fatalf("chromium is required for the end-to-end test (apt-get install chromium): %v", err)
	}
	logf := t.Logf
	browser.logf.Store(&logf)
	t.Cleanup(func() { browser.logf.CompareAndSwap(&logf, nil) })
	parent, err := browser.start()
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height)); err != nil {
		t.Fatalf("open a chromium tab: %v", err)
	}
	return ctx
}
