package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store/dbtest"
)

var formEmbedPath = regexp.MustCompile(`^/forms/(\d+)/embed$`)

func TestSignUpFormPages(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "business")
	listID, _ := makeList(t, s.db, acct.ID, "Newsletter", 0)
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	r := c.get("/forms")
	wantStatus(t, r, http.StatusOK)
	if r.find("forms-empty").Length() != 1 || r.find("nav-forms").AttrOr("aria-current", "") != "page" {
		t.Fatalf("no empty state:\n%s", r.Body)
	}
	r = c.get("/forms/new")
	wantStatus(t, r, http.StatusOK)
	// Defaults as the service creates them: double opt-in, first name, 3 s.
	if r.Doc.Find(`input[name="double_opt_in"]`).AttrOr("checked", "no") == "no" ||
		r.Doc.Find(`input[name="fields"][value="first_name"]`).AttrOr("checked", "no") == "no" ||
		r.Doc.Find("#field-min_fill_seconds").AttrOr("value", "") != "3" {
		t.Error("new form without the defaults")
	}

	form := url.Values{"name": {"Fußzeile"}, "list_ids": {strconv.FormatInt(listID, 10)}, "double_opt_in": {"on"},
		"fields": {"first_name", "city"}, "tags": {"website, herbst"}, "success_redirect": {"ftp://nein"},
		"success_message": {"Danke!"}, "proof_of_work": {"on"}, "min_fill_seconds": {"5"}}
	r = c.post("/forms/new", form)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if text(r.find("error-success_redirect")) == "" || r.Doc.Find("#field-name").AttrOr("value", "") != "Fußzeile" {
		t.Fatalf("no field error for the redirect:\n%s", r.Body)
	}
	form.Set("min_fill_seconds", "viele")
	if text(c.post("/forms/new", form).find("error-min_fill_seconds")) == "" {
		t.Error("no error for a non-number")
	}
	form.Set("min_fill_seconds", "5")
	form.Set("success_redirect", "https://baeckerei.test/danke")
	r = c.post("/forms/new", form)
	m := formEmbedPath.FindStringSubmatch(r.Header.Get("Location"))
	if r.StatusCode != http.StatusSeeOther || m == nil {
		t.Fatalf("create: %d %q\n%s", r.StatusCode, r.Header.Get("Location"), r.Body)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	f, err := s.db.Form(context.Background(), acct.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "Fußzeile" || len(f.ListIDs) != 1 || f.ListIDs[0] != listID || !f.DoubleOptIn || !f.ProofOfWork ||
		f.MinFillSeconds != 5 || strings.Join(f.Fields, ",") != "first_name,city" || strings.Join(f.Tags, ",") != "website,herbst" ||
		f.SuccessRedirect != "https://baeckerei.test/danke" || f.SuccessMessage != "Danke!" {
		t.Fatalf("stored form %+v", f)
	}

	// The embed page: the API's snippet, a copy button, the hosted page in a frame.
	r = c.get(r.Header.Get("Location"))
	wantStatus(t, r, http.StatusOK)
	snippet := r.find("embed-code").Text()
	if !strings.Contains(snippet, `action="`+base+`/v1/subscribe/`+f.Token+`"`) || !strings.Contains(snippet, base+"/static/signup.js") ||
		!strings.Contains(snippet, `name="city"`) {
		t.Errorf("snippet:\n%s", snippet)
	}
	if r.find("copy-embed").AttrOr("data-copy", "") != "embed-code" {
		t.Error("no copy button for the snippet")
	}
	if got := r.find("form-preview").AttrOr("src", ""); got != "/subscribe/"+f.Token {
		t.Errorf("preview frame src %q", got)
	}
	if got := r.find("hosted-url").AttrOr("href", ""); got != base+"/subscribe/"+f.Token {
		t.Errorf("hosted url %q", got)
	}
	// The framed page may be framed (it is the public page), the portal not.
	if pub := c.get("/subscribe/" + f.Token); pub.StatusCode != http.StatusOK || pub.Header.Get("X-Frame-Options") != "" {
		t.Errorf("hosted page: %d, X-Frame-Options %q", pub.StatusCode, pub.Header.Get("X-Frame-Options"))
	}
	if text(r.find("flash")) == "" {
		t.Error("no flash after creating")
	}

	// The list.
	r = c.get("/forms")
	row := r.find("form-row")
	if row.Length() != 1 || text(row.Find(`[data-testid="form-lists"]`)) != "Newsletter" ||
		text(row.Find(`[data-testid="form-protection"]`)) != "Rechenaufgabe, Mindestzeit 5 s" {
		t.Errorf("row %q", text(row))
	}

	// Edit: switch double opt-in and proof of work off.
	edit := fmt.Sprintf("/forms/%d/edit", id)
	r = c.get(edit)
	wantStatus(t, r, http.StatusOK)
	if r.Doc.Find("#field-tags").AttrOr("value", "") != "website, herbst" {
		t.Errorf("tags field %q", r.Doc.Find("#field-tags").AttrOr("value", ""))
	}
	form.Del("double_opt_in")
	form.Del("proof_of_work")
	form.Set("name", "Fußzeile neu")
	wantRedirect(t, c.post(edit, form), "/forms")
	f, _ = s.db.Form(context.Background(), acct.ID, id)
	if f.DoubleOptIn || f.ProofOfWork || f.Name != "Fußzeile neu" {
		t.Errorf("after edit %+v", f)
	}

	// Another account's form is invisible.
	other := newAccount(t, s.db, "business")
	oc := newClient(t, s)
	oc.signIn(other.Email, other.Password)
	for _, path := range []string{edit, fmt.Sprintf("/forms/%d/embed", id), fmt.Sprintf("/forms/%d/delete", id)} {
		if r := oc.get(path); r.StatusCode != http.StatusNotFound || strings.Contains(r.Body, f.Token) {
			t.Errorf("other account GET %s: %d", path, r.StatusCode)
		}
	}
	if r := oc.post(fmt.Sprintf("/forms/%d/delete", id), nil); r.StatusCode != http.StatusNotFound {
		t.Errorf("other account delete: %d", r.StatusCode)
	}
	if r := oc.post(edit, form); r.StatusCode != http.StatusNotFound {
		t.Errorf("other account edit: %d", r.StatusCode)
	}
	if oc.get("/forms").find("form-row").Length() != 0 {
		t.Error("the other account lists the form")
	}

	// Delete.
	r = c.get(fmt.Sprintf("/forms/%d/delete", id))
	if r.find("confirm-delete").Length() != 1 {
		t.Fatal("no delete confirmation")
	}
	wantRedirect(t, c.post(fmt.Sprintf("/forms/%d/delete", id), nil), "/forms")
	if _, err := s.db.Form(context.Background(), acct.ID, id); err == nil {
		t.Error("form not deleted")
	}
	if c.get("/subscribe/"+f.Token).StatusCode != http.StatusNotFound {
		t.Error("the deleted form's page still works")
	}
}
