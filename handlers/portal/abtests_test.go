package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func abForm(campaignID int64, kv ...string) url.Values {
	v := url.Values{"campaign_id": {fmt.Sprint(campaignID)}, "test_type": {"subject"}, "b_subject": {"Frische Brötchen für {{vorname}}"},
		"mode": {"split"}, "split_a": {"50"}, "sample_pct": {"20"}, "wait_hours": {"4"}, "winner_metric": {"opens"}, "auto_apply_winner": {"1"}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// TestABTestPages creates a test from a newsletter draft, shows its results
// once the newsletter went out, and decides the winner with the button.
func TestABTestPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	actor := store.Actor{Type: store.ActorSystem}

	name := "Kunden"
	l, err := s.db.CreateList(ctx, acct.ID, actor, store.ListInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO contacts (account_id, email) SELECT $1, 'k' || g || '@example.com' FROM generate_series(1, 200) g`, acct.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO list_members (list_id, contact_id, account_id) SELECT $1, id, account_id FROM contacts WHERE account_id = $2`, l.ID, acct.ID); err != nil {
		t.Fatal(err)
	}
	subject, html := "Neues aus der Backstube", "<p>Hallo</p>"
	nl, err := s.db.CreateNewsletter(ctx, acct.ID, actor, store.NewsletterInput{Subject: &subject, HTML: &html, ListIDs: &[]int64{l.ID}})
	if err != nil {
		t.Fatal(err)
	}

	empty := c.get("/ab-tests")
	wantStatus(t, empty, http.StatusOK)
	if empty.find("ab-empty").Length() != 1 || empty.find("nav-ab-tests").AttrOr("aria-current", "") != "page" {
		t.Fatalf("empty list:\n%s", empty.Body)
	}
	form := c.get(fmt.Sprintf("/ab-tests/new?newsletter=%d", nl.ID))
	wantStatus(t, form, http.StatusOK)
	if form.Doc.Find(`select[name="campaign_id"] option[selected]`).AttrOr("value", "") != fmt.Sprint(nl.ID) {
		t.Fatal("the newsletter draft is not preselected")
	}

	// The store's rules, next to their fields; typed values are kept.
	bad := c.post("/ab-tests/new", abForm(nl.ID, "split_a", "95", "wait_hours", "viele", "b_subject", ""))
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	if text(bad.find("error-wait_hours")) == "" {
		t.Fatalf("no error at wait_hours:\n%s", bad.Body)
	}
	bad = c.post("/ab-tests/new", abForm(nl.ID, "split_a", "95", "b_subject", ""))
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	for _, f := range []string{"split_a", "b_subject"} {
		if text(bad.find("error-"+f)) == "" {
			t.Errorf("no error at %s", f)
		}
	}
	if bad.Doc.Find(`input[name="split_a"]`).AttrOr("value", "") != "95" {
		t.Error("typed split not kept")
	}

	r := c.post("/ab-tests/new", abForm(nl.ID))
	if r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/ab-tests/") {
		t.Fatalf("create: %d %s\n%s", r.StatusCode, r.Header.Get("Location"), r.Body)
	}
	path := r.Header.Get("Location")
	page := c.get(path)
	wantStatus(t, page, http.StatusOK)
	if page.find("flash").Length() != 1 || page.find("ab-not-running").Length() != 1 || page.find("ab-choose-winner").Length() != 0 {
		t.Fatalf("draft page:\n%s", page.Body)
	}
	if again := c.get("/ab-tests/new"); again.Doc.Find(fmt.Sprintf(`select[name="campaign_id"] option[value="%d"]`, nl.ID)).Length() != 0 {
		t.Error("a newsletter that has a test is offered again")
	}

	// The newsletter goes out: the test runs; B gets more opens.
	if _, _, err := s.db.StartNewsletter(ctx, acct.ID, actor, nl.ID, store.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE campaign_recipients SET status = 'sent', sent_at = now(),
  opened_at = CASE WHEN variant = 'B' OR id % 5 = 0 THEN now() END WHERE campaign_id = $1`, nl.ID); err != nil {
		t.Fatal(err)
	}
	page = c.get(path)
	wantStatus(t, page, http.StatusOK)
	if page.find("ab-leader").AttrOr("data-value", "") != "B" || page.find("ab-confidence").AttrOr("data-value", "") != "1.0000" ||
		page.find("ab-status").Text() == "" || page.find("ab-choose-winner").Length() != 0 { // split: nobody waits for a winner
		t.Fatalf("running page:\n%s", page.Body)
	}
	frag := c.get(path, "HX-Request", "true")
	if frag.find("ab-results").Length() != 1 || frag.find("ab-variants").Length() != 0 {
		t.Error("htmx refresh does not get the results section alone")
	}

	r = c.post(path+"/winner", url.Values{"variant": {"auto"}})
	wantRedirect(t, r, path)
	page = c.get(path)
	if !strings.Contains(text(page.find("flash")), "Variante B hat gewonnen") || text(page.find("ab-winner")) != "Variante B · Inhalt von B übernommen" {
		t.Errorf("after the winner: %q / %q", text(page.find("flash")), text(page.find("ab-winner")))
	}
	if got, _ := s.db.Newsletter(ctx, acct.ID, nl.ID); got.Subject != "Frische Brötchen für {{vorname}}" {
		t.Errorf("winner not copied: %q", got.Subject)
	}
	// A second decision is refused with a message on the page.
	wantRedirect(t, c.post(path+"/winner", url.Values{"variant": {"A"}}), path)
	if page = c.get(path); !strings.Contains(text(page.find("flash")), "bereits abgeschlossen") {
		t.Errorf("second winner: %q", text(page.find("flash")))
	}
	list := c.get("/ab-tests")
	if list.find("ab-row").Length() != 1 || text(list.find("ab-status")) != "Abgeschlossen" {
		t.Errorf("list:\n%s", list.Body)
	}

	// Another account sees nothing; a plan without A/B tests gets 402.
	other := newAccount(t, s.db, "")
	oc := newClient(t, s)
	oc.signIn(other.Email, other.Password)
	wantStatus(t, oc.get(path), http.StatusNotFound)
	starter := newAccount(t, s.db, "starter")
	sc := newClient(t, s)
	sc.signIn(starter.Email, starter.Password)
	wantStatus(t, sc.get("/ab-tests"), http.StatusPaymentRequired)
}

// TestABVariantBInTheEditor: variant B written in Markdown is previewed next
// to A and stored as HTML; written in rich text it is stored sanitised.
func TestABVariantBInTheEditor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	actor := store.Actor{Type: store.ActorSystem}
	subject, md := "Neues aus der Backstube", "Hallo **alle**"
	nl, err := s.db.CreateNewsletter(ctx, acct.ID, actor, store.NewsletterInput{Subject: &subject, Markdown: &md})
	if err != nil {
		t.Fatal(err)
	}
	form := abForm(nl.ID, "test_type", "content", "b_subject", "", "b_format", "markdown", "b_content", "Hallo *Variante B*")
	pv := c.post("/ab-tests/preview", form, "HX-Request", "true")
	wantStatus(t, pv, http.StatusOK)
	a := pv.find("ab-preview-a").Find(`[data-testid="preview-iframe"]`).AttrOr("srcdoc", "")
	b := pv.find("ab-preview-b").Find(`[data-testid="preview-iframe"]`).AttrOr("srcdoc", "")
	if !strings.Contains(a, "<strong>alle</strong>") || !strings.Contains(b, "<em>Variante B</em>") || strings.Contains(b, "alle") {
		t.Fatalf("previews:\nA %s\nB %s", a, b)
	}
	r := c.post("/ab-tests/new", form)
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("create: %d\n%s", r.StatusCode, r.Body)
	}
	tests, _, err := s.db.ABTests(ctx, acct.ID, store.ABFilter{}, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(tests) != 1 || tests[0].BHTML == nil || !strings.Contains(*tests[0].BHTML, "<em>Variante B</em>") {
		t.Fatalf("stored b_html: %v %v", tests, err)
	}
	if err := s.db.DeleteABTest(ctx, acct.ID, actor, tests[0].ID); err != nil {
		t.Fatal(err)
	}
	form = abForm(nl.ID, "test_type", "content", "b_subject", "", "b_format", "richtext",
		"b_content_rich", `<div>Reich<script>alert(1)</script><a href="javascript:alert(2)">x</a></div>`)
	if r := c.post("/ab-tests/new", form); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("create rich: %d\n%s", r.StatusCode, r.Body)
	}
	tests, _, _ = s.db.ABTests(ctx, acct.ID, store.ABFilter{}, store.Page{Page: 1, PerPage: 10})
	if len(tests) != 1 || tests[0].BHTML == nil || !store.IsRichText(*tests[0].BHTML) || strings.Contains(*tests[0].BHTML, "script") ||
		strings.Contains(*tests[0].BHTML, "javascript:") || !strings.Contains(*tests[0].BHTML, "Reich") {
		t.Fatalf("stored rich b_html: %+v", tests)
	}
}
