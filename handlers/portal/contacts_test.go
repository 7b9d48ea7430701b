package portal_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

var apiActor = store.Actor{Type: store.ActorSystem}

func mkList(t *testing.T, db *store.DB, acct int64, name string, doi bool) store.List {
	t.Helper()
	l, err := db.CreateList(context.Background(), acct, apiActor, store.ListInput{Name: &name, DoubleOptIn: &doi})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mkContact(t *testing.T, db *store.DB, acct int64, in store.ContactInput) store.Contact {
	t.Helper()
	res, err := db.UpsertContact(context.Background(), acct, apiActor, in)
	if err != nil {
		t.Fatal(err)
	}
	return res.Contact
}

// tagNames are the tags a contact's page shows.
func tagNames(r *response) string {
	return strings.Join(r.find("tag").Find("span").Map(func(_ int, s *goquery.Selection) string { return s.Text() }), " ")
}

func sp(s string) *string { return &s }

func TestContactsTableFilterAndPaging(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	empty := c.get("/contacts")
	wantStatus(t, empty, http.StatusOK)
	if empty.find("contacts-empty").Length() != 1 || empty.find("contacts-table").Length() != 0 {
		t.Fatalf("no empty state:\n%s", empty.Body)
	}
	if cur, _ := empty.find("nav-contacts").Attr("aria-current"); cur != "page" {
		t.Error("sidebar does not mark contacts as current")
	}

	kunden := mkList(t, s.db, acct.ID, "Kunden", false)
	var bulk []store.ContactInput
	for i := range 30 {
		in := store.ContactInput{Email: fmt.Sprintf("person%02d@example.com", i), FirstName: sp(fmt.Sprintf("Person%02d", i))}
		if i%3 == 0 {
			in.Tags = []string{"vip"}
			in.ListIDs = []int64{kunden.ID}
		}
		bulk = append(bulk, in)
	}
	bulk = append(bulk, store.ContactInput{Email: "erika.mustermann@example.com", FirstName: sp("Erika"), LastName: sp("Mustermann")})
	if _, err := s.db.BulkUpsertContacts(ctx, acct.ID, apiActor, store.BulkContacts{Contacts: bulk}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.UnsubscribeContact(ctx, acct.ID, apiActor, mkContact(t, s.db, acct.ID, store.ContactInput{Email: "weg@example.com"}).ID, store.Unsubscribe{}); err != nil {
		t.Fatal(err)
	}

	all := c.get("/contacts")
	if n := all.find("contact-row").Length(); n != 25 {
		t.Fatalf("first page has %d rows", n)
	}
	if got := text(all.find("pagination-range")); !strings.Contains(got, "1–25 von 32") {
		t.Errorf("range %q", got)
	}
	next, _ := all.find("page-next").Attr("href")
	if next != "/contacts?page=2" {
		t.Errorf("next page link %q", next)
	}
	// htmx paging gets the section alone; a browser without JavaScript the page.
	frag := c.get(next, "HX-Request", "true")
	if frag.Doc.Find("html body > div#contacts").Length() != 1 || strings.Contains(frag.Body, "<html") ||
		frag.find("contact-row").Length() != 7 {
		t.Fatalf("htmx page 2 is no fragment of 7 rows:\n%s", frag.Body)
	}
	if full := c.get(next); full.find("sidebar").Length() != 1 || full.find("contact-row").Length() != 7 {
		t.Error("page 2 without htmx is no full page")
	}

	for _, tc := range []struct {
		query string
		want  int
	}{
		{"q=mustermann", 1},
		{"q=ERIKA+MUSTER", 1},
		{"q=person1", 10},
		{"tag=vip", 10},
		{"list_id=" + strconv.FormatInt(kunden.ID, 10), 10},
		{"status=unsubscribed", 1},
		{"tag=vip&q=person0", 4},
	} {
		r := c.get("/contacts?"+tc.query, "HX-Request", "true")
		wantStatus(t, r, http.StatusOK)
		if n := r.find("contact-row").Length(); n != tc.want {
			t.Errorf("%s: %d rows, want %d", tc.query, n, tc.want)
		}
	}
	// The tag filter suggests the account's tags with their counts.
	sugg := c.get("/contacts").find("tag-suggestions").Find("option")
	if vip := sugg.FilterFunction(func(_ int, o *goquery.Selection) bool { return o.AttrOr("value", "") == "vip" }); vip.Length() != 1 ||
		!strings.Contains(vip.Text(), "10 Kontakte") {
		t.Errorf("tag suggestions: %q", sugg.Text())
	}
	none := c.get("/contacts?q=niemand")
	if none.find("contacts-empty").Length() != 1 || !strings.Contains(text(none.find("contacts-empty")), "Keine passenden") ||
		none.find("contact-filter-reset").Length() != 1 {
		t.Errorf("no-match state:\n%s", none.Body)
	}
	if got := none.Doc.Find(`input[name="q"]`).AttrOr("value", ""); got != "niemand" {
		t.Errorf("search field shows %q", got)
	}
	bad := c.get("/contacts?status=gelöscht&list_id=abc")
	wantStatus(t, bad, http.StatusOK)
	if text(bad.find("error-status")) == "" || text(bad.find("error-list_id")) == "" {
		t.Errorf("invalid filter without field errors:\n%s", bad.Body)
	}

	// A filter with more matches than the table counts before it renders: the
	// page says "more than", and its pagination loads the exact count.
	bulk = nil
	for i := range 1100 {
		bulk = append(bulk, store.ContactInput{Email: fmt.Sprintf("viel%04d@example.com", i), Tags: []string{"viel"}})
		if len(bulk) == store.MaxBatch || i == 1099 {
			if _, err := s.db.BulkUpsertContacts(ctx, acct.ID, apiActor, store.BulkContacts{Contacts: bulk}); err != nil {
				t.Fatal(err)
			}
			bulk = nil
		}
	}
	many := c.get("/contacts?tag=viel&page=2")
	pag := many.find("pagination")
	if got := text(many.find("pagination-range")); got != "26–50 von mehr als 1.000 Einträgen · Seite 2" {
		t.Errorf("capped range %q", got)
	}
	countURL := pag.AttrOr("hx-get", "")
	if countURL != "/contacts/count?page=2&tag=viel" || pag.AttrOr("hx-trigger", "") != "load" || many.find("page-next").Length() != 1 {
		t.Fatalf("capped pagination: %q\n%s", countURL, text(pag))
	}
	exact := c.get(countURL, "HX-Request", "true")
	wantStatus(t, exact, http.StatusOK)
	if got := text(exact.find("pagination-range")); got != "26–50 von 1.100 Einträgen · Seite 2 von 44" || exact.find("pagination").AttrOr("hx-get", "") != "" {
		t.Errorf("exact count %q", got)
	}
	if last := c.get("/contacts?tag=viel&page=44"); last.find("contact-row").Length() != 0 && last.find("page-next").Length() != 0 {
		t.Error("the last page offers a next page")
	}
	if past := c.get("/contacts?tag=viel&page=99"); past.find("contact-row").Length() != 25 || !strings.Contains(text(past.find("pagination-range")), "Seite 44") {
		t.Errorf("a page past the end does not show the last page: %q", text(past.find("pagination-range")))
	}

	// Another account's list as a filter is unknown, not a way to read its members.
	other := newAccount(t, s.db, "")
	foreign := mkList(t, s.db, other.ID, "Fremd", false)
	r := c.get("/contacts?list_id=" + strconv.FormatInt(foreign.ID, 10))
	if r.find("contact-row").Length() != 0 || text(r.find("error-list_id")) != "Diese Liste gibt es nicht." {
		t.Errorf("foreign list filter:\n%s", text(r.find("contacts")))
	}
}

func TestContactLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := dbtest.URL(t)
	s := newServer(t, dbURL, nil, base)
	s2 := newServer(t, dbURL, nil, base) // a second process on the same database
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	kunden := mkList(t, s.db, acct.ID, "Kunden", false)
	presse := mkList(t, s.db, acct.ID, "Presse", false)

	form := c.get("/contacts/new")
	wantStatus(t, form, http.StatusOK)
	if form.Doc.Find(`label[for="field-email"]`).Length() != 1 || form.Doc.Find(`#field-email[autofocus]`).Length() != 1 {
		t.Error("email field without label or focus")
	}

	// Field errors next to their fields, what was typed kept.
	bad := c.post("/contacts/new", url.Values{"email": {"keine-adresse"}, "zip": {strings.Repeat("1", 30)},
		"cf_key_0": {"vorname"}, "cf_val_0": {"x"}, "cf_key_1": {""}, "cf_val_1": {"ohne Namen"}})
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	for _, f := range []string{"email", "zip"} {
		if text(bad.find("field-"+f).Find(`[data-testid="error-`+f+`"]`)) == "" {
			t.Errorf("no error next to %s", f)
		}
	}
	if text(bad.find("error-custom_fields.vorname")) == "" || text(bad.find("error-custom_fields")) == "" {
		t.Errorf("custom field errors missing:\n%s", text(bad.find("field-custom_fields")))
	}
	if bad.Doc.Find(`#field-email[aria-invalid="true"]`).AttrOr("value", "") != "keine-adresse" {
		t.Error("typed address not kept or not marked invalid")
	}
	if text(bad.find("form-alert")) == "" {
		t.Error("no alert above the form")
	}

	r := c.post("/contacts/new", url.Values{
		"email": {" Anna@Example.com "}, "first_name": {"Anna"}, "last_name": {"Schmidt"}, "city": {"Köln"},
		"tags": {"kunde, vip"}, "list_ids": {strconv.FormatInt(kunden.ID, 10)},
		"cf_key_0": {"kundennummer"}, "cf_val_0": {"K-17"},
	})
	if r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/contacts/") {
		t.Fatalf("create: %d %s\n%s", r.StatusCode, r.Header.Get("Location"), r.Body)
	}
	path := r.Header.Get("Location")
	id, _ := strconv.ParseInt(strings.TrimPrefix(path, "/contacts/"), 10, 64)

	detail := c.get(path)
	wantStatus(t, detail, http.StatusOK)
	if got := text(detail.find("flash")); !strings.Contains(got, "anna@example.com") {
		t.Errorf("flash %q", got)
	}
	for id, want := range map[string]string{"detail-first_name": "Anna", "detail-city": "Köln", "custom-kundennummer": "K-17",
		"detail-status": "Angemeldet", "detail-source": "Portal"} {
		if got := text(detail.find(id)); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
	if got := tagNames(detail); got != "kunde vip" {
		t.Errorf("tags %q", got)
	}
	if got := text(detail.find("contact-list")); !strings.Contains(got, "Kunden") {
		t.Errorf("lists %q", got)
	}
	if a := detail.find("activity"); a.Length() != 1 || a.AttrOr("data-action", "") != "contact.created" || !strings.Contains(text(a), "Portal") {
		t.Errorf("timeline %q", text(a))
	}
	// The activity names the signed-in user.
	acts, _, err := s.db.ContactActivities(ctx, acct.ID, id, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(acts) != 1 || acts[0].ActorType != store.ActorUser || acts[0].ActorID == nil {
		t.Errorf("activity actor: %+v %v", acts, err)
	}

	// The same address again: reported at the field with a link, nothing changed.
	dup := c.post("/contacts/new", url.Values{"email": {"anna@example.com"}, "first_name": {"Andere"}})
	wantStatus(t, dup, http.StatusConflict)
	if text(dup.find("error-email")) == "" || dup.find("existing-contact").AttrOr("href", "") != path {
		t.Errorf("duplicate:\n%s", dup.Body)
	}

	// Tags with htmx: the section comes back alone.
	tr := c.post(path+"/tags", url.Values{"tags": {"neu, zweit"}}, "HX-Request", "true")
	wantStatus(t, tr, http.StatusOK)
	if tr.Doc.Find("html body > section#contact-tags").Length() != 1 || tagNames(tr) != "kunde vip neu zweit" {
		t.Errorf("tags fragment:\n%s", tr.Body)
	}
	if a := tr.Doc.Find(`section#contact-activity[hx-swap-oob="true"] [data-testid="activity"]`); a.Length() != 2 || !strings.Contains(text(a.First()), "Geändert: Schlagwörter") {
		t.Errorf("the timeline is not updated with the tags: %q", text(a))
	}
	tr = c.post(path+"/tags", url.Values{"tags": {strings.Repeat("x", 101)}}, "HX-Request", "true")
	wantStatus(t, tr, http.StatusUnprocessableEntity)
	if text(tr.find("error-tags")) == "" {
		t.Errorf("tag error not at the field:\n%s", tr.Body)
	}
	// Without JavaScript: back to the page.
	wantRedirect(t, c.post(path+"/tags/remove", url.Values{"tag": {"zweit"}}), path)
	// Lists: join another, leave one.
	lr := c.post(path+"/lists", url.Values{"list_id": {strconv.FormatInt(presse.ID, 10)}}, "HX-Request", "true")
	if got := text(lr.find("contact-list")); !strings.Contains(got, "Kunden") || !strings.Contains(got, "Presse") {
		t.Errorf("after joining: %q", got)
	}
	wantRedirect(t, c.post(fmt.Sprintf("%s/lists/%d/remove", path, kunden.ID), nil), path)
	got, err := s.db.Contact(ctx, acct.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Tags, ",") != "kunde,vip,neu" || len(got.Lists) != 1 || got.Lists[0].ID != presse.ID {
		t.Errorf("after tag and list changes: %v %v", got.Tags, got.Lists)
	}

	// Edit on the other process: the form shows the contact, a cleared custom
	// field name removes the field, tags and lists are replaced.
	c2 := c.on(s2)
	edit := c2.get(path + "/edit")
	wantStatus(t, edit, http.StatusOK)
	if edit.Doc.Find(`input[name="cf_key_0"]`).AttrOr("value", "") != "kundennummer" ||
		edit.Doc.Find(`input[name="tags"]`).AttrOr("value", "") != "kunde, vip, neu" ||
		edit.Doc.Find(`input[name="list_ids"][checked]`).AttrOr("value", "") != strconv.FormatInt(presse.ID, 10) {
		t.Errorf("edit form does not show the contact")
	}
	r = c2.post(path+"/edit", url.Values{"email": {"anna@example.com"}, "first_name": {"Anna-Lena"}, "city": {""},
		"tags": {"vip"}, "cf_orig_0": {"kundennummer"}, "cf_key_0": {""}, "cf_val_0": {"K-17"}, "cf_key_1": {"geburtstag"}, "cf_val_1": {"1990-05-01"}})
	wantRedirect(t, r, path)
	got, _ = s.db.Contact(ctx, acct.ID, id)
	if got.FirstName != "Anna-Lena" || got.City != "" || strings.Join(got.Tags, ",") != "vip" || len(got.Lists) != 0 ||
		got.CustomFields["kundennummer"] != nil || got.CustomFields["geburtstag"] != "1990-05-01" {
		t.Errorf("after edit: %+v", got)
	}
	taken := mkContact(t, s.db, acct.ID, store.ContactInput{Email: "belegt@example.com"})
	r = c2.post(path+"/edit", url.Values{"email": {taken.Email}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if text(r.find("error-email")) == "" {
		t.Errorf("taken address not reported at the field:\n%s", r.Body)
	}

	// Another account sees none of it.
	otherAcct := newAccount(t, s.db, "")
	o := newClient(t, s2)
	o.signIn(otherAcct.Email, otherAcct.Password)
	for _, p := range []string{path, path + "/edit", path + "/unsubscribe", path + "/delete"} {
		wantStatus(t, o.get(p), http.StatusNotFound)
	}
	for _, p := range []string{path + "/edit", path + "/unsubscribe", path + "/delete", path + "/tags"} {
		wantStatus(t, o.post(p, url.Values{"email": {"x@example.com"}, "tags": {"x"}}), http.StatusNotFound)
	}
	if r := o.get("/contacts?q=anna"); r.find("contact-row").Length() != 0 {
		t.Error("another account's table lists the contact")
	}
	if got, _ := s.db.Contact(ctx, acct.ID, id); got.Status != store.StatusSubscribed || got.FirstName != "Anna-Lena" {
		t.Error("another account changed the contact")
	}

	// Unsubscribe with a confirmation page, then delete.
	confirm := c.get(path + "/unsubscribe")
	if confirm.find("confirm-unsubscribe").Length() != 1 {
		t.Fatalf("no confirmation:\n%s", confirm.Body)
	}
	wantRedirect(t, c.post(path+"/unsubscribe", nil), path)
	if got, _ := s.db.Contact(ctx, acct.ID, id); got.Status != store.StatusUnsubscribed {
		t.Errorf("status after unsubscribe %s", got.Status)
	}
	if blocked, _ := s.db.IsBlocked(ctx, acct.ID, "anna@example.com"); !blocked {
		t.Error("address not blocked")
	}
	if d := c.get(path); text(d.find("detail-status")) != "Ausgetragen" || d.find("contact-unsubscribe").Length() != 0 {
		t.Error("detail after unsubscribe")
	}
	wantRedirect(t, c.post(path+"/delete", nil), "/contacts")
	wantStatus(t, c.get(path), http.StatusNotFound)
}

func TestContactsExport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	kunden := mkList(t, s.db, acct.ID, "Kunden", false)
	var bulk []store.ContactInput
	for i := range 2500 { // more than one batch of the store's export
		in := store.ContactInput{Email: fmt.Sprintf("e%04d@example.com", i), FirstName: sp("Vor, \"Name\"")}
		if i%2 == 0 {
			in.Tags, in.ListIDs = []string{"gerade"}, []int64{kunden.ID}
			in.CustomFields = map[string]any{"nr": fmt.Sprint(i)}
		}
		bulk = append(bulk, in)
		if len(bulk) == store.MaxBatch || i == 2499 {
			if _, err := s.db.BulkUpsertContacts(ctx, acct.ID, apiActor, store.BulkContacts{Contacts: bulk}); err != nil {
				t.Fatal(err)
			}
			bulk = nil
		}
	}
	other := newAccount(t, s.db, "")
	mkContact(t, s.db, other.ID, store.ContactInput{Email: "fremd@example.com"})

	r := c.get("/contacts/export?tag=gerade")
	wantStatus(t, r, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" || !strings.Contains(r.Header.Get("Content-Disposition"), "attachment") {
		t.Errorf("headers %q %q", ct, r.Header.Get("Content-Disposition"))
	}
	body := strings.TrimPrefix(r.Body, "\xef\xbb\xbf")
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1251 {
		t.Fatalf("%d lines, want header and 1250 contacts", len(recs))
	}
	head := strings.Join(recs[0], ",")
	if !strings.HasPrefix(head, "email,first_name,last_name") || !strings.HasSuffix(head, "tags,lists,created_at,updated_at,custom:nr") {
		t.Errorf("header %s", head)
	}
	row := recs[1]
	if row[0] != "e0000@example.com" || row[1] != `Vor, "Name"` || row[10] != "gerade" || row[11] != "Kunden" || row[14] != "0" {
		t.Errorf("first row %q", row)
	}
	if strings.Contains(r.Body, "fremd@") || strings.Contains(r.Body, "e0001@") {
		t.Error("export holds contacts outside the filter or account")
	}
	all := c.get("/contacts/export")
	if n := strings.Count(all.Body, "\n"); n != 2501 {
		t.Errorf("unfiltered export has %d lines", n)
	}
}

func TestListsPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	empty := c.get("/lists")
	if empty.find("lists-empty").Length() != 1 {
		t.Fatalf("no empty state:\n%s", empty.Body)
	}
	bad := c.post("/lists/new", url.Values{"name": {""}, "color": {"blau"}})
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	if text(bad.find("error-name")) == "" || text(bad.find("error-color")) == "" {
		t.Errorf("errors not at the fields:\n%s", bad.Body)
	}
	if bad.Doc.Find(`#field-color[type="color"]`).Length() != 1 {
		t.Error("no colour picker")
	}
	wantRedirect(t, c.post("/lists/new", url.Values{"name": {"Stammkunden"}, "color": {"#0A7F3F"}, "double_opt_in": {"1"}, "description": {"Treue"}}), "/lists")
	dupe := c.post("/lists/new", url.Values{"name": {"stammkunden"}, "color": {"#000000"}})
	if dupe.StatusCode != http.StatusUnprocessableEntity || text(dupe.find("error-name")) == "" {
		t.Errorf("duplicate name: %d", dupe.StatusCode)
	}
	page := c.get("/lists")
	row := page.find("list-row")
	if row.Length() != 1 || text(row.Find(`[data-testid="list-name"]`)) != "Stammkunden" ||
		text(row.Find(`[data-testid="list-doi"]`)) != "Mit Bestätigung" ||
		!strings.Contains(row.Find(".swatch").AttrOr("style", ""), "#0a7f3f") {
		t.Fatalf("row: %s", text(row))
	}
	id := row.AttrOr("data-list-id", "")
	lpath := "/lists/" + id

	// Members: empty state, add by address (unknown ones become contacts), errors kept.
	m := c.get(lpath)
	if m.find("members-empty").Length() != 1 {
		t.Fatalf("no members empty state:\n%s", m.Body)
	}
	wantStatus(t, c.post(lpath+"/members", url.Values{"emails": {"  "}}), http.StatusUnprocessableEntity)
	mkContact(t, s.db, acct.ID, store.ContactInput{Email: "bekannt@example.com"})
	r := c.post(lpath+"/members", url.Values{"emails": {"bekannt@example.com\nneu@example.com, kaputt"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if got := r.Doc.Find(`textarea[name="emails"]`).Text(); got != "kaputt" {
		t.Errorf("failed addresses kept as %q", got)
	}
	if !strings.Contains(text(r.find("add-failures")), "kaputt") || text(r.find("error-emails")) == "" {
		t.Errorf("failure not shown:\n%s", r.Body)
	}
	m = c.get(lpath)
	if n := m.find("member-row").Length(); n != 2 {
		t.Fatalf("%d members", n)
	}
	neu, err := s.db.ContactByEmail(ctx, acct.ID, "neu@example.com")
	if err != nil || neu.Status != store.StatusPending || neu.Source != store.SourceImport {
		t.Errorf("new member %+v %v (double opt-in list: pending)", neu, err)
	}
	wantRedirect(t, c.post(fmt.Sprintf("%s/members/%d/remove", lpath, neu.ID), nil), lpath)
	if m = c.get(lpath); m.find("member-row").Length() != 1 || !strings.Contains(text(m.find("flash")), "neu@example.com") {
		t.Errorf("after removing: %d members", m.find("member-row").Length())
	}

	// Edit, then another account cannot see or change it.
	wantRedirect(t, c.post(lpath+"/edit", url.Values{"name": {"Stammkunden 2"}, "color": {"#123456"}}), "/lists")
	l, _ := strconv.ParseInt(id, 10, 64)
	got, err := s.db.List(ctx, acct.ID, l)
	if err != nil || got.Name != "Stammkunden 2" || got.Color != "#123456" || got.DoubleOptIn {
		t.Errorf("after edit %+v %v", got, err)
	}
	other := newAccount(t, s.db, "")
	o := newClient(t, s)
	o.signIn(other.Email, other.Password)
	for _, p := range []string{lpath, lpath + "/edit", lpath + "/delete"} {
		wantStatus(t, o.get(p), http.StatusNotFound)
	}
	wantStatus(t, o.post(lpath+"/delete", nil), http.StatusNotFound)
	wantStatus(t, o.post(lpath+"/members", url.Values{"emails": {"x@example.com"}}), http.StatusNotFound)
	if o.get("/lists").find("list-row").Length() != 0 {
		t.Error("another account lists the list")
	}

	if c.get(lpath+"/delete").find("confirm-delete").Length() != 1 {
		t.Error("no delete confirmation")
	}
	wantRedirect(t, c.post(lpath+"/delete", nil), "/lists")
	wantStatus(t, c.get(lpath), http.StatusNotFound)
}
