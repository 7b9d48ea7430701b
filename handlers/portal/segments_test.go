package portal_test

import (
	"context"
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

// TestContactsSortSelectAndSegments: the table sorts by its column links,
// rows carry checkboxes for the bulk form, a filter is saved as a segment
// that lists and shows its contacts, and a segment in use is not deleted.
func TestContactsSortSelectAndSegments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	var bulk []store.ContactInput
	for i, last := range []string{"Zander", "Albers", "Meyer"} {
		bulk = append(bulk, store.ContactInput{Email: fmt.Sprintf("p%d@example.com", i), LastName: sp(last), Tags: []string{"vip"},
			CustomFields: map[string]any{"punkte": i * 10}})
	}
	if _, err := s.db.BulkUpsertContacts(ctx, acct.ID, apiActor, store.BulkContacts{Contacts: bulk}); err != nil {
		t.Fatal(err)
	}
	r := c.get("/contacts?sort=name_asc")
	wantStatus(t, r, http.StatusOK)
	var names []string
	r.find("contact-name").Each(func(_ int, sel *goquery.Selection) { names = append(names, strings.TrimSpace(sel.Text())) })
	if strings.Join(names, ",") != "Albers,Meyer,Zander" {
		t.Fatalf("name order %v", names)
	}
	if href, _ := r.find("sort-name").Attr("href"); href != "/contacts?sort=name_desc" {
		t.Errorf("name header links to %q", href)
	}
	if sortAttr, _ := r.Doc.Find(`th[aria-sort="ascending"]`).Find("a").Attr("data-testid"); sortAttr != "sort-name" {
		t.Errorf("aria-sort on %q", sortAttr)
	}
	if n := r.find("bulk-select").Length(); n != 3 {
		t.Errorf("%d row checkboxes", n)
	}
	if r.find("bulk-form").Length() != 1 || r.find("save-segment-form").Length() != 0 {
		t.Error("bulk form missing, or save offered without a filter")
	}
	wantStatus(t, c.get("/contacts?sort=bogus"), http.StatusOK)

	filtered := c.get("/contacts?tag=vip")
	if filtered.find("save-segment-form").Length() != 1 {
		t.Fatalf("no save form:\n%s", filtered.Body)
	}
	res := c.post("/segments", url.Values{"tag": {"vip"}, "name": {"VIPs"}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/segments" {
		t.Fatalf("save: %d %s", res.StatusCode, res.Body)
	}
	page := c.get("/segments")
	if got := text(page.find("segment-name")); got != "VIPs" {
		t.Fatalf("segments page: %q", got)
	}
	if got := text(page.find("segment-conditions")); got != "Schlagwort „vip“" {
		t.Errorf("conditions %q", got)
	}
	link, _ := page.find("segment-contacts").Attr("href")
	shown := c.get(link)
	if shown.find("contact-row").Length() != 3 || !strings.Contains(text(shown.find("active-segment")), "VIPs") {
		t.Fatalf("segment contacts:\n%s", shown.Body)
	}
	segs, _, err := s.db.Segments(ctx, acct.ID, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(segs) != 1 {
		t.Fatal(segs, err)
	}
	id := segs[0].ID
	// A narrower segment by a custom field, through the store, is shown by the page too.
	high := store.ContactFilter{Fields: []store.FieldCondition{{Key: "punkte", Op: "gt", Value: "5"}}}
	seg2, err := s.db.CreateSegment(ctx, acct.ID, apiActor, store.SegmentInput{Name: sp("Viele Punkte"), Filter: &high})
	if err != nil {
		t.Fatal(err)
	}
	if n := c.get("/contacts?segment_id=" + strconv.FormatInt(seg2.ID, 10)).find("contact-row").Length(); n != 2 {
		t.Errorf("custom-field segment shows %d", n)
	}
	if got := text(c.get("/segments").Doc.Find(`[data-segment-id="` + strconv.FormatInt(seg2.ID, 10) + `"] [data-testid="segment-conditions"]`)); got != "punkte größer als 5" {
		t.Errorf("field condition reads %q", got)
	}
	// In use by a scheduled newsletter: 409 with the reason on the page.
	nl, err := s.db.CreateNewsletter(ctx, acct.ID, apiActor, store.NewsletterInput{Subject: sp("x"), Markdown: sp("x"), SegmentID: &id})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE campaigns SET status = 'scheduled' WHERE id = $1`, nl.ID); err != nil {
		t.Fatal(err)
	}
	refused := c.post(fmt.Sprintf("/segments/%d/delete", id), nil)
	if refused.StatusCode != http.StatusConflict || !strings.Contains(text(refused.find("segments-error")), "geplant") {
		t.Fatalf("delete in use: %d\n%s", refused.StatusCode, refused.Body)
	}
	// The editor offers the segment as the audience.
	draft, err := s.db.CreateNewsletter(ctx, acct.ID, apiActor, store.NewsletterInput{Subject: sp("y"), Markdown: sp("y"), SegmentID: &id})
	if err != nil {
		t.Fatal(err)
	}
	ed := c.get(fmt.Sprintf("/newsletters/%d", draft.ID))
	if sel, _ := ed.Doc.Find(`select[name="segment_id"] option[selected]`).Attr("value"); sel != strconv.FormatInt(id, 10) {
		t.Errorf("editor's segment choice %q", sel)
	}
}

// TestBulkActionPages: ticked rows and "all matches" start jobs whose page
// shows the progress (polled by htmx) and then the summary.
func TestBulkActionPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	var ids []string
	for i := range 4 {
		ct := mkContact(t, s.db, acct.ID, store.ContactInput{Email: fmt.Sprintf("b%d@example.com", i), Tags: []string{"alt"}})
		ids = append(ids, strconv.FormatInt(ct.ID, 10))
	}
	res := c.post("/contacts/actions", url.Values{"action": {"add_tag"}, "action_tag": {"neu"}, "tag": {"alt"}, "contact_id": ids[:2]})
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/contacts/actions/") {
		t.Fatalf("start: %d %s", res.StatusCode, res.Body)
	}
	job := res.Header.Get("Location")
	queued := c.get(job)
	if st, _ := queued.find("bulk-progress").Attr("data-status"); st != store.BulkQueued {
		t.Fatalf("progress:\n%s", queued.Body)
	}
	if trig, _ := queued.find("bulk-progress").Attr("hx-trigger"); trig != "every 1s" {
		t.Errorf("not polled: %q", trig)
	}
	if _, err := s.db.RunNextBulkJob(ctx, store.BulkRun{}); err != nil {
		t.Fatal(err)
	}
	done := c.get(job, "HX-Request", "true")
	if strings.Contains(done.Body, "<html") || !strings.Contains(text(done.find("bulk-done")), "2 Kontakte bearbeitet, 2 davon geändert") {
		t.Fatalf("summary fragment:\n%s", done.Body)
	}
	// All matches of the filter (tag=alt): unsubscribe the four.
	res = c.post("/contacts/actions", url.Values{"action": {"unsubscribe"}, "all": {"1"}, "tag": {"alt"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("all: %d %s", res.StatusCode, res.Body)
	}
	if _, err := s.db.RunNextBulkJob(ctx, store.BulkRun{}); err != nil {
		t.Fatal(err)
	}
	if n := c.get("/contacts?status=unsubscribed").find("contact-row").Length(); n != 4 {
		t.Errorf("%d unsubscribed", n)
	}
	// Nothing chosen: back to the table with the message.
	res = c.post("/contacts/actions", url.Values{"action": {"delete"}})
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/contacts") {
		t.Fatalf("nothing chosen: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	wantStatus(t, c.get("/contacts/actions/999999"), http.StatusNotFound)
}
