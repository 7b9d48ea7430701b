// Package secret encrypts the secrets Rundbrief must be able to read back (SMTP and
// IMAP passwords) before they are stored, with a key derived from RUNDBRIEF_SECRET.
//
// A sealed value is text: "v1." followed by the unpadded base64url encoding of a
// 12-byte random nonce and the AES-256-GCM ciphertext with its 16-byte tag. The
// version prefix names the key derivation and cipher, so that a later format can be
// introduced while old values stay readable.
//
// Every value is sealed for a purpose (e.g. "smtp_servers.password:42", with the
// account id), which is authenticated as additional data: a sealed value copied into
// another account's row, or into another kind of field, does not open.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// version1 is the prefix of values sealed with AES-256-GCM under the HKDF-SHA256 key.
const version1 = "v1."

// hkdfInfo binds the derived key to this use, so that the same RUNDBRIEF_SECRET can
// key other things (token signatures) without related keys.
const hkdfInfo = "rundbrief secret box v1"

// minSecretLen matches the configuration's minimum for RUNDBRIEF_SECRET.
const minSecretLen = 32

// ErrOpen means a sealed value could not be opened: it is malformed, was sealed
// under another secret or for another purpose, or was altered.
var ErrOpen = errors.New("secret: cannot open sealed value")

// Box seals and opens secrets. It is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// NewBox derives a 32-byte key from secret (RUNDBRIEF_SECRET) with HKDF-SHA256 and
// returns a Box using AES-256-GCM. The secret must have at least 32 characters.
func NewBox(secret string) (*Box, error) {
	if len(secret) < minSecretLen {
		return nil, fmt.Errorf("secret: the secret needs at least %d characters", minSecretLen)
	}
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, hkdfInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("secret: derive key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plaintext for purpose with a fresh random nonce and returns the
// versioned text form. Sealing the same plaintext twice gives different values.
func (b *Box) Seal(purpose string, plaintext []byte) (string, error) {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("secret: nonce: %w", err)
	}
	sealed := b.aead.Seal(nonce, nonce, plaintext, []byte(purpose))
	return version1 + base64.RawURLEncoding.EncodeToString(sealed), nil
}

// Open decrypts a value sealed by Seal for the same purpose. Any problem is ErrOpen
// (wrapped), without detail that could help an attacker.
func (b *Box) Open(purpose, sealed string) ([]byte, error) {
	body, ok := strings.CutPrefix(sealed, version1)
	if !ok {
		return nil, fmt.Errorf("%w: unknown format", ErrOpen)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) < b.aead.NonceSize()+b.aead.Overhead() {
		return nil, fmt.Errorf("%w: malformed", ErrOpen)
	}
	nonce, ciphertext := raw[:b.aead.NonceSize()], raw[b.aead.NonceSize():]
	plain, err := b.aead.Open(nil, nonce, ciphertext, []byte(purpose))
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}
