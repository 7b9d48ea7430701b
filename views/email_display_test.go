package views_test

import (
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// TestAddressesReadInUnicode: an address stored with its domain in ASCII
// (info@xn--mller-kva.de) reads as typed in the portal and on the public
// pages; the blocked list's remove button still posts the stored form.
func TestAddressesReadInUnicode(t *testing.T) {
	const stored, shown = "info@xn--mller-kva.de", "info@müller.de"
	c := store.Contact{ID: 7, Email: stored, Status: store.StatusSubscribed}

	row := renderRows(t, views.ContactRow(c))
	if got := text(tid(row, "contact-email")); got != shown {
		t.Errorf("contacts table: %q", got)
	}
	page := render(t, views.ContactPage(contactShell(), views.ContactDetail{Contact: c}))
	if got := text(page.Find("h1")); got != shown {
		t.Errorf("contact page heading: %q", got)
	}
	unsub := render(t, views.UnsubscribePage(views.UnsubscribeView{Outcome: views.UnsubscribeAsk, Email: stored, Action: "/u/x"}))
	if body := text(unsub.Find("body")); !strings.Contains(body, shown) || strings.Contains(body, "xn--") {
		t.Errorf("unsubscribe page: %q", body)
	}
	blocked := render(t, views.BlockedPage(shell("owner"), views.BlockedTable{Addresses: []store.BlockedAddress{{Email: stored, Source: store.UnsubManual}},
		Pager: views.Pager{Page: 1, PerPage: 50, Total: 1, URL: func(int) string { return "/blocked" }}},
		views.BlockedForm{}))
	if got := text(tid(blocked, "blocked-email")); got != shown {
		t.Errorf("blocked list: %q", got)
	}
	if v := blocked.Find(`input[type=hidden][name=email]`).AttrOr("value", ""); v != stored {
		t.Errorf("the remove button posts %q, want the stored form", v)
	}

	// The activity log names the object by the address, and a changed
	// address reads as the other texts do; the raw details stay as stored.
	id := int64(7)
	log := render(t, views.ActivitySection(views.ActivityList{Entries: []store.Activity{
		{ID: 1, ActorType: "system", Action: "address.blocked", ObjectType: "blocked_address", Details: []byte(`{"email": "` + stored + `"}`)},
		{ID: 2, ActorType: "system", Action: "contact.updated", ObjectType: "contact", ObjectID: &id,
			Details: []byte(`{"changes": {"email": {"from": "info@example.org", "to": "` + stored + `"}}}`)},
	}, Pager: views.Pager{Page: 1, PerPage: 25, Total: 2, URL: func(int) string { return "/logs/activity" }}}))
	if got := text(tid(log, "activity-object").First()); !strings.Contains(got, "„"+shown+"“") {
		t.Errorf("activity object: %q", got)
	}
	if got := text(tid(log, "activity-row").Eq(1)); !strings.Contains(got, "„"+shown+"“") {
		t.Errorf("activity change: %q", got)
	}
}
