package public_test

import (
	"context"
	"testing"

	"github.com/rundbrief/rundbrief/store"
)

// TestPrivacyPolicyOnPublicPages: once the account gives the address of its
// privacy policy, the hosted sign-up form and the booking page link it (read
// with the form and the page, by their token); before, they link nothing.
func TestPrivacyPolicyOnPublicPages(t *testing.T) {
	t.Parallel()
	s, set, _ := bookingSite(t)
	f := s.form(t, store.FormInput{})
	pages := map[string]string{"form": "/subscribe/" + f.Token, "booking": store.BookingPathPrefix + set.Token}
	for name, path := range pages {
		if p := s.get(t, path); p.status != 200 || p.doc.Find(tid("privacy-link")).Length() != 0 {
			t.Errorf("%s without an address: status %d, %d links", name, p.status, p.doc.Find(tid("privacy-link")).Length())
		}
	}
	const policy = "https://baeckerei.example/datenschutz"
	if _, err := s.db.PutAccountSettings(context.Background(), s.acct, store.Actor{Type: store.ActorSystem},
		store.AccountSettingsInput{Company: "Bäckerei Sonnenschein", PrivacyURL: ptr(policy)}); err != nil {
		t.Fatal(err)
	}
	for name, path := range pages {
		p := s.get(t, path)
		if a := p.doc.Find(tid("privacy-link")); a.Length() != 1 || attr(a, "href") != policy {
			t.Errorf("%s: %d links, href %q", name, a.Length(), attr(a, "href"))
		}
	}
}
