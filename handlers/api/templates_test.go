package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
)

type templateJSON struct {
	ID        int64  `json:"id"`
	Key       string `json:"key"`
	Name      string `json:"name"`
	Subject   string `json:"subject"`
	Preheader string `json:"preheader"`
	HTML      string `json:"html"`
	IsLayout  bool   `json:"is_layout"`
}

type attachmentJSON struct {
	ID          int64  `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
	UsedBy      int64  `json:"used_by"`
}

func TestTemplatesAPI(t *testing.T) {
	t.Parallel()
	e := newSendAPIEnv(t)
	var tpl templateJSON
	e.do(t, "POST", "/v1/templates", map[string]any{"key": "rahmen", "name": "Rahmen", "preheader": "Vom Rahmen",
		"html": `<html><body><table><tr><td>KOPF</td></tr><tr><td>{{ Inhalt }}</td></tr></table></body></html>`}, 201).Data(t, &tpl)
	if tpl.Key != "rahmen" || !tpl.IsLayout || tpl.ID == 0 {
		t.Fatalf("created: %+v", tpl)
	}
	if got := e.reason(t, e.do(t, "POST", "/v1/templates", map[string]any{"key": "rahmen", "name": "Noch einer"}, 409)); got != "conflict:duplicate_key" {
		t.Errorf("duplicate: %s", got)
	}
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/templates", map[string]any{"key": "Groß Buchstaben", "name": ""}, 422)), "key", "name")
	var start templateJSON
	e.do(t, "POST", "/v1/templates", map[string]any{"key": "start", "name": "Start", "subject": "Vom Start {{vorname}}",
		"preheader": "Startvorschau", "html": `<p>Startinhalt</p>`}, 201).Data(t, &start)
	if start.IsLayout {
		t.Errorf("starting point is a layout: %+v", start)
	}
	path := fmt.Sprintf("/v1/templates/%d", start.ID)
	e.do(t, "PATCH", path, map[string]any{"name": "Startpunkt"}, 200).Data(t, &start)
	if start.Name != "Startpunkt" || start.HTML != `<p>Startinhalt</p>` {
		t.Errorf("patched: %+v", start)
	}
	var list []templateJSON
	e.do(t, "GET", "/v1/templates", nil, 200).Data(t, &list)
	if len(list) != 2 {
		t.Errorf("list: %+v", list)
	}
	e.do(t, "GET", "/v1/templates/999999", nil, 404)

	// A newsletter with a starting point copies it; with an unknown key 422.
	var n newsletterJSON
	e.do(t, "POST", "/v1/newsletters", map[string]any{"template_key": "start"}, 201).Data(t, &n)
	if n.Subject != "Vom Start {{vorname}}" || n.HTML == nil || *n.HTML != `<p>Startinhalt</p>` {
		t.Errorf("copied: %+v", n)
	}
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/newsletters", map[string]any{"template_key": "gibtsnicht"}, 422)), "template_key")
	wantFields(t, e.fields(t, e.do(t, "PATCH", fmt.Sprintf("/v1/newsletters/%d", n.ID), map[string]any{"template_key": "gibtsnicht"}, 422)), "template_key")
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/emails/send", map[string]any{"to": "a@example.com", "subject": "x", "html": "<p>x</p>",
		"template_key": "gibtsnicht"}, 422)), "template_key")

	// The library: at least 8 designs; copying makes an account template,
	// a second copy gets another key.
	var lib []struct {
		Key, Name, Category, Description, HTML string
	}
	e.do(t, "GET", "/v1/template-library?per_page=100", nil, 200).Data(t, &lib)
	if len(lib) < 8 {
		t.Fatalf("library has %d designs", len(lib))
	}
	for _, d := range lib {
		if d.Name == "" || d.Category == "" || d.Description == "" || !strings.Contains(d.HTML, "{{abmelde_link}}") || !strings.Contains(d.HTML, "{{impressum}}") {
			t.Errorf("design %s incomplete", d.Key)
		}
	}
	var cp, cp2 templateJSON
	e.do(t, "POST", "/v1/template-library/newsletter/copy", nil, 201).Data(t, &cp)
	e.do(t, "POST", "/v1/template-library/newsletter/copy", nil, 201).Data(t, &cp2)
	if cp.Key != "newsletter" || cp2.Key != "newsletter-2" || cp.HTML != lib[0].HTML {
		t.Errorf("copies: %s, %s", cp.Key, cp2.Key)
	}
	e.do(t, "POST", "/v1/template-library/gibtsnicht/copy", nil, 404)

	e.do(t, "DELETE", fmt.Sprintf("/v1/templates/%d", cp2.ID), nil, 204)
	e.do(t, "GET", fmt.Sprintf("/v1/templates/%d", cp2.ID), nil, 404)
}

// upload posts a multipart upload of data as filename.
func (e *sendAPIEnv) upload(t *testing.T, filename, ctype string, data []byte, status int) *attachmentJSON {
	t.Helper()
	body, contentType := multipartBody(t, filename, ctype, data)
	r := e.c.Request("POST", "/v1/attachments", body, http.Header{"Content-Type": {contentType}})
	if r.Status != status {
		t.Fatalf("upload %s: %d, want %d: %s", filename, r.Status, status, r.Body)
	}
	if status >= 300 {
		return nil
	}
	var a attachmentJSON
	r.Data(t, &a)
	return &a
}

func multipartBody(t *testing.T, filename, ctype string, data []byte) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="file"; filename="%s"`, filename)}
	if ctype != "" {
		h["Content-Type"] = []string{ctype}
	}
	w, err := mw.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), mw.FormDataContentType()
}

// pdfBytes is a file of n bytes that sniffs as a PDF.
func pdfBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	copy(b, "%PDF-1.7\n")
	return b
}

func TestAttachmentsAPI(t *testing.T) {
	t.Parallel()
	e := newSendAPIEnv(t)
	data := pdfBytes(700 << 10) // three chunks
	a := e.upload(t, "Preisliste Ä.pdf", "application/octet-stream", data, 201)
	sum := sha256.Sum256(data)
	if a.Size != int64(len(data)) || a.SHA256 != hex.EncodeToString(sum[:]) || a.ContentType != "application/pdf" || a.Filename != "Preisliste Ä.pdf" {
		t.Fatalf("uploaded: %+v", a)
	}
	// The same bytes again: the same attachment, 200.
	if again := e.upload(t, "andere.pdf", "", data, 200); again.ID != a.ID {
		t.Errorf("dedup: %+v", again)
	}
	var list []attachmentJSON
	e.do(t, "GET", "/v1/attachments", nil, 200).Data(t, &list)
	if len(list) != 1 {
		t.Fatalf("list: %+v", list)
	}
	dl := e.do(t, "GET", fmt.Sprintf("/v1/attachments/%d/download", a.ID), nil, 200)
	if !bytes.Equal(dl.Body, data) || dl.Header.Get("Content-Type") != "application/pdf" ||
		!strings.HasPrefix(dl.Header.Get("Content-Disposition"), "attachment;") || !strings.Contains(dl.Header.Get("Content-Disposition"), "filename*=utf-8''Preisliste%20%C3%84.pdf") {
		t.Errorf("download: %d bytes, headers %v", len(dl.Body), dl.Header)
	}
	var limits struct {
		StorageBytes struct{ Limit, Used int64 } `json:"storage_bytes"`
	}
	e.do(t, "GET", "/v1/plan/limits", nil, 200).Data(t, &limits)
	if limits.StorageBytes.Used != int64(len(data)) {
		t.Errorf("storage used %d, want %d", limits.StorageBytes.Used, len(data))
	}

	// Executables and scripts are refused by their content, whatever the name.
	for name, content := range map[string][]byte{
		"rechnung.pdf": append([]byte("MZ\x90\x00\x03"), make([]byte, 100)...),
		"bild.png":     append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 100)...),
		"notiz.txt":    []byte("#!/bin/sh\nrm -rf /\n"),
		"seite.txt":    []byte("<html><script>alert(1)</script></html>"),
		"tool.exe":     []byte("harmless text"),
	} {
		wantFields(t, e.fields(t, e.postFile(t, name, content)), "file")
	}

	// Over 10 MB: 413, at once when the length says so, and when streamed.
	big := pdfBytes(store.MaxAttachmentBytes + 1)
	body, ct := multipartBody(t, "gross.pdf", "", big)
	if r := e.c.Request("POST", "/v1/attachments", body, http.Header{"Content-Type": {ct}}); r.Status != 413 {
		t.Errorf("declared length: %d", r.Status)
	}
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(body)
		_ = pw.Close()
	}()
	req := httptest.NewRequest("POST", "/v1/attachments", pr)
	req.ContentLength = -1
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", e.c.Header.Get("Authorization"))
	if r := e.c.Do(req); r.Status != 413 {
		t.Errorf("streamed: %d %s", r.Status, r.Body)
	}
	var count int
	if err := e.db.GetContext(context.Background(), &count, `SELECT count(*) FROM attachments WHERE account_id = $1`, e.acct); err != nil || count != 1 {
		t.Errorf("attachments stored: %d (%v)", count, err)
	}

	e.do(t, "DELETE", fmt.Sprintf("/v1/attachments/%d", a.ID), nil, 204)
	e.do(t, "GET", fmt.Sprintf("/v1/attachments/%d", a.ID), nil, 404)
	e.do(t, "GET", "/v1/plan/limits", nil, 200).Data(t, &limits)
	if limits.StorageBytes.Used != 0 {
		t.Errorf("storage after delete %d", limits.StorageBytes.Used)
	}
}

// postFile uploads content as name and returns the response, whatever it is.
func (e *sendAPIEnv) postFile(t *testing.T, name string, content []byte) *apitest.Response {
	t.Helper()
	body, ct := multipartBody(t, name, "", content)
	return e.c.Request("POST", "/v1/attachments", body, http.Header{"Content-Type": {ct}})
}

func TestAttachmentStorageLimit(t *testing.T) {
	t.Parallel()
	e := newSendAPIEnv(t)
	ctx := context.Background()
	// A small plan: one megabyte of storage.
	if _, err := e.db.ExecContext(ctx, `INSERT INTO plans (name, features, max_contacts, max_lists, max_sends_per_day, max_storage_bytes, max_webhooks, max_api_keys)
SELECT 'tiny', features, max_contacts, max_lists, max_sends_per_day, 1048576, max_webhooks, max_api_keys FROM plans WHERE name = 'starter'`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ExecContext(ctx, `UPDATE accounts SET plan = 'tiny' WHERE id = $1`, e.acct); err != nil {
		t.Fatal(err)
	}
	e.upload(t, "a.pdf", "", pdfBytes(600<<10), 201)
	r := e.postFile(t, "b.pdf", pdfBytes(600<<10))
	if r.Status != 402 || r.ErrorCode(t) != "limit_reached" {
		t.Fatalf("over the storage: %d %s", r.Status, r.Body)
	}
	var limits struct {
		StorageBytes struct{ Limit, Used int64 } `json:"storage_bytes"`
	}
	e.do(t, "GET", "/v1/plan/limits", nil, 200).Data(t, &limits)
	if limits.StorageBytes.Used != 600<<10 || limits.StorageBytes.Limit != 1<<20 {
		t.Errorf("limits: %+v", limits.StorageBytes)
	}
}

type sendResultWarnJSON struct {
	sendResultJSON
	Warnings []struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"warnings"`
}

// TestMailWithLayoutAttachmentsAndImprint sends through a real SMTP server: a
// newsletter in a layout with an attachment, the account's imprint appended.
func TestMailWithLayoutAttachmentsAndImprint(t *testing.T) {
	t.Parallel()
	e := newSendAPIEnv(t)
	list := e.list(t, "leser", 2)
	var tpl templateJSON
	e.do(t, "POST", "/v1/templates", map[string]any{"key": "rahmen", "name": "Rahmen",
		"html": `<!DOCTYPE html><html><body><div>LAYOUT-KOPF {{firma}}</div>{{inhalt}}<div>LAYOUT-FUSS</div></body></html>`}, 201).Data(t, &tpl)
	data := pdfBytes(1 << 20)
	att := e.upload(t, "katalog.pdf", "", data, 201)

	var n newsletterJSON
	e.do(t, "POST", "/v1/newsletters", map[string]any{"name": "Mit Rahmen", "subject": "Hallo {{vorname}}",
		"html": `<html><body><p>INHALT für {{vorname}}</p></body></html>`, "template_key": "rahmen",
		"attachment_ids": []int64{att.ID}, "list_ids": []int64{list}}, 201).Data(t, &n)
	path := fmt.Sprintf("/v1/newsletters/%d", n.ID)

	// No postal address yet: the send result warns.
	var sr sendResultWarnJSON
	e.do(t, "POST", path+"/send", nil, 202).Data(t, &sr)
	if len(sr.Warnings) != 1 || sr.Warnings[0].Code != "no_postal_address" {
		t.Errorf("warnings: %+v", sr.Warnings)
	}
	e.waitSent(t, path)
	msgs := e.srv.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	for _, m := range msgs {
		rm, err := mailer.ReadMail(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		h := rm.HTML
		head, content, foot := strings.Index(h, "LAYOUT-KOPF"), strings.Index(h, "INHALT für Vorname"), strings.Index(h, "LAYOUT-FUSS")
		if head < 0 || content < head || foot < content || strings.Count(h, "<body") != 1 {
			t.Errorf("layout and content out of order:\n%s", h)
		}
		if len(rm.Attachments) != 1 || !bytes.Equal(rm.Attachments[0].Data, data) || rm.Attachments[0].Filename != "katalog.pdf" ||
			rm.Attachments[0].ContentType != "application/pdf" {
			t.Errorf("attachment: %d parts", len(rm.Attachments))
		}
		if !strings.Contains(h, "https://rundbrief.test"+mailer.UnsubscribePath) {
			t.Errorf("no unsubscribe line")
		}
	}

	// With the sender's settings: imprint and company filled, no warning.
	var st struct {
		Warnings []string `json:"warnings"`
	}
	e.do(t, "PUT", "/v1/account/settings", map[string]any{"company": "Acme GmbH", "postal_address": "Hauptstr. 1\n10115 Berlin",
		"imprint": "Acme GmbH\nHauptstr. 1, 10115 Berlin\nHRB 12345 <AG Berlin>", "from_name": "Acme Post", "reply_to": "antwort@acme.test"}, 200).Data(t, &st)
	if len(st.Warnings) != 0 {
		t.Errorf("settings warnings: %v", st.Warnings)
	}
	var es struct {
		Warnings []any `json:"warnings"`
		Queued   int64 `json:"queued"`
	}
	e.do(t, "POST", "/v1/emails/send", map[string]any{"to": "einzeln@example.com", "subject": "Einzeln",
		"markdown": "**FETT** und [Link](https://shop.example.com/)", "template_key": "rahmen", "attachment_ids": []int64{att.ID}}, 202).Data(t, &es)
	if len(es.Warnings) != 0 || es.Queued != 1 {
		t.Errorf("email send: %+v", es)
	}
	deadline := time.Now().Add(30 * time.Second)
	for e.srv.Count() < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	msgs = e.srv.Messages()
	if len(msgs) != 3 {
		t.Fatalf("%d messages", len(msgs))
	}
	rm, err := mailer.ReadMail(msgs[2].Data)
	if err != nil {
		t.Fatal(err)
	}
	h := rm.HTML
	if i, j := strings.Index(h, "LAYOUT-KOPF Acme GmbH"), strings.Index(h, "<strong>FETT</strong>"); i < 0 || j < i {
		t.Errorf("email in layout:\n%s", h)
	}
	if !strings.Contains(h, "HRB 12345 &lt;AG Berlin&gt;") || !strings.Contains(h, "Acme GmbH<br>Hauptstr. 1, 10115 Berlin") ||
		strings.Index(h, "https://rundbrief.test"+mailer.UnsubscribePath) > strings.Index(h, "HRB 12345") {
		t.Errorf("imprint (after the unsubscribe line):\n%s", h)
	}
	if !strings.Contains(rm.Text, "HRB 12345 <AG Berlin>") {
		t.Errorf("imprint in the text part:\n%s", rm.Text)
	}
	if len(rm.Attachments) != 1 || !bytes.Equal(rm.Attachments[0].Data, data) {
		t.Errorf("email attachment")
	}
	raw := string(msgs[2].Data)
	if !strings.Contains(raw, "From: \"Acme Post\" <news@acme.test>") || !strings.Contains(raw, "Reply-To: <antwort@acme.test>") {
		t.Errorf("sender defaults:\n%s", raw[:min(len(raw), 800)])
	}

	// A test mail of the newsletter is rendered the same way.
	e.do(t, "POST", path+"/duplicate", nil, 201).Data(t, &n)
	e.do(t, "POST", fmt.Sprintf("/v1/newsletters/%d/test", n.ID), map[string]any{"to": "pruefer@example.com"}, 200)
	msgs = e.srv.Messages()
	rm, err = mailer.ReadMail(msgs[len(msgs)-1].Data)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rm.HTML, "LAYOUT-KOPF") || len(rm.Attachments) != 1 {
		t.Errorf("test mail: %d attachments\n%s", len(rm.Attachments), rm.HTML)
	}
}

// TestTemplateAndAttachmentInUse: what a scheduled mail uses cannot be
// deleted; once unscheduled it can, and the draft's send is then refused.
func TestTemplateAndAttachmentInUse(t *testing.T) {
	t.Parallel()
	e := newSendAPIEnv(t)
	list := e.list(t, "plan", 1)
	var tpl templateJSON
	e.do(t, "POST", "/v1/templates", map[string]any{"key": "rahmen", "name": "Rahmen", "html": `<div>{{content}}</div>`}, 201).Data(t, &tpl)
	att := e.upload(t, "plan.pdf", "", pdfBytes(2000), 201)
	var n newsletterJSON
	e.do(t, "POST", "/v1/newsletters", map[string]any{"subject": "Geplant", "html": "<p>x</p>", "template_key": "rahmen",
		"attachment_ids": []int64{att.ID}, "list_ids": []int64{list}}, 201).Data(t, &n)
	path := fmt.Sprintf("/v1/newsletters/%d", n.ID)
	e.do(t, "POST", path+"/schedule", map[string]any{"scheduled_at": time.Now().Add(24 * time.Hour).Format(time.RFC3339)}, 200)

	if got := e.reason(t, e.do(t, "DELETE", fmt.Sprintf("/v1/attachments/%d", att.ID), nil, 409)); got != "conflict:in_use" {
		t.Errorf("attachment: %s", got)
	}
	if got := e.reason(t, e.do(t, "DELETE", fmt.Sprintf("/v1/templates/%d", tpl.ID), nil, 409)); got != "conflict:in_use" {
		t.Errorf("template: %s", got)
	}
	var a attachmentJSON
	e.do(t, "GET", fmt.Sprintf("/v1/attachments/%d", att.ID), nil, 200).Data(t, &a)
	if a.UsedBy != 1 {
		t.Errorf("used_by %d", a.UsedBy)
	}

	e.do(t, "POST", path+"/unschedule", nil, 200)
	e.do(t, "DELETE", fmt.Sprintf("/v1/attachments/%d", att.ID), nil, 204)
	e.do(t, "DELETE", fmt.Sprintf("/v1/templates/%d", tpl.ID), nil, 204)
	wantFields(t, e.fields(t, e.do(t, "POST", path+"/send", nil, 422)), "template_key", "attachment_ids")
	if e.srv.Count() != 0 {
		t.Errorf("%d mails sent", e.srv.Count())
	}
}

// TestImageShownByAScheduledMailIsInUse: an image of the editor is an
// attachment that mails show by its URL, not through attachment_ids. While a
// scheduled mail shows it (in its HTML, in the template it is laid out in, or
// in its A/B test's variant B), deleting it is 409 in_use, since its
// recipients would get a broken image; once the mail is unscheduled it can go.
func TestImageShownByAScheduledMailIsInUse(t *testing.T) {
	t.Parallel()
	e := newSendAPIEnv(t)
	list := e.list(t, "bild", 1)
	tokens, err := mailer.NewTokens(sendAPISecret)
	if err != nil {
		t.Fatal(err)
	}
	links := mailer.LinkBuilder{BaseURL: "https://rundbrief.test", Tokens: tokens}
	for i, where := range []string{"html", "template", "variant B"} {
		t.Run(where, func(t *testing.T) {
			att := e.upload(t, fmt.Sprintf("bild%d.png", i), "", tinyPNG(t, i), 201)
			img := fmt.Sprintf(`<p><img src="%s" alt="Bild"></p>`, links.ImageURL(e.acct, att.ID, att.Filename))
			body := map[string]any{"subject": "Mit Bild " + where, "html": "<p>Hallo</p>", "list_ids": []int64{list}}
			switch where {
			case "html":
				body["html"] = img
			case "template":
				e.do(t, "POST", "/v1/templates", map[string]any{"key": "bildrahmen", "name": "Bildrahmen",
					"html": "<div>{{content}}" + img + "</div>"}, 201)
				body["template_key"] = "bildrahmen"
			}
			var n newsletterJSON
			e.do(t, "POST", "/v1/newsletters", body, 201).Data(t, &n)
			if where == "variant B" {
				e.do(t, "POST", "/v1/ab-tests", map[string]any{"campaign_id": n.ID, "test_type": "content", "b_html": img}, 201)
			}
			path := fmt.Sprintf("/v1/newsletters/%d", n.ID)
			attPath := fmt.Sprintf("/v1/attachments/%d", att.ID)
			e.do(t, "POST", path+"/schedule", map[string]any{"scheduled_at": time.Now().Add(24 * time.Hour).Format(time.RFC3339)}, 200)
			if got := e.reason(t, e.do(t, "DELETE", attPath, nil, 409)); got != "conflict:in_use" {
				t.Errorf("deleting the image of a scheduled mail: %s", got)
			}
			e.do(t, "POST", path+"/unschedule", nil, 200)
			e.do(t, "DELETE", attPath, nil, 204)
		})
	}
}

// tinyPNG is a 2×2 PNG whose colour depends on seed, so that every seed gives
// other bytes (uploads of the same bytes are one attachment).
func tinyPNG(t *testing.T, seed int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: uint8(seed), G: 40, B: 200, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
