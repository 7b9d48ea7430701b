package public_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rundbrief/rundbrief/handlers/webtest"
	"github.com/rundbrief/rundbrief/store"
)

// TestBookingPageInBrowser books in headless Chromium on a phone-sized
// window: picking another day swaps the slot picker through htmx (the URL
// follows), a time, the fields and the consent, and the plain form post ends
// on the confirmation.
func TestBookingPageInBrowser(t *testing.T) {
	t.Parallel()
	s, set, _ := bookingSite(t)
	path := store.BookingPathPrefix + set.Token
	ctx := webtest.Browser(t, 390, 844)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	p := s.get(t, path)
	second := strings.TrimPrefix(attr(p.doc.Find(`[data-testid^="day-"]`).Eq(1), "data-testid"), "day-")
	if err := chromedp.Do(ctx,
		chromedp.Navigate(s.url+path),
		chromedp.WaitVisible(css(tid("booking-form"))),
		// Mark the document: a swap keeps it, a full page load would not.
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`window.__kept = true`)(ctx, tg)
			return err
		}),
		chromedp.Click(css(tid("day-"+second))),
		chromedp.WaitVisible(css(`[aria-current="date"][data-testid="day-`+second+`"]`)),
	); err != nil {
		t.Fatalf("pick a day: %v", err)
	}
	// Mobile first: nothing wider than the phone's 390 px.
	wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
	if err != nil || wide {
		t.Errorf("the page scrolls sideways at 390 px (%v)", err)
		who, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("*")].filter(e => e.getBoundingClientRect().right > window.innerWidth).map(e => e.tagName + "." + e.className + ":" + Math.round(e.getBoundingClientRect().right)).slice(0, 12).join(" ")`))
		t.Logf("wider than the window: %s", who)
	}
	kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__kept === true`))
	if err != nil || !kept {
		t.Errorf("picking a day reloaded the page (%v)", err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.HasSuffix(loc, "?tag="+second) {
		t.Errorf("location after picking a day: %q %v", loc, err)
	}
	s.clock.Add(5 * time.Second)
	if err := chromedp.Do(ctx,
		chromedp.Click(css(`[data-testid="slot-10:00"] + span`)),
		chromedp.SendKeys(css("#field-name"), "Ida Beispiel"),
		chromedp.SendKeys(css("#field-email"), "ida@example.com"),
		chromedp.Click(css("#field-consent")),
		chromedp.Click(css(tid("booking-submit"))),
		chromedp.WaitVisible(css(tid("booking-done"))),
	); err != nil {
		t.Fatalf("book in the browser: %v", err)
	}
	when, err := chromedp.Run(ctx, chromedp.Text(css(tid("booking-when"))))
	if err != nil || !strings.Contains(when, "10:00–10:30 Uhr") {
		t.Errorf("confirmation says %q (%v)", when, err)
	}
	var start time.Time
	if err := s.db.GetContext(context.Background(), &start, `SELECT start_at FROM appointments WHERE account_id = $1 AND email = 'ida@example.com'`, s.acct); err != nil {
		t.Fatal(err)
	}
	if got := start.In(store.Berlin).Format("2006-01-02 15:04"); got != second+" 10:00" {
		t.Errorf("booked %s, want %s 10:00", got, second)
	}
}
