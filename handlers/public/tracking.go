package public

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
)

// pixel is a transparent 1×1 GIF.
var pixel = []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")

// remoteIP is the address a request came from.
func remoteIP(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, _ := netip.ParseAddr(host)
	return ip
}

// openPixel is GET /o/{token}: always the pixel, so that no mail shows a broken
// image; a recipient's first open by a person is recorded (email.opened).
func (p *Public) openPixel(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "image/gif")
	w.Header().Set("Cache-Control", "no-store, private")
	tok, err := p.tokens.Verify(mailer.TokenOpen, chi.URLParam(r, "token"))
	if err == nil && tok.RecipientID != mailer.TestRecipientID && !store.IsAutomated(r.UserAgent(), remoteIP(r), true) {
		if _, err := p.db.TrackOpen(r.Context(), tok.RecipientID, p.now()); err != nil {
			p.log.Error("track open", "err", err)
		}
	}
	_, _ = w.Write(pixel)
}

// click is GET /c/{token}: a redirect to the campaign's own link (never anywhere
// a token does not sign), counting the click when a person made it.
func (p *Public) click(w http.ResponseWriter, r *http.Request) error {
	rendered := r.URL.Query().Get(mailer.ClickURLParam)
	tok, err := p.tokens.VerifyClick(chi.URLParam(r, "token"), rendered)
	if err != nil {
		return store.ErrNotFound
	}
	if !tok.Personalized {
		rendered = ""
	}
	var target string
	if tok.RecipientID == mailer.TestRecipientID {
		target = rendered
		if target == "" {
			target, err = p.db.LinkURL(r.Context(), tok.LinkID)
		}
	} else {
		record := !store.IsAutomated(r.UserAgent(), remoteIP(r), false)
		target, err = p.db.TrackClick(r.Context(), tok.RecipientID, tok.LinkID, rendered, p.now(), record)
	}
	if err != nil {
		return err
	}
	if u, err := url.Parse(target); err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "mailto" && u.Scheme != "tel") {
		return store.ErrNotFound
	}
	w.Header().Set("Cache-Control", "no-store, private")
	http.Redirect(w, r, target, http.StatusFound)
	return nil
}
