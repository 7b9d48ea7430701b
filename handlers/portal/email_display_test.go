package portal_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestUnicodeDomainInThePortal: a contact signed up as info@müller.de is
// shown so, found by that domain, and saving its edit form as shown keeps the
// one contact with its stored address.
func TestUnicodeDomainInThePortal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "business")
	res, err := s.db.UpsertContact(ctx, acct.ID, store.Actor{Type: store.ActorSystem}, store.ContactInput{Email: "info@müller.de"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Contact.ID
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	list := c.get("/contacts?q=" + url.QueryEscape("müller.de"))
	if got := text(list.find("contact-email")); got != "info@müller.de" {
		t.Errorf("search by the Unicode domain: %q", got)
	}
	edit := c.get(fmt.Sprintf("/contacts/%d/edit", id))
	shown := edit.Doc.Find("#field-email").AttrOr("value", "")
	if shown != "info@müller.de" {
		t.Fatalf("edit form shows %q", shown)
	}
	wantRedirect(t, c.post(fmt.Sprintf("/contacts/%d/edit", id), url.Values{"email": {shown}, "first_name": {"Hans"}}),
		fmt.Sprintf("/contacts/%d", id))
	got, err := s.db.Contact(ctx, acct.ID, id)
	if err != nil || got.Email != "info@xn--mller-kva.de" || got.FirstName != "Hans" {
		t.Errorf("after saving: %+v %v", got, err)
	}
	if u, err := s.db.Usage(ctx, acct.ID, time.Now()); err != nil || u.Contacts != 1 {
		t.Errorf("%d contacts, want 1 (%v)", u.Contacts, err)
	}
}
