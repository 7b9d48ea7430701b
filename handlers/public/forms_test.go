package public_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

func TestHostedFormPage(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	f := s.form(t, store.FormInput{Fields: &[]string{"first_name", "city"}})
	p := s.get(t, "/subscribe/"+f.Token)
	if p.status != 200 || p.header.Get("Cache-Control") != "no-store" || p.header.Get("X-Frame-Options") != "" {
		t.Fatalf("status %d, headers %v (the hosted form may be framed, never cached)", p.status, p.header)
	}
	if got := p.doc.Find(tid("account-name")).Text(); got != "Bäckerei Sonnenschein" {
		t.Errorf("account name %q", got)
	}
	form := p.doc.Find(tid("subscribe-form"))
	if attr(form, "action") != "/v1/subscribe/"+f.Token || attr(form, "method") != "post" {
		t.Errorf("form action %q method %q", attr(form, "action"), attr(form, "method"))
	}
	for _, c := range []struct{ name, label, typ, autocomplete string }{
		{"email", "E-Mail-Adresse", "email", "email"},
		{"first_name", "Vorname", "text", "given-name"},
		{"city", "Ort", "text", "address-level2"},
	} {
		in := form.Find(`input[name="` + c.name + `"]`)
		label := form.Find(`label[for="` + attr(in, "id") + `"]`)
		if in.Length() != 1 || !strings.HasPrefix(label.Text(), c.label) || attr(in, "type") != c.typ || attr(in, "autocomplete") != c.autocomplete {
			t.Errorf("field %s: label %q, type %q, autocomplete %q", c.name, label.Text(), attr(in, "type"), attr(in, "autocomplete"))
		}
	}
	if _, ok := form.Find(`input[name="email"]`).Attr("required"); !ok {
		t.Error("email is not required")
	}
	if form.Find(`input[name="last_name"], input[name="phone"], input[name="zip"]`).Length() != 0 {
		t.Error("fields the form does not show are rendered")
	}
	hp := form.Find(`input[name="website"]`)
	if attr(hp.Parent(), "aria-hidden") != "true" || attr(hp, "tabindex") != "-1" || attr(hp, "autocomplete") != "off" {
		t.Error("the honeypot is not hidden from people and assistive technology")
	}
	// The stamp is rendered into the page (no JavaScript needed) and accepted
	// once the fill time has passed.
	stamp := attr(form.Find(`input[type="hidden"][name="_rb_ts"]`), "value")
	s.clock.Add(5 * time.Second)
	if err := s.guard.CheckStamp(f.Token, stamp, 3*time.Second, store.StampMaxAge); err != nil {
		t.Errorf("stamp %q: %v", stamp, err)
	}
	if p.doc.Find("script[src='/static/signup.js']").Length() != 0 || form.Find(`input[name="altcha"]`).Length() != 0 {
		t.Error("a form without proof of work loads signup.js")
	}

	// With proof of work the page runs signup.js, which knows where to fetch the challenge.
	pow := s.form(t, store.FormInput{ProofOfWork: ptr(true)})
	p = s.get(t, "/subscribe/"+pow.Token)
	form = p.doc.Find(tid("subscribe-form"))
	if p.doc.Find("script[src='/static/signup.js']").Length() != 1 || form.Find(`input[type="hidden"][name="altcha"]`).Length() != 1 ||
		attr(form, "data-rundbrief-challenge") != "/v1/subscribe/"+pow.Token+"/challenge" {
		t.Error("proof-of-work form without signup.js or its challenge URL")
	}
	if js := s.get(t, "/static/signup.js"); js.status != 200 {
		t.Errorf("GET /static/signup.js: %d", js.status)
	}

	if p := s.get(t, "/subscribe/"+strings.Repeat("z", store.FormTokenLen)); p.status != http.StatusNotFound {
		t.Errorf("unknown token: %d", p.status)
	}
}

func TestHostedFormThanksAndErrors(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	f := s.form(t, store.FormInput{Fields: &[]string{"first_name"}})
	cases := []struct {
		query, want string
	}{
		{"?danke=1&bestaetigen=1", "Bitte bestätigen Sie Ihre Anmeldung"},
		{"?danke=1", "Vielen Dank für Ihre Anmeldung!"},
	}
	for _, c := range cases {
		p := s.get(t, "/subscribe/"+f.Token+c.query)
		if got := p.doc.Find(tid("thanks")).Text(); !strings.Contains(got, c.want) || p.doc.Find(tid("subscribe-form")).Length() != 0 {
			t.Errorf("%s: thanks %q, want %q and no form", c.query, got, c.want)
		}
	}
	g := s.form(t, store.FormInput{SuccessMessage: ptr("Schön, dass Sie dabei sind!")})
	if got := s.get(t, "/subscribe/"+g.Token+"?danke=1").doc.Find(tid("thanks")).Text(); !strings.Contains(got, "Schön, dass Sie dabei sind!") {
		t.Errorf("own success message: %q", got)
	}

	// Errors after a refused post: next to the field, and above the form.
	p := s.get(t, "/subscribe/"+f.Token+"?fehler="+url.QueryEscape("email,first_name,_rb_ts,bogus,last_name"))
	if got := p.doc.Find(tid("error-email")).Text(); !strings.Contains(got, "gültige E-Mail-Adresse") {
		t.Errorf("email error %q", got)
	}
	if attr(p.doc.Find(`input[name="email"]`), "aria-invalid") != "true" || p.doc.Find(tid("error-first_name")).Length() != 1 {
		t.Error("field errors not marked")
	}
	if p.doc.Find(tid("error-last_name")).Length() != 0 {
		t.Error("error of a field the form does not show")
	}
	if got := p.doc.Find(tid("form-alert")).Text(); !strings.Contains(got, "noch einmal ab") {
		t.Errorf("stamp alert %q", got)
	}
	if got := s.get(t, "/subscribe/"+f.Token+"?fehler=limit").doc.Find(tid("form-alert")).Text(); !strings.Contains(got, "später") {
		t.Errorf("limit alert %q", got)
	}
}

// TestBrowserSignUpRoundTrip posts the hosted form as a browser without
// JavaScript does: a refused post comes back to the page with its message, an
// accepted one ends on the thank-you state.
func TestBrowserSignUpRoundTrip(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	f := s.form(t, store.FormInput{Fields: &[]string{"first_name"}})
	path := "/subscribe/" + f.Token
	stamp := attr(s.get(t, path).doc.Find(`input[name="_rb_ts"]`), "value")

	// Too fast, and a broken address.
	status, loc := s.postForm(t, "/v1"+path, url.Values{"email": {"kaputt"}, "_rb_ts": {stamp}, "website": {""}}.Encode())
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, s.url+path+"?fehler=") {
		t.Fatalf("refused post: %d → %q", status, loc)
	}
	back := s.get(t, strings.TrimPrefix(loc, s.url))
	if back.doc.Find(tid("error-email")).Length() != 1 || back.doc.Find(tid("form-alert")).Length() != 1 {
		t.Error("the refused post's errors are not shown")
	}

	s.clock.Add(5 * time.Second)
	status, loc = s.postForm(t, "/v1"+path, url.Values{"email": {"lena@example.com"}, "first_name": {"Lena"}, "_rb_ts": {stamp}, "website": {""}}.Encode())
	if status != http.StatusSeeOther || loc != s.url+path+"?danke=1&bestaetigen=1" {
		t.Fatalf("accepted post: %d → %q", status, loc)
	}
	if got := s.get(t, strings.TrimPrefix(loc, s.url)).doc.Find(tid("thanks")).Text(); !strings.Contains(got, "bestätigen") {
		t.Errorf("thank-you page %q", got)
	}
	if n := s.count(t, `SELECT count(*) FROM contacts WHERE account_id = $1 AND email = 'lena@example.com' AND status = 'pending' AND first_name = 'Lena'`, s.acct); n != 1 {
		t.Error("contact not created as pending")
	}
}
