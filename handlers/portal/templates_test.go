package portal_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// uploadFile posts a multipart upload to the attachments manager, as its
// progress bar does when xhr is set (X-Upload: 1) or as the plain form.
func (c *client) uploadFile(name string, data []byte, xhr bool) *http.Response {
	c.tb.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, err := mw.CreateFormFile("file", name)
	if err != nil {
		c.tb.Fatal(err)
	}
	_, _ = w.Write(data)
	_ = mw.Close()
	req, err := http.NewRequest(http.MethodPost, c.base+"/attachments", &buf)
	if err != nil {
		c.tb.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if xhr {
		req.Header.Set("X-Upload", "1")
	}
	req.AddCookie(c.cookie)
	resp, err := c.http.Do(req)
	if err != nil {
		c.tb.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

var templatePath = regexp.MustCompile(`^/templates/(\d+)$`)

func TestTemplatesPortal(t *testing.T) {
	t.Parallel()
	e := newNewsletterEnv(t, 2)
	c := e.c

	// No postal address yet: the dashboard says so.
	if r := c.get("/dashboard"); r.find("no-postal-address").Length() != 1 {
		t.Errorf("dashboard lacks the postal address notice")
	}

	// The library gallery: every design rendered in a sandboxed frame.
	r := c.get("/templates")
	wantStatus(t, r, http.StatusOK)
	if r.find("templates-empty").Length() != 1 {
		t.Errorf("no empty state")
	}
	designs := store.LibraryDesigns()
	for _, d := range designs {
		item := r.find("library-" + d.Key)
		frame := item.Find("iframe")
		sandbox, ok := frame.Attr("sandbox")
		srcdoc := frame.AttrOr("srcdoc", "")
		if item.Length() != 1 || !ok || sandbox != "" || !strings.Contains(srcdoc, "<table") || strings.Contains(srcdoc, "{{") {
			t.Errorf("design %s: frame sandbox=%q srcdoc %d bytes", d.Key, sandbox, len(srcdoc))
		}
	}

	// Copy a design: it becomes the account's template, opened in the editor.
	r = c.post("/templates/library/newsletter/copy", nil)
	m := templatePath.FindStringSubmatch(r.Header.Get("Location"))
	if r.StatusCode != http.StatusSeeOther || m == nil {
		t.Fatalf("copy: %d %s", r.StatusCode, r.Header.Get("Location"))
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	r = c.get(r.Header.Get("Location"))
	wantStatus(t, r, http.StatusOK)
	if r.Doc.Find(`input[name="key"]`).AttrOr("value", "") != "newsletter" || r.find("preview-iframe").Length() != 1 {
		t.Errorf("editor: key %q", r.Doc.Find(`input[name="key"]`).AttrOr("value", ""))
	}

	// The live preview renders what is typed; a layout gets sample content.
	r = c.post("/templates/preview", url.Values{"name": {"Rahmen"}, "key": {"rahmen"}, "subject": {"Hallo {{vorname}}"},
		"html": {`<html><body><h1>KOPF</h1>{{inhalt}}</body></html>`}}, "HX-Request", "true")
	wantStatus(t, r, http.StatusOK)
	if src := r.find("preview-iframe").AttrOr("srcdoc", ""); !strings.Contains(src, "KOPF") || strings.Contains(src, "{{inhalt}}") {
		t.Errorf("preview: %s", src)
	}

	// Saving checks the key; a valid layout is stored.
	r = c.post("/templates/new", url.Values{"name": {"Rahmen"}, "key": {"Kein Schlüssel"}, "html": {"x"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if r.find("field-key").HasClass("has-error") == false {
		t.Errorf("no key error")
	}
	r = c.post("/templates/new", url.Values{"name": {"Rahmen"}, "key": {"rahmen"}, "html": {`<html><body><h1>KOPF</h1>{{inhalt}}</body></html>`}})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("create: %d\n%s", r.StatusCode, r.Body)
	}

	// The newsletter editor offers the templates; ?template= fills a starting point.
	r = c.get("/newsletters/new?template=newsletter")
	wantStatus(t, r, http.StatusOK)
	if v := r.Doc.Find(`select[name="template_key"] option[selected]`).AttrOr("value", ""); v != "newsletter" {
		t.Errorf("template select: %q", v)
	}
	if content := r.Doc.Find(`textarea[name="content"]`).Text(); !strings.Contains(content, "{{abmelde_link}}") {
		t.Errorf("content not filled from the template")
	}

	// Attachments: upload (as the progress bar does), list, download.
	data := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("x"), 5000)...)
	if resp := c.uploadFile("preise.pdf", data, true); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	if resp := c.uploadFile("programm.exe", []byte("MZ\x90\x00"), false); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("refused upload: %d", resp.StatusCode)
	}
	r = c.get("/attachments")
	if r.find("attachments-table").Find("tbody tr").Length() != 1 || !strings.Contains(r.Body, "preise.pdf") ||
		!strings.Contains(r.Body, "nicht erlaubt") || r.find("upload-progress").Length() != 1 {
		t.Errorf("attachments page:\n%s", r.find("attachments").Text())
	}
	atts, _, err := e.s.db.Attachments(context.Background(), e.acct.ID, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(atts) != 1 {
		t.Fatalf("attachments: %v %v", atts, err)
	}
	dl := c.get(fmt.Sprintf("/attachments/%d/download", atts[0].ID))
	if dl.Body != string(data) || !strings.HasPrefix(dl.Header.Get("Content-Disposition"), "attachment") {
		t.Errorf("download: %d bytes, %v", len(dl.Body), dl.Header)
	}

	// A newsletter with the layout and the file, saved through the editor.
	form := draftForm(e.listID, "Mit Rahmen", "Hallo {{vorname}}")
	form.Set("template_key", "rahmen")
	form.Set("attachment_ids", strconv.FormatInt(atts[0].ID, 10))
	r = c.post("/newsletters/new", form)
	nm := newsletterPath.FindStringSubmatch(r.Header.Get("Location"))
	if r.StatusCode != http.StatusSeeOther || nm == nil {
		t.Fatalf("create newsletter: %d\n%s", r.StatusCode, r.Body)
	}
	nid, _ := strconv.ParseInt(nm[1], 10, 64)
	n, err := e.s.db.Newsletter(context.Background(), e.acct.ID, nid)
	if err != nil || n.TemplateKey != "rahmen" || len(n.AttachmentIDs) != 1 {
		t.Fatalf("stored: %+v %v", n, err)
	}
	r = c.get(fmt.Sprintf("/newsletters/%d", nid))
	if r.Doc.Find(`input[name="attachment_ids"][checked]`).Length() != 1 || !strings.Contains(r.find("preview-iframe").AttrOr("srcdoc", ""), "KOPF") {
		t.Errorf("editor: attachment not checked or layout not previewed")
	}
	if r := c.get(fmt.Sprintf("/newsletters/%d/send", nid)); r.find("no-postal-address").Length() != 1 {
		t.Errorf("send confirmation lacks the postal address notice")
	}
	// Sending it: the confirmation warns, and the mails carry the layout and the file.
	r = c.post(fmt.Sprintf("/newsletters/%d/send", nid), nil)
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("send: %d\n%s", r.StatusCode, r.Body)
	}
	if r = c.get(r.Header.Get("Location")); !strings.Contains(r.find("flash").Text(), "Postanschrift fehlt") {
		t.Errorf("send flash: %q", r.find("flash").Text())
	}
	second := c.post("/newsletters/new", draftForm(e.listID, "Zweiter", "Hallo"))
	nm = newsletterPath.FindStringSubmatch(second.Header.Get("Location"))
	if nm == nil {
		t.Fatalf("second draft: %d", second.StatusCode)
	}
	nid, _ = strconv.ParseInt(nm[1], 10, 64)

	// The sender settings: saved, and the notices are gone.
	r = c.post("/settings/sender", url.Values{"company": {"Bäckerei Müller"}, "postal_address": {"Hauptstr. 1\n10115 Berlin"},
		"imprint": {""}, "from_name": {""}, "reply_to": {"kein-mail"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantRedirect(t, c.post("/settings/sender", url.Values{"company": {"Bäckerei Müller"}, "postal_address": {"Hauptstr. 1\n10115 Berlin"}}), "/settings/sender")
	if r := c.get("/settings/sender"); r.Doc.Find(`textarea[name="postal_address"]`).Text() != "Hauptstr. 1\n10115 Berlin" {
		t.Errorf("settings not shown")
	}
	if r := c.get("/dashboard"); r.find("no-postal-address").Length() != 0 {
		t.Errorf("notice still shown")
	}
	if r := c.get(fmt.Sprintf("/newsletters/%d/send", nid)); r.find("no-postal-address").Length() != 0 {
		t.Errorf("send notice still shown")
	}

	// Deleting: the file and the copied template.
	wantRedirect(t, c.post(fmt.Sprintf("/templates/%d/delete", id), nil), "/templates")
	if _, err := e.s.db.Template(context.Background(), e.acct.ID, id); err != store.ErrNotFound {
		t.Errorf("template not deleted: %v", err)
	}
	wantRedirect(t, c.post(fmt.Sprintf("/attachments/%d/delete", atts[0].ID), nil), "/attachments")
}

// TestMemberSeesTheSenderReadOnly: members see the sender and imprint but do
// not change them (403); the missing postal address notice tells them to ask
// an owner or administrator instead of linking to a form they cannot save. The owner
// saves as before.
func TestMemberSeesTheSenderReadOnly(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	if _, err := s.db.CreateUser(context.Background(), acct.ID, store.NewUser{Email: "member-sender@example.com", Role: store.RoleMember,
		Password: "member password"}); err != nil {
		t.Fatal(err)
	}
	member := newClient(t, s)
	member.signIn("member-sender@example.com", "member password")
	notice := member.get("/dashboard").find("no-postal-address")
	if notice.Length() != 1 || notice.Find(`a[href="/settings/sender"]`).Length() != 0 || !strings.Contains(notice.Text(), "Inhaber oder Administrator") {
		t.Errorf("a member's notice: %q", notice.Text())
	}
	page := member.get("/settings/sender")
	wantStatus(t, page, http.StatusOK)
	if page.find("sender-read-only").Length() != 1 || page.find("sender-save").Length() != 0 ||
		page.find("sender-form").Find("fieldset[disabled]").Find(`textarea[name="postal_address"]`).Length() != 1 {
		t.Errorf("a member's sender page is not read-only:\n%s", page.Body)
	}
	r := member.post("/settings/sender", url.Values{"company": {"Mitarbeiter GmbH"}, "postal_address": {"Nebenstr. 2\n10115 Berlin"}})
	wantStatus(t, r, http.StatusForbidden)
	if set, err := s.db.AccountSettings(context.Background(), acct.ID); err != nil || set.Company != "" || set.PostalAddress != "" {
		t.Errorf("a member changed the sender: %+v %v", set, err)
	}

	owner := newClient(t, s)
	owner.signIn(acct.Email, acct.Password)
	if notice := owner.get("/dashboard").find("no-postal-address"); notice.Find(`a[href="/settings/sender"]`).Length() != 1 {
		t.Errorf("the owner's notice has no link to the form: %q", notice.Text())
	}
	if page := owner.get("/settings/sender"); page.find("sender-read-only").Length() != 0 || page.find("sender-save").Length() != 1 {
		t.Errorf("the owner's sender page is read-only")
	}
	wantRedirect(t, owner.post("/settings/sender", url.Values{"company": {"Bäckerei Müller"}, "postal_address": {"Hauptstr. 1\n10115 Berlin"}}),
		"/settings/sender")
}

// TestSenderPrivacyURL: the privacy policy's address is entered beside the
// imprint, refused with a message at its field when it is no web address, and
// once saved, the forms' embed page stops warning that the snippet links none
// and the snippet links it. A member sees the warning without the link to a
// page they cannot save.
func TestSenderPrivacyURL(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "business")
	f, err := s.db.CreateForm(context.Background(), acct.ID, store.Actor{Type: store.ActorSystem}, store.FormInput{Name: ptr("Fußzeile")})
	if err != nil {
		t.Fatal(err)
	}
	embed := fmt.Sprintf("/forms/%d/embed", f.ID)
	if _, err := s.db.CreateUser(context.Background(), acct.ID, store.NewUser{Email: "member-privacy@example.com", Role: store.RoleMember,
		Password: "member password"}); err != nil {
		t.Fatal(err)
	}
	member := newClient(t, s)
	member.signIn("member-privacy@example.com", "member password")
	if note := member.get(embed).find("no-privacy-url"); note.Length() != 1 || note.Find("a").Length() != 0 {
		t.Errorf("member's embed page: %d notices, %d links", note.Length(), note.Find("a").Length())
	}

	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	note := c.get(embed).find("no-privacy-url")
	if note.Find(`a[href="/settings/sender#field-privacy_url"]`).Length() != 1 {
		t.Fatalf("owner's embed page without the way to the field: %q", text(note))
	}
	r := c.post("/settings/sender", url.Values{"company": {"Bäckerei Müller"}, "privacy_url": {"baeckerei.test/datenschutz"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if text(r.find("error-privacy_url")) == "" || r.Doc.Find("#field-privacy_url").AttrOr("value", "") != "baeckerei.test/datenschutz" {
		t.Fatalf("no field error, or the typed address is gone:\n%s", r.Body)
	}
	const policy = "https://baeckerei.test/datenschutz"
	wantRedirect(t, c.post("/settings/sender", url.Values{"company": {"Bäckerei Müller"}, "privacy_url": {policy}}), "/settings/sender")
	if v := c.get("/settings/sender").Doc.Find("#field-privacy_url").AttrOr("value", ""); v != policy {
		t.Errorf("saved address shown as %q", v)
	}
	r = c.get(embed)
	if r.find("no-privacy-url").Length() != 0 || !strings.Contains(r.find("embed-code").Text(), `href="`+policy+`"`) {
		t.Errorf("embed page after saving: notice %d, snippet:\n%s", r.find("no-privacy-url").Length(), r.find("embed-code").Text())
	}
}
