package mailer

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"net/url"
	"strings"
	"sync"
)

// This file is the token scheme of the per-recipient links every campaign
// mail carries: the unsubscribe link and List-Unsubscribe header
// ({BASE_URL}/unsubscribe/{token}), the open pixel ({BASE_URL}/o/{token}) and
// the tracked links ({BASE_URL}/c/{token}, plus ?u=<address> for a
// personalised link). The tracking and unsubscribe pages verify tokens with
// Tokens.Verify and Tokens.VerifyClick.
//
// A token is the unpadded base64url encoding of
//
//	version (1 byte, 1) | kind (1 byte: 'u', 'o', 'c') | flags (1 byte) |
//	uvarint recipient id | [uvarint link id, kind 'c' only] | MAC (12 bytes)
//
// where MAC is HMAC-SHA256 over everything before it, and for a click whose
// flags have bit 0 set (a personalised link) also over a zero byte and the
// link's rendered address, truncated to 96 bits. The key is derived from
// RUNDBRIEF_SECRET with HKDF-SHA256 (info "rundbrief link tokens v1"), apart
// from the secret box's key. Tokens are short (about 24 characters), need no
// database row, cannot be guessed or forged without the secret, and cannot be
// moved between kinds, recipients or links. They do not expire: a mail's
// unsubscribe link must work for as long as the mail exists.
//
// Recipient id 0 is reserved for test mails and previews, which have no
// recipient row: their unsubscribe link verifies but names no recipient, and
// the unsubscribe page should say it is a test link.

// TokenKind is what a token is for; it is part of the signed bytes.
type TokenKind byte

// Token kinds.
const (
	TokenUnsubscribe TokenKind = 'u'
	TokenOpen        TokenKind = 'o'
	TokenClick       TokenKind = 'c'
)

// Public paths of the token links, below RUNDBRIEF_BASE_URL.
const (
	UnsubscribePath = "/unsubscribe/"
	OpenPath        = "/o/"
	ClickPath       = "/c/"
	// ClickURLParam carries the rendered address of a personalised link.
	ClickURLParam = "u"
)

// TestRecipientID is the recipient id of test mails and previews.
const TestRecipientID = 0

const (
	tokenVersion  = 1
	tokenMACLen   = 12
	flagHasURL    = 1
	tokenHKDFInfo = "rundbrief link tokens v1"
)

// ErrInvalidToken means a token is malformed, of another kind, or its
// signature does not match (forged, altered, or made with another secret).
var ErrInvalidToken = errors.New("mailer: invalid token")

// Token is what a verified token names.
type Token struct {
	Kind        TokenKind
	RecipientID int64 // a campaign_recipients id; TestRecipientID for test mails
	LinkID      int64 // a campaign_links id (TokenClick only)
	// Personalized is set for a click token that signs the link's rendered
	// address: redirect to the ?u= address it was verified with, not to the
	// stored link.
	Personalized bool
}

// Tokens makes and verifies link tokens. It is safe for concurrent use.
type Tokens struct {
	key  []byte
	macs sync.Pool // hash.Hash keyed with key
}

// NewTokens derives the token key from secret (RUNDBRIEF_SECRET, at least 32
// characters).
func NewTokens(secret string) (*Tokens, error) {
	if len(secret) < 32 {
		return nil, errors.New("mailer: the token secret needs at least 32 characters")
	}
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, tokenHKDFInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("mailer: derive token key: %w", err)
	}
	t := &Tokens{key: key}
	t.macs.New = func() any { return hmac.New(sha256.New, t.key) }
	return t, nil
}

// Unsubscribe returns the unsubscribe token of a recipient.
func (t *Tokens) Unsubscribe(recipientID int64) string {
	return t.make(TokenUnsubscribe, recipientID, 0, false, "")
}

// Open returns the open-pixel token of a recipient.
func (t *Tokens) Open(recipientID int64) string {
	return t.make(TokenOpen, recipientID, 0, false, "")
}

// Click returns the token of one link for one recipient. For a personalised
// link pass its rendered address as rendered (it is signed and must come back
// as ?u=); for a plain link pass "".
func (t *Tokens) Click(recipientID, linkID int64, rendered string) string {
	return t.make(TokenClick, recipientID, linkID, rendered != "", rendered)
}

func (t *Tokens) make(kind TokenKind, recipientID, linkID int64, hasURL bool, u string) string {
	var raw [3 + 2*binary.MaxVarintLen64 + tokenMACLen]byte
	b := append(raw[:0], tokenVersion, byte(kind), 0)
	if hasURL {
		b[2] = flagHasURL
	}
	b = binary.AppendUvarint(b, uint64(recipientID))
	if kind == TokenClick {
		b = binary.AppendUvarint(b, uint64(linkID))
	}
	b = t.appendMAC(b, hasURL, u)
	return base64.RawURLEncoding.EncodeToString(b)
}

// appendMAC appends the truncated MAC of b (and of u when hasURL) to b.
func (t *Tokens) appendMAC(b []byte, hasURL bool, u string) []byte {
	m := t.macs.Get().(hash.Hash)
	m.Reset()
	m.Write(b)
	if hasURL {
		m.Write([]byte{0})
		m.Write([]byte(u))
	}
	var sum [sha256.Size]byte
	mac := m.Sum(sum[:0])
	t.macs.Put(m)
	return append(b, mac[:tokenMACLen]...)
}

// Verify checks an unsubscribe or open token of the given kind and returns
// what it names.
func (t *Tokens) Verify(kind TokenKind, token string) (Token, error) {
	if kind == TokenClick {
		return Token{}, fmt.Errorf("%w: use VerifyClick for click tokens", ErrInvalidToken)
	}
	return t.verify(kind, token, "")
}

// VerifyClick checks a click token; u is the request's ?u= value ("" when
// absent). For a personalised link the signature covers u, so a changed
// address fails; for a plain link u is ignored (redirect to the stored link).
func (t *Tokens) VerifyClick(token, u string) (Token, error) {
	return t.verify(TokenClick, token, u)
}

func (t *Tokens) verify(kind TokenKind, token, u string) (Token, error) {
	if len(token) > 64 {
		return Token{}, ErrInvalidToken
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) < 4+tokenMACLen || raw[0] != tokenVersion || TokenKind(raw[1]) != kind || raw[2]&^flagHasURL != 0 {
		return Token{}, ErrInvalidToken
	}
	body, mac := raw[:len(raw)-tokenMACLen], raw[len(raw)-tokenMACLen:]
	hasURL := raw[2]&flagHasURL != 0
	if hasURL && kind != TokenClick {
		return Token{}, ErrInvalidToken
	}
	check := t.appendMAC(append([]byte(nil), body...), hasURL, u)
	if !hmac.Equal(check[len(body):], mac) {
		return Token{}, ErrInvalidToken
	}
	rest := body[3:]
	rid, n := binary.Uvarint(rest)
	if n <= 0 || rid > 1<<62 {
		return Token{}, ErrInvalidToken
	}
	rest = rest[n:]
	tok := Token{Kind: kind, RecipientID: int64(rid), Personalized: hasURL}
	if kind == TokenClick {
		lid, n := binary.Uvarint(rest)
		if n <= 0 || lid > 1<<62 {
			return Token{}, ErrInvalidToken
		}
		rest = rest[n:]
		tok.LinkID = int64(lid)
	}
	if len(rest) != 0 {
		return Token{}, ErrInvalidToken
	}
	return tok, nil
}

// LinkBuilder makes the public URLs of tokens below a base URL
// (RUNDBRIEF_BASE_URL, without trailing slash).
type LinkBuilder struct {
	BaseURL string
	Tokens  *Tokens
}

// UnsubscribeURL is {base}/unsubscribe/{token}.
func (l LinkBuilder) UnsubscribeURL(recipientID int64) string {
	return strings.TrimRight(l.BaseURL, "/") + UnsubscribePath + l.Tokens.Unsubscribe(recipientID)
}

// OpenURL is {base}/o/{token}, the open pixel.
func (l LinkBuilder) OpenURL(recipientID int64) string {
	return strings.TrimRight(l.BaseURL, "/") + OpenPath + l.Tokens.Open(recipientID)
}

// ClickURL is {base}/c/{token}, with ?u=<rendered> for a personalised link
// (rendered != "").
func (l LinkBuilder) ClickURL(recipientID, linkID int64, rendered string) string {
	u := strings.TrimRight(l.BaseURL, "/") + ClickPath + l.Tokens.Click(recipientID, linkID, rendered)
	if rendered != "" {
		u += "?" + ClickURLParam + "=" + url.QueryEscape(rendered)
	}
	return u
}
