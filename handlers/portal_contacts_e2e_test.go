package handlers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/imports"
)

// TestPortalContactsEndToEnd drives the contact pages in a real browser: sign in,
// create a contact and tag it, import a CSV file (upload, column mapping, the
// progress bar polled by htmx until the summary replaces it), and find the
// imported contacts in the table. Screenshots of the table, a contact and the
// import summary are saved as artifacts.
func TestPortalContactsEndToEnd(t *testing.T) {
	t.Parallel()
	s := startServer(t, 1_000_000)
	b := newTab(t, 1360, 900, 120*time.Second)
	dir, do := b.dir, b.do
	bg := context.Background()
	acct, err := s.db.CreateAccount(bg, store.NewAccount{Name: "Bäckerei Müller", Email: "inhaber@baeckerei-mueller.de", Password: "sauerteig-seit-1923"})
	if err != nil {
		t.Fatal(err)
	}
	listName := "Stammkunden"
	color := "#c2410c"
	if _, err := s.db.CreateList(bg, acct.Account.ID, store.Actor{Type: store.ActorSystem}, store.ListInput{Name: &listName, Color: &color}); err != nil {
		t.Fatal(err)
	}

	// The CSV file the user picks: semicolons, a BOM, umlauts, one bad row.
	var csv strings.Builder
	csv.WriteString("\xef\xbb\xbfE-Mail;Vorname;Nachname;Ort;Kundennummer\n")
	for i := range 1200 {
		fmt.Fprintf(&csv, "kunde%04d@example.com;Jürgen;Größe %d;Köln;K-%d\n", i, i, i)
	}
	csv.WriteString("keine-adresse;Fehler;Zeile;Bonn;K-X\n")
	file := filepath.Join(t.TempDir(), "kunden-2026.csv")
	if err := os.WriteFile(file, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	read := func(step string, a chromedp.Action[string]) string { return strings.TrimSpace(b.read(step, a)) }

	// js runs a script (awaiting a promise it returns) as a step.
	js := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](expr, chromedp.EvalAwaitPromise)(ctx, tg)
			return err
		})
	}

	b.signIn(s.URL, "inhaber@baeckerei-mueller.de", "sauerteig-seit-1923")

	do("create a contact",
		chromedp.Click(tid("nav-contacts")),
		chromedp.WaitVisible(tid("contacts-empty")),
		chromedp.Click(tid("new-contact-link")),
		chromedp.WaitVisible(tid("contact-form")),
		// The address field has the focus: type without clicking.
		chromedp.SendKeys(chromedp.CSS(`#field-email`), "keine adresse"),
		chromedp.Click(tid("contact-submit")),
		chromedp.WaitVisible(tid("error-email")),
	)
	if got := read("focus", chromedp.Evaluate[string](`document.activeElement.id`)); got != "field-email" {
		t.Errorf("after a field error the focus is on %q", got)
	}
	do("correct and save",
		chromedp.SetValue(chromedp.CSS(`#field-email`), "anna.schmidt@example.com"),
		chromedp.SendKeys(chromedp.CSS(`#field-first_name`), "Anna"),
		chromedp.SendKeys(chromedp.CSS(`#field-last_name`), "Schmidt"),
		chromedp.SendKeys(chromedp.CSS(`#field-city`), "Düsseldorf"),
		chromedp.Click(chromedp.CSS(`input[name="list_ids"]`)),
		chromedp.SendKeys(chromedp.CSS(`#cf-key-0`), "kundennummer"),
		chromedp.SendKeys(chromedp.CSS(`#cf-val-0`), "K-9001"),
		chromedp.Click(tid("contact-submit")),
		chromedp.WaitVisible(tid("contact-fields")),
	)
	if got := read("custom field", chromedp.Text(tid("custom-kundennummer"))); got != "K-9001" {
		t.Errorf("custom field shows %q", got)
	}
	// Tags are added in place (htmx): the page is not reloaded.
	do("tag",
		js(`window.__same = true`),
		chromedp.SendKeys(chromedp.CSS(`#field-tags`), "vip, messe"),
		chromedp.Click(tid("tag-add")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="tag"]:nth-child(2)`)),
	)
	if same := read("same page", chromedp.Evaluate[string](`String(window.__same === true)`)); same != "true" {
		t.Error("adding a tag reloaded the page instead of swapping the section")
	}
	if got := read("tags", chromedp.Text(tid("contact-tags"))); !strings.Contains(got, "vip") || !strings.Contains(got, "messe") {
		t.Errorf("tags section %q", got)
	}
	if got := read("timeline", chromedp.Text(tid("contact-activity"))); !strings.Contains(got, "Geändert: Schlagwörter") {
		t.Errorf("timeline after tagging %q", got)
	}
	do("detail screenshot", screenshot(t, dir, "portal-contact-detail"))

	// Import: upload, mapping, progress, summary.
	do("upload",
		chromedp.Click(tid("nav-contacts")),
		chromedp.WaitVisible(tid("contacts-table")),
		chromedp.Click(tid("import-link")),
		chromedp.WaitVisible(tid("import-form")),
		chromedp.SetUploadFiles(chromedp.CSS(`#field-file`), []string{file}),
		chromedp.Click(tid("import-upload")),
		chromedp.WaitVisible(tid("mapping-form")),
	)
	if got := read("guessed email column", chromedp.Value(chromedp.CSS(`#map-0`))); got != "email" {
		t.Errorf("first column mapped to %q", got)
	}
	if got := read("guessed custom key", chromedp.Value(chromedp.CSS(`#custom-4`))); got != "kundennummer" {
		t.Errorf("custom key %q", got)
	}
	do("map and start",
		screenshot(t, dir, "portal-import-mapping"),
		chromedp.Click(chromedp.CSS(`input[name="list_ids"]`)),
		chromedp.SendKeys(chromedp.CSS(`#field-tags`), "import-2026"),
		chromedp.Click(tid("import-start")),
		chromedp.WaitVisible(tid("import-bar")),
	)
	// The worker starts only now, so the page must have shown the queued job
	// and must learn of its end by polling.
	workCtx, stopWork := context.WithCancel(bg)
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = imports.NewWorker(s.db, imports.WorkerOptions{Poll: 100 * time.Millisecond, Batch: 100}).Run(workCtx)
	})
	defer func() { stopWork(); wg.Wait() }()
	do("progress to summary",
		chromedp.WaitVisible(tid("import-summary")),
		screenshot(t, dir, "portal-import-summary"),
	)
	for id, want := range map[string]string{"import-created": "1.200", "import-updated": "0", "import-failed": "1"} {
		if got := read(id, chromedp.Text(tid(id))); got != want {
			t.Errorf("%s shows %q, want %s", id, got, want)
		}
	}
	if got := read("row error", chromedp.Text(tid("import-error"))); !strings.Contains(got, "keine-adresse") {
		t.Errorf("row error %q", got)
	}

	// The imported contacts are in the table; the search narrows it in place.
	do("see the contacts",
		chromedp.Click(tid("import-to-contacts")),
		chromedp.WaitVisible(tid("contacts-table")),
		chromedp.SendKeys(chromedp.CSS(`#field-q`), "kunde0042"),
		chromedp.Click(tid("contact-filter-submit")),
		chromedp.WaitVisible(tid("contact-filter-reset")),
	)
	if got := read("search result", chromedp.Text(tid("contacts-table"))); !strings.Contains(got, "kunde0042@example.com") ||
		!strings.Contains(got, "Jürgen Größe 42") || !strings.Contains(got, listName) || !strings.Contains(got, "import-2026") {
		t.Errorf("search result %q", got)
	}
	if loc := read("location", chromedp.Location()); !strings.Contains(loc, "q=kunde0042") {
		t.Errorf("the search is not in the address bar: %s", loc)
	}
	do("page through",
		chromedp.Click(tid("contact-filter-reset")),
		chromedp.WaitVisible(tid("page-next")),
		chromedp.Click(tid("page-next")),
		js(`new Promise(r => { const t = setInterval(() => { if (location.search.includes("page=2")) { clearInterval(t); r(true) } }, 50) })`),
		chromedp.WaitVisible(tid("page-prev")),
	)
	if got := read("range", chromedp.Text(tid("pagination-range"))); !strings.HasPrefix(got, "26–50 von 1.201") {
		t.Errorf("page 2 range %q", got)
	}
	// A broad filter renders before it is counted; the exact count follows.
	do("exact count",
		chromedp.Navigate(s.URL+"/contacts?tag=import-2026"),
		chromedp.WaitVisible(tid("contacts-table")),
		js(`new Promise(r => { const t = setInterval(() => { const e = document.querySelector('[data-testid="pagination-range"]'); if (e && e.textContent.includes("von 1.200 Einträgen")) { clearInterval(t); r(true) } }, 50) })`),
	)
	do("table screenshot",
		chromedp.Navigate(s.URL+"/contacts"),
		chromedp.WaitVisible(tid("contacts-table")),
		screenshot(t, dir, "portal-contacts"),
	)
	// A list's name is one chip: the narrow column once broke it mid-word.
	if got := read("list names broken", evalString(brokenWords(`[data-testid="contacts-table"] .chip`))); got != "[]" {
		t.Errorf("list names broken across lines: %s", got)
	}
	c, err := s.db.ContactByEmail(bg, acct.Account.ID, "kunde0007@example.com")
	if err != nil || c.CustomFields["kundennummer"] != "K-7" || c.City != "Köln" || len(c.Lists) != 1 {
		t.Errorf("imported contact %+v %v", c, err)
	}
}

// TestPortalListsEndToEnd creates a list with a colour and double opt-in in the
// browser, adds members by address and pages nothing but what the list holds.
func TestPortalListsEndToEnd(t *testing.T) {
	t.Parallel()
	s := startServer(t, 1_000_000)
	b := newTab(t, 1360, 900, 90*time.Second)
	dir, do := b.dir, b.do
	bg := context.Background()
	acct, err := s.db.CreateAccount(bg, store.NewAccount{Name: "Bäckerei Müller", Email: "inhaber@baeckerei-mueller.de", Password: "sauerteig-seit-1923"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.UpsertContact(bg, acct.Account.ID, store.Actor{Type: store.ActorSystem}, store.ContactInput{Email: "bekannt@example.com"}); err != nil {
		t.Fatal(err)
	}
	read := func(step string, a chromedp.Action[string]) string { return strings.TrimSpace(b.read(step, a)) }
	b.signIn(s.URL, "inhaber@baeckerei-mueller.de", "sauerteig-seit-1923")
	do("create a list",
		chromedp.Click(tid("nav-lists")),
		chromedp.WaitVisible(tid("lists-empty")),
		chromedp.Click(tid("new-list-link")),
		chromedp.WaitVisible(tid("list-form")),
		chromedp.SendKeys(chromedp.CSS(`#field-name`), "Brotabo"),
		// The colour picker is the browser's own dialog: set its value as it would.
		chromedp.SetValue(chromedp.CSS(`#field-color`), "#b45309"),
		chromedp.Click(chromedp.CSS(`input[name="double_opt_in"]`)),
		chromedp.Click(tid("list-submit")),
		chromedp.WaitVisible(tid("lists-table")),
		screenshot(t, dir, "portal-lists"),
	)
	if got := read("doi", chromedp.Text(tid("list-doi"))); got != "Mit Bestätigung" {
		t.Errorf("double opt-in shows %q", got)
	}
	if got := read("swatch", chromedp.Evaluate[string](`getComputedStyle(document.querySelector('[data-testid="list-row"] .swatch')).backgroundColor`)); got != "rgb(180, 83, 9)" {
		t.Errorf("swatch colour %q", got)
	}
	do("add members",
		chromedp.Click(tid("list-name")),
		chromedp.WaitVisible(tid("members-empty")),
		chromedp.SendKeys(chromedp.CSS(`#field-emails`), "bekannt@example.com\nneu@example.com"),
		chromedp.Click(tid("members-submit")),
		chromedp.WaitVisible(tid("members-table")),
		screenshot(t, dir, "portal-list-members"),
	)
	if got := read("members", chromedp.Text(tid("members-table"))); !strings.Contains(got, "bekannt@example.com") ||
		!strings.Contains(got, "neu@example.com") || !strings.Contains(got, "Unbestätigt") {
		t.Errorf("members %q", got)
	}
	if got := read("flash", chromedp.Text(tid("flash"))); !strings.Contains(got, "1 eingetragen, 1 neu angelegt") {
		t.Errorf("flash %q", got)
	}
}
