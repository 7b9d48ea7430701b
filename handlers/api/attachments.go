package api

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/rundbrief/rundbrief/store"
)

// maxMultipartOverhead is what a multipart upload may carry besides the file
// (boundaries, part headers, a few small fields).
const maxMultipartOverhead = 64 << 10

// attachmentResponse is an attachment as the API shows it.
type attachmentResponse struct {
	ID          int64  `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
	UsedBy      int64  `json:"used_by"`
	CreatedAt   Time   `json:"created_at"`
	UpdatedAt   Time   `json:"updated_at"`
}

func newAttachmentResponse(a store.Attachment) attachmentResponse {
	return attachmentResponse{ID: a.ID, Filename: a.Filename, ContentType: a.ContentType, Size: a.Size, SHA256: a.SHA256,
		UsedBy: a.UsedBy, CreatedAt: Time(a.CreatedAt), UpdatedAt: Time(a.UpdatedAt)}
}

// uploadAttachment stores the multipart part "file" as it streams in (the
// body is bounded by bodyLimit; the store stops at 10 MB). 201 with a new
// attachment, 200 with the existing one when the account stored the same
// bytes before.
func (a *API) uploadAttachment(w http.ResponseWriter, r *http.Request) error {
	mr, err := r.MultipartReader()
	if err != nil {
		return errBadRequest("Bitte die Datei als multipart/form-data im Feld „file“ senden.")
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return errValidation(map[string]string{"file": "Bitte eine Datei im Feld „file“ senden."})
		}
		if err != nil {
			return uploadError(err)
		}
		if part.FormName() != "file" {
			if _, err := io.Copy(io.Discard, part); err != nil {
				return uploadError(err)
			}
			continue
		}
		att, created, err := a.db.UploadAttachment(r.Context(), accountID(r), actor(r), part.FileName(),
			part.Header.Get("Content-Type"), part)
		if err != nil {
			return uploadError(err)
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		return writeData(w, r, status, newAttachmentResponse(att))
	}
}

// uploadError maps the errors of reading an upload: past the body limit or
// the file limit 413, a broken multipart body 400.
func uploadError(err error) error {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge), errors.Is(err, store.ErrAttachmentTooLarge):
		return errTooLarge
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errBadRequest("Der Upload ist unvollständig.")
	}
	return err
}

func (a *API) listAttachments(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	list, total, err := a.db.Attachments(r.Context(), accountID(r), page)
	if err != nil {
		return err
	}
	out := make([]attachmentResponse, len(list))
	for i, att := range list {
		out[i] = newAttachmentResponse(att)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) getAttachment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	att, err := a.db.Attachment(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newAttachmentResponse(att))
}

func (a *API) deleteAttachment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := a.db.DeleteAttachment(r.Context(), accountID(r), actor(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// downloadAttachment streams the file's bytes with its type and name.
func (a *API) downloadAttachment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	att, err := a.db.Attachment(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	WriteAttachmentHeaders(w.Header(), att)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	// Headers are out: a failure now can only cut the body short.
	if err := a.db.WriteAttachment(r.Context(), accountID(r), id, w); err != nil {
		a.log.Warn("download attachment", "attachment", id, "err", err)
	}
	return nil
}

// WriteAttachmentHeaders sets the headers of a file download: its type, its
// length and Content-Disposition: attachment with its name (the portal
// serves downloads the same way). nosniff keeps browsers from running it.
func WriteAttachmentHeaders(h http.Header, att store.Attachment) {
	h.Set("Content-Type", att.ContentType)
	h.Set("Content-Length", strconv.FormatInt(att.Size, 10))
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": att.Filename}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
}
