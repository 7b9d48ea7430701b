package portal_test

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/imports"
)

// upload posts a file as the import form does (multipart/form-data).
func (c *client) upload(path, filename string, data []byte) *response {
	c.tb.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", filename)
	if err != nil {
		c.tb.Fatal(err)
	}
	_, _ = fw.Write(data)
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, c.base+path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.AddCookie(c.cookie)
	resp, err := c.http.Do(req)
	if err != nil {
		c.tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(raw))
	if err != nil {
		c.tb.Fatal(err)
	}
	return &response{Response: resp, Body: string(raw), Doc: doc}
}

func TestImportFlow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := dbtest.URL(t)
	s := newServer(t, dbURL, nil, base)
	s2 := newServer(t, dbURL, nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	kunden := mkList(t, s.db, acct.ID, "Kunden", false)
	mkContact(t, s.db, acct.ID, store.ContactInput{Email: "alt@example.com", FirstName: sp("Alt"), City: sp("Bonn")})

	page := c.get("/contacts/import")
	wantStatus(t, page, http.StatusOK)
	// The empty list says what will show there, not the page's lead again.
	if got := text(page.find("imports-empty")); got != "Noch keine ImporteJeder Import erscheint hier mit seinem Fortschritt und dem Ergebnis: angelegte, geänderte und fehlerhafte Zeilen." {
		t.Errorf("empty imports: %q", got)
	}
	if page.find("imports-empty").Length() != 1 || page.Doc.Find(`form[enctype="multipart/form-data"] input[type="file"][name="file"]`).Length() != 1 {
		t.Fatalf("upload page:\n%s", page.Body)
	}

	// Unusable files are refused at the field, in German.
	for name, data := range map[string][]byte{
		"latin1.csv": []byte("email;Ort\nx@example.com;K\xf6ln\n"),
		"leer.csv":   []byte("email\n"),
	} {
		r := c.upload("/contacts/import", name, data)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if text(r.find("error-file")) == "" {
			t.Errorf("%s: no error at the file field:\n%s", name, r.Body)
		}
	}
	big := c.upload("/contacts/import", "gross.csv", bytes.Repeat([]byte("a@example.com\n"), store.MaxImportBytes/14+1000))
	wantStatus(t, big, http.StatusRequestEntityTooLarge)
	if got := text(big.find("error-file")); got != "Die Datei ist größer als 50 MB. Bitte teilen Sie sie in mehrere Dateien auf." {
		t.Errorf("too large: %q", got)
	}

	csvData := "\xef\xbb\xbfE-Mail;Vorname;Nachname;Kundennummer;Lieblingsfarbe\n" +
		"neu@example.com;Neu;Kunde;K-1;blau\n" +
		"alt@example.com;;Ältere;K-2;\n" +
		"keine-adresse;X;Y;K-3;rot\n"
	r := c.upload("/contacts/import", "kunden.csv", []byte(csvData))
	if r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/contacts/import/") {
		t.Fatalf("upload: %d %s\n%s", r.StatusCode, r.Header.Get("Location"), r.Body)
	}
	path := r.Header.Get("Location")
	id, _ := strconv.ParseInt(strings.TrimPrefix(path, "/contacts/import/"), 10, 64)

	// The mapping step guesses from the column names.
	m := c.get(path)
	wantStatus(t, m, http.StatusOK)
	if got := text(m.Doc.Find("h1 + p.lead")); !strings.Contains(got, "kunden.csv: 3 Zeilen, Trennzeichen Semikolon") {
		t.Errorf("lead %q", got)
	}
	want := []string{"email", "first_name", "last_name", "custom", "custom"}
	for i, w := range want {
		n := strconv.Itoa(i)
		if got := m.Doc.Find(`select[name="map_`+n+`"] option[selected]`).AttrOr("value", "?"); got != w {
			t.Errorf("column %d guessed %q, want %q", i, got, w)
		}
		if m.Doc.Find(`label[for="map-`+n+`"]`).Length() != 1 {
			t.Errorf("column %d's select has no label", i)
		}
	}
	if got := m.Doc.Find(`input[name="custom_3"]`).AttrOr("value", ""); got != "kundennummer" {
		t.Errorf("custom key %q", got)
	}
	if !strings.Contains(text(m.find("mapping-row").First()), "neu@example.com") {
		t.Error("no sample values")
	}

	// Errors are shown next to the column; nothing starts.
	bad := c.post(path, url.Values{"map_0": {""}, "map_1": {"first_name"}, "map_2": {"first_name"}, "map_3": {"custom"}, "custom_3": {"Kunden Nr"}, "map_4": {""}})
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	for _, id := range []string{"error-mapping", "error-mapping.2", "error-mapping.3"} {
		if text(bad.find(id)) == "" {
			t.Errorf("no %s:\n%s", id, text(bad.find("mapping-form")))
		}
	}
	if got := bad.Doc.Find(`input[name="custom_3"]`).AttrOr("value", ""); got != "Kunden Nr" {
		t.Errorf("typed key not kept: %q", got)
	}
	if j, _ := s.db.ImportJob(ctx, acct.ID, id); j.Status != store.ImportUploaded {
		t.Fatalf("status after a refused mapping: %s", j.Status)
	}

	// Another account can neither see nor start the job.
	other := newAccount(t, s.db, "")
	o := newClient(t, s)
	o.signIn(other.Email, other.Password)
	wantStatus(t, o.get(path), http.StatusNotFound)
	wantStatus(t, o.post(path, url.Values{"map_0": {"email"}}), http.StatusNotFound)

	start := url.Values{"map_0": {"email"}, "map_1": {"first_name"}, "map_2": {"last_name"}, "map_3": {"custom"}, "custom_3": {"kundennummer"},
		"map_4": {""}, "list_ids": {strconv.FormatInt(kunden.ID, 10)}, "tags": {"import-2026"}}
	wantRedirect(t, c.post(path, start), path)

	// Queued: the page shows the progress bar, which htmx polls as a fragment.
	p := c.get(path)
	if bar := p.find("import-progress"); bar.AttrOr("hx-trigger", "") != "every 1s" || p.find("import-bar").Length() != 1 {
		t.Fatalf("progress:\n%s", p.Body)
	}
	frag := c.get(path, "HX-Request", "true")
	if strings.Contains(frag.Body, "<html") || frag.Doc.Find("body > section#import-progress").Length() != 1 {
		t.Fatalf("htmx poll is no fragment:\n%s", frag.Body)
	}
	// Posting the mapping again does not start it twice.
	wantRedirect(t, c.post(path, start), path)

	// A worker in the other process runs it.
	w := imports.NewWorker(s2.db, imports.WorkerOptions{})
	if ran, err := w.RunOnce(ctx); !ran || err != nil {
		t.Fatalf("worker: %v %v", ran, err)
	}
	done := c.get(path, "HX-Request", "true")
	sum := done.find("import-summary")
	if sum.Length() != 1 || sum.AttrOr("hx-trigger", "") != "" {
		t.Fatalf("summary (and polling must stop):\n%s", done.Body)
	}
	for id, want := range map[string]string{"import-created": "1", "import-updated": "1", "import-failed": "1"} {
		if got := text(done.find(id)); got != want {
			t.Errorf("%s = %q, want %s", id, got, want)
		}
	}
	if e := done.find("import-error"); e.Length() != 1 || text(e.Find("td").Eq(0)) != "4" || text(e.Find("td").Eq(1)) != "keine-adresse" ||
		!strings.Contains(text(e.Find("td").Eq(2)), "E-Mail-Adresse") {
		t.Errorf("row errors: %q", text(e))
	}
	neu, err := s.db.ContactByEmail(ctx, acct.ID, "neu@example.com")
	if err != nil || neu.LastName != "Kunde" || neu.CustomFields["kundennummer"] != "K-1" || neu.CustomFields["lieblingsfarbe"] != nil ||
		len(neu.Lists) != 1 || strings.Join(neu.Tags, ",") != "import-2026" || neu.Source != store.SourceImport {
		t.Errorf("imported contact %+v %v", neu, err)
	}
	alt, _ := s.db.ContactByEmail(ctx, acct.ID, "alt@example.com")
	if alt.FirstName != "Alt" || alt.LastName != "Ältere" || alt.City != "Bonn" {
		t.Errorf("updated contact %+v", alt)
	}
	if list := c.get("/contacts/import"); list.find("import-row").Length() != 1 || !strings.Contains(text(list.find("import-row")), "Abgeschlossen") {
		t.Errorf("recent imports: %q", text(list.find("imports-table")))
	}
	if o.get("/contacts/import").find("import-row").Length() != 0 {
		t.Error("another account lists the import")
	}
}

// TestImportUploadOutlastsReadTimeout sends a file more slowly than the
// server's read timeout allows a request: the upload handler extends it, as a
// 50 MB file from a slow line needs.
func TestImportUploadOutlastsReadTimeout(t *testing.T) {
	t.Parallel()
	s := newServerWith(t, dbtest.URL(t), nil, base, serverOptions{ReadTimeout: 300 * time.Millisecond})
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", "langsam.csv")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte("email;Vorname\nlangsam@example.com;Lena\n"))
	_ = mw.Close()
	// The body arrives in four parts, 250 ms apart: a second in all.
	pr, pw := io.Pipe()
	go func() {
		data := body.Bytes()
		step := len(data)/4 + 1
		for i := 0; i < len(data); i += step {
			time.Sleep(250 * time.Millisecond)
			if _, err := pw.Write(data[i:min(i+step, len(data))]); err != nil {
				return
			}
		}
		_ = pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/contacts/import", pr)
	req.ContentLength = int64(body.Len())
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.AddCookie(c.cookie)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/contacts/import/") {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("slow upload: %d %s\n%.500s", resp.StatusCode, resp.Header.Get("Location"), raw)
	}
}
