package store

import (
	"net/url"
	"strings"
)

// maxWebURLLen bounds the web addresses an account stores (a form's success
// redirect, the privacy policy): longer ones are no real page's address.
const maxWebURLLen = 2000

// validWebURL accepts an absolute http(s) URL with a host and no user info: an
// address visitors are sent to or shown as a link must not carry credentials.
func validWebURL(s string) bool {
	if len(s) > maxWebURLLen || strings.ContainsAny(s, " \t\r\n\x00") {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}
