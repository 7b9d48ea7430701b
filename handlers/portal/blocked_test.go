package portal_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestBlockedAddresses: the blocked-address list is searchable, takes
// addresses typed or uploaded (refusing invalid ones with the field's
// message), unsubscribes their contacts, and lets an address go again; another
// account sees none of it.
func TestBlockedAddresses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	mkContact(t, s.db, acct.ID, store.ContactInput{Email: "kunde@example.com"})

	r := c.get("/blocked")
	wantStatus(t, r, http.StatusOK)
	if r.find("blocked-empty").Length() != 1 {
		t.Fatal("an empty list has no empty state")
	}

	// An invalid address: nothing is blocked, the form keeps what was typed.
	r = c.post("/blocked", url.Values{"emails": {"kunde@example.com\nkein-at-zeichen"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if msg := text(r.find("field-emails")); !strings.Contains(msg, "kein-at-zeichen") {
		t.Errorf("error names not the bad address: %q", msg)
	}
	if got := r.find("field-emails").Find("textarea").Text(); !strings.Contains(got, "kunde@example.com") {
		t.Errorf("the form lost the input: %q", got)
	}
	if blocked, _ := s.db.IsBlocked(ctx, acct.ID, "kunde@example.com"); blocked {
		t.Fatal("blocked despite the invalid address")
	}

	wantRedirect(t, c.post("/blocked", url.Values{"emails": {"kunde@example.com, spam@example.org"}}), "/blocked")
	r = c.get("/blocked")
	if got := text(r.find("flash")); !strings.Contains(got, "2 Adressen") {
		t.Errorf("flash %q", got)
	}
	k, err := s.db.ContactByEmail(ctx, acct.ID, "kunde@example.com")
	if err != nil || k.Status != store.StatusUnsubscribed {
		t.Errorf("the contact of a blocked address: %v %v", k.Status, err)
	}

	// A CSV upload: every cell with an address.
	wantRedirect(t, c.upload("/blocked", "sperren.csv", []byte("email;name\nalt@example.net;Alt\n\"neu@example.net\";Neu\n")), "/blocked")
	emails := func(r *response) []string {
		return r.find("blocked-email").Map(func(_ int, s *goquery.Selection) string { return s.Text() })
	}
	if got := emails(c.get("/blocked")); len(got) != 4 {
		t.Errorf("after typing two and uploading two: %v", got)
	}
	if got := emails(c.get("/blocked?q=example.net")); len(got) != 2 || !strings.HasSuffix(got[0], "example.net") {
		t.Errorf("search example.net: %v", got)
	}

	// Another account sees nothing and cannot remove anything.
	other := newAccount(t, s.db, "")
	oc := newClient(t, s)
	oc.signIn(other.Email, other.Password)
	if got := emails(oc.get("/blocked")); len(got) != 0 {
		t.Errorf("another account sees %v", got)
	}
	wantStatus(t, oc.post("/blocked/remove", url.Values{"email": {"spam@example.org"}}), http.StatusNotFound)

	wantRedirect(t, c.post("/blocked/remove", url.Values{"email": {"spam@example.org"}}), "/blocked")
	r = c.get("/blocked")
	if blocked, _ := s.db.IsBlocked(ctx, acct.ID, "spam@example.org"); blocked {
		t.Error("still blocked after removing")
	}
	if got := emails(r); len(got) != 3 {
		t.Errorf("after removing one: %v", got)
	}
}
