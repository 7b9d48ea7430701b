package public_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/store"
)

// signUp signs email up through the form over the JSON API and returns the status.
func (s *site) signUp(t *testing.T, f store.Form, email string) string {
	t.Helper()
	anon := s.apiClient(t, "")
	var ch struct {
		Stamp string `json:"stamp"`
	}
	anon.Request(http.MethodGet, "/v1/subscribe/"+f.Token+"/challenge", nil).Data(t, &ch)
	s.clock.Add(5 * time.Second)
	r := anon.Request(http.MethodPost, "/v1/subscribe/"+f.Token, map[string]any{"email": email, "_rb_ts": ch.Stamp})
	if r.Status != http.StatusCreated || r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("sign-up %s: %d %s", email, r.Status, r.Body)
	}
	var out struct {
		Status string `json:"status"`
	}
	r.Data(t, &out)
	return out.Status
}

// post sends the form of a public page (no fields) and returns the page it answers with.
func (s *site) post(t *testing.T, path string) page {
	t.Helper()
	res, err := s.http.Post(s.url+path, "application/x-www-form-urlencoded", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	doc, err := goquery.NewDocumentFromReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{status: res.StatusCode, header: res.Header, doc: doc}
}

func must(s string, err error) string {
	if err != nil {
		return err.Error()
	}
	return s
}

func TestConfirmPage(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	f := s.form(t, store.FormInput{})
	if st := s.signUp(t, f, "jana@example.com"); st != "pending" {
		t.Fatalf("status %s, want pending", st)
	}
	link := s.confirmPath(t, "jana@example.com")
	if !strings.HasPrefix(link, "/confirm/") {
		t.Fatalf("link %q", link)
	}

	// The link only asks (issue 27, item 11): mail providers' link scanners
	// fetch it, so however often it is fetched, nothing changes.
	for range 2 {
		p := s.get(t, link)
		form := p.doc.Find(tid("confirm-form"))
		if p.status != 200 || attr(p.doc.Find(tid("confirm-page")), "data-outcome") != "ask" ||
			!strings.Contains(p.doc.Find(tid("confirm-message")).Text(), "jana@example.com") {
			t.Fatalf("link: %d %q", p.status, p.doc.Find(tid("confirm-message")).Text())
		}
		// A plain form: it works without JavaScript.
		if attr(form, "method") != "post" || attr(form, "action") != link || form.Find(tid("confirm-button")).Length() != 1 ||
			form.Is("[hx-post], [hx-boost]") {
			t.Errorf("confirmation form: %s", must(form.Html()))
		}
		if p.header.Get("X-Frame-Options") != "DENY" || p.header.Get("Cache-Control") != "no-store" {
			t.Errorf("headers %v", p.header)
		}
	}
	if c, _ := s.db.ContactByEmail(context.Background(), s.acct, "jana@example.com"); c.Status != store.StatusPending || c.DOIConfirmedAt != nil {
		t.Fatalf("fetching the link confirmed: %s", c.Status)
	}

	// The button confirms.
	p := s.post(t, link)
	if p.status != 200 || attr(p.doc.Find(tid("confirm-page")), "data-outcome") != "confirmed" ||
		!strings.Contains(p.doc.Find(tid("confirm-message")).Text(), "jana@example.com") {
		t.Fatalf("confirm: %d %q", p.status, p.doc.Find(tid("confirm-message")).Text())
	}
	if p.header.Get("X-Frame-Options") != "DENY" || p.header.Get("Cache-Control") != "no-store" {
		t.Errorf("headers %v", p.header)
	}
	c, err := s.db.ContactByEmail(context.Background(), s.acct, "jana@example.com")
	if err != nil || c.Status != store.StatusSubscribed || c.DOIConfirmedAt == nil {
		t.Errorf("contact after confirming: %+v, %v", c, err)
	}

	// Opening the link again, or a second click, says it was done already.
	if p := s.get(t, link); p.status != 200 || attr(p.doc.Find(tid("confirm-page")), "data-outcome") != "already" ||
		p.doc.Find(tid("confirm-form")).Length() != 0 {
		t.Errorf("link after confirming: %d %s", p.status, attr(p.doc.Find(tid("confirm-page")), "data-outcome"))
	}
	if p := s.post(t, link); p.status != 200 || attr(p.doc.Find(tid("confirm-page")), "data-outcome") != "already" {
		t.Errorf("second click: %d %s", p.status, attr(p.doc.Find(tid("confirm-page")), "data-outcome"))
	}

	// Unknown and malformed links: 404 with a helpful message.
	for _, path := range []string{"/confirm/" + strings.Repeat("Q", 32), "/confirm/kurz"} {
		for _, p := range []page{s.get(t, path), s.post(t, path)} {
			if p.status != http.StatusNotFound || attr(p.doc.Find(tid("confirm-page")), "data-outcome") != "invalid" ||
				!strings.Contains(p.doc.Find(tid("confirm-message")).Text(), "vollständig") {
				t.Errorf("%s: %d %q", path, p.status, p.doc.Find(tid("confirm-message")).Text())
			}
		}
	}

	// An expired link asks to sign up again.
	s.signUp(t, f, "spaet@example.com")
	late := s.confirmPath(t, "spaet@example.com")
	if _, err := s.db.ExecContext(context.Background(), `UPDATE doi_tokens SET expires_at = now() - interval '1 minute' WHERE account_id = $1 AND used_at IS NULL`, s.acct); err != nil {
		t.Fatal(err)
	}
	for _, p := range []page{s.get(t, late), s.post(t, late)} {
		if p.status != http.StatusGone || attr(p.doc.Find(tid("confirm-page")), "data-outcome") != "expired" ||
			!strings.Contains(p.doc.Find(tid("confirm-message")).Text(), "noch einmal an") {
			t.Errorf("expired: %d %q", p.status, p.doc.Find(tid("confirm-message")).Text())
		}
	}
	if c, _ := s.db.ContactByEmail(context.Background(), s.acct, "spaet@example.com"); c.Status != store.StatusPending {
		t.Errorf("expired link changed the contact: %s", c.Status)
	}
}

// TestBlockedAddressConfirmsAgain is issue 3's rule: an address on the blocked
// list that signs up again through a double opt-in form gets a confirmation
// mail, and only confirming it lifts the block.
func TestBlockedAddressConfirmsAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSite(t)
	c, err := s.db.UpsertContact(ctx, s.acct, store.Actor{Type: store.ActorKey, ID: 1}, store.ContactInput{Email: "zurueck@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.UnsubscribeContact(ctx, s.acct, store.Actor{Type: store.ActorKey, ID: 1}, c.Contact.ID, store.Unsubscribe{Source: store.UnsubLink}); err != nil {
		t.Fatal(err)
	}
	blocked := `SELECT count(*) FROM blocked_addresses WHERE account_id = $1 AND email = 'zurueck@example.com'`

	f := s.form(t, store.FormInput{})
	if st := s.signUp(t, f, "zurueck@example.com"); st != "pending" {
		t.Errorf("status %s, want pending", st)
	}
	if s.count(t, blocked, s.acct) != 1 {
		t.Fatal("the block was lifted before confirming")
	}
	if p := s.post(t, s.confirmPath(t, "zurueck@example.com")); attr(p.doc.Find(tid("confirm-page")), "data-outcome") != "confirmed" {
		t.Fatalf("confirm: %d", p.status)
	}
	if s.count(t, blocked, s.acct) != 0 {
		t.Error("still blocked after confirming")
	}
	if got, _ := s.db.ContactByEmail(ctx, s.acct, "zurueck@example.com"); got.Status != store.StatusSubscribed {
		t.Errorf("status after confirming: %s", got.Status)
	}
}
