package public

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/store"
)

// image serves an image of the rich-text editor from its signed public URL
// (mailer.LinkBuilder.ImageURL). A URL whose signature does not match, an
// attachment that is gone and an attachment that is no image are all 404
// alike, so the URL tells nothing about other attachments. An image URL
// never changes its bytes, so browsers and proxies keep it for a year.
func (p *Public) image(w http.ResponseWriter, r *http.Request) {
	accountID, err1 := strconv.ParseInt(chi.URLParam(r, "account"), 10, 64)
	id, err2 := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err1 != nil || err2 != nil || !p.tokens.VerifyImage(accountID, id, chi.URLParam(r, "mac")) {
		http.NotFound(w, r)
		return
	}
	a, err := p.db.Attachment(r.Context(), accountID, id)
	if err != nil || !store.IsImageType(a.ContentType) {
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			p.log.Error("public image", "account", accountID, "attachment", id, "err", err)
			http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
			return
		}
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	etag := `"` + a.SHA256 + `"`
	h.Set("ETag", etag)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", a.ContentType)
	h.Set("Content-Length", strconv.FormatInt(a.Size, 10))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	if r.Method == http.MethodHead {
		return
	}
	if err := p.db.WriteAttachment(r.Context(), accountID, id, w); err != nil {
		// The status is sent already; the client sees a short body.
		p.log.Error("public image", "account", accountID, "attachment", id, "err", err)
	}
}
