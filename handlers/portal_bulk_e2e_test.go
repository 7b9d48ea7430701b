package handlers_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/bulk"
)

// TestPortalBulkTagEndToEnd tags 5,000 contacts by filter in a real browser:
// the filtered table, the bulk form on "alle Treffer", the progress page polled
// by htmx until the summary replaces it; then the filter of the new tag is
// saved as a segment and listed on the segments page.
func TestPortalBulkTagEndToEnd(t *testing.T) {
	t.Parallel()
	s := startServer(t, 1_000_000)
	b := newTab(t, 1360, 900, 180*time.Second)
	dir, do := b.dir, b.do
	bg := context.Background()
	acct, err := s.db.CreateAccount(bg, store.NewAccount{Name: "Gärtnerei Grün", Email: "chefin@gaertnerei.test", Password: "tulpen-und-rosen-2026"})
	if err != nil {
		t.Fatal(err)
	}
	actor := store.Actor{Type: store.ActorSystem}
	for batch := range 5 {
		in := store.BulkContacts{Tags: []string{"kunde"}}
		for i := range 1000 {
			in.Contacts = append(in.Contacts, store.ContactInput{Email: fmt.Sprintf("k%d-%04d@example.com", batch, i)})
		}
		if _, err := s.db.BulkUpsertContacts(bg, acct.Account.ID, actor, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.UpsertContact(bg, acct.Account.ID, actor, store.ContactInput{Email: "lieferant@example.com"}); err != nil {
		t.Fatal(err)
	}
	read := func(step string, a chromedp.Action[string]) string { return strings.TrimSpace(b.read(step, a)) }
	b.signIn(s.URL, "chefin@gaertnerei.test", "tulpen-und-rosen-2026")

	do("filter and choose the bulk action",
		chromedp.Navigate(s.URL+"/contacts?tag=kunde"),
		chromedp.WaitVisible(tid("bulk-form")),
		chromedp.SetValue(chromedp.CSS(`#field-bulk-action`), "add_tag"),
		chromedp.SendKeys(chromedp.CSS(`#field-bulk-tag`), "frühling"),
		chromedp.Click(tid("bulk-all")),
		screenshot(t, dir, "portal-bulk-form"),
	)
	if got := read("all matches label", chromedp.Text(chromedp.CSS(`label.checkbox`))); !strings.Contains(got, "≥ 1.000 Treffer") {
		t.Errorf("the all-matches choice reads %q", got)
	}
	do("start", chromedp.Click(tid("bulk-start")), chromedp.WaitVisible(tid("bulk-progress")))
	// The worker starts only now, so the page is seen waiting first.
	workCtx, stopWork := context.WithCancel(bg)
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = bulk.NewWorker(s.db, bulk.WorkerOptions{Poll: 100 * time.Millisecond, Chunk: 500}).Run(workCtx)
	})
	defer func() { stopWork(); wg.Wait() }()
	do("progress to summary", chromedp.WaitVisible(tid("bulk-summary")), screenshot(t, dir, "portal-bulk-summary"))
	if got := read("summary", chromedp.Text(tid("bulk-done"))); got != "5.000 Kontakte bearbeitet, 5.000 davon geändert." {
		t.Errorf("summary %q", got)
	}
	var n int
	if err := s.db.GetContext(bg, &n, `SELECT count(*) FROM contacts WHERE account_id = $1 AND tags @> '{frühling}'`, acct.Account.ID); err != nil || n != 5000 {
		t.Fatalf("tagged %d, %v", n, err)
	}

	do("save the new tag's filter as a segment",
		chromedp.Navigate(s.URL+"/contacts?tag=fr%C3%BChling"),
		chromedp.WaitVisible(tid("save-segment-form")),
		chromedp.SendKeys(chromedp.CSS(`#field-segment-name`), "Frühlingsaktion"),
		chromedp.Click(tid("save-segment")),
		chromedp.WaitVisible(tid("segments-table")),
		screenshot(t, dir, "portal-segments"),
	)
	if got := read("segment", chromedp.Text(tid("segment-name"))); got != "Frühlingsaktion" {
		t.Errorf("segment %q", got)
	}
	do("open its contacts", chromedp.Click(tid("segment-contacts")), chromedp.WaitVisible(tid("active-segment")))
}
