package handlers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/rundbrief/rundbrief/handlers"
	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/portal"
	"github.com/rundbrief/rundbrief/handlers/public"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/botguard"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/sequence"
	"github.com/rundbrief/rundbrief/store/services"
)

// sequencesServer is the application with the sequence service wired as
// `serve` wires it.
func sequencesServer(t *testing.T) (*httptest.Server, *store.DB) {
	t.Helper()
	const secretKey = "end-to-end secret, at least 32 characters long"
	db := dbtest.Open(t, dbtest.URL(t))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	apiLog := store.NewAPILogWriter(db, log)
	wg.Go(func() { _ = apiLog.Run(ctx) })
	box, err := secret.NewBox(secretKey)
	if err != nil {
		t.Fatal(err)
	}
	tokens := testTokens(t)
	const baseURL = "http://rundbrief.test"
	links := mailer.LinkBuilder{BaseURL: baseURL, Tokens: tokens}
	mail := mailer.NewTransports(db, box, mailer.TransportOptions{HELO: "rundbrief.test"})
	w := mailer.NewWorker(db, mail, mailer.WorkerOptions{Links: links, PollInterval: 50 * time.Millisecond, Log: log})
	campaigns := campaign.New(db, mail, w, campaign.Options{Links: links, Log: log})
	set := &services.Set{DB: db, APILog: apiLog, Box: box, Log: log, Mail: mail, Campaigns: campaigns,
		Sequences: sequence.New(db, nil, campaigns, mail, w, sequence.Options{})}
	p, err := portal.New(set, portal.Config{BaseURL: baseURL})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := public.New(&services.Set{DB: db, Guard: botguard.New(secretKey, time.Now), Tokens: tokens, Log: log}, public.Config{BaseURL: baseURL})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handlers.New(api.New(set, api.Config{BaseURL: baseURL, RateLimit: 1_000_000}), p, pub))
	t.Cleanup(func() {
		srv.Close()
		cancel()
		wg.Wait()
	})
	return srv, db
}

// TestPortalSequenceDragEndToEnd drags the third day of a sequence by its
// handle onto the first in a real browser (a mouse drag that Chromium hands
// over as an HTML5 drag and drop): the days are renumbered and the new order
// is stored, as a reload and the store show. The ↑/↓ buttons still move
// days for keyboard users.
func TestPortalSequenceDragEndToEnd(t *testing.T) {
	t.Parallel()
	srv, db := sequencesServer(t)
	bg := context.Background()
	acct, err := db.CreateAccount(bg, store.NewAccount{Name: "Imkerei Sommer", Email: "honig@imkerei-sommer.de", Password: "bienenstock-im-garten", Plan: "pro"})
	if err != nil {
		t.Fatal(err)
	}
	sys := store.Actor{Type: store.ActorSystem}
	name := "Willkommen"
	seq, err := db.CreateSequence(bg, acct.Account.ID, sys, store.SequenceInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	var days []int64
	for _, subject := range []string{"Erster Tag", "Zweiter Tag", "Dritter Tag"} {
		html := "<p>" + subject + "</p>"
		d, err := db.CreateSequenceDay(bg, acct.Account.ID, sys, seq.ID, store.DayInput{Content: store.NewsletterInput{Subject: &subject, HTML: &html}})
		if err != nil {
			t.Fatal(err)
		}
		days = append(days, d.ID)
	}
	order := `Array.from(document.querySelectorAll('[data-testid="sequence-day"]')).map(li => li.id).join(",")`
	want := func(ids ...int64) string {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = fmt.Sprintf("day-%d", id)
		}
		return strings.Join(s, ",")
	}

	b := newTab(t, 1280, 1000, 120*time.Second)
	b.signIn(srv.URL, "honig@imkerei-sommer.de", "bienenstock-im-garten")
	b.do("open the builder",
		chromedp.Navigate(fmt.Sprintf("%s/sequences/%d", srv.URL, seq.ID)),
		chromedp.WaitVisible(tid("sequence-timeline")),
		until(`document.querySelector('[data-testid="sequence-timeline"]').classList.contains("sortable")`),
	)
	if got := b.read("order before", chromedp.Evaluate[string](order)); got != want(days[0], days[1], days[2]) {
		t.Fatalf("order before: %s", got)
	}

	// Chromium hands a mouse drag to the test (Input.dragIntercepted) instead
	// of an operating-system drag; the test drops it onto the first day.
	dragged := make(chan *input.DragData, 1)
	if err := chromedp.Listen(b.ctx, func(ev any) {
		if e, ok := ev.(*input.EventDragIntercepted); ok {
			select {
			case dragged <- e.Data:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(b.ctx, input.SetInterceptDrags, input.SetInterceptDragsParams{Enabled: true}); err != nil {
		t.Fatal(err)
	}
	type point struct{ X, Y float64 }
	center := func(step, sel string) point {
		t.Helper()
		js := `(() => { const r = document.querySelector(` + quoteJS(sel) + `).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]float64](js))
		if err != nil || len(v) != 2 {
			t.Fatalf("%s: %v %v", step, v, err)
		}
		return point{v[0], v[1]}
	}
	from := center("handle of day 3", fmt.Sprintf(`#day-%d [data-testid=sequence-day-handle]`, days[2]))
	to := center("day 1", fmt.Sprintf(`#day-%d summary`, days[0]))
	held := func(p *input.DispatchMouseEventParams) { p.Button, p.Buttons = input.MouseButtonLeft, 1 }
	b.do("press and move",
		chromedp.MouseEvent(chromedp.MousePressed, from.X, from.Y, held, chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, from.X+4, from.Y+4, held),
		chromedp.MouseEvent(chromedp.MouseMoved, (from.X+to.X)/2, (from.Y+to.Y)/2, held),
		chromedp.MouseEvent(chromedp.MouseMoved, to.X, to.Y, held),
	)
	var data *input.DragData
	select {
	case data = <-dragged:
	case <-time.After(10 * time.Second):
		t.Fatal("Chromium started no drag from the handle")
	}
	for _, typ := range []input.DispatchDragEventType{input.DispatchDragEventTypeDragEnter, input.DispatchDragEventTypeDragOver, input.DispatchDragEventTypeDrop} {
		if _, err := chromedp.Call(b.ctx, input.DispatchDragEvent, input.DispatchDragEventParams{Type: typ, X: to.X, Y: to.Y, Data: data}); err != nil {
			t.Fatalf("drag %s: %v", typ, err)
		}
	}
	b.do("release", chromedp.MouseEvent(chromedp.MouseReleased, to.X, to.Y, held, chromedp.ClickCount(1)))

	// The drop reloads the page: read the order until the reloaded page
	// shows the new one (a read during the navigation fails).
	waitOrder := func(step, want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](order))
			if err == nil && got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: order %q (%v), want %q", step, got, err, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	moved := want(days[2], days[0], days[1])
	waitOrder("after the drop", moved)
	b.do("reload", chromedp.Reload(), chromedp.WaitVisible(tid("sequence-timeline")))
	if got := b.read("order after the reload", chromedp.Evaluate[string](order)); got != moved {
		t.Fatalf("order after the reload: %s, want %s", got, moved)
	}
	stored, err := db.SequenceDays(bg, acct.Account.ID, seq.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 3 || stored[0].ID != days[2] || stored[0].Position != 1 || stored[1].ID != days[0] || stored[2].ID != days[1] {
		t.Fatalf("stored days: %+v", stored)
	}
	positions := `Array.from(document.querySelectorAll('[data-testid="sequence-day"]')).map(li => li.dataset.position).join(",")`
	if got := b.read("positions", chromedp.Evaluate[string](positions)); got != "1,2,3" {
		t.Fatalf("positions: %s", got)
	}

	// The keyboard way stays: ↓ on the first day (opened) moves it back down.
	b.do("move down by button",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#day-%d summary`, days[2]))),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#day-%d [data-testid=sequence-day-down]`, days[2]))),
	)
	waitOrder("after ↓", want(days[0], days[2], days[1]))
}
