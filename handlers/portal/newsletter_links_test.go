package portal_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestNewsletterSendLinkCheck: the send confirmation loads its link check with
// htmx; the fragment names the link that does not answer and leaves out the
// product's own addresses and placeholders.
func TestNewsletterSendLinkCheck(t *testing.T) {
	t.Parallel()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/weg" {
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(web.Close)
	e := newNewsletterEnv(t, 1)
	content := fmt.Sprintf("[Da](%s/da) [Weg](%s/weg) [Abmelden]({{abmelde_link}}) [Eigen](%s/u/x)", web.URL, web.URL, base)
	id := e.createDraft(t, draftForm(e.listID, "Herbst", content))

	r := e.c.get(fmt.Sprintf("/newsletters/%d/send", id))
	wantStatus(t, r, http.StatusOK)
	if got, _ := r.find("link-check").Attr("hx-get"); got != fmt.Sprintf("/newsletters/%d/send/links", id) {
		t.Fatalf("link check hx-get %q", got)
	}

	r = e.c.get(fmt.Sprintf("/newsletters/%d/send/links", id))
	wantStatus(t, r, http.StatusOK)
	if ok, _ := r.find("check-links-answer").Attr("data-ok"); ok != "false" {
		t.Errorf("data-ok %q", ok)
	}
	probs := r.find("link-problem")
	if probs.Length() != 1 || !strings.Contains(text(probs), web.URL+"/weg") || !strings.Contains(text(probs), "404") {
		t.Errorf("problems %q", text(probs))
	}
	if got := text(r.find("check-links-answer")); !strings.Contains(got, "1 von 2 Links antwortet nicht") {
		t.Errorf("summary %q", got)
	}
}

// TestNewsletterSendLinkCheckPrivate: without RUNDBRIEF_SMTP_ALLOW_PRIVATE the
// check never connects to loopback; it says the address is not public.
func TestNewsletterSendLinkCheckPrivate(t *testing.T) {
	t.Parallel()
	hit := make(chan struct{}, 10)
	web := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hit <- struct{}{} }))
	t.Cleanup(web.Close)
	s := newServerWith(t, dbtest.URL(t), nil, base, serverOptions{SMTPDenyPrivate: true})
	acct := newAccount(t, s.db, "business")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	listID, _ := makeList(t, s.db, acct.ID, "Kunden", 1)
	r := c.post("/newsletters/new", draftForm(listID, "Herbst", fmt.Sprintf("[Da](%s/da)", web.URL)))
	m := newsletterPath.FindStringSubmatch(r.Header.Get("Location"))
	if m == nil {
		t.Fatalf("create: %d %s", r.StatusCode, r.Header.Get("Location"))
	}
	r = c.get("/newsletters/" + m[1] + "/send/links")
	wantStatus(t, r, http.StatusOK)
	p := r.find("link-problem")
	if reason, _ := p.Attr("data-reason"); p.Length() != 1 || reason != "blocked" || !strings.Contains(text(p), "nicht öffentlich") {
		t.Errorf("problem %q (%s)", text(p), reason)
	}
	if len(hit) != 0 {
		t.Error("the check reached the loopback server")
	}
}
