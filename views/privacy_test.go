package views_test

import (
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// TestPrivacyPolicyLink: with the account's privacy policy address, the hosted
// sign-up page, the embed snippet and the booking page link it in a sentence
// that reads whole; without one they link nothing and keep their other notes.
func TestPrivacyPolicyLink(t *testing.T) {
	const policy = "https://kurs.example/datenschutz"
	const sentence = "Sie können sich jederzeit mit einem Klick wieder abmelden. Wie wir Ihre Angaben verarbeiten, steht in unserer Datenschutzerklärung."
	form := views.SignUpForm{Token: "tok123", Action: "/v1/subscribe/tok123"}
	checkLink := func(t *testing.T, doc *goquery.Document) {
		t.Helper()
		a := tid(doc, "privacy-link")
		if a.Length() != 1 || a.AttrOr("href", "") != policy || text(a) != "Datenschutzerklärung" {
			t.Fatalf("privacy link %d %q %q", a.Length(), a.AttrOr("href", ""), text(a))
		}
		// Framed on another website, the form must stay as typed.
		if a.AttrOr("target", "") != "_blank" || a.AttrOr("rel", "") != "noopener noreferrer" {
			t.Errorf("the link must open in a new tab without the opener: %q %q", a.AttrOr("target", ""), a.AttrOr("rel", ""))
		}
	}

	t.Run("hosted form", func(t *testing.T) {
		form := form
		form.PrivacyURL = policy
		doc := render(t, views.SubscribePage(views.SubscribeView{AccountName: "Kursschmiede", Form: form}))
		checkLink(t, doc)
		if got := text(tid(doc, "privacy-note")); got != sentence {
			t.Errorf("note %q", got)
		}
		doc = render(t, views.SubscribePage(views.SubscribeView{AccountName: "Kursschmiede", Form: views.SignUpForm{Token: "tok123"}}))
		if tid(doc, "privacy-link").Length() != 0 || text(tid(doc, "privacy-note")) != "Sie können sich jederzeit mit einem Klick wieder abmelden." {
			t.Errorf("without an address: %q", text(tid(doc, "privacy-note")))
		}
	})

	t.Run("embed snippet", func(t *testing.T) {
		sf := views.NewSignUpEmbed("https://rundbrief.example", store.Form{Token: "tok123"}, policy)
		if sf.PrivacyURL != policy {
			t.Fatalf("embed form %+v", sf)
		}
		doc := render(t, views.SignUpEmbed(sf))
		checkLink(t, doc)
		// Inside the form, below the button, so that it travels with the snippet.
		if doc.Find("form.rundbrief-signup p:has(button) ~ p [data-testid=privacy-link]").Length() != 1 {
			t.Error("the link is not in the form below its button")
		}
		if got := text(doc.Find("form.rundbrief-signup small")); got != sentence {
			t.Errorf("note %q", got)
		}
		doc = render(t, views.SignUpEmbed(views.NewSignUpEmbed("https://rundbrief.example", store.Form{Token: "tok123"}, "")))
		if tid(doc, "privacy-link").Length() != 0 {
			t.Error("a link without an address")
		}
	})

	t.Run("booking page", func(t *testing.T) {
		v := views.BookingView{AccountName: "Kursschmiede", Title: "Termin", DurationMinutes: 30, Action: "/book/x",
			Days:  []views.BookingDay{{Date: "2026-12-02", Label: "2. Dez.", Count: 1, Selected: true, URL: "/book/x?tag=2026-12-02"}},
			Slots: []views.BookingSlot{{Value: "2026-12-02T09:00:00+01:00", Label: "09:00"}}, PrivacyText: store.DefaultPrivacyText,
			PrivacyURL: policy, Values: map[string]string{}, Errors: map[string]string{}}
		doc := render(t, views.BookingPage(v))
		checkLink(t, doc)
		if doc.Find(`[data-testid="field-consent"] [data-testid="privacy-note"]`).Length() != 1 {
			t.Error("the link is not beside the consent")
		}
		v.PrivacyURL = ""
		if doc := render(t, views.BookingPage(v)); tid(doc, "privacy-note").Length() != 0 {
			t.Error("a note without an address")
		}
	})

	t.Run("embed page says what is missing", func(t *testing.T) {
		e := views.FormEmbed{Form: store.Form{ID: 5, Name: "Newsletter", Token: "tok123"}, Snippet: "<form></form>",
			HostedURL: "https://rundbrief.example/subscribe/tok123", PreviewURL: "/subscribe/tok123", NoPrivacyURL: true, CanEditSender: true}
		doc := render(t, views.FormEmbedPage(shell("owner"), e))
		note := tid(doc, "no-privacy-url")
		if note.Length() != 1 || note.Find(`a[href="/settings/sender#field-privacy_url"]`).Length() != 1 {
			t.Fatalf("owner: notice %d, link %d", note.Length(), note.Find("a").Length())
		}
		e.CanEditSender = false
		note = tid(render(t, views.FormEmbedPage(shell("member"), e)), "no-privacy-url")
		if note.Length() != 1 || note.Find("a").Length() != 0 {
			t.Errorf("member: notice %d, link %d (members cannot change the sender settings)", note.Length(), note.Find("a").Length())
		}
		e.NoPrivacyURL = false
		if tid(render(t, views.FormEmbedPage(shell("owner"), e)), "no-privacy-url").Length() != 0 {
			t.Error("a notice though the address is set")
		}
	})

	t.Run("sender settings", func(t *testing.T) {
		typed := "kurs.example/datenschutz"
		doc := render(t, views.SenderSettingsPage(shell("owner"), views.SenderForm{In: store.AccountSettingsInput{PrivacyURL: &typed},
			Errors: map[string]string{"privacy_url": "Bitte die vollständige Adresse angeben."}}))
		in := doc.Find(`input#field-privacy_url`)
		if in.AttrOr("value", "") != typed || in.AttrOr("type", "") != "url" {
			t.Errorf("input %q %q", in.AttrOr("value", ""), in.AttrOr("type", ""))
		}
		if text(tid(doc, "error-privacy_url")) == "" {
			t.Error("the error is not next to the field")
		}
	})
}
