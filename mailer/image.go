package mailer

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/binary"
	"net/url"
	"strconv"
	"strings"

	"github.com/rundbrief/rundbrief/store"
)

// Images that the rich-text editor uploads are attachments of the account,
// shown in mails from a public, cacheable URL that needs no database lookup
// to be refused when forged:
//
//	{BASE_URL}/i/{account id}/{attachment id}/{mac}/{file name}
//
// where mac is the unpadded base64url of the link-token MAC (the same key as
// the unsubscribe and tracking tokens, see token.go) over version, kind 'i',
// and the two ids. The file name is for people and mail clients only; it is
// not signed. An image URL never changes for the same attachment, so it may
// be cached for good.

// TokenImage is the kind of an image URL's signature.
const TokenImage TokenKind = 'i'

// ImagePath is the public path prefix of the editor's images; the store
// looks for it in content to tell which mails show an attachment.
const ImagePath = store.ImagePath

// imageMACBody is what the image MAC covers.
func imageMACBody(accountID, attachmentID int64) []byte {
	b := make([]byte, 0, 3+2*binary.MaxVarintLen64+tokenMACLen)
	b = append(b, tokenVersion, byte(TokenImage), 0)
	b = binary.AppendUvarint(b, uint64(accountID))
	return binary.AppendUvarint(b, uint64(attachmentID))
}

// ImageMAC signs an account's attachment for its public image URL.
func (t *Tokens) ImageMAC(accountID, attachmentID int64) string {
	body := imageMACBody(accountID, attachmentID)
	return base64.RawURLEncoding.EncodeToString(t.appendMAC(body, false, "")[len(body):])
}

// VerifyImage reports whether mac signs the account's attachment.
func (t *Tokens) VerifyImage(accountID, attachmentID int64, mac string) bool {
	if accountID < 1 || attachmentID < 1 || len(mac) > 32 {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil {
		return false
	}
	want, _ := base64.RawURLEncoding.DecodeString(t.ImageMAC(accountID, attachmentID))
	return hmac.Equal(got, want)
}

// ImageURL is the public URL of an account's image attachment below
// l.BaseURL.
func (l LinkBuilder) ImageURL(accountID, attachmentID int64, filename string) string {
	name := url.PathEscape(strings.ReplaceAll(filename, "/", "_"))
	if name == "" {
		name = "bild"
	}
	return strings.TrimRight(l.BaseURL, "/") + ImagePath + strconv.FormatInt(accountID, 10) + "/" +
		strconv.FormatInt(attachmentID, 10) + "/" + l.Tokens.ImageMAC(accountID, attachmentID) + "/" + name
}
