package portal_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
)

// uploadEditorImage posts a file to the editor's image upload as its
// rich-text mode does and decodes the JSON answer.
func (c *client) uploadEditorImage(name string, data []byte) (int, map[string]any) {
	c.tb.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, err := mw.CreateFormFile("file", name)
	if err != nil {
		c.tb.Fatal(err)
	}
	_, _ = w.Write(data)
	_ = mw.Close()
	req, err := http.NewRequest(http.MethodPost, c.base+"/editor/images", &buf)
	if err != nil {
		c.tb.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.AddCookie(c.cookie)
	resp, err := c.http.Do(req)
	if err != nil {
		c.tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		c.tb.Fatalf("upload answer: %v", err)
	}
	return resp.StatusCode, out
}

// pngImage is a small PNG.
func pngImage(t *testing.T, shade uint8) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 3))
	for x := range 4 {
		img.Set(x, 1, color.RGBA{shade, 80, 40, 255})
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestEditorImageUpload: an image uploaded from the editor becomes an
// attachment (the same bytes again are the same attachment), is served
// publicly from its signed URL with a long, immutable cache lifetime, and a
// tampered signature, another id or a non-image is 404; non-images are
// refused at upload.
func TestEditorImageUpload(t *testing.T) {
	t.Parallel()
	e := newNewsletterEnv(t, 1)
	c := e.c
	data := pngImage(t, 200)
	status, out := c.uploadEditorImage("Sommer-Logo.png", data)
	u, _ := out["url"].(string)
	if status != http.StatusCreated || !strings.HasPrefix(u, base+"/i/") || out["alt"] != "Sommer Logo" {
		t.Fatalf("upload: %d %v", status, out)
	}
	status, again := c.uploadEditorImage("noch-mal.png", data)
	if status != http.StatusCreated || again["id"] != out["id"] {
		t.Errorf("same bytes stored twice: %v %v", out, again)
	}
	n, _, err := e.s.db.Attachments(t.Context(), e.acct.ID, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(n) != 1 {
		t.Errorf("attachments: %d %v", len(n), err)
	}

	// Public, without a session.
	path := strings.TrimPrefix(u, base)
	get := func(p string) *http.Response {
		t.Helper()
		resp, err := http.Get(e.s.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := get(path)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) || resp.Header.Get("Content-Type") != "image/png" ||
		resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || resp.Header.Get("ETag") == "" {
		t.Fatalf("public image: %d %q %q %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), len(body))
	}
	parts := strings.Split(strings.TrimPrefix(path, "/i/"), "/") // account, id, mac, name
	mac := parts[2]
	tampered := "A" + mac[1:]
	if mac[0] == 'A' {
		tampered = "B" + mac[1:]
	}
	for name, p := range map[string]string{
		"tampered mac":   "/i/" + parts[0] + "/" + parts[1] + "/" + tampered + "/" + parts[3],
		"other id":       "/i/" + parts[0] + "/" + parts[1] + "9/" + mac + "/" + parts[3],
		"other account":  "/i/9" + parts[0] + "/" + parts[1] + "/" + mac + "/" + parts[3],
		"not a number":   "/i/x/" + parts[1] + "/" + mac + "/" + parts[3],
		"without a name": "/i/" + parts[0] + "/" + parts[1] + "/" + mac,
	} {
		if r := get(p); r.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d", name, r.StatusCode)
		}
	}
	// Another name is fine: it is not signed.
	if r := get("/i/" + parts[0] + "/" + parts[1] + "/" + mac + "/anders.png"); r.StatusCode != http.StatusOK {
		t.Errorf("renamed: %d", r.StatusCode)
	}

	// Only images.
	status, out = c.uploadEditorImage("brief.pdf", []byte("%PDF-1.4 kein Bild"))
	if status != http.StatusUnprocessableEntity || !strings.Contains(out["error"].(string), "PNG") {
		t.Errorf("pdf: %d %v", status, out)
	}
	status, out = c.uploadEditorImage("bild.svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"></svg>`))
	if status != http.StatusUnprocessableEntity {
		t.Errorf("svg: %d %v", status, out)
	}
}
