package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rundbrief/rundbrief/store"
)

// TestPortalSecurityEndToEnd checks in a real browser what a signed-in user
// must not be able to do: see another account's contacts and lists, even by
// typing their addresses, or be made to change data by another site's page
// (a form that posts to the portal on its own, as a CSRF attack would).
func TestPortalSecurityEndToEnd(t *testing.T) {
	t.Parallel()
	s := startServer(t, 1_000_000)
	bg := context.Background()
	sys := store.Actor{Type: store.ActorSystem}
	mine, err := s.db.CreateAccount(bg, store.NewAccount{Name: "Bäckerei Müller", Email: "inhaber@baeckerei-mueller.de", Password: "sauerteig-seit-1923"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.db.CreateAccount(bg, store.NewAccount{Name: "Konditorei Schulz", Email: "chefin@konditorei-schulz.de", Password: "sahnetorte-1987"})
	if err != nil {
		t.Fatal(err)
	}
	secretList := "Geheime Stammkunden"
	list, err := s.db.CreateList(bg, other.Account.ID, sys, store.ListInput{Name: &secretList})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := s.db.UpsertContact(bg, other.Account.ID, sys, store.ContactInput{Email: "geheim@konditorei-schulz.de", ListIDs: []int64{list.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.UpsertContact(bg, mine.Account.ID, sys, store.ContactInput{Email: "eigene@example.com"}); err != nil {
		t.Fatal(err)
	}

	b := newTab(t, 1360, 900, 90*time.Second)
	b.signIn(s.URL, "inhaber@baeckerei-mueller.de", "sauerteig-seit-1923")

	// The other account's contact and list appear nowhere, and their
	// addresses answer "not found".
	b.do("contacts", chromedp.Navigate(s.URL+"/contacts"), chromedp.WaitVisible(tid("contacts-table")))
	if body := b.read("contacts page", chromedp.Evaluate[string](`document.body.innerText`)); !strings.Contains(body, "eigene@example.com") || strings.Contains(body, "geheim@") {
		t.Fatalf("contacts page shows the wrong contacts:\n%s", body)
	}
	b.do("lists", chromedp.Navigate(s.URL+"/lists"), chromedp.WaitVisible(tid("sidebar")))
	if body := b.read("lists page", chromedp.Evaluate[string](`document.body.innerText`)); strings.Contains(body, secretList) {
		t.Fatalf("lists page shows another account's list:\n%s", body)
	}
	for _, path := range []string{
		fmt.Sprintf("/contacts/%d", theirs.Contact.ID),
		fmt.Sprintf("/contacts/%d/edit", theirs.Contact.ID),
		fmt.Sprintf("/lists/%d", list.ID),
	} {
		b.do("open "+path, chromedp.Navigate(s.URL+path), chromedp.WaitVisible(tid("error-title")))
		if got := b.read("title of "+path, chromedp.Text(tid("error-title"))); strings.TrimSpace(got) != "Nicht gefunden" {
			t.Errorf("%s: %q", path, got)
		}
		if body := b.read("body of "+path, chromedp.Evaluate[string](`document.body.innerText`)); strings.Contains(body, "geheim@") {
			t.Errorf("%s shows the other account's contact", path)
		}
	}

	// A page on another site posts a form to the portal as soon as it loads.
	// localhost and 127.0.0.1 are different sites to the browser.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Gewinnspiel</title>
<form id="f" method="post" action="%s/contacts/new"><input name="email" value="untergeschoben@example.com"></form>
<script>document.getElementById("f").submit()</script>`, s.URL)
	}))
	t.Cleanup(evil.Close)
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)
	b.do("cross-site form", chromedp.Navigate(evilURL), until(`location.hostname === "127.0.0.1"`), chromedp.WaitReady("body"))
	if got := b.read("refusal", chromedp.Evaluate[string](`document.querySelector('[data-testid="error-title"]')?.textContent ?? document.title`)); strings.TrimSpace(got) != "Anfrage abgelehnt" {
		t.Errorf("cross-site post answered with %q", got)
	}
	b.do("csrf screenshot", screenshot(t, b.dir, "portal-cross-site-refused"))
	if _, err := s.db.ContactByEmail(bg, mine.Account.ID, "untergeschoben@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the cross-site post created a contact (lookup: %v)", err)
	}
	// The same form from the portal's own page works: the refusal was about
	// the origin, not the form.
	b.do("same-site form",
		chromedp.Navigate(s.URL+"/contacts/new"),
		chromedp.WaitVisible(tid("contact-form")),
		chromedp.SendKeys(chromedp.CSS(`#field-email`), "selbst@example.com"),
		chromedp.Click(tid("contact-submit")),
		chromedp.WaitVisible(tid("contact-fields")),
	)
	if _, err := s.db.ContactByEmail(bg, mine.Account.ID, "selbst@example.com"); err != nil {
		t.Fatalf("same-site post: %v", err)
	}
}
